#!/usr/bin/env bash
# Ensures Debian's etcd (server 3.4 and etcdctl), protoc and the protobuf well-known types are
# installed: the etcd tests start a real cluster, and the etcd-client crate's build script runs
# protoc on etcd's .proto files (it vendors no generated code).
# Idempotent and quick when they are present. Installs only from Debian's packages.
set -euo pipefail

missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v etcdctl >/dev/null || missing+=(etcd-client)
command -v protoc >/dev/null || missing+=(protobuf-compiler)
# etcd's .proto files import Google's well-known types (descriptor.proto, struct.proto).
[[ -f /usr/include/google/protobuf/descriptor.proto ]] || missing+=(libprotobuf-dev)
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

sudo=()
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null || { echo "error: ${missing[*]} missing and this is not root (no sudo)" >&2; exit 1; }
  sudo=(sudo -n)
fi
echo "etcd-ensure: installing ${missing[*]} with apt-get" >&2
"${sudo[@]}" apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
# Debian's postinst may start a system etcd under an init system; this script never uses it.
command -v etcd >/dev/null && command -v etcdctl >/dev/null && command -v protoc >/dev/null &&
  [[ -f /usr/include/google/protobuf/descriptor.proto ]]
