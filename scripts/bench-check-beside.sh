#!/usr/bin/env bash
# What `check` beside a live run costs the run: the main job, paced, on top of a large redb store,
# alone and with `sequencer-host check` looping beside it (reading the run's snapshot; with
# BENCH_CHECK_ARGS=--hold-run each check also asks the run to hold its commits while it copies the
# database for redb's integrity check), alternated round by round; with BENCH_HOST_BEFORE (another
# build), also check beside by that build's run and check (`before`), for a paired comparison.
# Prints each run's ack p50, p99 and max, the checks started and passed (the last one of a run
# is usually cut short by the run's end), and the medians. With BENCH_WINDOWS=SECS, each round
# is instead one run with the check on and off in windows of SECS seconds in turn, compared
# within the run (see windowed_run below): the machine's moments weigh on both sides alike.
#
#   bash scripts/bench-check-beside.sh                 # a store of about 2 GB, 3 rounds
#   BENCH_RUNS=1 BENCH_STORE_EVENTS=10000 bash scripts/bench-check-beside.sh   # a quick smoke run
#
# Knobs: BENCH_RUNS (rounds, 3), BENCH_STORE_EVENTS (events per partition of the store made
# first, 2 KiB each over 8 partitions: 60000 make about 2.2 GB), BENCH_EVENTS (events per
# partition of each measured run, 10000), BENCH_RATE (commands a second, 4000), BENCH_HOST,
# BENCH_HOST_BEFORE, BENCH_COMPONENT, BENCH_WINDOWS, BENCH_GUARD_MS (250), BENCH_CHECK_ARGS.
# Needs free space for the store, a copy of it for each run, and a second copy for --hold-run
# (TMPDIR).
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

# start_run BIN [ARG...]: a paced run of BIN in the background ($run_pid), on a copy of the
# store: what one run leaves (a file grown under a reader's snapshot) does not weigh on the next.
start_run() {
  local bin="$1"
  shift
  rm -rf "$work/data"
  cp -r "$work/base" "$work/data"
  "$bin" --no-progress run --data "$work/data" --events "$events" --rate "$rate" \
    --payload-bytes 2048 "$@" >"$work/run.out" 2>&1 &
  run_pid=$!
}

# check_loop BIN: BIN's check on the run's store, one after another while the run lives, each
# counted in $work/checks: pass, cut (the run's end cut it short: not a failure) or failed
# (one while the run goes on: its output in $work/check.failed, and the loop stops).
check_loop() {
  while kill -0 "$run_pid" 2>/dev/null; do
    [[ -S "$work/data/live.sock" ]] || { sleep 0.05; continue; }
    if "$1" --quiet check --data "$work/data" ${BENCH_CHECK_ARGS:-} >"$work/check.out" 2>&1; then
      echo pass >>"$work/checks"
      continue
    fi
    sleep 2
    if kill -0 "$run_pid" 2>/dev/null; then
      echo failed >>"$work/checks"
      cp "$work/check.out" "$work/check.failed"
      return
    fi
    echo cut >>"$work/checks"
  done
}

# finish_run: stops the bench if a check failed beside the run, waits for the run (stopping
# the bench if it failed).
finish_run() {
  if [[ -f "$work/check.failed" ]]; then
    echo "error: check failed beside the run:" >&2; cat "$work/check.failed" >&2; exit 1
  fi
  wait "$run_pid" || { echo "error: the run failed:" >&2; cat "$work/run.out" >&2; exit 1; }
  run_pid=""
}

# one_run MODE N: a paced run on the store, alone or with check looping beside it (beside, or
# before: beside, by BENCH_HOST_BEFORE's build).
one_run() {
  local mode="$1" n="$2" size_before bin="$host"
  size_before="$(stat -c %s "$work/base/store.redb")"
  [[ "$mode" == before ]] && bin="$(realpath "$BENCH_HOST_BEFORE")"
  start_run "$bin"
  : >"$work/checks"
  [[ "$mode" == alone ]] || check_loop "$bin"
  finish_run
  local line p50 p99 max checks
  checks="$(grep -c pass "$work/checks" || true)"
  line="$(grep '^ack latency' "$work/run.out")"
  p50="$(sed -n 's/.*p50 \([0-9.]*\) ms.*/\1/p' <<<"$line")"
  p99="$(sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' <<<"$line")"
  max="$(sed -n 's/.*max \([0-9.]*\) ms.*/\1/p' <<<"$line")"
  echo "$mode $p50 $p99 $max $checks" >>"$work/results"
  printf '  round %d, %-6s ack p50 %6s ms  p99 %8s ms  max %8s ms  (checks: %d started, %d passed; store.redb %+d MB)\n' \
    "$n" "$mode" "$p50" "$p99" "$max" "$(wc -l <"$work/checks")" "$checks" \
    $((($(stat -c %s "$work/data/store.redb") - size_before) / 1000000)) >&2
}

# pct Q: the Q-quantile (0..1) of the numbers on stdin, one a line (the nearest rank).
pct() { sort -g | awk -v q="$1" '{ v[NR] = $1 } END { i = int(NR * q); if (i < NR * q) i++; if (i < 1) i = 1; print v[i] }'; }

