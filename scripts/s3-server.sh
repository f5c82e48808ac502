#!/usr/bin/env bash
# A mock S3-compatible server (moto, installed by scripts/s3-ensure.sh) on a free 127.0.0.1
# port, with one bucket, for bench-durable.sh's `s3` store (the tests run on a real server:
# scripts/seaweedfs-server.sh).
#
#   s3-server.sh start DIR          start moto_server, wait (bounded) until it answers, create
#                                   the bucket `sequencer`; prints the endpoint
#                                   (http://127.0.0.1:PORT) and writes it to DIR/endpoint
#   s3-server.sh stop DIR           stop the server DIR/pid names (only if it is this DIR's)
#   s3-server.sh run COMMAND...     start one in a temp dir, run COMMAND with the environment
#                                   below set, stop the server when COMMAND ends (or fails)
#
# The environment a client needs (what `run` exports; `start` prints only the endpoint):
#   AWS_ENDPOINT_URL=http://127.0.0.1:PORT AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
#   AWS_REGION=us-east-1, and the store `objects:s3://sequencer/PREFIX`.
# The server keeps everything in memory: a stop forgets every object.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
BUCKET="${S3_TEST_BUCKET:-sequencer}"
READY_TIMEOUT_S="${S3_READY_TIMEOUT_S:-30}"

die() { echo "s3-server: error: $*" >&2; exit 1; }

# What the server's command line holds: this DIR's port (server_pid, stop_server in lib.sh).
match() { echo "moto.server -H 127.0.0.1 -p $(<"$1/port")"; }

start() {
  local dir=$1 python port endpoint
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [[ ! -f "$dir/port" || -z "$(server_pid "$dir" "$(match "$dir")")" ]] || die "a server of $dir is already running"
  python="$(bash "$here/s3-ensure.sh")"
  port="$(pick_ports 1)"
  echo "$port" >"$dir/port"
  # setsid: the server outlives this script and is not hit by signals sent to its caller's group.
  setsid "$python" -m moto.server -H 127.0.0.1 -p "$port" </dev/null >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  endpoint="http://127.0.0.1:$port"
  wait_ready moto_server "$dir" "$(match "$dir")" "$READY_TIMEOUT_S" create_bucket "$python" "$endpoint" "$dir" ||
    die "moto_server did not start"
  echo "$endpoint" >"$dir/endpoint"
  echo "$endpoint"
}

# create_bucket PYTHON ENDPOINT DIR: creates the bucket (succeeds if it is there).
create_bucket() {
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test "$1" - "$2" "$BUCKET" <<'PY' 2>>"$3/log"
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
try:
    s3.create_bucket(Bucket=sys.argv[2])
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
PY
}

stop() {
  [[ -f "$1/port" ]] || return 0
  stop_server "$1" "$(match "$1")"
}

case "${1:-}" in
  start) [[ $# -eq 2 ]] || die "usage: s3-server.sh start DIR"; start "$2" ;;
  stop) [[ $# -eq 2 ]] || die "usage: s3-server.sh stop DIR"; stop "$2" ;;
  run)
    shift
    [[ $# -ge 1 ]] || die "usage: s3-server.sh run COMMAND..."
    s3_server_run "s3-server: moto" "$@"
    ;;
  *) die "usage: s3-server.sh start DIR | stop DIR | run COMMAND..." ;;
esac
