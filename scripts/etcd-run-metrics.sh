#!/usr/bin/env bash
# One main job on a fresh 3-member etcd cluster, with what the cluster did meanwhile: the
# members' CPU and their transaction, range and put counts, diffed from their /metrics
# (summed over the three members), beside the run's own summary lines.
#
#   bash scripts/etcd-run-metrics.sh HOST COMPONENT [RUN-ARG...]
#
# HOST is a sequencer-host binary built with the etcd feature, COMPONENT the sequencer
# component; RUN-ARGs go to `sequencer-host run` (e.g. `--flush-interval-ms 200`). EVENTS sets
# the events per partition (5,000: the main job's default; 20,000 for the long runs in
# docs/BENCHMARKS.md). Needs curl. To compare two builds, alternate them.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 HOST COMPONENT [RUN-ARG...]" >&2; exit 2; }
host="$(realpath "$1")"; component="$(realpath "$2")"; shift 2
cd "$(dirname "$0")/.."
command -v curl >/dev/null || { echo "etcd-run-metrics: error: needs curl" >&2; exit 1; }
dir="$(mktemp -d)"
trap 'bash scripts/etcd-cluster.sh stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
bash scripts/etcd-cluster.sh start "$dir" >/dev/null
endpoints="$(cat "$dir/endpoints")"
snapshot() {
  for e in ${endpoints//,/ }; do curl -s "$e/metrics"; done | awk '
    /^process_cpu_seconds_total/ { cpu += $2 }
    /^etcd_mvcc_txn_total/ { txn += $2 } /^etcd_mvcc_range_total/ { range += $2 }
    /^etcd_mvcc_put_total/ { put += $2 }
    END { printf "%s %s %s %s\n", cpu, txn, range, put }'
}
before="$(snapshot)"
SEQUENCER_COMPONENT="$component" "$host" --quiet --no-progress run \
  --store "etcd://${endpoints//http:\/\//}" --events "${EVENTS:-5000}" "$@" >"$dir/out"
after="$(snapshot)"
grep -E "^(durable events/s|ack latency|etcd transactions|time actualizing)" "$dir/out"
echo "$before $after" | awk '{ printf "etcd members         CPU %.2f s; mvcc txn %d, range %d, put %d (3 members summed)\n", $5 - $1, $6 - $2, $7 - $3, $8 - $4 }'
