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
  if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "--config.file=$dir/prometheus.yml"; then
    echo "$pid"
  fi
}

start() {
  local dir=$1 prometheus port url deadline
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  [[ -z "$(server_pid "$dir")" ]] || die "a server of $dir is already running"
  prometheus="$(bash "$here/prometheus-ensure.sh")"
  port="$(pick_port)"
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
  deadline=$(( SECONDS + READY_TIMEOUT_S ))
  until curl -sf -o /dev/null "$url/-/ready"; do
    [[ -n "$(server_pid "$dir")" ]] || die "prometheus exited; its log ($dir/log):$(printf '\n'; tail -20 "$dir/log")"
    (( SECONDS < deadline )) || { stop "$dir"; die "prometheus was not ready within ${READY_TIMEOUT_S} s (log: $dir/log)"; }
    sleep 0.2
  done
  echo "$url" >"$dir/url"
  echo "$url"
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
  start) [[ $# -eq 2 ]] || die "usage: prometheus-server.sh start DIR"; start "$2" ;;
  stop) [[ $# -eq 2 ]] || die "usage: prometheus-server.sh stop DIR"; stop "$2" ;;
  *) die "usage: prometheus-server.sh start DIR | stop DIR" ;;
esac
