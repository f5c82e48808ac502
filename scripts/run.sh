#!/usr/bin/env bash
# The main job: builds the component and the host (release), then runs the command-processor
# workload on the embedded store in ./sequencer-data (created on the first run, resumed after).
# Needs only a Rust toolchain (it adds the wasm32-wasip2 target if missing). Arguments go to
# `sequencer-host run` (see `--help`):
#   bash scripts/run.sh                       # 8 partitions x 2500 events, 1% failing
#   bash scripts/run.sh --store memory        # nothing kept
#   bash scripts/run.sh --data /tmp/d --events 10000 --fail-rate 0.05
# Then: cargo run --release -q -p plog-sequencer-host -- inspect | check   (--data DIR)
# SEQUENCER_PROFILE picks the host's cargo profile (default release; CI uses dev, whose
# dependencies its tests have already built).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
ensure_toolchain
profile="${SEQUENCER_PROFILE:-release}"
bin_dir="$TARGET_DIR/$([[ "$profile" == dev ]] && echo debug || echo "$profile")"

if [[ ! -x "$bin_dir/sequencer-host" ]]; then
  echo "run.sh: first build of the component and the host (profile $profile); on a 2-core machine this takes about 4 to 5 minutes, later runs start at once" >&2
fi
echo "run.sh: building the component (cargo rustc -p plog-sequencer --crate-type cdylib --target wasm32-wasip2)" >&2
SEQUENCER_COMPONENT="$(bash scripts/build-component.sh)"
export SEQUENCER_COMPONENT
echo "run.sh: building the host (cargo build --profile $profile -p plog-sequencer-host)" >&2
cargo build --profile "$profile" -p plog-sequencer-host
echo "run.sh: running sequencer-host run $*" >&2
exec "$bin_dir/sequencer-host" run "$@"
