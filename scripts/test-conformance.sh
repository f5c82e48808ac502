#!/usr/bin/env bash
# The conformance suite (guest-tests/conformance/) in three of its four runners: Python's
# `wasmtime` (pytest), the component transpiled by jco (node --test) and the wasm-bindgen build
# js/pkg (node --test); the Rust runner runs in `cargo test --workspace`. Then the README's two
# examples (load the plugin from Python, and from JavaScript through jco).
#
# Installs what it needs, idempotently, into ignored folders: a venv with the pinned wasmtime and
# pytest (runners/python/.venv), jco and the preview2 shim (runners/jco/node_modules). Builds the
# component (scripts/build-component.sh) and, if js/pkg is missing, the wasm-bindgen package as
# scripts/test-js.sh does. Runs every runner, prints each one's summary, and exits non-zero if
# any failed; a failure names the runner, the scenario and the step. With --prepare it only
# installs the packages.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CONF="$ROOT/guest-tests/conformance"
PY="$CONF/runners/python"
JCO="$CONF/runners/jco"
cd "$ROOT"

step "Python venv (wasmtime, pytest)"
stamp="$PY/.venv/.sequencer-requirements"
if [[ ! -x "$PY/.venv/bin/python" ]] || ! cmp -s "$stamp" "$PY/requirements.txt"; then
  python3 -m venv "$PY/.venv"
  "$PY/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PY/requirements.txt"
  cp "$PY/requirements.txt" "$stamp"
else
  echo ".venv: up to date" >&2
fi

step "npm packages for jco"
# `npm install` from the lock file, not `npm ci`: npm 11's `npm ci` refuses this lock file
# ("Missing: @rolldown/binding-...@ from lock file", optional platform bindings it never
# records); `npm install` installs the locked versions and leaves the lock file unchanged.
stamp="$JCO/node_modules/.sequencer-lock-stamp"
if [[ ! -f "$stamp" ]] || ! cmp -s "$stamp" "$JCO/package-lock.json"; then
  (cd "$JCO" && npm install --no-audit --no-fund --loglevel=error)
  cp "$JCO/package-lock.json" "$stamp"
else
  echo "node_modules: up to date" >&2
fi

if [[ "${1:-}" == --prepare ]]; then
  exit 0 # only the packages: scripts/test.sh prepares them while cargo compiles
fi

step "the component"
SEQUENCER_COMPONENT="$(SEQUENCER_QUIET_BUILD=1 bash scripts/build-component.sh)"
export SEQUENCER_COMPONENT
echo "$SEQUENCER_COMPONENT" >&2

step "the wasm-bindgen package (js/pkg)"
if [[ -f "$ROOT/js/pkg/sequencer_bg.wasm" && -f "$ROOT/js/pkg/sequencer.js" ]]; then
  echo "js/pkg: present" >&2
else
  bash "$ROOT/scripts/js-build.sh" >/dev/null
fi

# jco transpile <component> into $1, unless it already holds this very component.
transpile() {
  local out="$1" sum
  sum="$(sha256sum "$SEQUENCER_COMPONENT" | cut -d' ' -f1)"
  if [[ -f "$out/.component-sha256" && "$(cat "$out/.component-sha256")" == "$sum" ]]; then
    echo "$out: up to date" >&2
    return
  fi
  rm -rf "$out"
  "$JCO/node_modules/.bin/jco" transpile "$SEQUENCER_COMPONENT" -o "$out" --instantiation sync --name sequencer --quiet
  echo "$sum" >"$out/.component-sha256"
}
step "jco transpile"
transpile "$JCO/gen"

declare -a summary=()
failed=0
# run NAME COMMAND...: runs one runner, shows its output, records its summary line.
run() {
  local name="$1" log status=0 line
  shift
  step "runner: $name"
  log="$(mktemp)"
  "$@" 2>&1 | tee "$log" || status=$?
  case "$name" in
    python) line="$(grep -E '[0-9]+ (passed|failed)' "$log" | tail -1 | tr -d '=' | sed 's/^ *//;s/ *$//' || true)" ;;
    examples) line="$(grep -cE '^load_plugin' "$log" || true) examples ran" ;;
    *) line="$(grep -E '^ℹ (tests|pass|fail) ' "$log" | sed 's/^ℹ //' | paste -sd, - || true)" ;;
  esac
  rm -f "$log"
  if [[ $status -ne 0 ]]; then
    failed=1
    summary+=("$(printf '%-13s FAILED  %s' "$name" "$line")")
  else
    summary+=("$(printf '%-13s ok      %s' "$name" "$line")")
  fi
}

run python "$PY/.venv/bin/python" -m pytest --rootdir "$PY" -c "$PY/pytest.ini" -q "$PY"
run jco node --test --test-reporter=spec "$JCO/conformance.test.js"
run wasm-bindgen node --test --test-reporter=spec "$CONF/runners/wasm-bindgen/conformance.test.js"

# The README's examples, run as written: Python with the venv's wasmtime; jco in a fresh folder
# with the packages installed, the component transpiled next to the example.
examples() {
  local out work
  out="$("$PY/.venv/bin/python" "$CONF/examples/load_plugin.py" "$SEQUENCER_COMPONENT")"
  echo "load_plugin.py: $out"
  [[ "$out" == "43 14 14 43" ]] || { echo "load_plugin.py: expected '43 14 14 43'" >&2; return 1; }
  work="$(mktemp -d)"
  cp "$CONF/examples/load_plugin.mjs" "$work/"
  echo '{ "type": "module" }' >"$work/package.json"
  ln -s "$JCO/node_modules" "$work/node_modules"
  (cd "$work" && node_modules/.bin/jco transpile "$SEQUENCER_COMPONENT" -o gen --instantiation sync --name sequencer --quiet)
  out="$(cd "$work" && node load_plugin.mjs)"
  rm -rf "$work"
  echo "load_plugin.mjs: $out"
  [[ "$out" == "43 14 14 43" ]] || { echo "load_plugin.mjs: expected '43 14 14 43'" >&2; return 1; }
}
run examples examples

step "conformance summary (the rust runner runs in cargo test --workspace)"
printf '%s\n' "${summary[@]}"
step_times
exit "$failed"
