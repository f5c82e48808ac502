#!/usr/bin/env bash
# Builds the JavaScript package (the core through wasm-bindgen, scripts/js-build.sh) and runs its
# tests: Node tests (`node --test`), the browser test in headless Chromium, the quickstart
# example, the type declarations, `npm pack`'s contents and guard, and the bundler test (the
# packed package built into pages by esbuild, Vite and webpack and loaded in Chromium, and
# imported and required by Node). Installs what it needs, idempotently: the wasm32 rustup
# target, wasm-bindgen-cli at the Cargo.lock version (into the project's tool cache), npm
# devDependencies (npm ci, into js/node_modules and js/test/bundlers/node_modules), Debian's
# chromium (system-wide, announced first). Exits non-zero on any failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

step "chromium and npm devDependencies (js/ and the bundler test's js/test/bundlers/)"
bash "$ROOT/scripts/js-ensure-chromium.sh"
bash "$ROOT/scripts/js-ensure-npm.sh" js
bash "$ROOT/scripts/js-ensure-npm.sh" js/test/bundlers

step "the wasm (profile wasm-js, feature js) and wasm-bindgen -> js/pkg"
bash "$ROOT/scripts/js-build.sh" >/dev/null

step "type declarations (tsc --strict, lib ES2020 with and without DOM)"
(cd "$ROOT/js" && node_modules/.bin/tsc -p tsconfig.json && node_modules/.bin/tsc -p tsconfig.nodom.json)

step "node --test"
cd "$ROOT/js"
node --test --test-reporter=spec test/*.test.js

step "the packed package through esbuild, Vite and webpack in Chromium, and in Node (ESM, CJS)"
cd "$ROOT/js/test/bundlers"
node --test --test-reporter=spec bundlers.test.js
step_times
