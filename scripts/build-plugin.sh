#!/usr/bin/env bash
# Builds the sequencer as a plugin for polyglot hosts (docs/PLUGIN.md) and prints three paths,
# one per line:
#   $TARGET_DIR/plugin/sequencer-plugin-<WIT version>/   sequencer.wasm (the component),
#                                                        sequencer-core.wasm (the core module),
#                                                        wit/, manifest.json (versions, sha256,
#                                                        imports), README.md, LICENSE
#   $TARGET_DIR/plugin/sequencer-plugin-<WIT version>.tar.gz   the same folder, reproducible
#   $TARGET_DIR/plugin/plog_sequencer-<version>-py3-none-any.whl   the Python package (python/)
#                                                        with this component bundled
# The component is scripts/build-component.sh's, the core module scripts/build-core-module.sh's. Refuses to build if python/ wraps another WIT
# version than wit/sequencer.wit's. Python tools (hatchling, the wheel's build backend, and
# wasmtime, which reads the component's imports for the manifest) go into a venv in the
# project's tool cache ($TOOLS/python-build), installed once from python/requirements-build.txt.
# With --prepare it only makes that venv (scripts/test-conformance.sh --prepare runs it while
# cargo compiles) and prints nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
case "${1:-}" in
  "" | --prepare) ;;
  *) echo "error: unknown argument $1 (only --prepare)" >&2; exit 2 ;;
esac

# The build venv, made or refreshed only when its requirements change.
venv="$TOOLS/python-build"
stamp="$venv/.sequencer-requirements"
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$stamp" python/requirements-build.txt; then
  echo "python-build: installing $(grep -v '^#' python/requirements-build.txt | paste -sd' ') into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r python/requirements-build.txt >&2
  cp python/requirements-build.txt "$stamp"
fi

[[ "${1:-}" == --prepare ]] && exit 0

component="$(bash scripts/build-component.sh)"
# The core module from the same sources, in the same run (docs/PLUGIN.md, "The core module").
core_module="$(bash scripts/build-core-module.sh)"

wit_version="$(sed -n 's/^package sequencer:plugin@\(.*\);$/\1/p' wit/sequencer.wit)"
crate_version="$(cargo pkgid -p plog-sequencer)"
crate_version="${crate_version##*@}"
py_init=python/src/plog_sequencer/__init__.py
py_version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$py_init")"
py_wit="$(sed -n 's/^WIT_VERSION = "\(.*\)"$/\1/p' python/src/plog_sequencer/_types.py)"
[[ -n "$wit_version" && -n "$py_version" ]] || { echo "error: no WIT version in wit/sequencer.wit or no __version__ in $py_init" >&2; exit 1; }
if [[ "$py_wit" != "$wit_version" ]]; then
  echo "error: python/ wraps sequencer:plugin@$py_wit but wit/sequencer.wit is @$wit_version: update the wrapper (python/src/plog_sequencer/_types.py WIT_VERSION) first" >&2
  exit 1
fi

out="$TARGET_DIR/plugin"
name="sequencer-plugin-$wit_version"
dir="$out/$name"
rm -rf "$dir" "$out/$name.tar.gz"
mkdir -p "$dir/wit"
cp "$component" "$dir/sequencer.wasm"
cp "$core_module" "$dir/sequencer-core.wasm"
cp wit/sequencer.wit "$dir/wit/"
cp LICENSE "$dir/"
source_rev="$(git describe --always --dirty 2>/dev/null || echo unknown)"
"$venv/bin/python" scripts/plugin-manifest.py "$dir" --wit-version "$wit_version" \
  --crate-version "$crate_version" --python-version "$py_version" --source "$source_rev" --doc docs/PLUGIN.md
# Reproducible: fixed order, times and owners, no name or time in the gzip header.
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$out" -cf - "$name" | gzip -n >"$out/$name.tar.gz"

# The wheel: the component, the WIT and the LICENSE copied into python/ (ignored by git), then
# built in place with hatchling from the build venv (no download per build).
cp "$component" python/src/plog_sequencer/sequencer.wasm
mkdir -p python/src/plog_sequencer/wit
cp wit/sequencer.wit python/src/plog_sequencer/wit/
cp LICENSE python/LICENSE
rm -f "$out"/plog_sequencer-*.whl
"$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
  --wheel-dir "$out" ./python >&2
wheel="$out/plog_sequencer-$py_version-py3-none-any.whl"
[[ -f "$wheel" ]] || { echo "error: pip wheel did not make $wheel" >&2; exit 1; }

echo "$dir"
echo "$out/$name.tar.gz"
echo "$wheel"
