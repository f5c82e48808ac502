#!/usr/bin/env bash
# The conformance suite (guest-tests/conformance/) in three of its four runners: Python (pytest,
# through the `plog-sequencer` package of python/, installed from its wheel), the component
# transpiled by jco (node --test) and the wasm-bindgen build js/pkg (node --test); the Rust
# runner runs in `cargo test --workspace`. Then the Python package's own tests (python/tests/),
# docs/PLUGIN.md's two examples (load the plugin from Python, and from JavaScript through jco), and
# the Python wheel installed with pip into a fresh venv running python/examples/quickstart.py,
# and the plugin artifact's manifest and archive checked.
#
# Installs what it needs, idempotently, into ignored folders: a venv with pytest and the pinned
# wasmtime (runners/python/.venv) into which the wheel built by scripts/build-plugin.sh is
# installed (again whenever it changes), jco and the preview2 shim (runners/jco/node_modules).
# Builds the component and the plugin (scripts/build-plugin.sh) and, if js/pkg is missing, the
# wasm-bindgen package as scripts/test-js.sh does. Runs every runner, prints each one's summary,
# and exits non-zero if any failed; a failure names the runner, the scenario and the step.
#
#   --prepare          only install the packages (scripts/test.sh runs it while cargo compiles)
#   --only NAME,...    run only these of: python, python-package, python-wheel, plugin, jco,
#                      wasm-bindgen, examples (and prepare only what they need)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CONF="$ROOT/guest-tests/conformance"
PY="$CONF/runners/python"
JCO="$CONF/runners/jco"
cd "$ROOT"

ALL="python,python-package,python-wheel,plugin,jco,wasm-bindgen,examples"
only="$ALL"
prepare=0
while (($#)); do
  case "$1" in
    --prepare) prepare=1 ;;
    --only)
      only="${2:?--only needs a list, e.g. --only python,python-wheel}"
      shift
      ;;
    *)
      echo "error: unknown argument $1 (--prepare, --only $ALL)" >&2
      exit 2
      ;;
  esac
  shift
done
for name in ${only//,/ }; do
  [[ ",$ALL," == *",$name,"* ]] || { echo "error: --only: unknown runner $name (one of $ALL)" >&2; exit 2; }
done
# wanted NAME...: whether any of the runners named was asked for.
wanted() {
  local n
  for n in "$@"; do [[ ",$only," == *",$n,"* ]] && return 0; done
  return 1
}

if wanted python python-package examples; then
  step "Python venv (pytest, wasmtime)"
  stamp="$PY/.venv/.sequencer-requirements"
  if [[ ! -x "$PY/.venv/bin/python" ]] || ! cmp -s "$stamp" "$PY/requirements.txt"; then
    python3 -m venv "$PY/.venv"
    "$PY/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PY/requirements.txt"
    cp "$PY/requirements.txt" "$stamp"
    rm -f "$PY/.venv/.sequencer-wheel" # a new venv gets the wheel again
  else
    echo ".venv: up to date" >&2
  fi
fi

if wanted jco examples; then
  step "npm packages for jco"
  # `npm install` from the lock file, not `npm ci`: npm 11's `npm ci` refuses this lock file
  # ("Missing: @rolldown/binding-...@ from lock file", optional platform bindings it never
  # records); `npm install --no-save` installs the locked versions and leaves the lock file
  # unchanged (without --no-save, npm 11 rewrites it with those bindings added).
  stamp="$JCO/node_modules/.sequencer-lock-stamp"
  if [[ ! -f "$stamp" ]] || ! cmp -s "$stamp" "$JCO/package-lock.json"; then
    (cd "$JCO" && npm install --no-save --no-audit --no-fund --loglevel=error)
    cp "$JCO/package-lock.json" "$stamp"
  else
    echo "node_modules: up to date" >&2
  fi
fi

if wanted python python-package python-wheel plugin examples; then
  step "the Python build venv (scripts/build-plugin.sh --prepare)"
  bash scripts/build-plugin.sh --prepare
fi

if ((prepare)); then
  exit 0 # only the packages: scripts/test.sh prepares them while cargo compiles
fi

step "the component and the plugin (scripts/build-plugin.sh)"
SEQUENCER_COMPONENT="$(SEQUENCER_QUIET_BUILD=1 bash scripts/build-component.sh)"
export SEQUENCER_COMPONENT
mapfile -t plugin < <(SEQUENCER_QUIET_BUILD=1 bash scripts/build-plugin.sh)
WHEEL="${plugin[2]:?scripts/build-plugin.sh printed no wheel}"
printf '%s\n' "$SEQUENCER_COMPONENT" "${plugin[@]}" >&2

if wanted python python-package examples; then
  step "the wheel into the runner's venv"
  stamp="$PY/.venv/.sequencer-wheel"
  sum="$(sha256sum "$WHEEL" | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" ]]; then
    echo "$(basename "$WHEEL"): installed" >&2
  else
    "$PY/.venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"
    echo "$sum" >"$stamp"
  fi
