#!/usr/bin/env bash
# An S3-compatible test server (moto, installed by scripts/s3-ensure.sh) on a free 127.0.0.1
# port, with one bucket, for the S3 tests and benchmark.
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

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() {
  # A free port in 20000..32699, below Linux's ephemeral range (see etcd-cluster.sh).
  local tries=0 p
  while (( tries++ < 50 )); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12700 ))
    port_free "$p" && { echo "$p"; return 0; }
  done
  die "no free loopback port found"
}

server_pid() {
  # The server's pid if it is alive and is this DIR's; empty otherwise.
  local dir=$1 pid
  [[ -f "$dir/pid" ]] || return 0
  pid=$(<"$dir/pid")
  [[ -r "/proc/$pid/cmdline" ]] || return 0
  if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "moto.server -H 127.0.0.1 -p $(<"$dir/port")"; then
    echo "$pid"
  fi
}

start() {
  local dir=$1 python port endpoint deadline
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [[ -z "$(server_pid "$dir")" ]] || die "a server of $dir is already running"
  python="$(bash "$here/s3-ensure.sh")"
  port="$(pick_port)"
  echo "$port" >"$dir/port"
  # setsid: the server outlives this script and is not hit by signals sent to its caller's group.
  setsid "$python" -m moto.server -H 127.0.0.1 -p "$port" </dev/null >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  endpoint="http://127.0.0.1:$port"
  deadline=$(( SECONDS + READY_TIMEOUT_S ))
  until AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test "$python" - "$endpoint" "$BUCKET" <<'PY' 2>>"$dir/log"
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
try:
    s3.create_bucket(Bucket=sys.argv[2])
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
PY
  do
    [[ -n "$(server_pid "$dir")" ]] || die "moto_server exited; its log ($dir/log):$(printf '\n'; tail -20 "$dir/log")"
    (( SECONDS < deadline )) || { stop "$dir"; die "moto_server did not answer within ${READY_TIMEOUT_S} s (log: $dir/log)"; }
    sleep 0.2
  done
  echo "$endpoint" >"$dir/endpoint"
  echo "$endpoint"
}

stop() {
  local dir=$1 pid i
  pid="$(server_pid "$dir")"
  [[ -n "$pid" ]] || return 0
  kill "$pid" 2>/dev/null || true
  for (( i = 0; i < 50; i++ )); do
    [[ -n "$(server_pid "$dir")" ]] || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

case "${1:-}" in
  start) [[ $# -eq 2 ]] || die "usage: s3-server.sh start DIR"; start "$2" ;;
  stop) [[ $# -eq 2 ]] || die "usage: s3-server.sh stop DIR"; stop "$2" ;;
  run)
    shift
    [[ $# -ge 1 ]] || die "usage: s3-server.sh run COMMAND..."
    dir="$(mktemp -d)"
    trap 'stop "$dir"; rm -rf "$dir"' EXIT
    endpoint="$(start "$dir")"
    echo "s3-server: moto on $endpoint, bucket $BUCKET" >&2
    AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
      AWS_REGION=us-east-1 "$@"
    ;;
  *) die "usage: s3-server.sh start DIR | stop DIR | run COMMAND..." ;;
esac
