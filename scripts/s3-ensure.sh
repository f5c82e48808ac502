#!/usr/bin/env bash
# Ensures moto's mock S3 server (PyPI's moto[server], pinned below) for bench-durable.sh's `s3`
# store (the tests run on a real server, SeaweedFS: scripts/seaweedfs-ensure.sh):
# a Python venv in the project's tool cache ($TOOLS/moto), nothing installed system-wide.
# Prints the venv's python (run the server as `PYTHON -m moto.server`). Idempotent and instant
# when the pinned version is there; says what it installs otherwise.
#
# moto answers `If-None-Match: *` (a create only if absent) with 412, which the object PLog's
# fence needs; its check-then-write is not atomic under heavy interleaving.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MOTO_VERSION="5.2.5"
dest="$TOOLS/moto"
if [[ -x "$dest/bin/python" && "$(cat "$dest/VERSION" 2>/dev/null)" == "$MOTO_VERSION" ]]; then
  echo "$dest/bin/python"
  exit 0
fi
command -v python3 >/dev/null || { echo "s3-ensure: error: python3 is needed to install moto" >&2; exit 1; }
echo "s3-ensure: the S3 tests need moto's S3 server; installing moto[server]==$MOTO_VERSION from PyPI into a venv at $dest (no system install)" >&2
mkdir -p "$TOOLS"
# Built beside, then moved into place (a venv run as `bin/python -m` may move), so a
# concurrent run never sees half an install.
work="$(mktemp -d "$TOOLS/moto.new.XXXXXX")"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work" >&2
"$work/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION" >&2
echo "$MOTO_VERSION" >"$work/VERSION"
rm -rf "$dest.old"
[[ -e "$dest" ]] && mv "$dest" "$dest.old"
mv "$work" "$dest"
rm -rf "$dest.old"
"$dest/bin/python" -c 'import moto; print("s3-ensure: moto", moto.__version__)' >&2
echo "$dest/bin/python"