fi

if wanted wasm-bindgen; then
  step "the wasm-bindgen package (js/pkg)"
  if [[ -f "$ROOT/js/pkg/sequencer_bg.wasm" && -f "$ROOT/js/pkg/sequencer.js" ]]; then
    echo "js/pkg: present" >&2
  else
    bash "$ROOT/scripts/js-build.sh" >/dev/null
  fi
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
if wanted jco; then
  step "jco transpile"
  transpile "$JCO/gen"
fi

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
    python | python-package) line="$(grep -E '[0-9]+ (passed|failed)' "$log" | tail -1 | tr -d '=' | sed 's/^ *//;s/ *$//' || true)" ;;
    python-wheel) line="$(grep -E '^quickstart.py: ' "$log" | tail -1 || true)" ;;
    plugin) line="$(grep -E '^plugin manifest: ' "$log" | sed 's/^plugin manifest: //' || true)" ;;
    examples) line="$(grep -cE '^load_plugin' "$log" || true) examples ran" ;;
    *) line="$(grep -E '^ℹ (tests|pass|fail) ' "$log" | sed 's/^ℹ //' | paste -sd, - || true)" ;;
  esac
  rm -f "$log"
  if [[ $status -ne 0 ]]; then
    failed=1
    summary+=("$(printf '%-15s FAILED  %s' "$name" "$line")")
  else
    summary+=("$(printf '%-15s ok      %s' "$name" "$line")")
  fi
}

wanted python && run python "$PY/.venv/bin/python" -m pytest --rootdir "$PY" -c "$PY/pytest.ini" -q "$PY"
wanted python-package && run python-package "$PY/.venv/bin/python" -m pytest --rootdir "$ROOT/python" -c "$PY/pytest.ini" -q "$ROOT/python/tests"
wanted jco && run jco node --test --test-reporter=spec "$JCO/conformance.test.js"
wanted wasm-bindgen && run wasm-bindgen node --test --test-reporter=spec "$CONF/runners/wasm-bindgen/conformance.test.js"

