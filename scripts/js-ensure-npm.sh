#!/usr/bin/env bash
# Installs the npm devDependencies of a folder of the JavaScript package into its node_modules
# with `npm ci`, only when its package-lock.json changed since the last install (a stamp file
# remembers it). The folder is js/ by default; scripts/test-js.sh also passes js/test/bundlers
# (esbuild, Vite and webpack for the bundler test, pinned there).
#   scripts/js-ensure-npm.sh [FOLDER]   FOLDER relative to the repository root
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
dir="${1:-js}"
cd "$ROOT/$dir"
stamp=node_modules/.sequencer-lock-stamp
if [[ -f "$stamp" ]] && cmp -s "$stamp" package-lock.json; then
  echo "$dir/node_modules: up to date" >&2
  exit 0
fi
echo "$dir: npm ci (the devDependencies pinned in $dir/package-lock.json)" >&2
npm ci --no-audit --no-fund --loglevel=error
cp package-lock.json "$stamp"
