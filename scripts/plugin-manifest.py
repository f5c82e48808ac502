"""Writes the plugin artifact's manifest.json and README.md (run by scripts/build-plugin.sh with
its build venv's Python, which has wasmtime).

    python plugin-manifest.py DIR --wit-version V --crate-version V --python-version V
                              --source REV --doc docs/PLUGIN.md

DIR holds sequencer.wasm, sequencer-core.wasm and wit/. The imports and exports are read from
the component itself (wasmtime's component type) and from the core module (wasmtime's module
type), not written by hand, and sorted into what a host must provide.
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path

import wasmtime
from wasmtime import component as wc


def std_imports() -> tuple[str, ...]:
    """The prefixes of the WASI imports std gives the component (guest-tests/std-imports.txt)."""
    text = (Path(__file__).resolve().parents[1] / "guest-tests" / "std-imports.txt").read_text()
    return tuple(l for l in text.splitlines() if l and not l.startswith("#"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    for opt in ("--wit-version", "--crate-version", "--python-version", "--source"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--doc", type=Path, required=True)
    a = ap.parse_args()

    wasm = (a.dir / "sequencer.wasm").read_bytes()
    engine = wasmtime.Engine()
    ty = wc.Component(engine, wasm).type
    imports = sorted(ty.imports(engine))
    exports = sorted(ty.exports(engine))
    package = f"sequencer:plugin@{a.wit_version}"
    ours = [i for i in imports if i.startswith("sequencer:plugin/")]
    wasi = [i for i in imports if i not in ours]
    provide = [i for i in ours if not i.startswith("sequencer:plugin/types@")]
    # What std on wasm32-wasip2 imports; never called.
    std_wasi = std_imports()
    unexpected = [i for i in wasi if not i.startswith(std_wasi)]
    if unexpected or any(not i.endswith(f"@{a.wit_version}") for i in ours):
        sys.exit(f"error: the component's imports are not the contract's: {unexpected or ours}")

    # The core module: the same sources for runtimes without the component model. Every
    # import is the sequencer's own (or a resource intrinsic of its own export): nothing of WASI.
    core = (a.dir / "sequencer-core.wasm").read_bytes()
    module = wasmtime.Module(engine, core)
    core_imports = sorted(f"{i.module} {i.name}" for i in module.imports)
    core_modules = sorted({i.module for i in module.imports})
    if any(not m.removeprefix("[export]").startswith("sequencer:plugin/") or not m.endswith(f"@{a.wit_version}")
           for m in core_modules):
        sys.exit(f"error: the core module imports more than the sequencer's own interfaces: {core_modules}")

    manifest = {
        "name": "sequencer-plugin",
        "wit_package": package,
        "world": "sequencer-plugin",
        "crate": {"name": "plog-sequencer", "version": a.crate_version},
        "python_package": {"name": "plog-sequencer", "version": a.python_version},
        "source": a.source,
        "component": {"file": "sequencer.wasm", "bytes": len(wasm), "sha256": hashlib.sha256(wasm).hexdigest()},
        "core_module": {
            "file": "sequencer-core.wasm",
            "bytes": len(core),
            "sha256": hashlib.sha256(core).hexdigest(),
            "abi": "canonical ABI lowering of the world sequencer-plugin (README.md, 'The core module')",
            "imports": core_imports,
            "exports": len(module.exports),
        },
        "wit": sorted(str(p.relative_to(a.dir)) for p in (a.dir / "wit").glob("*.wit")),
        "exports": exports,
        "imports": {
            "provide": provide,
            "types_only": [i for i in ours if i not in provide],
            "wasi_unused": wasi,
        },
    }
    (a.dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")

    def bullets(items):
        return "\n".join(f"- `{i}`" for i in items)

    header = f"""# sequencer-plugin {a.wit_version}

The sequencer as a WebAssembly component: `sequencer.wasm`, implementing the WIT package
`{package}` (world `sequencer-plugin`, in `wit/`).

| | |
|---|---|
| WIT package | `{package}` |
| built from | crate `plog-sequencer` {a.crate_version}, source `{a.source}` |
| `sequencer.wasm` | {len(wasm):,} bytes, sha256 `{manifest['component']['sha256']}` |
| `sequencer-core.wasm` | {len(core):,} bytes, sha256 `{manifest['core_module']['sha256']}`: the same sources as a core module, for runtimes without the component model (its ABI below) |
| Python package | `plog-sequencer` {a.python_version} (the wheel beside this folder bundles this component) |

`manifest.json` says the same for programs.

Imports a host provides (functions; their promises are in `wit/sequencer.wit`):

{bullets(provide)}

Imported for its types only (nothing to provide): {', '.join(f'`{i}`' for i in manifest['imports']['types_only'])}.

Imported by Rust's std and never called by the sequencer (link them as traps, or give real
WASI):

{bullets(wasi)}

Exports: {', '.join(f'`{e}`' for e in exports)}.

"""
    body = a.doc.read_text()
    (a.dir / "README.md").write_text(header + body[body.index("\n## ") + 1:] if "\n## " in body else header + body)


if __name__ == "__main__":
    main()
