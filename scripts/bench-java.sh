#!/usr/bin/env bash
# Benchmarks of the Java package (java/): W1, W2 and W4 through io.github.plogsequencer on
# Chicory, per step (start, 3 next, flush), one event per call (flush-start-next-quad) and
# batches of 64 (flush-start-batch), plus the empty call, on the build-time compiled engine
# and the interpreter (java/bench/Workloads.java; docs/BENCHMARKS.md "Method"). One table.
#
#   bash scripts/bench-java.sh                                   # ~3 minutes of measuring
#   BENCH_SCALE=0.1 BENCH_RUNS=1 bash scripts/bench-java.sh      # smoke run
#   RUST_BENCH=<workloads bench binary> SEQUENCER_COMPONENT=<component> bash scripts/bench-java.sh
#
# With RUST_BENCH and SEQUENCER_COMPONENT it also runs the Rust host's bench in the same run
# (`BENCH_ENGINES=component BENCH_ONLY=W1,W2,W4 BENCH_RUNS=3 $RUST_BENCH --bench`; build it with
# `cargo bench -p plog-sequencer-host --bench workloads --no-run`) and sets each Java row
# against its component row; without them, against docs/BENCHMARKS.md's latest figures (the
# table says which). BENCH_ROUNDS (1) repeats Rust and Java in turn, interleaved, for paired
# rounds on a shared machine. Other knobs go through to the harness: BENCH_SCALE, BENCH_RUNS,
# BENCH_ONLY (W1,W2,W4,empty), BENCH_ENGINES (compiled,interpreter), BENCH_PATHS.
# BENCH_JVM_FLAGS replaces the JVM flags (default below); BENCH_HUGE_AB=1 adds a paired run of
# the batch path without -XX:-DontCompileHugeMethods.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../java"

# Two of the plugin's functions (the batch path's core) become JVM methods over HotSpot's
# 8,000-byte limit, which by default it never JIT-compiles: this flag lets it.
JVM_FLAGS="${BENCH_JVM_FLAGS:--XX:-DontCompileHugeMethods}"

repo="${MAVEN_REPO:-$HOME/.m2/repository}"
repo_opt=()
[[ -n "${MAVEN_REPO:-}" ]] && repo_opt=(-Dmaven.repo.local="$MAVEN_REPO")
offline=()
[[ -f "$repo/.plog-sequencer-warm-$(sha256sum pom.xml | cut -c1-16)" ]] && offline=(-o)
[[ ${#offline[@]} -eq 0 ]] && echo "bench-java: Maven resolves its dependencies into $repo" >&2
mvn -q -B -Dstyle.color=never "${repo_opt[@]}" "${offline[@]}" package -DskipTests
cp="target/plog-sequencer-0.1.0.jar:$(cat target/classpath.txt)"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(java -version 2>&1 | head -1)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); JVM flags: $JVM_FLAGS; commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

rust_tsv=""
if [[ -n "${RUST_BENCH:-}" ]]; then
  : "${SEQUENCER_COMPONENT:?RUST_BENCH needs SEQUENCER_COMPONENT (the component the Rust bench loads)}"
  rust_tsv="$(mktemp)"
  trap 'rm -f "$rust_tsv"' EXIT
fi

for round in $(seq 1 "${BENCH_ROUNDS:-1}"); do
  [[ "${BENCH_ROUNDS:-1}" -gt 1 ]] && echo "--- round $round"
  if [[ -n "$rust_tsv" ]]; then
    # The Rust host's own table goes to stderr; its rows (BENCH_OUT) into the Java table.
    echo "rust: BENCH_ENGINES=component BENCH_ONLY=W1,W2,W4 BENCH_RUNS=3 $RUST_BENCH --bench" >&2
    BENCH_ENGINES=component BENCH_ONLY=W1,W2,W4 BENCH_RUNS=3 BENCH_OUT="$rust_tsv" \
      SEQUENCER_COMPONENT="$SEQUENCER_COMPONENT" "$RUST_BENCH" --bench >&2
  fi
  # shellcheck disable=SC2086
  RUST_TSV="$rust_tsv" java $JVM_FLAGS -cp "$cp" bench/Workloads.java
  if [[ "${BENCH_HUGE_AB:-0}" == 1 ]]; then
    echo "--- the batch path without -XX:-DontCompileHugeMethods (HotSpot's default)"
    RUST_TSV="$rust_tsv" BENCH_ENGINES=compiled BENCH_PATHS=batches java -cp "$cp" bench/Workloads.java
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
