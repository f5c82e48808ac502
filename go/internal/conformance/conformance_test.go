package conformance

import (
	"path/filepath"
	"strings"
	"testing"
)

// scenarios is the suite's folder, relative to this package (go/internal/conformance).
var scenarios = filepath.Join("..", "..", "..", "guest-tests", "conformance", "scenarios")

// TestEveryConformanceScenarioPassesOnTheCoreModule runs every scenario file, each as a
// subtest named after it; a failure names the scenario and the step.
func TestEveryConformanceScenarioPassesOnTheCoreModule(t *testing.T) {
	files, err := Files(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenario in %s", scenarios)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			if err := RunFile(f); err != nil {
				t.Fatal(err)
			}
		})
	}
}
