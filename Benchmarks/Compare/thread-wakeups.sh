#!/usr/bin/env bash
# Context switches per second of each server thread under one `chorus load` scenario: which
# threads wake, and how often (a wake-up costs more than the work it carries in a quiet room).
# Counts voluntary + involuntary switches from /proc/<pid>/task/*/status over WINDOW seconds in
# the middle of the run, and the media port's reads (`chorus_media_reads_total`) over the same
# window.
#
#   Benchmarks/Compare/thread-wakeups.sh BIN ROOMS:PARTICIPANTS:TALKERS[:SLOTS]
#
# DURATION (default 20 s), WINDOW (5 s), LOAD_ARGS (more `chorus load` options), OUT.
set -euo pipefail
BIN=${1:?server binary}; SPEC=${2:?ROOMS:PARTICIPANTS:TALKERS[:SLOTS]}
DURATION=${DURATION:-20}; WINDOW=${WINDOW:-5}
OUT=${OUT:-bench-output/wakeups}; PORT=${PORT:-18095}
IFS=: read -r rooms participants talkers slots <<<"$SPEC"
mkdir -p "$OUT"
rm -f "$OUT"/db.sqlite* "$OUT/server.log"
"$BIN" serve --db "$OUT/db.sqlite" --dev-app --http-host 127.0.0.1 --http-port "$PORT" --media-port 0 \
    --rate-limit 0 --log-level warning >"$OUT/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do grep -q '^  secret:' "$OUT/server.log" 2>/dev/null && break; sleep 0.1; done
key=$(awk '/^  key:/ {print $2}' "$OUT/server.log"); secret=$(awk '/^  secret:/ {print $2}' "$OUT/server.log")
args=(load --url "http://127.0.0.1:$PORT" --app-key "$key" --app-secret "$secret" --rooms "$rooms"
      --participants "$participants" --talkers "$talkers" --duration "$DURATION" --ramp-up 200
      --server-pid "$pid" --output "$OUT/load" --dtx on --quiet)
[[ -n ${slots:-} ]] && args+=(--video --slots "$slots")
# shellcheck disable=SC2086
"$BIN" "${args[@]}" ${LOAD_ARGS:-} >"$OUT/load.txt" 2>&1 &
load=$!

# "tid name switches" for every thread of the server, and "metric reads count" for its reads.
snapshot() {
    for task in /proc/$pid/task/*; do
        echo "${task##*/} $(tr ' ' '_' <"$task/comm") $(awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s}' "$task/status")"
    done
    curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^chorus_media_reads_total/ {print $1 " reads " $2}'
}
sleep $((DURATION / 2 - WINDOW / 2))
snapshot >"$OUT/first.txt"
sleep "$WINDOW"
snapshot >"$OUT/second.txt"
wait $load
echo "per second over ${WINDOW} s in the middle of the run:"
export LC_ALL=C
join <(sort "$OUT/first.txt") <(sort "$OUT/second.txt") |
    awk -v w="$WINDOW" '{d = ($5 - $3) / w; if (d > 0) printf "%-44s %-16s %8.1f\n", $1, $2, d}'
grep -E "PASS|FAIL|CPU-s" "$OUT/load.txt" || true
