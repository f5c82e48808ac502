#!/usr/bin/env bash
# Ensures `wasm-bindgen` (wasm-bindgen-cli) is installed at exactly the version of the
# `wasm-bindgen` crate in Cargo.lock: the CLI and the crate must match or the glue is refused.
# Idempotent: does nothing when `wasm-bindgen --version` already matches.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The version of the `wasm-bindgen` package in Cargo.lock (the line after its name).
want="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock")"
if [[ -z "$want" ]]; then
  echo "error: no wasm-bindgen package in $ROOT/Cargo.lock" >&2
  exit 1
fi

have="$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)"
if [[ "$have" == "$want" ]]; then
  echo "wasm-bindgen $want: present" >&2
  exit 0
fi

echo "wasm-bindgen ${have:-missing}, want $want: installing wasm-bindgen-cli $want" >&2
# Without --locked: with it, a transitive pin of the CLI's lock file is missing from the registry.
cargo install wasm-bindgen-cli --version "$want" --force
wasm-bindgen --version
