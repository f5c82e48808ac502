#!/usr/bin/env bash
# Ensures `prometheus` and `promtool` (2.42, from Debian's prometheus package) for the metrics
# test, which points a real Prometheus at a running host and reads its series back through
# Prometheus's HTTP API.
#
# Uses them from PATH when they are there. Otherwise it downloads the .deb with
# `apt-get download` and unpacks it into the project's tool cache ($TOOLS/prometheus, linked
# from $TOOLS/bin): nothing is installed system-wide, no service is created or started (the
# web UI's JavaScript packages it depends on are not needed: the test uses the HTTP API).
# `apt-get update` runs first only when apt has no package lists (a fresh machine), after a line
# saying so. Idempotent and instant when the tools are there; prints the prometheus binary's path.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  command -v prometheus
  exit 0
fi
if [[ -x "$TOOLS/bin/prometheus" && -x "$TOOLS/bin/promtool" ]]; then
  echo "$TOOLS/bin/prometheus"
  exit 0
fi
dest="$TOOLS/prometheus"
echo "prometheus-ensure: the metrics test needs prometheus and promtool; unpacking Debian's prometheus package into $dest (no system install, no service)" >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && "${APT_GET[@]}" download prometheus >/dev/null 2>&1); then
  sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || { echo "prometheus-ensure: error: apt has no package lists and this is not root (no sudo): run apt-get update" >&2; exit 1; }
    sudo=(sudo -n)
  fi
  echo "prometheus-ensure: apt has no usable package lists; running apt-get update" >&2
  "${sudo[@]}" "${APT_GET[@]}" update -qq >&2
  (cd "$work" && "${APT_GET[@]}" download prometheus >/dev/null)
fi
# Unpacked beside, then moved into place, so a concurrent run never sees half a tree.
mkdir -p "$TOOLS/bin" "$work/root"
dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
rm -rf "$dest.old"
[[ -e "$dest" ]] && mv "$dest" "$dest.old"
mv "$work/root" "$dest"
rm -rf "$dest.old"
ln -sfn "$dest/usr/bin/prometheus" "$TOOLS/bin/prometheus"
ln -sfn "$dest/usr/bin/promtool" "$TOOLS/bin/promtool"
version="$("$TOOLS/bin/prometheus" --version 2>&1)"
echo "${version%%$'\n'*}" >&2
echo "$TOOLS/bin/prometheus"
