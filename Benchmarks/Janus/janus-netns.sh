#!/usr/bin/env bash
# Run the Debian janus (1.1.2) inside a private network namespace for the
# Chorus side-by-side benchmark.
#
# Janus never offers ICE candidates on a loopback interface, so it runs in the
# namespace "chorus-janus", reachable from the root namespace over a veth pair
# in the RFC 2544 benchmarking range:
#
#     root ns:       chorus-br0  198.18.0.1/24
#     chorus-janus:  chorus-jn0  198.18.0.2/24   (HTTP API http://198.18.0.2:8088/janus)
#
# Usage (as root):
#     janus-netns.sh up [LOGFILE]     create netns + veth (idempotent), start janus,
#                                     wait for /janus/info, print the janus PID on stdout
#     janus-netns.sh down             stop janus, delete netns and veth (idempotent)
#     janus-netns.sh status           say what is up
#
# Environment:
#     EVENT_LOOPS=N        tuned run: static pool of N event loops (janus has no CLI flag
#                          for it, so a copy of janus.jcfg with event_loops = N is written
#                          to the state dir and passed with -C). Unset/0 = janus default
#                          (one loop thread per handle).  Same as: up --event-loops N
#     JANUS_DEBUG_LEVEL=N  override debug_level (default: the jcfg's value, 3)
#     JANUS_START_TIMEOUT  seconds to wait for the HTTP API (default 20)
#     JANUS_EXTRA_ARGS     extra janus command-line options, word-split
#                          (e.g. "--session-timeout=120 --rtp-port-range=20000-40000")
#     CHORUS_JANUS_STATE   state dir for pid file, generated config, default log
#                          (default /tmp/chorus-janus)
#
# The Debian package also installs janus.service (8088/8188 on all interfaces);
# this script does not use it. If it is running, it would already hold the ports
# in the root namespace only, which does not collide with the namespaced instance.
set -euo pipefail

NS=chorus-janus
VETH_ROOT=chorus-br0
VETH_NS=chorus-jn0
IP_ROOT=198.18.0.1
IP_NS=198.18.0.2
PREFIX=24
API_URL="http://${IP_NS}:8088/janus"

CONF_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE_DIR="${CHORUS_JANUS_STATE:-/tmp/chorus-janus}"
PID_FILE="$STATE_DIR/janus.pid"
START_TIMEOUT="${JANUS_START_TIMEOUT:-20}"

log() { printf 'janus-netns: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need_root() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (ip netns / veth need CAP_NET_ADMIN)"
}

need_tools() {
    local t
    for t in ip curl janus; do
        command -v "$t" >/dev/null 2>&1 || die "'$t' not found (apt-get install -y iproute2 curl janus)"
    done
}

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$NS"; }

janus_pid() {
    # PID of a janus we started and that is still alive, or nothing.
    local pid
    [[ -f $PID_FILE ]] || return 0
    pid=$(<"$PID_FILE")
    if [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null \
        && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == janus ]]; then
        echo "$pid"
    fi
}

net_up() {
    if ! ns_exists; then
        log "creating network namespace $NS"
        ip netns add "$NS"
    fi
    if ! ip link show "$VETH_ROOT" >/dev/null 2>&1; then
        # A stale half of the pair may survive inside the namespace.
        ip -n "$NS" link del "$VETH_NS" >/dev/null 2>&1 || true
        log "creating veth $VETH_ROOT <-> $NS:$VETH_NS"
        ip link add "$VETH_ROOT" type veth peer name "$VETH_NS" netns "$NS"
    fi
    ip -n "$NS" link show "$VETH_NS" >/dev/null 2>&1 \
        || die "$VETH_ROOT exists but its peer $VETH_NS is not in $NS; run '$0 down' first"
    ip addr replace "$IP_ROOT/$PREFIX" dev "$VETH_ROOT"
    ip link set "$VETH_ROOT" up
    ip -n "$NS" addr replace "$IP_NS/$PREFIX" dev "$VETH_NS"
    ip -n "$NS" link set "$VETH_NS" up
    ip -n "$NS" link set lo up
}

make_config() {
    # Prints the path of the core config file to pass with -C.
    local loops="${EVENT_LOOPS:-0}" level="${JANUS_DEBUG_LEVEL:-}" out
    [[ $loops =~ ^[0-9]+$ ]] || die "EVENT_LOOPS must be a number, got '$loops'"
    if [[ $loops -eq 0 && -z $level ]]; then
        echo "$CONF_DIR/janus.jcfg"
        return
    fi
    out="$STATE_DIR/janus.jcfg"
    cp "$CONF_DIR/janus.jcfg" "$out"
    if [[ $loops -gt 0 ]]; then
        sed -i "s|^\s*#@EVENT_LOOPS@.*|\tevent_loops = $loops|" "$out"
        grep -q "event_loops = $loops" "$out" || die "could not set event_loops in $out"
    fi
    if [[ -n $level ]]; then
        [[ $level =~ ^[0-7]$ ]] || die "JANUS_DEBUG_LEVEL must be 0-7, got '$level'"
        sed -i "s|^\(\s*debug_level\s*=\s*\)[0-9]*|\1$level|" "$out"
    fi
    echo "$out"
}

