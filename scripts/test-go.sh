#!/usr/bin/env bash
# Checks and tests the Go package (go/): gofmt, go vet, go test ./... (unit tests, every
# conformance scenario of guest-tests/conformance/scenarios on the core module, and the
# kill-and-restart test of a child process on a durable file store), the package's tests again
# under the race detector (where cgo is there for it), then runs the examples
# (go/examples/quickstart must print "43 14 14"; go/examples/durable must resume after a
# restart). Uses the machine's Go toolchain (go 1.25 or later on PATH; GOTOOLCHAIN=local, so
# none is downloaded) and Go's own caches (GOMODCACHE, GOCACHE: ~/go/pkg/mod, ~/.cache/go-build
# by default, outside the clone); the modules go/go.sum names come from the Go module proxy the
# first time, and the script says which it downloads. Nothing is vendored.
#
# `--compile` only fills Go's build cache (vet, the test programs, the race detector's build of
# the standard library) and runs nothing: scripts/test.sh starts it niced while the Rust tests
# mostly wait on their servers, so the checks below find their builds done (77 s of a cold run's
# Go step was compiling).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT/go"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
race_ok() { [[ "$(go env CGO_ENABLED)" == 1 ]] && command -v "$(go env CC)" >/dev/null; }
if [[ "${1:-}" == --compile ]]; then
  go vet ./...
  go test -count=1 -run '^$' ./... >/dev/null
  if race_ok; then go test -race -count=1 -run '^$' . >/dev/null; fi
  exit 0
fi

step "the Go toolchain and modules"
if ! command -v go >/dev/null; then
  echo "error: no Go toolchain on PATH: the Go package needs go 1.25 or later (https://go.dev/dl/)" >&2
  exit 1
fi
version="$(go env GOVERSION)"
minor="$(sed -E 's/^go1\.([0-9]+).*/\1/' <<<"$version")"
if [[ ! "$minor" =~ ^[0-9]+$ ]] || ((minor < 25)); then
  echo "error: $version on PATH; the Go package needs go 1.25 or later" >&2
  exit 1
fi
modcache="$(go env GOMODCACHE)"
missing=()
while read -r path ver; do
  [[ -n "$path" ]] || continue
  [[ -f "$modcache/cache/download/$path/@v/$ver.zip" ]] || missing+=("$path@$ver")
done < <(go mod edit -json | sed -n 's/.*"Path": "\([^"]*\)",.*/\1/p;s/.*"Version": "\([^"]*\)".*/\1/p' | paste - -)
if ((${#missing[@]})); then
  echo "installing from the Go module proxy into $modcache: ${missing[*]}" >&2
  go mod download
fi
echo "$version; modules in $modcache, builds in $(go env GOCACHE)" >&2

step "gofmt -l"
unformatted="$(gofmt -l .)"
if [[ -n "$unformatted" ]]; then
  echo "error: not gofmt-formatted (run gofmt -w go/):" >&2
  echo "$unformatted" >&2
  exit 1
fi

step "go vet ./..."
go vet ./...

step "go test ./... (unit tests, the conformance scenarios, kill and restart)"
go test -count=1 ./...

step "go test -race (the package: its goroutine beside the command processor's lock-free calls)"
# The race detector needs cgo (a C compiler); the package itself does not.
if race_ok; then
  go test -race -count=1 .
else
  echo "skipped: the race detector needs cgo and a C compiler ($(go env CC))" >&2
fi

step "the examples"
got="$(go run ./examples/quickstart)"
if [[ "$got" != "43 14 14" ]]; then
  echo "error: examples/quickstart printed '$got', not '43 14 14'" >&2
  exit 1
fi
echo "examples/quickstart: $got" >&2
# README.md's "Embedding from Go" shows the example's main function as it is.
python3 - "$ROOT/go/examples/quickstart/main.go" "$ROOT/README.md" <<'PY'
import sys
src, readme = open(sys.argv[1]).read(), open(sys.argv[2]).read()
body = src[src.index("func main() {"):].rstrip("\n")
sys.exit(0 if body in readme else "README.md does not show go/examples/quickstart's main as it is: copy it into 'Embedding from Go'")
PY
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
go run ./examples/durable -dir "$dir" -events 3 >/dev/null
second="$(go run ./examples/durable -dir "$dir" -events 2)"
if ! grep -q '^event at PLog offset 4: sequence 1 = 4, sequence 2 = 1003$' <<<"$second" ||
  ! grep -q 'PLog up to offset 5, view written up to offset 5$' <<<"$second"; then
  echo "error: examples/durable did not resume after a restart:" >&2
  echo "$second" >&2
  exit 1
fi
echo "examples/durable: resumed at offset 4 after a restart" >&2
step_times