# docs/PLUGIN.md's examples, run as written (and checked to be in that page as they are): Python
# with the package installed in the runner's venv; jco in a fresh folder with the packages installed, the component transpiled next to
# the example.
examples() {
  local out work file
  for file in "$CONF/examples/load_plugin.py" "$CONF/examples/load_plugin.mjs"; do
    python3 -c 'import sys; sys.exit(open(sys.argv[1]).read() not in open(sys.argv[2]).read())' "$file" "$ROOT/docs/PLUGIN.md" ||
      { echo "docs/PLUGIN.md does not hold $(basename "$file") as it is: copy the file into its code block" >&2; return 1; }
  done
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
wanted examples && run examples examples

# What the wheel must do for a user: it installs with pip into a fresh venv (pulling wasmtime
# from PyPI, through pip's cache when warm) and runs the example, whose output must be what
# python/README.md shows after "prints": the facade's first PLog offset 1, WLog offsets per
# workspace, record ids from 322680000131072, and a restart that continues where the PLog ends.
python_wheel() {
  local work out expected
  expected="$(python3 -c 'import re, sys; print(re.search(r"\nprints\n\n```\n(.*?)```", open(sys.argv[1]).read(), re.S).group(1), end="")' "$ROOT/python/README.md")" ||
    { echo "python/README.md shows no output after 'prints'" >&2; return 1; }
  work="$(mktemp -d)"
  python3 -m venv "$work/venv" || return 1
  "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL" || return 1
  echo "installed $(basename "$WHEEL") into a fresh venv: $("$work/venv/bin/python" -m pip freeze | paste -sd' ')"
  out="$(cd "$work" && "$work/venv/bin/python" "$ROOT/python/examples/quickstart.py")"
  rm -rf "$work"
  printf '%s\n' "$out"
  # The README's text is checked, and so are the numbers themselves (so an edited README
  # cannot make wrong numbers pass): the first event and the event after the restart.
  [[ "$out" == "$expected" && "$out" == *"plog 1 ws 1000 wlog 1 record 322680000131072"* &&
    "$out" == *"plog 4 ws 1000 wlog 3 record 322680000131074" ]] ||
    { echo "quickstart.py: expected (python/README.md):"$'\n'"$expected" >&2; return 1; }
  echo "quickstart.py: output as python/README.md shows"
}
wanted python-wheel && run python-wheel python_wheel

# The plugin artifact: its manifest names this component and core module (sha256; the core module
# is the copy the Go and Java packages embed), the WIT package of wit/sequencer.wit and the three
# interfaces a host provides; the .tar.gz holds the folder.
plugin_artifact() {
  local dir="${plugin[0]}" tarball="${plugin[1]}" files
  python3 - "$dir" "$SEQUENCER_COMPONENT" "$ROOT/wit/sequencer.wit" <<'PY' || return 1
import hashlib, json, re, sys
from pathlib import Path
d, component, wit = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]).read_text()
m = json.loads((d / "manifest.json").read_text())
version = re.search(r"^package sequencer:plugin@(\S+);", wit, re.M).group(1)
checks = {
    "wit_package": (m["wit_package"], f"sequencer:plugin@{version}"),
    "folder": (d.name, f"sequencer-plugin-{version}"),
    "sha256": (m["component"]["sha256"], hashlib.sha256(component.read_bytes()).hexdigest()),
    "copied component": (hashlib.sha256((d / "sequencer.wasm").read_bytes()).hexdigest(), m["component"]["sha256"]),
    "copied core module": (hashlib.sha256((d / "sequencer-core.wasm").read_bytes()).hexdigest(), m["core_module"]["sha256"]),
    # The Go and Java packages embed the committed copy: the same bytes as this build's.
    "embedded core module": (hashlib.sha256((Path(sys.argv[3]).parents[1] / "go/internal/plugin/sequencer-core.wasm").read_bytes()).hexdigest(), m["core_module"]["sha256"]),
    "core module imports": (sorted({i.split(" ")[0] for i in m["core_module"]["imports"]}),
                            [f"[export]sequencer:plugin/sequencer-api@{version}"] + [f"sequencer:plugin/{i}@{version}" for i in ("clock", "observer", "storage")]),
    "copied WIT": ((d / "wit" / "sequencer.wit").read_text(), wit),
    "provide": (m["imports"]["provide"], [f"sequencer:plugin/{i}@{version}" for i in ("clock", "observer", "storage")]),
    "exports": (m["exports"], [f"sequencer:plugin/{i}@{version}" for i in ("events", "instance", "sequencer-api")]),
}
bad = [f"{k}: {got!r} != {want!r}" for k, (got, want) in checks.items() if got != want]
if not m["imports"]["wasi_unused"] or bad:
    sys.exit("plugin manifest: " + ("; ".join(bad) or "no WASI imports listed"))
print(f"plugin manifest: {m['wit_package']}, crate {m['crate']['version']}, sha256 {m['component']['sha256'][:12]}..., "
      f"{len(m['imports']['wasi_unused'])} unused WASI imports")
PY
  files="$(tar -tzf "$tarball" | sort | paste -sd' ')"
  local name
  name="$(basename "$dir")"
  [[ "$files" == "$name/ $name/LICENSE $name/README.md $name/manifest.json $name/sequencer-core.wasm $name/sequencer.wasm $name/wit/ $name/wit/sequencer.wit" ]] ||
    { echo "plugin tarball: unexpected contents: $files" >&2; return 1; }
  echo "plugin tarball: $files"
}
wanted plugin && run plugin plugin_artifact

step "conformance summary (the rust runner runs in cargo test --workspace)"
printf '%s\n' "${summary[@]}"
step_times
exit "$failed"
