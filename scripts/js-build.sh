#!/usr/bin/env bash
# Builds the JavaScript package's wasm (the core through wasm-bindgen) into js/pkg, as
# scripts/test-js.sh does, without its tests: the wasm32 rustup target and wasm-bindgen-cli at
# the Cargo.lock version are installed if missing (scripts/js-ensure-wasm-bindgen.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
TARGET=wasm32-unknown-unknown
profile=wasm

rust_target "$TARGET"
bash "$ROOT/scripts/js-ensure-wasm-bindgen.sh"
cargo build --quiet -p sequencer --features js --target "$TARGET" --profile "$profile"
rm -rf "$ROOT/js/pkg"
wasm-bindgen --target web --out-dir "$ROOT/js/pkg" "$TARGET_DIR/$TARGET/$profile/sequencer.wasm"
echo "$ROOT/js/pkg"
