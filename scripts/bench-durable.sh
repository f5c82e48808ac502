#!/usr/bin/env bash
# The main job's durable path, side by side: `sequencer-host run` on the embedded redb store, on
# a 3-member etcd cluster, and (BENCH_STORES) on the object store's PLog in a local directory
# (`objects`) or on S3 (`s3`: moto, scripts/s3-server.sh, or with BENCH_S3_SERVER=seaweedfs the
# real server of the tests, scripts/seaweedfs-server.sh; one fresh server per run), one event per durable write (--batch-size 1) and batched (the
# default), interleaved (redb 1, redb batched, etcd 1, etcd batched, then again) so that what
# the machine does meanwhile falls on both alike. Each run starts from an empty store: a fresh
# data directory, a fresh cluster (scripts/etcd-cluster.sh, stopped on exit). Prints one row per
# store and mode: durable events/s, acknowledgement latency (numbering to durable ack) p50/p99,
# the mean time an actualization took (from `actualize` to the next start), and events per
# fsync (redb commit), per etcd append (one PLog key; several partitions' appends may share a
# transaction) or per event object, as medians over the
# runs.
#
#   bash scripts/bench-durable.sh                   # 3 rounds
#   BENCH_RUNS=1 BENCH_SCALE=0.2 bash scripts/bench-durable.sh   # a quick smoke run
#   bash scripts/bench-durable.sh --partitions 16   # arguments go to every run
#
# Knobs: BENCH_RUNS (rounds, 3), BENCH_SCALE (events factor, 1), BENCH_STORES ("redb etcd";
# also "objects", "s3", "etcd-tail-off": etcd with --own-tail off, the replays of
# actualizations read from the cluster, and "etcd-alone": the etcd store alone with the main
# job's transaction shape, no component, batched only, its packs as large as the etcd batched
# run of the same round appended, `host/benches/store_alone.rs`),
# BENCH_MODES ("one batched"), BENCH_S3_SERVER (the `s3` store's server: moto, the default, or
# seaweedfs), BENCH_BATCH (the batched runs' --batch-size; unset: the main
# job's default), BENCH_HOST (a sequencer-host binary to measure instead of building one: to
# compare two builds, run the script once with each, alternated) and BENCH_COMPONENT (the
# component it loads, instead of building one).
# Events per partition at scale 1: redb 2,500 one by one and 25,000 batched; etcd 500 one by
# one and 5,000 batched (about 2 to 10 s per run here); objects 500 and 25,000; s3 100 and 5,000.
# Builds the component and the host (release, with the features the stores need: etcd brings
# protoc and etcd into the project's tool cache, s3 brings moto or SeaweedFS).
# Results: docs/BENCHMARKS.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_toolchain
cd "$ROOT"

runs="${BENCH_RUNS:-3}"
scale="${BENCH_SCALE:-1}"
stores="${BENCH_STORES:-redb etcd}"
modes="${BENCH_MODES:-one batched}"
events() { awk -v n="$1" -v s="$scale" 'BEGIN { e = int(n * s); print (e < 1 ? 1 : e) }'; }

# The host's features: etcd (which needs protoc) and s3 only for the stores measured. The
# store-alone bench is built with the same ones: cargo builds a package's binaries beside its
# benches, into the same release folder, so a bench built with fewer features would replace the
# host measured here with one that lacks them (an `s3` run after an `etcd-alone` one failed so).
features=()
etcd=""
[[ " $stores " =~ \ etcd(-tail-off|-alone)?\  ]] && etcd=1
[[ -n "$etcd" ]] && features+=(etcd)
[[ " $stores " == *" s3 "* ]] && features+=(s3)
host_features="$(IFS=,; echo "${features[*]}")"
step "build: the component, the host (release, features: ${features[*]:-default}), their servers"
if [[ -n "$etcd" ]]; then
  PROTOC="$(bash scripts/protoc.sh)"
  export PROTOC
