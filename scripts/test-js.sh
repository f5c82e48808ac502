#!/usr/bin/env bash
# Builds the JavaScript package (the core through wasm-bindgen, scripts/js-build.sh) and runs its
# tests: Node tests (`node --test`), the browser test in headless Chromium, the quickstart
# example and the type declarations. Installs what it needs, idempotently: the wasm32 rustup
# target, wasm-bindgen-cli at the Cargo.lock version (into the project's tool cache), npm
# devDependencies (npm ci, into js/node_modules), Debian's chromium (system-wide, announced
# first). Exits non-zero on any failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

step "chromium and npm devDependencies"
bash "$ROOT/scripts/js-ensure-chromium.sh"
bash "$ROOT/scripts/js-ensure-npm.sh"

step "the wasm (profile wasm-js, feature js) and wasm-bindgen -> js/pkg"
bash "$ROOT/scripts/js-build.sh" >/dev/null

step "type declarations (tsc --strict, lib ES2020 with and without DOM)"
(cd "$ROOT/js" && node_modules/.bin/tsc -p tsconfig.json && node_modules/.bin/tsc -p tsconfig.nodom.json)

step "node --test"
cd "$ROOT/js"
node --test --test-reporter=spec test/*.test.js
step_times
