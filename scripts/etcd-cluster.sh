#!/usr/bin/env bash
# A 3-member etcd cluster on loopback ports in a directory of its own, for tests and benchmarks.
#
#   etcd-cluster.sh start DIR          install etcd if missing, start members 0..2 on free
#                                      127.0.0.1 ports, wait until healthy; prints the endpoints
#                                      (http://127.0.0.1:P,...) and writes them to DIR/endpoints
#   etcd-cluster.sh stop DIR           stop the members this DIR's pid files name (only those)
#   etcd-cluster.sh kill DIR N         SIGKILL member N
#   etcd-cluster.sh restart DIR N      start member N again on its data and ports
#   etcd-cluster.sh wait DIR [N...]    wait until the members (all by default) report healthy
#   etcd-cluster.sh leader DIR N       exit 0 if member N is the leader (etcdctl endpoint status)
#   etcd-cluster.sh wipe DIR           delete every key (the next test finds an empty store)
#
# Each member's pid is in DIR/mN/pid and its log in DIR/mN/log. A pid is signalled only if
# /proc/PID/cmdline still names this DIR's data directory, so a reused pid is never hit.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
MEMBERS=3
HEALTH_TIMEOUT_S="${ETCD_HEALTH_TIMEOUT_S:-20}"

die() { echo "etcd-cluster: error: $*" >&2; exit 1; }

port_free() {
  # Nothing listens on 127.0.0.1:$1 (a connect is refused).
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pick_ports() {
  # 2 × MEMBERS free ports from a random base in 20000..32699, below Linux's ephemeral range
  # (32768..), so an outgoing connection cannot take one between this check and the bind.
  local tries=0 base p i ok
  while (( tries++ < 50 )); do
    base=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12700 ))
    ok=1
    for (( i = 0; i < 2 * MEMBERS; i++ )); do
      p=$(( base + i ))
      port_free "$p" || { ok=0; break; }
    done
    if (( ok )); then echo "$base"; return 0; fi
  done
  die "no free loopback ports found"
}

member_pid() {
  # The pid of member N if it is alive and is this DIR's member; empty otherwise.
  local dir=$1 n=$2 pid
  [[ -f "$dir/m$n/pid" ]] || return 0
  pid=$(<"$dir/m$n/pid")
  [[ -r "/proc/$pid/cmdline" ]] || return 0
  if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "--data-dir $dir/m$n/data"; then
    echo "$pid"
  fi
}

launch() {
  local dir=$1 n=$2 state=$3 base cport pport cluster="" i
  base=$(<"$dir/base_port")
  for (( i = 0; i < MEMBERS; i++ )); do
    cluster+="${cluster:+,}m$i=http://127.0.0.1:$(( base + 2 * i + 1 ))"
  done
  cport=$(( base + 2 * n ))
  pport=$(( base + 2 * n + 1 ))
  mkdir -p "$dir/m$n"
  [[ -z "$(member_pid "$dir" "$n")" ]] || die "member $n is already running"
  # setsid: the member outlives this script and is not hit by signals sent to its caller's group.
  setsid etcd --name "m$n" --data-dir "$dir/m$n/data" \
    --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
    --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "$cluster" --initial-cluster-state "$state" \
    --initial-cluster-token "$(<"$dir/token")" \
    --heartbeat-interval 100 --election-timeout 1000 \
    --logger zap --log-outputs "$dir/m$n/log" \
    </dev/null >>"$dir/m$n/log.stdout" 2>&1 &
  echo $! >"$dir/m$n/pid"
}

endpoint() { local base; base=$(<"$1/base_port"); echo "http://127.0.0.1:$(( base + 2 * $2 ))"; }

