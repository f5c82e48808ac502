#!/usr/bin/env bash
# A Prometheus server (installed by scripts/prometheus-ensure.sh) on a free 127.0.0.1 port, for
# the test that points it at a running host: it scrapes every second the targets listed in
# DIR/targets.json (file service discovery, re-read when the file changes; none at first), in a
# job named `sequencer`, and keeps its data in DIR/data.
#
#   prometheus-server.sh start DIR   start it, wait (bounded) until /-/ready answers; prints the
#                                    address (http://127.0.0.1:PORT) and writes it to DIR/url
#   prometheus-server.sh stop DIR    stop the server DIR/pid names (only if it is this DIR's)
#
# A target is added by writing DIR/targets.json: [{"targets": ["127.0.0.1:9464"]}].
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
READY_TIMEOUT_S="${PROMETHEUS_READY_TIMEOUT_S:-30}"

die() { echo "prometheus-server: error: $*" >&2; exit 1; }

# What the server's command line holds: this DIR's config (server_pid, stop_server in lib.sh).
match() { echo "--config.file=$1/prometheus.yml"; }

start() {
  local dir=$1 prometheus port url
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [[ -z "$(server_pid "$dir" "$(match "$dir")")" ]] || die "a server of $dir is already running"
  prometheus="$(bash "$here/prometheus-ensure.sh")"
  port="$(pick_ports 1)"
  echo "$port" >"$dir/port"
  [[ -e "$dir/targets.json" ]] || echo '[]' >"$dir/targets.json"
  cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: sequencer
    file_sd_configs:
      - files: ["$dir/targets.json"]
        refresh_interval: 1s
YAML
  # setsid: the server outlives this script and is not hit by signals sent to its caller's group.
  setsid "$prometheus" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn </dev/null >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  url="http://127.0.0.1:$port"
  wait_ready prometheus "$dir" "$(match "$dir")" "$READY_TIMEOUT_S" curl -sf -o /dev/null "$url/-/ready" ||
    die "prometheus did not start"
  echo "$url" >"$dir/url"
  echo "$url"
}

stop() { stop_server "$1" "$(match "$1")"; }

case "${1:-}" in
  start) [[ $# -eq 2 ]] || die "usage: prometheus-server.sh start DIR"; start "$2" ;;
  stop) [[ $# -eq 2 ]] || die "usage: prometheus-server.sh stop DIR"; stop "$2" ;;
  *) die "usage: prometheus-server.sh start DIR | stop DIR" ;;
esac
