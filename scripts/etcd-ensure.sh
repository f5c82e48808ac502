#!/usr/bin/env bash
# Ensures `etcd` and `etcdctl` (3.4, from Debian's etcd-server and etcd-client packages) for
# the etcd tests, which start a real 3-member cluster on loopback ports.
#
# Uses them from PATH when they are there. Otherwise it downloads the two .deb files with
# `apt-get download` and unpacks them into the project's tool cache ($TOOLS/etcd, linked from
# $TOOLS/bin): nothing is installed system-wide, no etcd service is created or started.
# `apt-get update` runs first only when apt has no package lists (a fresh machine), after a line
# saying so. Idempotent and instant when the tools are there.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
  exit 0
fi
dest="$TOOLS/etcd"
echo "etcd-ensure: the etcd tests need etcd and etcdctl; unpacking Debian's etcd-server and etcd-client packages into $dest (no system install, no service)" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && "${APT_GET[@]}" download etcd-server etcd-client >/dev/null 2>&1); then
  sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || { echo "etcd-ensure: error: apt has no package lists and this is not root (no sudo): run apt-get update" >&2; exit 1; }
    sudo=(sudo -n)
  fi
  echo "etcd-ensure: apt has no usable package lists; running apt-get update" >&2
  "${sudo[@]}" "${APT_GET[@]}" update -qq >&2
  (cd "$work" && "${APT_GET[@]}" download etcd-server etcd-client >/dev/null)
fi
# Unpacked beside, then moved into place, so a concurrent run never sees half a tree.
mkdir -p "$TOOLS/bin" "$work/root"
for deb in "$work"/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
done
rm -rf "$dest.old"
[[ -e "$dest" ]] && mv "$dest" "$dest.old"
mv "$work/root" "$dest"
rm -rf "$dest.old"
ln -sfn "$dest/usr/bin/etcd" "$TOOLS/bin/etcd"
ln -sfn "$dest/usr/bin/etcdctl" "$TOOLS/bin/etcdctl"
# The first line of the version, read whole: `| head -1` would close the pipe early, and under
# pipefail etcd's SIGPIPE on its next line failed this script after a good install.
version="$("$TOOLS/bin/etcd" --version)"
echo "${version%%$'\n'*}" >&2
