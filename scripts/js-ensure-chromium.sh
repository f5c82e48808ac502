#!/usr/bin/env bash
# Ensures Debian's `chromium` at /usr/bin/chromium for the browser test: it says so, then
# installs the package system-wide with apt-get (a browser cannot live in the project's cache:
# it needs Debian's libraries). Does nothing when it is present. Never downloads a browser by
# other means.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ -x /usr/bin/chromium ]]; then
  echo "chromium: present" >&2
  exit 0
fi
ensure_debian_packages "the browser test (headless Chromium)" chromium
test -x /usr/bin/chromium
