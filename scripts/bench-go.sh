#!/usr/bin/env bash
# Benchmarks the Go package (go/bench): W1, W2 and W4 of docs/BENCHMARKS.md ("Beside the Go
# original": kind 1 with sequences 1..4, a transaction takes 1, 2, 3; storage in memory; a write
# completes no sooner than 100 us after it began) on three paths (per step: Start, 3 Next,
# Flush; one event per call: FlushStartNext; batches of 64: FlushStartBatch), and the empty
# call through wazero. Prints one table: medians over the rounds, and each row's time set
# against the Go original's in the same round (its time over ours).
#
# Beside it, in the same run, with rounds interleaved (the order rotating) so the machine's
# noise hits every engine alike:
#   GO_ORIGINAL=<binary>   the Go original's harness (kept outside the repository: voedger's
#                          pkg/isequencer with the same workloads and storage; it takes -only,
#                          -scale, -runs and prints rows in go/bench's tab-separated form)
#   RUST_BENCH=<binary> SEQUENCER_COMPONENT=<component>
#                          the Rust workloads bench (cargo bench -p plog-sequencer-host --bench
#                          workloads --no-run prints its path) on the component:
#                          BENCH_ENGINES=component BENCH_ONLY=W1,W2 (then W4) ... --bench
# Knobs: BENCH_SCALE (1: W1 and W2 600,000 transactions, W4 100,000), BENCH_RUNS (3 runs per
# figure, the median), BENCH_ROUNDS (1), BENCH_ONLY (empty,W1,W2,W4), BENCH_PATHS (parts of
# path names), BENCH_OUT (keep the rows there). Uses the machine's Go toolchain (as
# scripts/test-go.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
scale="${BENCH_SCALE:-1}"
runs="${BENCH_RUNS:-3}"
rounds="${BENCH_ROUNDS:-1}"
only="${BENCH_ONLY:-empty,W1,W2,W4}"
paths="${BENCH_PATHS:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rows="${BENCH_OUT:-$work/rows.tsv}"
: >"$rows"

step "build go/bench"
(cd "$ROOT/go" && go build -o "$work/gobench" ./bench)

# The Rust bench's sizes: W1 and W2 run 2,000,000 transactions at its scale 1, W4 100,000.
rust_scale_tx="$(awk -v s="$scale" 'BEGIN { printf "%g", s * 0.3 }')"

# Each engine runs one workload at a time, the engines' order rotating, so that a change of
# the machine's load between two runs hits every engine alike.
run_go() { "$work/gobench" -only "$1" -paths "$paths" -scale "$scale" -runs "$runs" >>"$rows"; }
run_original() {
  [[ -n "${GO_ORIGINAL:-}" && "$1" == W* ]] || return 0
  "$GO_ORIGINAL" -only "$1" -scale "$scale" -runs "$runs" >>"$rows"
}
run_rust() {
  [[ -n "${RUST_BENCH:-}" && "$1" == W* ]] || return 0
  : "${SEQUENCER_COMPONENT:?RUST_BENCH needs SEQUENCER_COMPONENT=<component>}"
  local s="$scale"
  [[ "$1" == W4 ]] || s="$rust_scale_tx"
  env BENCH_ENGINES=component BENCH_RUNS="$runs" SEQUENCER_COMPONENT="$SEQUENCER_COMPONENT" \
    BENCH_PATHS="per step,flush-start-next-quad,flush-start-batch" BENCH_ONLY="$1" BENCH_SCALE="$s" \
    BENCH_OUT="$work/rust.tsv" "$RUST_BENCH" --bench >/dev/null
  cat "$work/rust.tsv" >>"$rows"
}

engines=(run_go run_original run_rust)
load_before="$(cut -d" " -f1-3 /proc/loadavg)"
IFS=, read -r -a workloads <<<"$only"
for ((r = 0; r < rounds; r++)); do
  step "round $((r + 1)) of $rounds"
  for w in "${workloads[@]}"; do
    for ((k = 0; k < ${#engines[@]}; k++)); do
      "${engines[$(((k + r) % ${#engines[@]}))]}" "$w"
    done
  done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
step_times
echo
echo "load average before / after: $load_before / $load_after; scale $scale, $runs runs per figure, $rounds round(s)"
"$work/gobench" -table "$rows"
