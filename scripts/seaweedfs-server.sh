#!/usr/bin/env bash
# A real S3-compatible server for the S3 tests and benchmark: SeaweedFS (`weed mini`: master,
# volume server, filer and S3 gateway in one process; installed by scripts/seaweedfs-ensure.sh) on
# free 127.0.0.1 ports, its data on the local disk in DIR/data, with one bucket and one key.
#
#   seaweedfs-server.sh start DIR [DRIVES]   start it, wait (bounded) until the bucket answers
#                                            a signed request; prints the endpoint
#                                            (http://127.0.0.1:PORT) and writes it to
#                                            DIR/endpoint. DRIVES (1 by default): the volume
#                                            server's data folders, DIR/data/drive-1..N, as
#                                            separate disks would be
#   seaweedfs-server.sh stop DIR             stop the server DIR/pid names (only if it is this
#                                            DIR's); its data stays in DIR/data
#   seaweedfs-server.sh run COMMAND...       start one in a temp dir, run COMMAND with the
#                                            environment below set, stop it when COMMAND ends
#
# The environment a client needs (what `run` exports; `start` prints only the endpoint):
#   AWS_ENDPOINT_URL=http://127.0.0.1:PORT AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
#   AWS_REGION=us-east-1, and the store `objects:s3://sequencer/PREFIX`.
# Only loopback: every port binds 127.0.0.1; telemetry, the admin UI, WebDAV and the table
# catalogs are off.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
BUCKET="${S3_TEST_BUCKET:-sequencer}"
READY_TIMEOUT_S="${SEAWEEDFS_READY_TIMEOUT_S:-60}"

die() { echo "seaweedfs-server: error: $*" >&2; exit 1; }

# What the server's command line holds: this DIR's data (server_pid, stop_server in lib.sh).
match() { echo "-dir=$1/data/drive-1"; }

# bucket_answers ENDPOINT: a signed HEAD of the bucket is answered 200 (the server is up, the
# key and the bucket made).
bucket_answers() {
  [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -I \
    --aws-sigv4 "aws:amz:us-east-1:s3" --user test:test "$1/$BUCKET")" == 200 ]]
}

start() {
  local dir=$1 drives=${2:-1} weed dirs i attempt began fresh
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [[ -z "$(server_pid "$dir" "$(match "$dir")")" ]] || die "a server of $dir is already running"
  [[ "$drives" =~ ^[1-9][0-9]*$ ]] || die "DRIVES must be a positive number, not $drives"
  weed="$(bash "$here/seaweedfs-ensure.sh")"
  dirs="$dir/data/drive-1"
  for ((i = 2; i <= drives; i++)); do dirs+=",$dir/data/drive-$i"; done
  # A server new in DIR (no data yet) starts each try on empty folders: what a weed that exited
  # at start left there (its filer's store half made) must not fail the next try too.
  [[ -e "$dir/data" ]] && fresh=0 || fresh=1
  # A port picked free can be taken by another test's server before weed binds it: weed then
  # exits at once, and starts again on other ports (3 tries, a jittered pause between).
  for attempt in 1 2 3; do
    ((fresh)) && rm -rf "$dir/data"
    for ((i = 1; i <= drives; i++)); do mkdir -p "$dir/data/drive-$i"; done
    began=$SECONDS
    launch "$dir" "$drives" "$weed" "$dirs" && return 0
    ((SECONDS - began < READY_TIMEOUT_S && attempt < 3)) || break
    echo "seaweedfs-server: weed exited at start (try $attempt of 3); again on other ports" >&2
    sleep "0.$((2 + RANDOM % 6))"
  done
  die "SeaweedFS did not start"
}

# launch DIR DRIVES WEED DIRS: one start of weed mini on free ports; prints the endpoint once
# the bucket answers, fails if weed exits or does not answer in time.
launch() {
  local dir=$1 drives=$2 weed=$3 dirs=$4 endpoint
  local -a ports
  # master, volume, filer, S3 and the admin server (it runs without its UI), each an HTTP and
  # a gRPC port: none left to a fixed default, so servers of several tests run side by side.
  mapfile -t ports < <(pick_ports 10)
  ((${#ports[@]} == 10)) || die "no free loopback ports"
  echo "${ports[6]}" >"$dir/port"
  # setsid: the server outlives this script and is not hit by signals sent to its caller's
  # group. The key and the bucket are made at start from the environment and -bucket. A
  # bucket's first write grows one volume per data folder (mini grows one in all), so that
  # its objects are spread over every folder from the start.
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test WEED_MASTER_VOLUME_GROWTH_COPY_1="$drives" \
    setsid "$weed" -logdir="$dir" \
    mini -dir="$dirs" -ip=127.0.0.1 -ip.bind=127.0.0.1 -bucket="$BUCKET" \
    -master.port="${ports[0]}" -master.port.grpc="${ports[1]}" -master.telemetry=false \
    -volume.port="${ports[2]}" -volume.port.grpc="${ports[3]}" \
    -filer.port="${ports[4]}" -filer.port.grpc="${ports[5]}" \
    -s3.port="${ports[6]}" -s3.port.grpc="${ports[7]}" -s3.port.iceberg=0 -s3.port.lance=0 \
    -webdav=false -admin.ui=false -admin.port="${ports[8]}" -admin.port.grpc="${ports[9]}" \
    </dev/null >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  endpoint="http://127.0.0.1:${ports[6]}"
  wait_ready "weed mini" "$dir" "$(match "$dir")" "$READY_TIMEOUT_S" bucket_answers "$endpoint" ||
    return 1
  echo "$endpoint" >"$dir/endpoint"
  echo "$endpoint"
}

stop() { stop_server "$1" "$(match "$1")"; }

case "${1:-}" in
  start) [[ $# -eq 2 || $# -eq 3 ]] || die "usage: seaweedfs-server.sh start DIR [DRIVES]"; start "$2" "${3:-1}" ;;
  stop) [[ $# -eq 2 ]] || die "usage: seaweedfs-server.sh stop DIR"; stop "$2" ;;
  run)
    shift
    [[ $# -ge 1 ]] || die "usage: seaweedfs-server.sh run COMMAND..."
    s3_server_run "seaweedfs-server: SeaweedFS" "$@"
    ;;
  *) die "usage: seaweedfs-server.sh start DIR [DRIVES] | stop DIR | run COMMAND..." ;;
esac
