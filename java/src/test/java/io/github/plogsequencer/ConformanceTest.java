package io.github.plogsequencer;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Every conformance scenario (guest-tests/conformance/scenarios, the files as they are),
 * through this package on both engines: one dynamic test per scenario and engine.
 */
class ConformanceTest {
    static final Path SCENARIOS = Paths.get(System.getProperty("plog.scenarios", "../guest-tests/conformance/scenarios"));

    static List<Path> scenarioFiles() throws IOException {
        try (Stream<Path> files = Files.list(SCENARIOS)) {
            return files.filter(p -> p.toString().endsWith(".json")).sorted().collect(Collectors.toList());
        }
    }

    @Test
    void thereAreScenarios() throws IOException {
        assertFalse(scenarioFiles().isEmpty(), "no scenarios in " + SCENARIOS.toAbsolutePath());
    }

    @TestFactory
    Stream<DynamicContainer> everyScenarioPassesOnEveryEngine() throws IOException {
        List<Path> files = scenarioFiles();
        return Stream.of(Engine.values()).map(engine -> {
            Plugin plugin = Plugin.load(engine);
            String runner = engine == Engine.COMPILED ? "java" : "java-interpreter";
            return DynamicContainer.dynamicContainer(engine.name().toLowerCase(), files.stream().map(file -> {
                String name = file.getFileName().toString().replace(".json", "");
                return DynamicTest.dynamicTest(name, () -> {
                    try {
                        new ScenarioRunner(runner, plugin, file).run();
                    } catch (ScenarioRunner.StepFailed e) {
                        fail(e.getMessage(), e.getCause());
                    }
                });
            }));
        });
    }
}
