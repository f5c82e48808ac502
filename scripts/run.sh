#!/usr/bin/env bash
# The main job: builds the component and the host, then runs the host's workload.
# Arguments are passed to `sequencer-host run` (try --help-less defaults first).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sequencer-target}"
SEQUENCER_COMPONENT="$(bash scripts/build-component.sh)"
export SEQUENCER_COMPONENT
cargo build --quiet --release -p sequencer-host
exec "$CARGO_TARGET_DIR/release/sequencer-host" run "$@"
