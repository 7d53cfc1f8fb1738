package plugincheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// moduleInfo is what the kit reads from a module before the host loads it.
type moduleInfo struct {
	exports map[string]bool
	abi     uint32            // bardo_abi_version()
	entries []wire.Descriptor // one per plugin (ABI v1.5 bundles export several)
	bundle  bool              // exports bardo_entries and bardo_select
}

// requiredExports are what every plugin must export (docs/abi.md).
var requiredExports = []string{"_initialize", "bardo_abi_version", "bardo_buffer", "bardo_describe", "bardo_init"}

// inspect compiles the module (into the cache sandbox.Load then reads),
// checks its exports, and runs one instance — its host imports stubbed,
// nothing initialised — only to ask bardo_abi_version and each entry's
// descriptor: what the host reads first, asked directly, so a wrong answer
// is named as such rather than as a load failure.
func inspect(ctx context.Context, cache wazero.CompilationCache, code []byte) (*moduleInfo, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
		WithCloseOnContextDone(true).WithCompilationCache(cache).WithMemoryLimitPages(1024))
	defer rt.Close(context.Background())
	cm, err := rt.CompileModule(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("not a WebAssembly module wazero can compile: %w", err)
	}
	info := &moduleInfo{exports: map[string]bool{}}
	for name := range cm.ExportedFunctions() {
		info.exports[name] = true
	}
	var missing []string
	if len(cm.ExportedMemories()) == 0 {
		missing = append(missing, "memory")
	}
	for _, name := range requiredExports {
		if !info.exports[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing %s: build a WASI reactor with the sdk (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared)",
			strings.Join(missing, ", "))
	}
	info.bundle = info.exports["bardo_entries"] && info.exports["bardo_select"]
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, err
	}
	if err := stubImports(ctx, rt, cm); err != nil {
		return nil, err
	}
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	call := func(name string, args ...uint64) (uint64, error) {
		res, err := mod.ExportedFunction(name).Call(ctx, args...)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		if len(res) == 0 {
			return 0, fmt.Errorf("%s returns nothing", name)
		}
		return res[0], nil
	}
	v, err := call("bardo_abi_version")
	if err != nil {
		return nil, err
	}
	info.abi = uint32(v)
	count := uint64(1)
	if info.bundle {
		if count, err = call("bardo_entries"); err != nil {
			return nil, err
		}
		if count == 0 || count > 64 {
			return nil, fmt.Errorf("bardo_entries() = %d: want 1–64", count)
		}
	}
	for i := range count {
		if info.bundle {
			if r, err := call("bardo_select", i); err != nil {
				return nil, err
			} else if r != 0 {
				return nil, fmt.Errorf("bardo_select(%d) = %d: the module counts %d entries but has no entry %d", i, r, count, i)
			}
		}
		if _, err := call("bardo_buffer", 0); err != nil {
			return nil, err
		}
		packed, err := call("bardo_describe", 0)
		if err != nil {
			return nil, err
		}
		out, ok := mod.Memory().Read(uint32(packed>>32), uint32(packed))
		if !ok || len(out) == 0 {
			return nil, errors.New("bardo_describe: output out of bounds")
		}
		if out[0] == plugin.StatusError {
			return nil, fmt.Errorf("bardo_describe: %s", out[1:])
		}
		var d wire.Descriptor // its strings alias what it decodes: a copy, not the guest's memory
		if err := d.Decode(append([]byte(nil), out...)); err != nil {
			return nil, fmt.Errorf("bardo_describe: %w", err)
		}
		info.entries = append(info.entries, d)
	}
	return info, nil
}

// stubImports satisfies the module's host imports with functions that
// answer zero: describing itself must not need the host.
func stubImports(ctx context.Context, rt wazero.Runtime, cm wazero.CompiledModule) error {
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		b, ok := builders[mod]
		if !ok {
			b = rt.NewHostModuleBuilder(mod)
			builders[mod] = b
			order = append(order, mod)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			clear(stack)
		}), f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	slices.Sort(order)
	for _, mod := range order {
		if _, err := builders[mod].Instantiate(ctx); err != nil {
			return fmt.Errorf("imports of module %s: %w", mod, err)
		}
	}
	return nil
}
