#!/usr/bin/env bash
# Builds the sequencer WASI component (profile `wasm`: fat LTO, stripped) and prints its path.
# Adds the wasm32-wasip2 rustup target if it is missing. Cargo's messages go to stderr; with
# SEQUENCER_QUIET_BUILD=1 they are hidden (the scripts that only need the path set it when the
# build is already known to be quick).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_toolchain
cd "$ROOT"
rust_target wasm32-wasip2
# The shipped component is always compiled by rustc itself, never by a linting wrapper.
[[ "${RUSTC_WORKSPACE_WRAPPER:-}" == */clippy-driver ]] && unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
quiet=()
[[ "${SEQUENCER_QUIET_BUILD:-}" == 1 ]] && quiet=(--quiet)
# The target folder the host's build script bundles the component from (host/build.rs), so the
# two share one build.
# The library as a `cdylib` (the manifest declares a Rust library only; see Cargo.toml's [lib]).
cargo rustc "${quiet[@]}" -p plog-sequencer --lib --crate-type cdylib --target wasm32-wasip2 \
  --features component --profile wasm --target-dir "$COMPONENT_TARGET_DIR" >&2
echo "$COMPONENT_TARGET_DIR/wasm32-wasip2/wasm/sequencer.wasm"