fi
if [[ -n "${BENCH_COMPONENT:-}" ]]; then
  SEQUENCER_COMPONENT="$(realpath "$BENCH_COMPONENT")"
else
  SEQUENCER_COMPONENT="$(bash scripts/build-component.sh)"
fi
export SEQUENCER_COMPONENT
if [[ -n "${BENCH_HOST:-}" ]]; then
  host="$(realpath "$BENCH_HOST")"
else
  cargo build --release -p plog-sequencer-host --features "$host_features"
  host="$TARGET_DIR/release/sequencer-host"
fi
if [[ " $stores " == *" etcd-alone "* ]]; then
  cargo bench --no-run -p plog-sequencer-host --features "$host_features" --bench store_alone
fi
[[ -n "$etcd" ]] && bash scripts/etcd-ensure.sh
# The S3 server's scripts: moto's (the figures in BENCHMARKS so far) or SeaweedFS's.
case "${BENCH_S3_SERVER:-moto}" in
  moto) s3_ensure=scripts/s3-ensure.sh s3_server=scripts/s3-server.sh ;;
  seaweedfs) s3_ensure=scripts/seaweedfs-ensure.sh s3_server=scripts/seaweedfs-server.sh ;;
  *) echo "error: BENCH_S3_SERVER is moto or seaweedfs, not $BENCH_S3_SERVER" >&2; exit 1 ;;
esac
[[ " $stores " == *" s3 "* ]] && bash "$s3_ensure" >/dev/null

work="$(mktemp -d)"
cluster=""
s3dir=""
cleanup() {
  [[ -n "$cluster" ]] && bash scripts/etcd-cluster.sh stop "$cluster" >/dev/null 2>&1 || true
  [[ -n "$s3dir" ]] && bash "$s3_server" stop "$s3dir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# run STORE MODE ROUND [ARG...]: one run from an empty store, with ARGs; its summary goes to
# $work/STORE-MODE-ROUND.
run() {
  local store="$1" mode="$2" round="$3" out="$work/$1-$2-$3" target batch n
  shift 3
  # The batched runs are the default main job unless BENCH_BATCH names a batch size.
  if [[ "$mode" == one ]]; then batch=(--batch-size 1)
  elif [[ -n "${BENCH_BATCH:-}" ]]; then batch=(--batch-size "$BENCH_BATCH")
  else batch=(); fi
  case "$store" in
    redb)
      [[ "$mode" == one ]] && n="$(events 2500)" || n="$(events 25000)"
      target=(--data "$work/data-$store-$mode-$round")
      ;;
    etcd | etcd-tail-off | etcd-alone)
      [[ "$mode" == one ]] && n="$(events 500)" || n="$(events 5000)"
      [[ "$store" == etcd-tail-off ]] && batch+=(--own-tail off)
      cluster="$work/cluster-$store-$mode-$round"
      mkdir -p "$cluster"
      bash scripts/etcd-cluster.sh start "$cluster" >/dev/null
      target=(--store "etcd://$(sed 's#http://##g' "$cluster/endpoints")")
      ;;
    objects)
      [[ "$mode" == one ]] && n="$(events 500)" || n="$(events 25000)"
      target=(--store objects --data "$work/data-$store-$mode-$round")
      ;;
    s3)
      [[ "$mode" == one ]] && n="$(events 100)" || n="$(events 5000)"
      s3dir="$work/s3-server-$mode-$round"
      endpoint="$(bash "$s3_server" start "$s3dir")"
      target=(--store objects:s3://sequencer/bench --data "$work/data-$store-$mode-$round")
      ;;
  esac
  echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >"$out"
  if [[ "$store" == s3 ]]; then
    AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
      "$host" --quiet --no-progress run "${target[@]}" --events "$n" "${batch[@]}" "$@" >>"$out"
  elif [[ "$store" == etcd-alone ]]; then
    # The packs the main job appended in this round's etcd batched run (90 without one).
    per_append="$({ sed -n 's/^etcd transactions.*appends: \([0-9.]*\) events each.*/\1/p' \
      "$work/etcd-batched-$round" 2>/dev/null || true; } | awk '{ printf "%d", $1 + 0.5 }')"
    STORE_ALONE_URL="${target[1]}" STORE_ALONE_EVENTS="$n" \
      STORE_ALONE_EVENTS_PER_APPEND="${per_append:-90}" \
      cargo bench -q -p plog-sequencer-host --features "$host_features" --bench store_alone >>"$out"
  else
    "$host" --quiet --no-progress run "${target[@]}" --events "$n" "${batch[@]}" "$@" >>"$out"
  fi
  echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
  if [[ "$store" == etcd* ]]; then
    bash scripts/etcd-cluster.sh stop "$cluster" >/dev/null
    cluster=""
  fi
  if [[ "$store" == s3 ]]; then
    bash "$s3_server" stop "$s3dir" >/dev/null
    s3dir=""
  fi
  printf '%-13s %-8s round %d: %s events/s\n' "$store" "$mode" "$round" \
    "$(sed -n 's/^durable events\/s *//p' "$out")" >&2
}

