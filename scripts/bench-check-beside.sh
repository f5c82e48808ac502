#!/usr/bin/env bash
# What `check` beside a live run costs the run: the main job, paced, on top of a large redb store,
# alone and with `sequencer-host check` looping beside it (reading the run's snapshot; with
# BENCH_CHECK_ARGS=--hold-run each check also asks the run to hold its commits while it copies the
# database for redb's integrity check), alternated round by round; with BENCH_HOST_BEFORE (another
# build), also check beside by that build's run and check (`before`), for a paired comparison.
# Prints each run's ack p50, p99 and max, the checks started and passed (the last one of a run
# is usually cut short by the run's end), and the medians.
#
#   bash scripts/bench-check-beside.sh                 # a store of about 2 GB, 3 rounds
#   BENCH_RUNS=1 BENCH_STORE_EVENTS=10000 bash scripts/bench-check-beside.sh   # a quick smoke run
#
# Knobs: BENCH_RUNS (rounds, 3), BENCH_STORE_EVENTS (events per partition of the store made
# first, 2 KiB each over 8 partitions: 60000 make about 2.2 GB), BENCH_EVENTS (events per
# partition of each measured run, 10000), BENCH_RATE (commands a second, 4000), BENCH_HOST,
# BENCH_HOST_BEFORE, BENCH_COMPONENT. Needs free space for the store, a copy of it for each run,
# and a second copy for --hold-run (TMPDIR).
# Results: docs/BENCHMARKS.md#check-beside-a-live-run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_toolchain
cd "$ROOT"

runs="${BENCH_RUNS:-3}"
store_events="${BENCH_STORE_EVENTS:-60000}"
events="${BENCH_EVENTS:-10000}"
rate="${BENCH_RATE:-4000}"

step "build: the component and the host (release)"
bench_build

bench_scratch

step "the store: 8 partitions x $store_events events of 2 KiB"
"$host" --quiet --no-progress run --data "$work/base" --events "$store_events" --payload-bytes 2048 >/dev/null
echo "store.redb: $(stat -c %s "$work/base/store.redb") bytes" >&2

# one_run MODE N: a paced run on the store, alone or with check looping beside it (beside, or
# before: beside, by BENCH_HOST_BEFORE's build).
one_run() {
  local mode="$1" n="$2" started=0 checks=0 size_before bin="$host"
  # Every run starts from a copy of the same store: what one run leaves (a file grown under a
  # reader's snapshot) does not weigh on the next.
  rm -rf "$work/data"
  cp -r "$work/base" "$work/data"
  size_before="$(stat -c %s "$work/data/store.redb")"
  [[ "$mode" == before ]] && bin="$(realpath "$BENCH_HOST_BEFORE")"
  "$bin" --no-progress run --data "$work/data" --events "$events" --rate "$rate" \
    --payload-bytes 2048 >"$work/run.out" 2>&1 &
  run_pid=$!
  if [[ "$mode" != alone ]]; then
    while kill -0 "$run_pid" 2>/dev/null; do
      [[ -S "$work/data/live.sock" ]] || { sleep 0.05; continue; }
      started=$((started + 1))
      if "$bin" --quiet check --data "$work/data" ${BENCH_CHECK_ARGS:-} >"$work/check.out" 2>&1; then
        checks=$((checks + 1))
      else
        # A check the run's end cut short is not a failure; one while it goes on is.
        sleep 2
        if kill -0 "$run_pid" 2>/dev/null; then
          echo "error: check failed beside the run:" >&2; cat "$work/check.out" >&2; exit 1
        fi
      fi
    done
  fi
  wait "$run_pid" || { echo "error: the run failed:" >&2; cat "$work/run.out" >&2; exit 1; }
  run_pid=""
  local line p50 p99 max
  line="$(grep '^ack latency' "$work/run.out")"
  p50="$(sed -n 's/.*p50 \([0-9.]*\) ms.*/\1/p' <<<"$line")"
  p99="$(sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' <<<"$line")"
  max="$(sed -n 's/.*max \([0-9.]*\) ms.*/\1/p' <<<"$line")"
  echo "$mode $p50 $p99 $max $checks" >>"$work/results"
  printf '  round %d, %-6s ack p50 %6s ms  p99 %8s ms  max %8s ms  (checks: %d started, %d passed; store.redb %+d MB)\n' \
    "$n" "$mode" "$p50" "$p99" "$max" "$started" "$checks" \
    $((($(stat -c %s "$work/data/store.redb") - size_before) / 1000000)) >&2
}

modes=(alone beside)
[[ -n "${BENCH_HOST_BEFORE:-}" ]] && modes+=(before)
step "paced runs ($rate commands/s, 8 x $events events), ${modes[*]}: $runs rounds"
: >"$work/results"
for ((n = 1; n <= runs; n++)); do
  if ((n % 2)); then order=("${modes[@]}"); else mapfile -t order < <(printf '%s\n' "${modes[@]}" | tac); fi
  for mode in "${order[@]}"; do one_run "$mode" "$n"; done
done
for mode in "${modes[@]}"; do
  printf '%-6s medians: ack p50 %s ms, p99 %s ms, max %s ms\n' "$mode" \
    "$(awk -v m="$mode" '$1 == m { print $2 }' "$work/results" | median)" \
    "$(awk -v m="$mode" '$1 == m { print $3 }' "$work/results" | median)" \
    "$(awk -v m="$mode" '$1 == m { print $4 }' "$work/results" | median)"
done
step_times
