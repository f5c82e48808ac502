#!/usr/bin/env bash
# Builds the JavaScript package (the core through wasm-bindgen) and runs its tests: Node tests
# (`node --test`), the browser test in headless Chromium, the quickstart example and the type
# declarations. Installs what it needs, idempotently: the wasm32 rustup target, wasm-bindgen-cli
# at the Cargo.lock version (into the project's tool cache), npm devDependencies (npm ci, into
# js/node_modules), Debian's chromium (system-wide, announced first).
# Exits non-zero on any failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TARGET=wasm32-unknown-unknown
cd "$ROOT"

step "toolchain"
rust_target "$TARGET"
bash "$ROOT/scripts/js-ensure-wasm-bindgen.sh"
bash "$ROOT/scripts/js-ensure-chromium.sh"

step "npm devDependencies"
# npm ci only when the lock file changed since the last install.
stamp="$ROOT/js/node_modules/.sequencer-lock-stamp"
if [[ ! -f "$stamp" ]] || ! cmp -s "$stamp" "$ROOT/js/package-lock.json"; then
  (cd "$ROOT/js" && npm ci --no-audit --no-fund)
  cp "$ROOT/js/package-lock.json" "$stamp"
else
  echo "node_modules: up to date" >&2
fi

# The workspace's size-tuned profile for wasm builds.
profile=wasm
step "build the wasm (profile $profile, feature js)"
cargo build -p sequencer --features js --target "$TARGET" --profile "$profile"

step "wasm-bindgen --target web -> js/pkg"
rm -rf "$ROOT/js/pkg"
wasm-bindgen --target web --out-dir "$ROOT/js/pkg" "$TARGET_DIR/$TARGET/$profile/sequencer.wasm"

step "type declarations (tsc)"
(cd "$ROOT/js" && node_modules/.bin/tsc -p tsconfig.json)

step "node --test"
cd "$ROOT/js"
node --test --test-reporter=spec test/*.test.js
step_times
