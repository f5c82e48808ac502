#!/usr/bin/env bash
# Proves what a user gets from `cargo install --path host`: a `sequencer-host` that runs the
# main job with no other flag (the component is bundled in the binary; no SEQUENCER_COMPONENT,
# no --component), whose subcommands print the crate's version, and whose `check` passes.
# The install goes into a temporary root; the data directory and the component cache too.
#
#   bash scripts/check-install.sh            # cargo install --path host (release)
#   INSTALL_PROFILE=debug bash scripts/...   # --debug: reuses the tests' dev build (CI)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
rust_target wasm32-wasip2 # the bundled component's target (cargo install builds it)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
profile=()
wrap=()
# A dev install runs clippy as the workspace's compiler, as the default build
# (check-default-build.sh) did: the install is then that very build, not a second compilation.
[[ "${INSTALL_PROFILE:-release}" == debug ]] && profile=(--debug) && wrap=(with_clippy)

step "cargo install --path host ${profile[*]} (into a temporary root)"
"${wrap[@]}" cargo install --quiet --locked "${profile[@]}" --path host --root "$tmp/root" --target-dir "$TARGET_DIR"
bin="$tmp/root/bin/sequencer-host"

step "sequencer-host run, with no component flag or variable, in a fresh data directory"
version="$(cargo metadata --no-deps --format-version 1 |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="plog-sequencer-host"))')"
for sub in "" run check inspect; do
  got="$(env -u SEQUENCER_COMPONENT "$bin" $sub --version)"
  [[ "$got" == "sequencer-host $version" ]] || {
    echo "error: 'sequencer-host $sub --version' printed '$got', not 'sequencer-host $version'" >&2
    exit 1
  }
done
cd "$tmp"
env -u SEQUENCER_COMPONENT SEQUENCER_CACHE="$tmp/cache" "$bin" run --no-progress \
  --partitions 2 --events 300 | tee "$tmp/summary.txt"
grep -q '^check  *ok: ' "$tmp/summary.txt" || {
  echo "error: the installed binary's run has no passing check in its summary" >&2
  exit 1
}
ls "$tmp/cache/components/"*.cwasm >/dev/null || {
  echo "error: the run left no compiled component in its cache" >&2
  exit 1
}

step "a second run resumes and starts from the compiled-component cache"
env -u SEQUENCER_COMPONENT SEQUENCER_CACHE="$tmp/cache" "$bin" -v run --no-progress \
  --partitions 2 --events 300 2>"$tmp/log.txt" | tee "$tmp/summary2.txt"
grep -q 'read from the cache' "$tmp/log.txt" || {
  echo "error: the second run compiled the component again:" >&2
  cat "$tmp/log.txt" >&2
  exit 1
}
env -u SEQUENCER_COMPONENT "$bin" check
echo "ok: the installed sequencer-host ran twice on its bundled component and its data checks" >&2
step_times
