#!/usr/bin/env bash
# The main job: builds the component and the host (release), then runs the command-processor
# workload on the embedded store in ./sequencer-data (created on the first run, resumed after).
# Arguments are passed to `sequencer-host run` (see `--help`); the defaults take a few seconds.
#   bash scripts/run.sh                       # 8 partitions x 2500 events, 1% failing
#   bash scripts/run.sh --store memory        # nothing kept
#   bash scripts/run.sh --data /tmp/d --events 10000 --fail-rate 0.05
# Then: "$CARGO_TARGET_DIR/release/sequencer-host" inspect | check  (--data DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sequencer-target}"
SEQUENCER_COMPONENT="$(bash scripts/build-component.sh)"
export SEQUENCER_COMPONENT
cargo build --quiet --release -p sequencer-host
exec "$CARGO_TARGET_DIR/release/sequencer-host" run "$@"
