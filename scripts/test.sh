#!/usr/bin/env bash
# Every test: formatting and lints, the core, the component under wasmtime, the JS package, and
# the conformance suite on four runtimes. Installs what it needs (rustup targets,
# wasm-bindgen-cli, npm packages, chromium, a Python venv, etcd and protoc) if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sequencer-target}"

echo "== etcd, etcdctl and protoc (Debian packages) for the etcd store and its tests"
bash scripts/etcd-ensure.sh

echo "== formatting and lints"
cargo fmt --all -- --check
cargo clippy --quiet --workspace --all-targets -- -D warnings
SEQUENCER_COMPONENT="$(bash scripts/build-component.sh)"
export SEQUENCER_COMPONENT
cargo clippy --quiet -p sequencer --target wasm32-wasip2 --features component -- -D warnings

echo "== Rust: the core, the host, and the component under wasmtime ($SEQUENCER_COMPONENT)"
cargo test --workspace

echo "== JavaScript: the wasm-bindgen package in Node and Chromium"
bash scripts/test-js.sh

echo "== Conformance: every scenario on Python wasmtime, jco and the wasm-bindgen build"
bash scripts/test-conformance.sh
