#!/usr/bin/env bash
# What metrics cost: the main job (`sequencer-host run` on the embedded redb store, batched, the
# default options) with and without `--metrics`, alternated round by round (off then on, then on
# then off, ...) so that what the machine does meanwhile falls on both alike, each run from a
# fresh data directory; prints each run's durable events/s, ack p99 and CPU time (user + system,
# the final check included), their medians, the median of each round's on/off ratio, and the
# loss. Then the scrape time: a run of 64 partitions with `--metrics`, its workload paced, is
# scraped (`GET /metrics`, curl, a new connection each) BENCH_SCRAPES times once ready; prints
# the p50, p99 and max of the answer's time and the text's size.
#
#   bash scripts/bench-metrics.sh                     # 5 rounds of 25,000 events per partition
#   BENCH_RUNS=3 BENCH_EVENTS=10000 bash scripts/bench-metrics.sh
#
# Knobs: BENCH_RUNS (rounds, 5), BENCH_EVENTS (events per partition, 25000), BENCH_SCRAPES (200),
# BENCH_HOST (a sequencer-host binary instead of building one), BENCH_COMPONENT (the component).
# Results: docs/BENCHMARKS.md#metrics.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_toolchain
cd "$ROOT"

runs="${BENCH_RUNS:-5}"
events="${BENCH_EVENTS:-25000}"
scrapes="${BENCH_SCRAPES:-200}"

step "build: the component and the host (release)"
bench_build

bench_scratch

# one_run MODE N: the main job, with (`on`) or without (`off`) --metrics; appends "MODE events/s
# p99_ms cpu_s N" to $work/results.
one_run() {
  local mode="$1" n="$2" extra=()
  [[ "$mode" == on ]] && extra=(--metrics :0)
  local out
  out="$(/usr/bin/time -f 'cpu %U %S' "$host" --no-progress run --data "$work/data-$mode-$n" \
    --events "$events" "${extra[@]}" 2>&1)"
  rm -rf "$work/data-$mode-$n"
  local eps p99 cpu
  eps="$(awk '/^durable events\/s/ { print $3 }' <<<"$out")"
  cpu="$(awk '/^cpu / { print $2 + $3 }' <<<"$out")"
  p99="$(sed -n 's/^ack latency .*p99 \([0-9.]*\) ms.*/\1/p' <<<"$out")"
  [[ -n "$eps" && -n "$p99" ]] || { echo "error: no figures in the run's summary:" >&2; echo "$out" >&2; exit 1; }
  echo "$mode $eps $p99 $cpu $n" >>"$work/results"
  printf '  round %d, metrics %-3s  %8s durable events/s  ack p99 %5s ms  cpu %s s\n' "$n" "$mode" "$eps" \
    "$p99" "$cpu" >&2
}

step "the main job, metrics off and on, alternated: $runs rounds of 8 partitions x $events events"
: >"$work/results"
for ((n = 1; n <= runs; n++)); do
  if ((n % 2)); then one_run off "$n"; one_run on "$n"; else one_run on "$n"; one_run off "$n"; fi
done
off="$(awk '$1 == "off" { print $2 }' "$work/results" | median)"
on="$(awk '$1 == "on" { print $2 }' "$work/results" | median)"
off_p99="$(awk '$1 == "off" { print $3 }' "$work/results" | median)"
on_p99="$(awk '$1 == "on" { print $3 }' "$work/results" | median)"
off_cpu="$(awk '$1 == "off" { print $4 }' "$work/results" | median)"
on_cpu="$(awk '$1 == "on" { print $4 }' "$work/results" | median)"
paired="$(awk '{ v[$5, $1] = $2 } END { for (n = 1; v[n, "off"]; n++) print v[n, "on"] / v[n, "off"] }' \
  "$work/results" | median)"
echo "medians over $runs rounds: off $off durable events/s (ack p99 $off_p99 ms, cpu $off_cpu s)," \
  "on $on (ack p99 $on_p99 ms, cpu $on_cpu s)"
awk -v a="$off" -v b="$on" -v r="$paired" -v ca="$off_cpu" -v cb="$on_cpu" 'BEGIN {
  printf "metrics on: %+.1f %% durable events/s (medians), %+.1f %% (median of the rounds\047 on/off), %+.1f %% cpu\n",
    (b - a) * 100 / a, (r - 1) * 100, (cb - ca) * 100 / ca }'

step "the scrape time of a host with 64 partitions ($scrapes scrapes, while its workload runs)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$host" --quiet --no-progress run --data "$work/data-64" --partitions 64 --events 1000000 \
  --rate 5000 --metrics "$port" >/dev/null 2>"$work/run-64.log" &
run_pid=$!
for ((i = 0; i < 600; i++)); do
  [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz" || true)" == 200 ]] && break
  kill -0 "$run_pid" 2>/dev/null || { echo "error: the run ended:" >&2; cat "$work/run-64.log" >&2; exit 1; }
  sleep 0.1
done
((i < 600)) || { echo "error: the 64-partition run was not ready within 60 s" >&2; exit 1; }
sleep 1
for ((i = 0; i < scrapes; i++)); do
  curl -s -o "$work/scrape.txt" -w '%{time_total}\n' "http://127.0.0.1:$port/metrics" >>"$work/scrape-times"
done
sort -g "$work/scrape-times" | awk -v bytes="$(wc -c <"$work/scrape.txt")" \
  -v series="$(grep -vc '^#' "$work/scrape.txt")" '{ v[NR] = $1 * 1000 }
  END { printf "scrape of 64 partitions: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d scrapes; %d bytes, %d samples)\n",
        v[int(NR * 0.5 + 0.5)], v[int(NR * 0.99 + 0.5)], v[NR], NR, bytes, series }'
kill "$run_pid" && wait "$run_pid" 2>/dev/null || true
run_pid=""
step_times
