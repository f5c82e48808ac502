#!/usr/bin/env bash
# Builds the sequencer WASI component (profile `wasm`: fat LTO, stripped) and prints its path.
# Adds the wasm32-wasip2 rustup target if it is missing. Cargo's messages go to stderr; with
# SEQUENCER_QUIET_BUILD=1 they are hidden (the scripts that only need the path set it when the
# build is already known to be quick).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
rust_target wasm32-wasip2
# The shipped component is always compiled by rustc itself, never by a linting wrapper.
[[ "${RUSTC_WORKSPACE_WRAPPER:-}" == */clippy-driver ]] && unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
quiet=()
[[ "${SEQUENCER_QUIET_BUILD:-}" == 1 ]] && quiet=(--quiet)
cargo build "${quiet[@]}" -p plog-sequencer --target wasm32-wasip2 --features component --profile wasm >&2
echo "$TARGET_DIR/wasm32-wasip2/wasm/sequencer.wasm"
