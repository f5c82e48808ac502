#!/usr/bin/env bash
# Ensures SeaweedFS's `weed` (Apache-2.0) at the pinned version below, the real S3-compatible
# server of the S3 tests (scripts/seaweedfs-server.sh starts it; docs/ARCHITECTURE.md says why
# this server). Prints the binary's path. Idempotent and instant when the pinned version is
# there; says what it builds otherwise.
#
# Built from source with the Go toolchain, from the Go module proxy, into the project's tool
# cache ($TOOLS/seaweedfs/VERSION/bin/weed); Go's module and build caches go to
# $SEQUENCER_CACHE/go, outside the clone, so clones and CI runs share them. Nothing is
# installed system-wide. Not `go install MODULE/weed@VERSION`: the go command refuses that for
# a module whose go.mod has replace directives (SeaweedFS's has one), so the module is
# downloaded at the pinned version and built inside its own folder, where its go.mod, replace
# and go.sum included, apply as they do upstream. A cold build (nothing in the module cache)
# takes minutes: docs/BENCHMARKS.md, "Building and testing".
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SEAWEEDFS_MODULE="github.com/seaweedfs/seaweedfs"
SEAWEEDFS_VERSION="v0.0.0-20261109003541-7506e5f91cd6"
dest="$TOOLS/seaweedfs/$SEAWEEDFS_VERSION"
if [[ -x "$dest/bin/weed" ]]; then
  echo "$dest/bin/weed"
  exit 0
fi
command -v go >/dev/null || { echo "seaweedfs-ensure: error: the Go toolchain is needed to build SeaweedFS (go on PATH)" >&2; exit 1; }
export GOPATH="$SEQUENCER_CACHE/go" GOCACHE="$SEQUENCER_CACHE/go/build-cache"
# The machine's own Go (the module asks for 1.26.6); never a toolchain download.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
echo "seaweedfs-ensure: the S3 tests need SeaweedFS's server; building $SEAWEEDFS_MODULE/weed@$SEAWEEDFS_VERSION from the Go module proxy into $dest (module cache $GOPATH; minutes the first time)" >&2
start=$SECONDS
dir="$(go mod download -json "$SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -n "$dir" && -f "$dir/go.mod" ]] || { echo "seaweedfs-ensure: error: go mod download gave no folder for $SEAWEEDFS_MODULE@$SEAWEEDFS_VERSION" >&2; exit 1; }
# Built beside, then moved into place, so a concurrent run never sees half a binary.
mkdir -p "$TOOLS/seaweedfs"
work="$(mktemp -d "$TOOLS/seaweedfs/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/bin"
(cd "$dir" && go build -trimpath -o "$work/bin/weed" ./weed) >&2
rm -rf "$dest.old"
[[ -e "$dest" ]] && mv "$dest" "$dest.old"
mv "$work" "$dest"
rm -rf "$dest.old"
# The first line of the version, read whole (a `| head` would close the pipe early).
version="$("$dest/bin/weed" version 2>&1)"
echo "seaweedfs-ensure: built in $((SECONDS - start)) s: ${version%%$'\n'*}" >&2
echo "$dest/bin/weed"
