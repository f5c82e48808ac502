#!/usr/bin/env bash
# Installs the JavaScript package's devDependencies into js/node_modules with `npm ci`, only
# when js/package-lock.json changed since the last install (a stamp file remembers it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT/js"
stamp=node_modules/.sequencer-lock-stamp
if [[ -f "$stamp" ]] && cmp -s "$stamp" package-lock.json; then
  echo "js/node_modules: up to date" >&2
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
cp package-lock.json "$stamp"
