#!/usr/bin/env bash
# Builds the sequencer's core module (docs/PLUGIN.md, "The core module"): the component's sources
# and glue (feature `component`) for wasm32-unknown-unknown, profile `wasm`, so that runtimes
# without the component model (wazero, Chicory) load the same plugin. Prints its path.
#
# The Go package embeds a copy of it (go:embed needs the file inside the Go module, and `go get`
# takes what git holds), at go/internal/plugin/sequencer-core.wasm; the Java package takes that
# same copy into its jar. The build is reproducible (no paths or times in the module), so:
#   --check   fails, naming the fix, if the committed copy is not this build's bytes
#   --sync    writes this build over the committed copy
# Adds the wasm32-unknown-unknown rustup target if it is missing. Cargo's messages go to stderr;
# SEQUENCER_QUIET_BUILD=1 hides them.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_toolchain
cd "$ROOT"
mode="${1:-}"
case "$mode" in
  "" | --check | --sync) ;;
  *) echo "error: unknown argument $mode (--check or --sync)" >&2; exit 2 ;;
esac
rust_target wasm32-unknown-unknown
[[ "${RUSTC_WORKSPACE_WRAPPER:-}" == */clippy-driver ]] && unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
quiet=()
[[ "${SEQUENCER_QUIET_BUILD:-}" == 1 ]] && quiet=(--quiet)
# The component's target folder: the two builds share the glue's procedural macros (wit-bindgen)
# compiled once, and differ in target triple. (The wasm-bindgen build, the same triple with other
# features, has a folder of its own, JS_TARGET_DIR.)
dir="$COMPONENT_TARGET_DIR"
# Reproducible on any machine: the paths of the crates' sources that panic locations carry are
# written relative to cargo's home, whatever and wherever it is (the workspace's own are relative
# already, the standard library's are rustc's).
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
remap="--remap-path-prefix=$cargo_home=/cargo"
real_home="$(realpath -m "$cargo_home")"
[[ "$real_home" != "$cargo_home" ]] && remap+=$'\x1f'"--remap-path-prefix=$real_home=/cargo"
export CARGO_ENCODED_RUSTFLAGS="$remap"
cargo rustc "${quiet[@]}" -p plog-sequencer --lib --crate-type cdylib --target wasm32-unknown-unknown \
  --features component --profile wasm --target-dir "$dir" >&2
built="$dir/wasm32-unknown-unknown/wasm/sequencer.wasm"
committed="$ROOT/go/internal/plugin/sequencer-core.wasm"
case "$mode" in
  --sync)
    mkdir -p "$(dirname "$committed")"
    cp "$built" "$committed"
    echo "core module: $(wc -c <"$committed") bytes written to ${committed#"$ROOT"/}" >&2
    ;;
  --check)
    if ! cmp -s "$built" "$committed"; then
      echo "error: ${committed#"$ROOT"/} is not the core module these sources build: run bash scripts/build-core-module.sh --sync and commit it" >&2
      exit 1
    fi
    echo "core module: ${committed#"$ROOT"/} is this build's ($(wc -c <"$committed") bytes)" >&2
    ;;
esac
echo "$built"
