#!/usr/bin/env bash
# Builds the JavaScript package's wasm (the core through wasm-bindgen) into js/pkg, as
# scripts/test-js.sh does, without its tests: the wasm32 rustup target and wasm-bindgen-cli at
# the Cargo.lock version are installed if missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sequencer-target}"
TARGET=wasm32-unknown-unknown
profile=wasm
cd "$ROOT"

rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET" >&2
"$ROOT/scripts/js-ensure-wasm-bindgen.sh"
cargo build --quiet -p sequencer --features js --target "$TARGET" --profile "$profile"
rm -rf "$ROOT/js/pkg"
wasm-bindgen --target web --out-dir "$ROOT/js/pkg" "$CARGO_TARGET_DIR/$TARGET/$profile/sequencer.wasm"
echo "$ROOT/js/pkg"
