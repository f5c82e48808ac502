#!/usr/bin/env bash
# Ensures `wasm-bindgen` (wasm-bindgen-cli) at exactly the version of the `wasm-bindgen` crate in
# Cargo.lock (the CLI and the crate must match or the glue is refused). One already on PATH at
# that version is used; otherwise it is built with `cargo install --root` into the project's
# tool cache ($TOOLS, first on the scripts' PATH), never over the user's own wasm-bindgen in
# ~/.cargo/bin. Idempotent: instant when the version matches.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The version of the `wasm-bindgen` package in Cargo.lock (the line after its name).
want="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock")"
if [[ -z "$want" ]]; then
  echo "error: no wasm-bindgen package in $ROOT/Cargo.lock" >&2
  exit 1
fi

have="$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)"
if [[ "$have" == "$want" ]]; then
  echo "wasm-bindgen $want: present ($(command -v wasm-bindgen))" >&2
  exit 0
fi

echo "wasm-bindgen ${have:-missing}, want $want: building wasm-bindgen-cli $want into $TOOLS (about 1 minute on 2 cores)" >&2
# Without --locked: with it, a transitive pin of the CLI's lock file is missing from the registry.
# Without default features: they only add TLS (rustls, ring) for the test runner's downloads.
# A dev build (--debug): 62 s and 116 s of CPU to build instead of 117 s and 224 s, and the same
# package, byte for byte, in 0.14 s instead of 0.03 s (measured 2026-12-03, idle 2 cores).
cargo install --quiet --debug wasm-bindgen-cli --version "$want" --no-default-features --bin wasm-bindgen \
  --target-dir "$SEQUENCER_CACHE/wasm-bindgen-cli-target" \
  --root "$TOOLS" --force
"$TOOLS/bin/wasm-bindgen" --version >&2
