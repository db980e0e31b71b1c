#!/usr/bin/env bash
# What the load generator costs beside the server it measures: one release build, two generator
# settings, interleaved A, B, A, B… on this machine, each run against a fresh server. Prints the
# server's and the generator's cores, their ratio (the generator should be ≤ 1/3 of the server
# so that on two cores it does not set the ceiling), the generator's CPU per listener-packet
# received, and whether the run passed its bars.
#
#   Benchmarks/Capacity/generator-cost.sh BIN [ROUNDS]
#
# BEFORE_ARGS / AFTER_ARGS: the two settings (default: every packet through SRTP and two probes
# in every room, against the defaults). SCENARIOS: NAME:ROOMS:PARTICIPANTS:TALKERS, space-
# separated (default rooms of 10 ×200 and one room of 1,000). DURATION seconds (20).
# Results: $OUT/<label>-<scenario>-<round>/results.json.
set -euo pipefail
BIN=${1:?release chorus binary}; ROUNDS=${2:-3}
OUT=${OUT:-bench-output/generator-cost}
DURATION=${DURATION:-20}
SCENARIOS=${SCENARIOS:-"meetings:200:10:1 room:1:1000:3"}
BEFORE_ARGS=${BEFORE_ARGS:-"--srtp-sample 1 --probes 1000000"}
AFTER_ARGS=${AFTER_ARGS:-""}
PORT=${PORT:-18093}
mkdir -p "$OUT"
rm -rf "${OUT:?}"/before-* "${OUT:?}"/after-*

run_one() {
    local label=$1 spec=$2 round=$3 name rooms participants talkers settings
    IFS=: read -r name rooms participants talkers <<<"$spec"
    settings=$([[ $label == before ]] && echo "$BEFORE_ARGS" || echo "$AFTER_ARGS")
    rm -f "$OUT/server.sqlite"* "$OUT/server.log"
    "$BIN" serve --db "$OUT/server.sqlite" --dev-app --http-host 127.0.0.1 --http-port "$PORT" \
        --media-port 0 --rate-limit 0 --log-level warning >"$OUT/server.log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 600); do grep -q '^  secret:' "$OUT/server.log" 2>/dev/null && break; sleep 0.1; done
    local key secret
    key=$(awk '/^  key:/ {print $2}' "$OUT/server.log"); secret=$(awk '/^  secret:/ {print $2}' "$OUT/server.log")
    [[ -n $key && -n $secret ]] || { echo "the server did not start:" >&2; cat "$OUT/server.log" >&2; kill "$pid"; return 1; }
    read -r -a extra <<<"$settings"
    "$BIN" load --url "http://127.0.0.1:$PORT" --app-key "$key" --app-secret "$secret" --rooms "$rooms" \
        --participants "$participants" --talkers "$talkers" --duration "$DURATION" --ramp-up 200 \
        --server-pid "$pid" --sockets shared --output "$OUT/$label-$name-$round" --quiet "${extra[@]}" >/dev/null ||
        echo "($label $name round $round did not pass)" >&2
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

for round in $(seq 1 "$ROUNDS"); do
    for spec in $SCENARIOS; do
        run_one before "$spec" "$round"
        run_one after "$spec" "$round"
    done
done

python3 - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| run | server cores | generator cores | generator / server | generator µs per listener-packet | loss % | p95 ms | passed |")
print("|---|---|---|---|---|---|---|---|")
for path in sorted(out.glob("*/results.json")):
    r = json.loads(path.read_text())
    server, generator = r.get("serverCPUCores") or float("nan"), r.get("generatorCPUCores", float("nan"))
    # Audio packets the listeners received in a second (each sample is one second), the median
    # over the seconds once everyone had joined.
    joined = max((s["established"] for s in r.get("samples", [])), default=0)
    rates = [s["audioPacketsReceived"] for s in r.get("samples", []) if s["established"] == joined and joined]
    rate = sorted(rates)[len(rates) // 2] if rates else 0
    per_packet = generator / rate * 1e6 if rate else float("nan")
    m = r.get("mouthToEar") or {}
    print(f"| {path.parent.name} | {server:.2f} | {generator:.2f} | {generator / server:.2f} | {per_packet:.1f} | "
          f"{r.get('audioLossPercent', 0):.2f} | {m.get('p95', float('nan')):.0f} | {r.get('passed')} |")
PY
