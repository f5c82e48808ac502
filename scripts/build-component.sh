#!/usr/bin/env bash
# Builds the sequencer WASI component (release) and prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sequencer-target}"
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2 >&2
cargo build --quiet -p sequencer --target wasm32-wasip2 --features component --profile wasm >&2
echo "$CARGO_TARGET_DIR/wasm32-wasip2/wasm/sequencer.wasm"