extra=("$@")
start=$SECONDS
step "measuring: $runs rounds of ${stores// /, }, one event per write and batched, interleaved"
for ((round = 1; round <= runs; round++)); do
  for store in $stores; do
    for mode in $modes; do
      [[ "$store" == etcd-alone && "$mode" == one ]] && continue
      run "$store" "$mode" "$round" "${extra[@]}"
    done
  done
done

# The table: medians over the rounds (and the range of events/s).
echo
printf '%-13s  %-27s  %6s  %20s  %10s  %10s  %13s  %26s  %s\n' store mode events "durable events/s" \
  "ack p50" "ack p99" "actualization" "events per write" "load (1 min, before-after)"
for store in $stores; do
  for mode in $modes; do
    [[ "$store" == etcd-alone && "$mode" == one ]] && continue
    cat "$work/$store-$mode-"* | awk -v store="$store" -v mode="$mode" '
      function median(a, n,   i, j, t) {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
      }
      /^events  / { ev = $2 }
      /^batches/ { label = ($2 == "one" ? "one event per write" : "batched (" $4 ")") }
      /^shape / { label = "store alone (" $4 " per append)" }
      /^durable events\/s/ { r[++n] = $3 }
      /^ack latency/ { p50[n] = $4; p99[n] = $7 + 0 }
      /^time actualizing/ { act[n] = $(NF - 2) }
      /^commits \(1 fsync each\)/ { sub(/.*\(/, ""); w[n] = $1; unit = "per fsync" }
      /^etcd transactions/ { sub(/.*appends: /, ""); w[n] = $1; unit = "per append" }
      /^event objects/ { w[n] = 1; if (/events per object/) { sub(/.*\(/, ""); w[n] = $1 }; unit = "per object" }
      /^load / { l[++nl] = $2 }
      END {
        for (i = 1; i <= n; i++) { rr[i] = r[i]; a[i] = p50[i]; b[i] = p99[i]; c[i] = w[i]; m[i] = act[i] }
        lo = hi = r[1]; for (i = 1; i <= n; i++) { if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i] }
        loads = ""; for (i = 1; i <= nl; i += 2) loads = loads (i > 1 ? ", " : "") l[i] "-" l[i + 1]
        printf "%-13s  %-27s  %6d  %8d (%5d-%5d)  %7.1f ms  %7.1f ms  %7.1f ms mean  %12.1f %-13s  %s\n", store,
          label, ev, median(rr, n), lo, hi,
          median(a, n), median(b, n), median(m, n), median(c, n), unit, loads
      }'
  done
done
echo
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1); $runs rounds, scale $scale, arguments: ${extra[*]:-none}; measured in $((SECONDS - start)) s"
