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
pip_venv "$dest" "$MOTO_VERSION" "moto[server]==$MOTO_VERSION" "s3-ensure: the S3 bench needs moto's S3 server"
"$dest/bin/python" -c 'import moto; print("s3-ensure: moto", moto.__version__)' >&2
echo "$dest/bin/python"