cmd_up() {
    local logfile="" pid cfg deadline
    local -a extra=()
    read -r -a extra <<<"${JANUS_EXTRA_ARGS:-}"
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --event-loops) [[ $# -ge 2 ]] || die "--event-loops needs a value"; EVENT_LOOPS="$2"; shift 2 ;;
            --event-loops=*) EVENT_LOOPS="${1#*=}"; shift ;;
            -*) die "unknown option '$1'" ;;
            *) [[ -z $logfile ]] || die "only one LOGFILE argument"; logfile="$1"; shift ;;
        esac
    done
    need_root; need_tools
    mkdir -p "$STATE_DIR"
    logfile="${logfile:-$STATE_DIR/janus.log}"

    [[ ${EVENT_LOOPS:-0} =~ ^[0-9]+$ ]] || die "EVENT_LOOPS must be a number, got '${EVENT_LOOPS}'"

    pid=$(janus_pid)
    if [[ -n $pid ]]; then
        if curl -fsS --max-time 2 "$API_URL/info" >/dev/null 2>&1; then
            log "janus already running (pid $pid); run '$0 down' first to restart it"
            echo "$pid"
            return 0
        fi
        die "janus (pid $pid) is running but $API_URL/info does not answer (still stopping?); run '$0 down'"
    fi

    net_up
    cfg=$(make_config)
    log "starting janus in $NS (config $cfg, EVENT_LOOPS=${EVENT_LOOPS:-default}${extra[*]:+, extra args: ${extra[*]}}, log $logfile)"
    mkdir -p "$(dirname "$logfile")"
    # 'ip netns exec' execs janus, so $! is the janus PID itself.
    setsid ip netns exec "$NS" janus -F "$CONF_DIR" -C "$cfg" --disable-colors --debug-timestamps \
        ${extra[@]+"${extra[@]}"} </dev/null >"$logfile" 2>&1 &
    pid=$!
    echo "$pid" >"$PID_FILE"

    deadline=$((SECONDS + START_TIMEOUT))
    until curl -fsS --max-time 2 "$API_URL/info" >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "janus exited during start-up; last log lines:"
            tail -n 30 "$logfile" >&2 || true
            rm -f "$PID_FILE"
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            log "janus did not answer $API_URL/info within ${START_TIMEOUT}s; last log lines:"
            tail -n 30 "$logfile" >&2 || true
            kill "$pid" 2>/dev/null || true
            rm -f "$PID_FILE"
            exit 1
        fi
        sleep 0.3
    done
    log "janus up: $API_URL (pid $pid)"
    echo "$pid"
}

stop_pid() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    log "janus (pid $pid) ignored SIGTERM for 10s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

cmd_down() {
    need_root
    local pid
    pid=$(janus_pid)
    if [[ -n $pid ]]; then
        log "stopping janus (pid $pid)"
        stop_pid "$pid"
    fi
    rm -f "$PID_FILE"
    if ns_exists; then
        # Anything else still running inside our namespace was started there by us.
        for pid in $(ip netns pids "$NS" 2>/dev/null); do
            log "stopping leftover process $pid in $NS"
            stop_pid "$pid"
        done
    fi
    if ip link show "$VETH_ROOT" >/dev/null 2>&1; then
        log "deleting veth $VETH_ROOT"
        ip link del "$VETH_ROOT"
    fi
    if ns_exists; then
        log "deleting network namespace $NS"
        ip netns del "$NS"
    fi
    log "down"
}

cmd_status() {
    local pid
    pid=$(janus_pid)
    if ns_exists; then echo "netns $NS: present"; else echo "netns $NS: absent"; fi
    if ip link show "$VETH_ROOT" >/dev/null 2>&1; then echo "veth $VETH_ROOT: present"; else echo "veth $VETH_ROOT: absent"; fi
    if [[ -n $pid ]]; then echo "janus: running (pid $pid)"; else echo "janus: not running"; fi
    if curl -fsS --max-time 2 "$API_URL/info" >/dev/null 2>&1; then echo "api $API_URL: answering"; else echo "api $API_URL: not answering"; fi
}

case "${1:-}" in
    up) shift; cmd_up "$@" ;;
    down) shift; cmd_down ;;
    status) shift; cmd_status ;;
    *) echo "usage: $0 up [--event-loops N] [LOGFILE] | down | status   (env: EVENT_LOOPS, JANUS_DEBUG_LEVEL)" >&2; exit 2 ;;
esac
