#!/usr/bin/env bash
# Many hosts on one etcd cluster, measured: failover, handover and throughput (results in
# docs/BENCHMARKS.md):
#
# 1. Failover and handover times: host/benches/failover.rs on a fresh 3-member cluster, three
#    `sequencer-host run --host-name` processes, FAILOVER_KILLS SIGKILLs (20) and
#    FAILOVER_TERMS SIGTERMs (10), each host started again under its name afterwards; times from
#    a watch on the cluster (see the bench's doc). Ends with `check`.
# 2. Throughput: the main job (batched, 8 partitions, BENCH_EVENTS events each, 5,000) on a
#    fresh cluster per run, by one host without --host-name (every partition, no epoch in its
#    transactions) and by 1, 2 and 3 hosts with --host-name, started at once; BENCH_RUNS
#    rounds (3), interleaved. A row's events/s is every partition's events over the longest
#    host's elapsed time (each host's own summary), medians over the rounds. With BENCH_PLOGS
#    holding "s3", the same 1, 2 and 3 hosts again on the composite store in the same rounds:
#    the PLog on S3 (SeaweedFS, a fresh server per run), the rest on the cluster.
#
# Knobs: BENCH_PARTS ("failover throughput": either or both), FAILOVER_PLOG (where the failover
# runs keep the PLog: etcd, the default, or dir: the composite store, the PLog in a local
# directory), BENCH_PLOGS (where the throughput
# runs keep the PLog: "etcd s3", the default, or either), BENCH_HOST (a built sequencer-host with
# the etcd and s3 features, to skip the build), BENCH_KEEP (set: the work folder, the hosts'
# logs and the PLogs, is kept for a look afterwards), and the FAILOVER_* knobs of the bench.
# Builds the host (release, features etcd and s3; protoc, etcd and SeaweedFS come into the
# project's tool cache).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

runs="${BENCH_RUNS:-3}"
events="${BENCH_EVENTS:-5000}"
parts="${BENCH_PARTS:-failover throughput}"
plogs="${BENCH_PLOGS:-etcd s3}"

step "build: the host (release, features etcd and s3), the failover bench, etcd, SeaweedFS"
PROTOC="$(bash scripts/protoc.sh)"
export PROTOC
if [[ -n "${BENCH_HOST:-}" ]]; then
  host="$(realpath "$BENCH_HOST")"
else
  cargo build --release -p plog-sequencer-host --features etcd,s3
  host="$TARGET_DIR/release/sequencer-host"
fi
[[ " $parts " == *" failover "* ]] &&
  cargo bench --no-run -p plog-sequencer-host --features etcd --bench failover
bash scripts/etcd-ensure.sh
[[ " $plogs " == *" s3 "* ]] && bash scripts/seaweedfs-ensure.sh >/dev/null

work="$(mktemp -d)"
cluster=""
s3dir=""
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [[ -n "$s3dir" ]] && bash scripts/seaweedfs-server.sh stop "$s3dir" >/dev/null 2>&1 || true
  [[ -n "$cluster" ]] && bash scripts/etcd-cluster.sh stop "$cluster" >/dev/null 2>&1 || true
  if [[ -n "${BENCH_KEEP:-}" ]]; then
    echo "kept the hosts' logs and PLogs in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

fresh_cluster() {
  [[ -n "$cluster" ]] && bash scripts/etcd-cluster.sh stop "$cluster" >/dev/null
  cluster="$work/cluster-$1"
  mkdir -p "$cluster"
  bash scripts/etcd-cluster.sh start "$cluster" >/dev/null
  url="etcd://$(sed 's#http://##g' "$cluster/endpoints")"
}