wait_healthy() {
  local dir=$1; shift
  local members=("$@") deadline n pid
  (( ${#members[@]} )) || members=($(seq 0 $(( MEMBERS - 1 ))))
  deadline=$(( SECONDS + HEALTH_TIMEOUT_S ))
  for n in "${members[@]}"; do
    until ETCDCTL_API=3 etcdctl --endpoints "$(endpoint "$dir" "$n")" --dial-timeout 1s \
        --command-timeout 2s endpoint health >/dev/null 2>&1; do
      pid=$(member_pid "$dir" "$n")
      if [[ -z "$pid" ]]; then
        echo "etcd-cluster: member $n is not running (log: $dir/m$n/log)" >&2; return 1
      fi
      if (( SECONDS >= deadline )); then
        echo "etcd-cluster: member $n not healthy after ${HEALTH_TIMEOUT_S} s (log: $dir/m$n/log)" >&2
        return 1
      fi
      sleep 0.1
    done
  done
}

stop_members() {
  local dir=$1 n pid pids=() deadline
  for (( n = 0; n < MEMBERS; n++ )); do
    pid=$(member_pid "$dir" "$n")
    if [[ -n "$pid" ]]; then kill -TERM "$pid" 2>/dev/null || true; pids+=("$n"); fi
  done
  deadline=$(( SECONDS + 2 ))
  for n in "${pids[@]}"; do
    while [[ -n "$(member_pid "$dir" "$n")" ]] && (( SECONDS < deadline )); do sleep 0.05; done
    pid=$(member_pid "$dir" "$n")
    [[ -z "$pid" ]] || kill -KILL "$pid" 2>/dev/null || true
  done
}

cmd=${1:-}; dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || die "usage: $0 start|stop|kill|restart|wait|leader|wipe DIR [N]"
case "$cmd" in
  start)
    bash "$here/etcd-ensure.sh"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    # A port taken between the check and the bind makes a member exit: retry on new ports.
    for attempt in 1 2 3; do
      pick_ports >"$dir/base_port"
      echo "t-$$-$RANDOM" >"$dir/token"
      for (( n = 0; n < MEMBERS; n++ )); do launch "$dir" "$n" new; done
      if wait_healthy "$dir"; then break; fi
      stop_members "$dir"
      for (( n = 0; n < MEMBERS; n++ )); do
        [[ -f "$dir/m$n/log" ]] && tail -n 3 "$dir/m$n/log" >&2
        rm -rf "$dir/m$n"
      done
      (( attempt < 3 )) || die "the cluster did not start in 3 attempts"
      echo "etcd-cluster: retrying on other ports (attempt $(( attempt + 1 )))" >&2
    done
    eps=""
    for (( n = 0; n < MEMBERS; n++ )); do eps+="${eps:+,}$(endpoint "$dir" "$n")"; done
    echo "$eps" >"$dir/endpoints"
    echo "$eps"
    ;;
  stop)
    [[ -d "$dir" ]] || exit 0
    dir="$(cd "$dir" && pwd)"
    stop_members "$dir"
    ;;
  kill)
    dir="$(cd "$dir" && pwd)"; n=${3:?member}
    pid=$(member_pid "$dir" "$n")
    [[ -n "$pid" ]] || die "member $n is not running"
    kill -KILL "$pid"
    while [[ -n "$(member_pid "$dir" "$n")" ]]; do sleep 0.02; done
    ;;
  restart)
    dir="$(cd "$dir" && pwd)"; n=${3:?member}
    launch "$dir" "$n" existing
    ;;
  wait)
    dir="$(cd "$dir" && pwd)"; shift 2
    wait_healthy "$dir" "$@" || exit 1
    ;;
  leader)
    dir="$(cd "$dir" && pwd)"; n=${3:?member}
    # "URL, ID, version, db size, isLeader, isLearner, term, index, applied, errors"
    status="$(ETCDCTL_API=3 etcdctl --endpoints "$(endpoint "$dir" "$n")" --dial-timeout 1s \
      --command-timeout 2s endpoint status 2>/dev/null || true)"
    [[ "$(cut -d, -f5 <<<"$status" | tr -d ' ')" == true ]]
    ;;
  wipe)
    dir="$(cd "$dir" && pwd)"
    ETCDCTL_API=3 etcdctl --endpoints "$(<"$dir/endpoints")" --dial-timeout 2s \
      --command-timeout 10s del "" --from-key >/dev/null
    ;;
  *) die "unknown command $cmd" ;;
esac
