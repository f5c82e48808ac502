// Package guest is the sequencer's core module on wazero: the canonical ABI of
// wit/sequencer.wit lowered by hand (docs/PLUGIN.md, "The core module"), one Instance per
// sequencer. It converts types and nothing else: every rule is the module's. It makes no
// goroutine and takes no lock; its caller makes one call at a time per Instance and never
// calls it from inside an import (a Host method).
package guest

import (
	"context"
	"fmt"
	"sync"

	"github.com/plog-sequencer/plog-sequencer/go/internal/plugin"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The interfaces' module names, as the module imports and exports them.
const (
	storageModule  = "sequencer:plugin/storage@" + plugin.WITVersion
	clockModule    = "sequencer:plugin/clock@" + plugin.WITVersion
	observerModule = "sequencer:plugin/observer@" + plugin.WITVersion
	resourceModule = "[export]sequencer:plugin/sequencer-api@" + plugin.WITVersion
	apiPrefix      = "sequencer:plugin/sequencer-api@" + plugin.WITVersion + "#"
	instancePrefix = "sequencer:plugin/instance@" + plugin.WITVersion + "#"
	eventsPrefix   = "sequencer:plugin/events@" + plugin.WITVersion + "#"
)

// MaxMemoryPages caps an instance's linear memory: 4,096 pages of 64 KiB, 256 MiB (the Rust
// host's cap). Growing past it fails the allocation, and the module traps.
const MaxMemoryPages = 4096

// runtime is the process's one wazero runtime (compiler mode where wazero has one), with the
// host modules linked and the core module compiled once.
type runtime struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

var shared struct {
	once sync.Once
	rt   *runtime
	err  error
}

// load compiles the embedded module on first use; later calls return the same runtime.
func load() (*runtime, error) {
	shared.once.Do(func() {
		shared.rt, shared.err = newRuntime(context.Background())
	})
	return shared.rt, shared.err
}

func newRuntime(ctx context.Context) (*runtime, error) {
	cfg := wazero.NewRuntimeConfig().WithMemoryLimitPages(MaxMemoryPages)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := linkImports(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("sequencer: linking the host functions: %w", err)
	}
	compiled, err := rt.CompileModule(ctx, plugin.Wasm)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("sequencer: compiling the embedded core module: %w", err)
	}
	return &runtime{rt: rt, compiled: compiled}, nil
}

// linkImports instantiates the host modules whose functions the core module imports. They
// are shared by every instance and find theirs through the context of the call (see
// instanceOf).
func linkImports(ctx context.Context, rt wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	type fn struct {
		name    string
		f       api.GoModuleFunc
		params  []api.ValueType
		results []api.ValueType
	}
	modules := []struct {
		name  string
		funcs []fn
	}{
		{storageModule, []fn{
			{"read-numbers", importReadNumbers, []api.ValueType{i64, i32, i32, i32}, nil},
			{"read-numbers-many", importReadNumbersMany, []api.ValueType{i32, i32, i32, i32, i32}, nil},
			{"begin-read-next-offset", importBeginReadNextOffset, []api.ValueType{i64}, nil},
			{"begin-write", importBeginWrite, []api.ValueType{i64, i32, i32, i64}, nil},
			{"begin-read-plog", importBeginReadPlog, []api.ValueType{i64, i64}, nil},
		}},
		{clockModule, []fn{
			{"now", importNow, nil, []api.ValueType{i64}},
			{"set-wake", importSetWake, []api.ValueType{i32, i64}, nil},
		}},
		{observerModule, []fn{
			{"status-changed", importStatusChanged, []api.ValueType{i32}, nil},
		}},
		{resourceModule, []fn{
			{"[resource-new]sequencer", importResourceNew, []api.ValueType{i32}, []api.ValueType{i32}},
			{"[resource-drop]sequencer", importResourceDrop, []api.ValueType{i32}, nil},
		}},
	}
	for _, m := range modules {
		b := rt.NewHostModuleBuilder(m.name)
		for _, f := range m.funcs {
			b.NewFunctionBuilder().WithGoModuleFunction(f.f, f.params, f.results).Export(f.name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			return err
		}
	}
	return nil
}
