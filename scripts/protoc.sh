#!/usr/bin/env bash
# Prints the path of a protoc for builds with the `etcd` feature (etcd-client's build script
# compiles etcd's .proto files with it); the default build never needs one.
#   export PROTOC="$(bash scripts/protoc.sh)"
# Uses $PROTOC if it is set; otherwise the project's own copy in its tool cache, fetched once
# from the crates registry (Google's static protoc binary and the well-known .proto files, as
# the `protoc-bin-vendored` crate ships them). Installs nothing system-wide.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -n "${PROTOC:-}" && -x "${PROTOC}" ]]; then
  echo "$PROTOC"
  exit 0
fi
dest="$TOOLS/protoc"
if [[ ! -x "$dest/bin/protoc" ]]; then
  echo "protoc.sh: the etcd feature's build needs protoc; copying Google's static protoc from the crates registry (crate protoc-bin-vendored 3.3.0) into $dest" >&2
  paths="$(cargo run --quiet --manifest-path "$ROOT/scripts/protoc-vendored/Cargo.toml" \
    --target-dir "$SEQUENCER_CACHE/protoc-vendored-target")"
  bin="$(sed -n 1p <<<"$paths")"
  include="$(sed -n 2p <<<"$paths")"
  tmp="$dest.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp/bin"
  cp "$bin" "$tmp/bin/protoc"
  cp -r "$include" "$tmp/include"
  rm -rf "$dest"
  mv "$tmp" "$dest"
fi
# protoc finds the well-known types in ../include next to its binary.
echo "$dest/bin/protoc"