# spread: "P50 P99 MAX COUNT" of the numbers on stdin (nearest ranks, as pct), sorted once.
spread() {
  sort -g | awk '{ v[NR] = $1 } END {
    for (j = 1; j <= 2; j++) { q = j == 1 ? 0.5 : 0.99; i[j] = int(NR * q); if (i[j] < NR * q) i[j]++ }
    print v[i[1]], v[i[2]], v[NR], NR }'
}

# windowed_run N: one paced run on the store with check looping beside it in windows of
# BENCH_WINDOWS seconds, on and off in turn (the checks stopped with SIGSTOP, so one check goes
# on over the windows); each acknowledgement is set in the window it came in (from the run's
# --latency-log), leaving out the first BENCH_GUARD_MS (250) of each window. Prints the ack
# p50, p99 and max with the check on and off, and their ratio.
windowed_run() {
  local n="$1" win="$BENCH_WINDOWS" guard="${BENCH_GUARD_MS:-250}" state=off
  ((n % 2)) || state=on
  start_run "$host" --latency-log "$work/acks"
  until [[ -S "$work/data/live.sock" ]] || ! kill -0 "$run_pid" 2>/dev/null; do sleep 0.05; done
  : >"$work/windows" >"$work/checks"
  # The checks in a process group of their own (job control on), stopped and continued as one.
  set -m
  check_loop "$host" &
  beside_pgid=$!
  set +m
  while kill -0 "$run_pid" 2>/dev/null; do
    if [[ "$state" == on ]]; then kill -CONT -- "-$beside_pgid" 2>/dev/null || true
    else kill -STOP -- "-$beside_pgid" 2>/dev/null || true; fi
    echo "$(date +%s%3N) $state" >>"$work/windows"
    sleep "$win"
    if [[ "$state" == on ]]; then state=off; else state=on; fi
  done
  kill -CONT -- "-$beside_pgid" 2>/dev/null || true
  wait "$beside_pgid" 2>/dev/null || true
  beside_pgid=""
  finish_run
  # Each acknowledgement with the state of the window it came in, outside the guard.
  sort -n -k1,1 "$work/acks" | awk -v g="$guard" 'NR == FNR { t[k] = $1; s[k] = $2; k++; next }
    $1 >= t[0] { while (i + 1 < k && t[i + 1] <= $1) i++; if ($1 - t[i] >= g) print s[i], $2, $1 - t[i] }' \
    "$work/windows" - >"$work/classed"
  local on off late
  read -r -a on < <(awk '$1 == "on" { print $2 / 1000 }' "$work/classed" | spread)
  read -r -a off < <(awk '$1 == "off" { print $2 / 1000 }' "$work/classed" | spread)
  # The same from the later half of each window only: were what a check leaves behind to weigh
  # on the windows after it, the ratio would be higher there.
  late="$(awk -v w="$win" '$1 == "on" && $3 >= w * 500 { print $2 }' "$work/classed" | pct 0.99)"
  late="$(awk -v w="$win" '$1 == "off" && $3 >= w * 500 { print $2 }' "$work/classed" |
    pct 0.99 | awk -v on="$late" '{ printf "%.2f", on / $1 }')"
  echo "$n ${on[0]} ${on[1]} ${on[2]} ${off[0]} ${off[1]} ${off[2]} $late" >>"$work/results"
  printf '  round %d: check on  ack p50 %s ms  p99 %s ms  max %s ms (%d acks)\n' \
    "$n" "${on[0]}" "${on[1]}" "${on[2]}" "${on[3]}" >&2
  printf '           check off ack p50 %s ms  p99 %s ms  max %s ms (%d acks); p99 on/off %s; checks %d passed, %d cut; %d windows\n' \
    "${off[0]}" "${off[1]}" "${off[2]}" "${off[3]}" \
    "$(awk -v a="${on[1]}" -v b="${off[1]}" -v l="$late" 'BEGIN { printf "%.2f (later halves %s)", a / b, l }')" \
    "$(grep -c pass "$work/checks" || true)" "$(grep -c cut "$work/checks" || true)" "$(wc -l <"$work/windows")" >&2
}

if [[ -n "${BENCH_WINDOWS:-}" ]]; then
  step "one paced run a round ($rate commands/s, 8 x $events events), check on and off in windows of ${BENCH_WINDOWS} s: $runs rounds"
  : >"$work/results"
  for ((n = 1; n <= runs; n++)); do windowed_run "$n"; done
  printf 'medians of the rounds: check on ack p99 %s ms, off %s ms; p99 on/off %s\n' \
    "$(awk '{ print $3 }' "$work/results" | median)" "$(awk '{ print $6 }' "$work/results" | median)" \
    "$(awk '{ printf "%.3f\n", $3 / $6 }' "$work/results" | median)"
  echo "median of the rounds' p99 on/off in the later half of each window: $(awk '{ print $8 }' "$work/results" | median)"
  step_times
  exit 0
fi

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
