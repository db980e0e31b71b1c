#!/usr/bin/env bash
# `make bench-compare`: the same load scenarios against Chorus and against Janus 1.1.2
# (AudioBridge, Debian's package) on this machine, in one run, with one client (`chorus load`).
#
# Janus runs in a network namespace that this script creates (Benchmarks/Janus/janus-netns.sh:
# Janus never offers candidates on loopback), with its defaults and tuned with event_loops = 2.
# Chorus runs on loopback from the release build. The runs are interleaved: each scenario runs
# against the three servers back to back, each on a freshly started server. Each run writes
# results.json and report.html under $OUT/<server>-<scenario>/; the comparison table is
# $OUT/compare.md (also printed).
#
# Scenarios are sized so that Janus is not overloaded on 2 cores with the generator beside it
# (Janus costs ~0.05 cores a room plus ~0.022 cores a participant): the meeting pattern
# (rooms of 10, one talker), a bigger room with 3 talkers, and small video meetings (every
# camera on, two slots each: Janus VideoRoom beside AudioBridge, 3 connections per user: AudioBridge,
# publisher, and one multistream subscriber for both watched cameras). CHORUS_ONLY adds Chorus's
# targets (1,000 in one room; 50 rooms of 10) that Janus could not carry here.
#
# Environment: SCENARIOS (space-separated name:rooms:participants:talkers[:slots]), OUT (default bench-output/compare), DURATION seconds per run (default 30),
# RAMP_UP joins per second (default 20; BIG_RAMP_UP, default 100, for the big runs), CHORUS_ONLY=1 to add the big Chorus-only runs,
# SKIP_TUNED=1 to skip the event_loops = 2 Janus pass, DTX (on, off or negotiated; default on) for
# the silent participants' Opus DTX. On by default, for both servers: the same input to each
# (Chorus's answer asks for DTX, as browsers then send it; Janus's does not, but a browser
# whose application enables DTX sends Janus the same pauses).
set -euo pipefail
cd "$(dirname "$0")/../.."

OUT=${OUT:-bench-output/compare}
DURATION=${DURATION:-30}
RAMP_UP=${RAMP_UP:-20}
DTX=${DTX:-on}
BIN=.build/release/chorus
NETNS=Benchmarks/Janus/janus-netns.sh
JANUS_URL=http://198.18.0.2:8088
HTTP_PORT=${CHORUS_HTTP_PORT:-18090}
# name:rooms:participants:talkers[:slots with video]
read -r -a SCENARIOS <<<"${SCENARIOS:-meeting-5x10:5:10:1 room-1x40:1:40:3 video-meeting-3x5:3:5:1:2}"
BIG=(room-1x1000:1:1000:3 meeting-50x10:50:10:1)

log() { printf '\n== %s\n' "$*" >&2; }
chorus_pid=""
cleanup() {
    [[ -n $chorus_pid ]] && kill "$chorus_pid" 2>/dev/null || true
    "$NETNS" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

mkdir -p "$OUT"
rm -rf "${OUT:?}"/chorus-* "${OUT:?}"/janus-* "${OUT:?}"/janus2-*

# One scenario against one server: run_load SERVER_LABEL TARGET URL PID NAME:R:P:T [key secret]
run_load() {
    local label=$1 target=$2 url=$3 pid=$4 spec=$5 key=${6:-} secret=${7:-}
    local name rooms participants talkers slots
    IFS=: read -r name rooms participants talkers slots <<<"$spec"
    log "$label · $name ($rooms × $participants, $talkers talker(s)${slots:+, video with $slots slots}), ${DURATION} s"
    local args=(load --target "$target" --url "$url" --rooms "$rooms" --participants "$participants"
        --talkers "$talkers" --duration "$DURATION" --ramp-up "$RAMP_UP" --server-pid "$pid"
        --output "$OUT/$label-$name" --dtx "$DTX" --quiet)
    [[ -n $key ]] && args+=(--app-key "$key" --app-secret "$secret")
    [[ -n $slots ]] && args+=(--video --slots "$slots")
    # A failed run (a listener heard nothing) is still a result to report, not a reason to stop.
    "$BIN" "${args[@]}" || echo "($label $name did not pass; see $OUT/$label-$name/results.json)" >&2
}

# A fresh server for each run. Chorus's old log goes first: the banner check could otherwise
# read it before the new server truncates it, and take an old run's key.
start_chorus() {
    rm -f "$OUT"/chorus.sqlite* "$OUT/chorus.log"
    "$BIN" serve --db "$OUT/chorus.sqlite" --dev-app --http-host 127.0.0.1 --http-port "$HTTP_PORT" \
        --media-port 0 --rate-limit 0 --log-level warning >"$OUT/chorus.log" 2>&1 &
    chorus_pid=$!
    for _ in $(seq 1 100); do
        grep -q '^  secret:' "$OUT/chorus.log" 2>/dev/null && break
        sleep 0.1
    done
    key=$(awk '/^  key:/ {print $2}' "$OUT/chorus.log")
    secret=$(awk '/^  secret:/ {print $2}' "$OUT/chorus.log")
    [[ -n $key && -n $secret ]] || { echo "chorus did not start:" >&2; cat "$OUT/chorus.log" >&2; exit 1; }
}
stop_chorus() { kill "$chorus_pid"; wait "$chorus_pid" 2>/dev/null || true; chorus_pid=""; }

# Interleaved: for each scenario, Chorus, then Janus with its defaults, then Janus tuned, back to
# back, so that the servers are compared under the machine's state of the same minute.
for spec in "${SCENARIOS[@]}"; do
    start_chorus
    run_load chorus chorus "http://127.0.0.1:$HTTP_PORT" "$chorus_pid" "$spec" "$key" "$secret"
    stop_chorus
    janus_pid=$("$NETNS" up "$OUT/janus.log")
    run_load janus janus "$JANUS_URL" "$janus_pid" "$spec"
    "$NETNS" down
    if [[ ${SKIP_TUNED:-0} != 1 ]]; then
        janus_pid=$(EVENT_LOOPS=2 "$NETNS" up "$OUT/janus2.log")
        run_load janus2 janus "$JANUS_URL" "$janus_pid" "$spec"
        "$NETNS" down
    fi
done
if [[ ${CHORUS_ONLY:-0} == 1 ]]; then
    for spec in "${BIG[@]}"; do
        start_chorus
        RAMP_UP=${BIG_RAMP_UP:-100} run_load chorus chorus "http://127.0.0.1:$HTTP_PORT" "$chorus_pid" "$spec" "$key" "$secret"
        stop_chorus
    done
fi

python3 Benchmarks/Compare/compare_table.py "$OUT" | tee "$OUT/compare.md"
