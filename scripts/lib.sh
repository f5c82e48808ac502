# Sourced by the scripts: the project's paths, its own cache of tools, and how steps and
# installs are reported. Nothing here changes anything outside the project by itself.
#
#   ROOT         the clone
#   TARGET_DIR   cargo's target folder: $CARGO_TARGET_DIR if set, else ./target (what a plain
#                `cargo build` or `cargo run` in the clone uses, so the README's commands and
#                the scripts share one build); JS_TARGET_DIR (below) is a folder inside it
#   TOOLS        tools the project installs for itself (wasm-bindgen-cli, etcd, protoc), in
#                $SEQUENCER_CACHE (default ~/.cache/sequencer) so clones and CI runs share them;
#                never the user's ~/.cargo/bin or /usr. $TOOLS/bin goes first on PATH.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# The JavaScript package's wasm build has a target folder of its own (it shares no artifact with
# the other builds), so it can run while the tests hold the main one.
JS_TARGET_DIR="$TARGET_DIR/js"
# The component's build (scripts/build-component.sh) has one too: the folder the host's build
# script compiles the bundled component in (host/build.rs), so the two share one build.
COMPONENT_TARGET_DIR="$TARGET_DIR/bundled-component"
SEQUENCER_CACHE="${SEQUENCER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sequencer}"
TOOLS="$SEQUENCER_CACHE/tools"
export PATH="$TOOLS/bin:$PATH"

# step NAME: announces a step; the previous step's duration goes to the timing summary.
_step_name=""
_step_start=$SECONDS
_step_times=()
step() {
  _step_end
  _step_name="$*"
  _step_start=$SECONDS
  _step_cpu="$(_cpu_ticks)"
  printf '\n==> %s\n' "$*" >&2
}
# _cpu_ticks: the machine's busy and idle clock ticks so far, all cores ("0 0" off Linux).
_cpu_ticks() {
  local _cpu user nice system idle iowait irq softirq
  if read -r _cpu user nice system idle iowait irq softirq _ </proc/stat 2>/dev/null; then
    echo "$((user + nice + system + irq + softirq)) $((idle + iowait))"
  else
    echo "0 0"
  fi
}
_step_end() {
  if [[ -n "$_step_name" ]]; then
    local busy0 idle0 busy1 idle1 share="  -"
    read -r busy0 idle0 <<<"$_step_cpu"
    read -r busy1 idle1 <<<"$(_cpu_ticks)"
    # How busy the cores were: a step well below 100 % waits on something other than them.
    if ((busy1 + idle1 > busy0 + idle0)); then
      share="$(((busy1 - busy0) * 100 / (busy1 - busy0 + idle1 - idle0)))%"
    fi
    _step_times+=("$(printf '%5d s %5s  %s' $((SECONDS - _step_start)) "$share" "$_step_name")")
  fi
  _step_name=""
}
# step_times: prints how long each step took and how busy the cores were meanwhile.
step_times() {
  _step_end
  printf '\n==> time per step (and the share of the cores busy)\n' >&2
  printf '%s\n' "${_step_times[@]}" >&2
}

# APT_GET: apt-get, one at a time: the scripts that run side by side (test.sh prepares etcd and
# chromium in parallel) take turns through a lock file of the project's, and an apt-get or dpkg
# of anyone else holding apt's own locks is waited for (up to 10 minutes) instead of failing.
APT_GET=(flock -w 900 "${TMPDIR:-/tmp}/sequencer-apt.lock" apt-get -o DPkg::Lock::Timeout=600)

