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
#    host's elapsed time (each host's own summary), medians over the rounds.
#
# Knobs: BENCH_PARTS ("failover throughput": either or both), BENCH_HOST (a built
# sequencer-host with the etcd feature, to skip the build), and the FAILOVER_* knobs of the bench.
# Builds the host (release, feature etcd; protoc and etcd come into the project's tool cache).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

runs="${BENCH_RUNS:-3}"
events="${BENCH_EVENTS:-5000}"
parts="${BENCH_PARTS:-failover throughput}"

step "build: the host (release, feature etcd), the failover bench, etcd"
PROTOC="$(bash scripts/protoc.sh)"
export PROTOC
if [[ -n "${BENCH_HOST:-}" ]]; then
  host="$(realpath "$BENCH_HOST")"
else
  cargo build --release -p plog-sequencer-host --features etcd
  host="$TARGET_DIR/release/sequencer-host"
fi
[[ " $parts " == *" failover "* ]] &&
  cargo bench --no-run -p plog-sequencer-host --features etcd --bench failover
bash scripts/etcd-ensure.sh

work="$(mktemp -d)"
cluster=""
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [[ -n "$cluster" ]] && bash scripts/etcd-cluster.sh stop "$cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
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
  step "failover: ${FAILOVER_KILLS:-20} kills and ${FAILOVER_TERMS:-10} SIGTERMs of 3 hosts"
  fresh_cluster failover
  mkdir -p "$work/failover-logs"
  FAILOVER_URL="$url" FAILOVER_HOST="$host" FAILOVER_LOGS="$work/failover-logs" \
    cargo bench -q -p plog-sequencer-host --features etcd --bench failover | tee "$work/failover"
fi

# hosts ROUND N: the main job by N hosts with --host-name (0: one host without); each host's
# summary in $work/hosts-N-ROUND-I.
hosts() {
  local round=$1 n=$2 i
  fresh_cluster "hosts-$n-$round"
  pids=()
  if (( n == 0 )); then
    "$host" --quiet --no-progress run --store "$url" --events "$events" >"$work/hosts-0-$round-0" &
    pids+=($!)
  else
    for ((i = 0; i < n; i++)); do
      "$host" --quiet --no-progress run --store "$url" --events "$events" --host-name "h$i" \
        >"$work/hosts-$n-$round-$i" &
      pids+=($!)
    done
  fi
  for p in "${pids[@]}"; do wait "$p"; done
  pids=()
  "$host" --quiet --no-progress check --store "$url" >/dev/null
  # Events/s: every partition's events over the longest elapsed time of the hosts.
  cat "$work/hosts-$n-$round-"* | awk -v ev="$events" '
    /^partitions +[0-9]/ { p = $2 } /^elapsed / { if ($2 > e) e = $2 }
    END { printf "%d\n", p * ev / e }' >"$work/rate-$n-$round"
  printf 'hosts %s round %d: %s events/s\n' "$n" "$round" "$(<"$work/rate-$n-$round")" >&2
}

if [[ " $parts " == *" throughput "* ]]; then
  step "throughput: $runs rounds of 1 host without membership, then 1, 2 and 3 hosts with it"
  for ((round = 1; round <= runs; round++)); do
    for n in 0 1 2 3; do hosts "$round" "$n"; done
  done
  echo
  printf '%-36s  %16s  %s\n' hosts "durable events/s" "rounds"
  for n in 0 1 2 3; do
    case $n in
      0) label="1, without --host-name (no epoch)" ;;
      *) label="$n, with --host-name" ;;
    esac
    sort -n "$work/rate-$n-"* | awk -v label="$label" '
      { r[++k] = $1 } END {
        m = k % 2 ? r[(k + 1) / 2] : (r[k / 2] + r[k / 2 + 1]) / 2
        s = ""; for (i = 1; i <= k; i++) s = s (i > 1 ? ", " : "") r[i]
        printf "%-36s  %16d  %s\n", label, m, s }'
  done
fi
echo
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1); load now $(cut -d' ' -f1-3 /proc/loadavg)"
step_times
