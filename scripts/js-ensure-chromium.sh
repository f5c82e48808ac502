#!/usr/bin/env bash
# Ensures Debian's `chromium` is installed at /usr/bin/chromium for the browser test.
# Idempotent: does nothing when it is present. Never downloads a browser by other means.
set -euo pipefail

if [[ -x /usr/bin/chromium ]]; then
  echo "chromium: present" >&2
  exit 0
fi

sudo=()
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null || { echo "error: chromium is missing and this is not root (no sudo)" >&2; exit 1; }
  sudo=(sudo -n)
fi
echo "chromium: installing with apt-get" >&2
"${sudo[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends chromium
test -x /usr/bin/chromium
