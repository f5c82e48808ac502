#!/usr/bin/env bash
# Builds the JavaScript package's wasm (the core through wasm-bindgen, profile `wasm-js`: see
# Cargo.toml) into js/pkg and prints that path. Fails on any warning of wasm-bindgen. Installs what it needs: the wasm32-unknown-unknown rustup target
# and wasm-bindgen-cli at the Cargo.lock version (scripts/js-ensure-wasm-bindgen.sh). Cargo's
# output goes to $JS_TARGET_DIR (scripts/lib.sh), a target folder of its own, so this build can
# run while another cargo command holds the main one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_toolchain
cd "$ROOT"
TARGET=wasm32-unknown-unknown
profile=wasm-js

rust_target "$TARGET"
bash "$ROOT/scripts/js-ensure-wasm-bindgen.sh"
cargo rustc --quiet -p plog-sequencer --lib --crate-type cdylib --features js --target "$TARGET" \
  --profile "$profile" --target-dir "$JS_TARGET_DIR"
rm -rf "$ROOT/js/pkg"
# The name and producers sections only help a debugger; `strip = true` dropped them before.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
wasm-bindgen --target web --remove-name-section --remove-producers-section \
  --out-dir "$ROOT/js/pkg" "$JS_TARGET_DIR/$TARGET/$profile/sequencer.wasm" 2>"$log" || {
  cat "$log" >&2
  exit 1
}
if [[ -s "$log" ]]; then
  cat "$log" >&2
  echo "error: wasm-bindgen printed the warnings above; the package is built without warnings" >&2
  exit 1
fi
echo "$ROOT/js/pkg"
