#!/usr/bin/env bash
# `make soak`: a bounded load held for SOAK_MINUTES (default 60) against a release server, its
# resources sampled every 10 s by soak_watch.py, which fails the run when they grow after the
# warm-up beyond the bounds it states. Loopback only; every load run stops by itself.
#
# Load (three `chorus load` processes at once):
#   45 rooms of 10, one talker each (audio)          450 participants
#   5 rooms of 10 with video (VP8 cameras, 2 slots)  50 participants
#   1 room of 300, three talkers                     300 participants
# Output: $OUT/samples.csv, $OUT/summary.md, each load's results.json, the server log.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-.build/release/chorus}
OUT=${OUT:-bench-output/soak}
MINUTES=${SOAK_MINUTES:-60}
PORT=${SOAK_PORT:-18181}
SECONDS_TOTAL=$((MINUTES * 60))
mkdir -p "$OUT"
rm -rf "${OUT:?}"/load-* "$OUT"/chorus.sqlite* "$OUT/server.log"

"$BIN" serve --db "$OUT/chorus.sqlite" --dev-app --http-host 127.0.0.1 --http-port "$PORT" \
    --media-port 0 --rate-limit 0 --log-level warning >"$OUT/server.log" 2>&1 &
server=$!
loads=()
cleanup() {
    for pid in "${loads[@]}"; do kill "$pid" 2>/dev/null || true; done
    kill "$server" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do grep -q '^  secret:' "$OUT/server.log" 2>/dev/null && break; sleep 0.1; done
key=$(awk '/^  key:/ {print $2}' "$OUT/server.log")
secret=$(awk '/^  secret:/ {print $2}' "$OUT/server.log")
[[ -n $key ]] || { echo "the server did not start:" >&2; cat "$OUT/server.log" >&2; exit 1; }

load() {
    local name=$1; shift
    "$BIN" load --url "http://127.0.0.1:$PORT" --app-key "$key" --app-secret "$secret" --server-pid "$server" \
        --duration "$SECONDS_TOTAL" --ramp-up 50 --quiet --output "$OUT/load-$name" "$@" \
        >"$OUT/load-$name.log" 2>&1 &
    loads+=($!)
}
load meetings --rooms 45 --participants 10 --talkers 1
load video --rooms 5 --participants 10 --talkers 1 --video --slots 2
load large --rooms 1 --participants 300 --talkers 3

python3 Benchmarks/Soak/soak_watch.py --pid "$server" --url "http://127.0.0.1:$PORT" --seconds "$SECONDS_TOTAL" \
    --participants 800 --out "$OUT" &
watcher=$!

failed=0
for pid in "${loads[@]}"; do wait "$pid" || failed=1; done
wait "$watcher" || failed=1
loads=()
for name in meetings video large; do
    python3 - "$OUT/load-$name/results.json" "$name" <<'PY' | tee -a "$OUT/summary.md"
import json, sys
r = json.load(open(sys.argv[1]))
m = r.get("mouthToEar") or {}
print(f"- load {sys.argv[2]}: passed {r['passed']}, loss {r['audioLossPercent']:.3f} %, "
      f"mouth-to-ear p50/p95 {m.get('p50', 0):.0f}/{m.get('p95', 0):.0f} ms, "
      f"server {r.get('serverCPUCores') or 0:.2f} cores")
PY
done
kill -TERM "$server"; wait "$server" || true
exit "$failed"
