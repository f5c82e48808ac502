#!/usr/bin/env bash
# Proves the default build needs nothing but the Rust toolchain (CI runs this after the tests):
#   1. `cargo tree` of sequencer-host's default features holds no etcd-client, prost-build,
#      tonic-build or protoc crate, nor the S3 feature's HTTP and TLS stack (reqwest, rustls,
#      ring);
#   2. the library alone (--no-default-features: runtime, driver, memory store) holds no clap,
#      indicatif, redb, tokio or gRPC crate;
#   3. the main job (scripts/run.sh) builds and runs with no protoc anywhere on PATH and no
#      $PROTOC, on a small workload in a temp data directory, and its check passes.
# The build is the dev profile (SEQUENCER_PROFILE), linted by clippy as it compiles (the code
# only this feature set compiles is linted here).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_toolchain
cd "$ROOT"

step "the default build's dependency tree has no etcd, gRPC build or protoc crate"
tree="$(cargo tree -p plog-sequencer-host -e normal,build --prefix none)"
if banned="$(grep -E '^(etcd-client|prost-build|tonic-build|protoc[a-z-]*|reqwest|rustls|ring|aws-lc-[a-z-]*) ' <<<"$tree")"; then
  echo "error: the default build of sequencer-host depends on:" >&2
  sort -u <<<"$banned" >&2
  exit 1
fi
echo "ok: $(sed 's/ (\*)//' <<<"$tree" | sort -u | wc -l) crates, none of them etcd-client, prost-build, tonic-build, protoc or the S3 client's (reqwest, rustls, ring, aws-lc)" >&2

step "the library alone (default-features = false) has no CLI, redb, tokio or gRPC crate"
tree="$(cargo tree -p plog-sequencer-host --no-default-features -e normal,build --prefix none)"
if banned="$(grep -E '^(clap|indicatif|tracing-subscriber|redb|tokio|tonic|etcd-client|prost[a-z-]*) ' <<<"$tree")"; then
  echo "error: the library-only build of sequencer-host depends on:" >&2
  sort -u <<<"$banned" >&2
  exit 1
fi
echo "ok: $(sed 's/ (\*)//' <<<"$tree" | sort -u | wc -l) crates, none of them clap, indicatif, redb, tokio or gRPC" >&2

step "the main job, built and run with no protoc on PATH"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# PATH without protoc: each PATH folder that holds one is replaced by a folder of links to
# everything else in it.
path=""
i=0
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  if [[ -e "$d/protoc" ]]; then
    i=$((i + 1))
    mkdir -p "$tmp/path$i"
    for f in "$d"/*; do
      [[ "$(basename "$f")" == protoc ]] || ln -s "$f" "$tmp/path$i/"
    done
    d="$tmp/path$i"
  fi
  path+="${path:+:}$d"
done
if PATH="$path" command -v protoc >/dev/null; then
  echo "error: protoc is still on the PATH built without it" >&2
  exit 1
fi
out="$tmp/summary.txt"
with_clippy env -u PROTOC PATH="$path" SEQUENCER_PROFILE="${SEQUENCER_PROFILE:-dev}" \
  bash scripts/run.sh --no-progress --data "$tmp/data" --partitions 4 --events 500 | tee "$out"
grep -q '^check  *ok: ' "$out" || { echo "error: the main job's summary has no passing check" >&2; exit 1; }
step_times