if [[ " $parts " == *" failover "* ]]; then
  step "failover: ${FAILOVER_KILLS:-20} kills and ${FAILOVER_TERMS:-10} SIGTERMs of 3 hosts (PLog on ${FAILOVER_PLOG:-etcd})"
  fresh_cluster failover
  mkdir -p "$work/failover-logs"
  plog_dir=""
  if [[ "${FAILOVER_PLOG:-etcd}" == dir ]]; then
    plog_dir="$work/failover-plog"
    url="$url?plog=objects:$plog_dir"
  fi
  FAILOVER_URL="$url" FAILOVER_PLOG_DIR="$plog_dir" FAILOVER_HOST="$host" \
    FAILOVER_LOGS="$work/failover-logs" \
    cargo bench -q -p plog-sequencer-host --features etcd --bench failover | tee "$work/failover"
fi

# hosts PLOG ROUND N: the main job by N hosts with --host-name (0: one host without), the PLog
# on the cluster (PLOG etcd) or on S3 (PLOG s3: the composite store); each host's summary in
# $work/hosts-PLOG-N-ROUND-I.
hosts() {
  local plog=$1 round=$2 n=$3 i store out="$work/hosts-$1-$3-$2"
  fresh_cluster "hosts-$plog-$n-$round"
  store="$url"
  local env=()
  if [[ "$plog" == s3 ]]; then
    [[ -n "$s3dir" ]] && bash scripts/seaweedfs-server.sh stop "$s3dir" >/dev/null
    s3dir="$work/s3-$n-$round"
    env=(AWS_ENDPOINT_URL="$(bash scripts/seaweedfs-server.sh start "$s3dir")"
      AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1)
    store="$url?plog=objects:s3://sequencer/bench"
  fi
  pids=()
  if (( n == 0 )); then
    env "${env[@]}" "$host" --quiet --no-progress run --store "$store" --events "$events" \
      >"$out-0" &
    pids+=($!)
  else
    for ((i = 0; i < n; i++)); do
      env "${env[@]}" "$host" --quiet --no-progress run --store "$store" --events "$events" \
        --host-name "h$i" >"$out-$i" &
      pids+=($!)
    done
  fi
  for p in "${pids[@]}"; do wait "$p"; done
  pids=()
  env "${env[@]}" "$host" --quiet --no-progress check --store "$store" >/dev/null
  # Events/s: every partition's events over the longest elapsed time of the hosts.
  cat "$out-"* | awk -v ev="$events" '
    /^partitions +[0-9]/ { p = $2 } /^elapsed / { if ($2 > e) e = $2 }
    END { printf "%d\n", p * ev / e }' >"$work/rate-$plog-$n-$round"
  printf 'PLog on %s, hosts %s, round %d: %s events/s\n' "$plog" "$n" "$round" \
    "$(<"$work/rate-$plog-$n-$round")" >&2
}

if [[ " $parts " == *" throughput "* ]]; then
  step "throughput: $runs rounds of 1 host without membership, then 1, 2 and 3 with it (PLog on: $plogs)"
  for ((round = 1; round <= runs; round++)); do
    for plog in $plogs; do
      for n in 0 1 2 3; do
        [[ "$plog" == s3 && $n == 0 ]] && continue
        hosts "$plog" "$round" "$n"
      done
    done
  done
  echo
  printf '%-46s  %16s  %s\n' hosts "durable events/s" "rounds"
  for plog in $plogs; do
    for n in 0 1 2 3; do
      [[ -e "$work/rate-$plog-$n-1" ]] || continue
      case $n in
        0) label="1, without --host-name (no epoch)" ;;
        *) label="$n, with --host-name" ;;
      esac
      [[ "$plog" == s3 ]] && label="$label, PLog on S3" || label="$label, PLog on etcd"
      sort -n "$work/rate-$plog-$n-"* | awk -v label="$label" '
        { r[++k] = $1 } END {
          m = k % 2 ? r[(k + 1) / 2] : (r[k / 2] + r[k / 2 + 1]) / 2
          s = ""; for (i = 1; i <= k; i++) s = s (i > 1 ? ", " : "") r[i]
          printf "%-46s  %16d  %s\n", label, m, s }'
    done
  done
fi
echo
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1); load now $(cut -d' ' -f1-3 /proc/loadavg)"
step_times