# ensure_debian_packages WHY PACKAGE...: installs the Debian packages of the list that are
# missing, after one line naming them and why; does nothing when all are there.
ensure_debian_packages() {
  local why="$1" p missing=() sudo=()
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || {
      echo "error: $why needs the Debian package(s) ${missing[*]}; install them (this is not root and there is no sudo)" >&2
      return 1
    }
    sudo=(sudo -n)
  fi
  echo "$why: installing the Debian package(s) ${missing[*]} system-wide with apt-get" >&2
  "${sudo[@]}" "${APT_GET[@]}" update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" "${APT_GET[@]}" install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# say_if_cold WHAT TAKES: one line before WHAT when the build folder holds no build of wasmtime
# yet (a first run, or a new $CARGO_TARGET_DIR): that it compiles wasmtime, Cranelift and the
# stores' crates first, and how long that TAKES here (docs/BENCHMARKS.md, "Building and testing").
say_if_cold() {
  compgen -G "$TARGET_DIR/debug/deps/libwasmtime-*.rlib" >/dev/null && return 0
  echo "note: nothing is built in $TARGET_DIR yet: $1 compiles wasmtime, Cranelift and the stores' crates first, which $2 (docs/BENCHMARKS.md, \"Building and testing\"); later runs reuse them" >&2
}

# ensure_toolchain: installs the Rust toolchain rust-toolchain.toml names (with its components
# and targets) when rustup does not have it yet, after one line saying so; a machine whose own
# stable is older or newer keeps it (rustup picks the file's toolchain inside the clone only).
# Instant when it is there. Without rustup, the cargo on PATH must be that version.
ensure_toolchain() {
  local want
  want="$(sed -n 's/^channel *= *"\(.*\)"/\1/p' "$ROOT/rust-toolchain.toml")"
  if ! command -v rustup >/dev/null; then
    rustc --version 2>/dev/null | grep -q "^rustc $want " && return 0
    echo "error: this project builds with Rust $want (rust-toolchain.toml); install rustup (https://rustup.rs) or that toolchain" >&2
    return 1
  fi
  rustup toolchain list 2>/dev/null | grep -q "^$want-" &&
    rustup which --toolchain "$want" clippy-driver >/dev/null 2>&1 &&
    rustup which --toolchain "$want" rustfmt >/dev/null 2>&1 && return 0
  echo "rustup: installing Rust $want (rust-toolchain.toml) with clippy, rustfmt and the wasm32 targets" >&2
  (cd "$ROOT" && rustup toolchain install >&2)
}

# rust_target TRIPLE: adds a rustup target if it is missing (to the toolchain in use only).
rust_target() {
  rustup target list --installed | grep -qx "$1" && return 0
  echo "rustup: adding the $1 target to the active toolchain" >&2
  rustup target add "$1" >&2
}

# with_clippy COMMAND...: runs a cargo build or test command with clippy as the compiler of the
# workspace's own crates (`-D warnings`), so one build both lints and compiles them: no
# separate check-mode build of every dependency. (`cargo clippy` runs the same driver over
# `cargo check`.) Dev-profile builds only: clippy's driver skips some MIR optimisations.
with_clippy() {
  RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver" \
    CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__" "$@"
}

# bench_build [FEATURE...]: what a benchmark runs. Exports SEQUENCER_COMPONENT ($BENCH_COMPONENT
# if set, else built by scripts/build-component.sh) and sets `host` to $BENCH_HOST if set, else
# to the release sequencer-host built with FEATURE... (the default features when none).
bench_build() {
  if [[ -n "${BENCH_COMPONENT:-}" ]]; then
    SEQUENCER_COMPONENT="$(realpath "$BENCH_COMPONENT")"
  else
    SEQUENCER_COMPONENT="$(bash "$ROOT/scripts/build-component.sh")"
  fi
  export SEQUENCER_COMPONENT
  if [[ -n "${BENCH_HOST:-}" ]]; then
    host="$(realpath "$BENCH_HOST")"
  else
    (cd "$ROOT" && cargo build --release -p plog-sequencer-host ${1:+--features "$(IFS=,; echo "$*")"})
    host="$TARGET_DIR/release/sequencer-host"
  fi
}

# bench_scratch: sets `work` to a new temporary folder and `run_pid` and `beside_pgid` to none;
# on exit what a bench started in the background is killed (the run, $run_pid; a process group
# beside it, $beside_pgid, continued first if stopped) and the folder removed.
# Each step of the cleanup may fail (the killed run's wait says 143): under `set -e` one that
# did would end it before the folder, perhaps a copy of a large store, is removed.
bench_scratch() {
  work="$(mktemp -d)"
  run_pid=""
  beside_pgid=""
  trap _bench_cleanup EXIT
}

_bench_cleanup() {
  if [[ -n "$beside_pgid" ]]; then
    kill -CONT -- "-$beside_pgid" 2>/dev/null || true
    kill -- "-$beside_pgid" 2>/dev/null || true
  fi
  if [[ -n "$run_pid" ]]; then
    kill "$run_pid" 2>/dev/null || true
    wait "$run_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}

# median: the median of the numbers on stdin, one a line.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# The test servers' scripts (s3-server.sh, seaweedfs-server.sh, prometheus-server.sh) start one
# server per DIR on loopback ports and stop exactly it; what they share:

# port_free PORT: whether nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_ports N: N distinct free ports in 20000..32699, below Linux's ephemeral range (see
# etcd-cluster.sh), one a line; fails after 50 tries for one.
pick_ports() {
  local n=$1 picked=() tries p
  while ((${#picked[@]} < n)); do
    tries=0
    while :; do
      ((tries++ < 50)) || { echo "error: no free loopback port found" >&2; return 1; }
      p=$((20000 + (RANDOM * 32768 + RANDOM) % 12700))
      [[ " ${picked[*]} " == *" $p "* ]] && continue
      port_free "$p" && break
    done
    picked+=("$p")
  done
  printf '%s\n' "${picked[@]}"
}

# server_pid DIR MATCH: the pid DIR/pid names if that process is alive and its command line
# holds MATCH (so a pid reused by another process is never taken for the server); empty
# otherwise.
server_pid() {
  local dir=$1 match=$2 pid
  [[ -f "$dir/pid" ]] || return 0
  pid=$(<"$dir/pid")
  [[ -r "/proc/$pid/cmdline" ]] || return 0
  if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$match"; then
    echo "$pid"
  fi
}

# stop_server DIR MATCH: stops the server `server_pid DIR MATCH` names, if any: SIGTERM, then
# SIGKILL if it is still there 5 s later.
stop_server() {
  local dir=$1 match=$2 pid i
  pid="$(server_pid "$dir" "$match")"
  [[ -n "$pid" ]] || return 0
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    [[ -n "$(server_pid "$dir" "$match")" ]] || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

# wait_ready NAME DIR MATCH TIMEOUT_S COMMAND...: runs COMMAND until it succeeds (every 0.2 s);
# fails, naming NAME and showing DIR/log, if the server exits or TIMEOUT_S pass first (then it
# stops the server).
wait_ready() {
  local name=$1 dir=$2 match=$3 timeout=$4 deadline
  shift 4
  deadline=$((SECONDS + timeout))
  until "$@"; do
    if [[ -z "$(server_pid "$dir" "$match")" ]]; then
      echo "error: $name exited; its log ($dir/log):" >&2
      # A Go server's fatal line comes before a stack dump longer than the tail: named first.
      grep -E '^(F[0-9]{4} |panic: |fatal error: )' "$dir/log" | tail -3 >&2 || true
      tail -20 "$dir/log" >&2
      return 1
    fi
    if ((SECONDS >= deadline)); then
      stop_server "$dir" "$match"
      echo "error: $name did not answer within $timeout s (log: $dir/log)" >&2
      return 1
    fi
    sleep 0.2
  done
}

# pip_venv DIR VERSION REQUIREMENT WHAT: a venv at DIR holding REQUIREMENT from PyPI, its
# VERSION recorded beside it; instant when DIR holds VERSION already, else installed (saying
# so, for WHAT) beside and moved into place, so a concurrent run never sees half an install.
pip_venv() {
  local dest=$1 version=$2 requirement=$3 what=$4 work
  [[ -x "$dest/bin/python" && "$(cat "$dest/VERSION" 2>/dev/null)" == "$version" ]] && return 0
  command -v python3 >/dev/null || { echo "error: python3 is needed to install $requirement" >&2; return 1; }
  echo "$what; installing $requirement from PyPI into a venv at $dest (no system install)" >&2
  mkdir -p "$(dirname "$dest")"
  work="$(mktemp -d "$dest.new.XXXXXX")"
  python3 -m venv "$work" >&2 &&
    "$work/bin/python" -m pip install --quiet --disable-pip-version-check "$requirement" >&2 &&
    echo "$version" >"$work/VERSION" || { rm -rf "$work"; return 1; }
  rm -rf "$dest.old"
  [[ -e "$dest" ]] && mv "$dest" "$dest.old"
  mv "$work" "$dest"
  rm -rf "$dest.old"
}

# s3_server_run WHAT COMMAND...: for an S3 server script that defines `start DIR` (printing the
# endpoint), `stop DIR` and BUCKET: starts a server in a temp dir, runs COMMAND with the
# client's AWS_* settings for it, and stops it on exit.
s3_server_run() {
  local what=$1 dir endpoint
  shift
  dir="$(mktemp -d)"
  # shellcheck disable=SC2064 # the dir is fixed now
  trap "stop '$dir'; rm -rf '$dir'" EXIT
  endpoint="$(start "$dir")"
  echo "$what on $endpoint, bucket $BUCKET" >&2
  AWS_ENDPOINT_URL="$endpoint" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
    AWS_REGION=us-east-1 "$@"
}
