#!/usr/bin/env bash
# The sequencer's benchmarks: workloads W1..W6 on three engines (the native core, the component
# under wasmtime, the wasm-bindgen build in Node), printed as one table (median of several runs).
# Builds what it needs: the component (scripts/build-component.sh), the JS package
# (scripts/js-build.sh) and the Rust bench (release).
#   bash scripts/bench.sh                        # full size (a few minutes)
#   BENCH_SCALE=0.1 BENCH_RUNS=1 bash scripts/bench.sh   # a quick smoke run
# Knobs: BENCH_SCALE (size factor, 1), BENCH_RUNS (runs per figure, 3), BENCH_ONLY (e.g. W1,W3),
# BENCH_PATHS (only the paths named, e.g. "batches of 64 (flush-start-batch)"),
# BENCH_WRITE_INTERVAL_US (group commit window, 100), BENCH_PAGE_EVENTS (PLog page, 4096).
# Results: docs/BENCHMARKS.md.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

step "build: the component, the JS package, the bench"
SEQUENCER_COMPONENT="$(bash scripts/build-component.sh)"
export SEQUENCER_COMPONENT
bash scripts/js-build.sh >/dev/null
cargo bench --quiet -p plog-sequencer-host --bench workloads --no-run 2>/dev/null ||
  cargo bench -p plog-sequencer-host --bench workloads --no-run

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
start=$(date +%s)
step "native core and component (cargo bench -p plog-sequencer-host --bench workloads)"
BENCH_OUT="$out/rust.tsv" cargo bench --quiet -p plog-sequencer-host --bench workloads >"$out/rust.txt"
step "wasm-bindgen build in Node (node js/bench/workloads.mjs)"
BENCH_OUT="$out/node.tsv" node --expose-gc js/bench/workloads.mjs

echo
node js/bench/table.mjs "$out/rust.tsv" "$out/node.tsv"
echo
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1); load $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"
echo "scale ${BENCH_SCALE:-1}, ${BENCH_RUNS:-3} runs per figure (median); measured in $(($(date +%s) - start)) s"
