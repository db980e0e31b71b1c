#!/usr/bin/env bash
# Two Chorus builds under the same `chorus load` scenarios, interleaved A, B, A, B… in one run
# on this machine, each run against a fresh server: how a change moves the server's CPU per
# participant-second, loss and latency, with the machine's drift spread over both.
#
#   Benchmarks/Compare/ab-load.sh BEFORE_BIN AFTER_BIN [ROUNDS]
#
# Scenarios: SCENARIOS (space-separated NAME:ROOMS:PARTICIPANTS:TALKERS[:SLOTS]), DURATION
# seconds each, DTX (on, off or negotiated: the load's silent participants; default negotiated,
# bench-compare runs on), LOAD_ARGS (more `chorus load` options for every run). Results: $OUT/<label>-<scenario>-<round>/results.json and a table on stdout.
set -euo pipefail
A=${1:?before binary}; B=${2:?after binary}; ROUNDS=${3:-2}
OUT=${OUT:-bench-output/ab}
DURATION=${DURATION:-20}
SCENARIOS=${SCENARIOS:-"meetings:50:10:1 video:3:5:1:2"}
PORT=${PORT:-18091}
mkdir -p "$OUT"
rm -rf "${OUT:?}"/before-* "${OUT:?}"/after-*

run_one() {
    local label=$1 bin=$2 spec=$3 round=$4 name rooms participants talkers slots
    IFS=: read -r name rooms participants talkers slots <<<"$spec"
    # The old log must go first: the banner check could otherwise read it before the new
    # server truncates it.
    rm -f "$OUT/$label.sqlite"* "$OUT/$label.log"
    "$bin" serve --db "$OUT/$label.sqlite" --dev-app --http-host 127.0.0.1 --http-port "$PORT" \
        --media-port 0 --rate-limit 0 --log-level warning >"$OUT/$label.log" 2>&1 &
    local pid=$!
    # A busy machine can take seconds to start a server: wait for its banner, up to 60 s.
    for _ in $(seq 1 600); do grep -q '^  secret:' "$OUT/$label.log" 2>/dev/null && break; sleep 0.1; done
    local key secret
    key=$(awk '/^  key:/ {print $2}' "$OUT/$label.log"); secret=$(awk '/^  secret:/ {print $2}' "$OUT/$label.log")
    [[ -n $key && -n $secret ]] || { echo "$label did not start:" >&2; cat "$OUT/$label.log" >&2; kill "$pid"; return 1; }
    local args=(load --url "http://127.0.0.1:$PORT" --app-key "$key" --app-secret "$secret" --rooms "$rooms"
        --participants "$participants" --talkers "$talkers" --duration "$DURATION" --ramp-up 200
        --server-pid "$pid" --output "$OUT/$label-$name-$round" --dtx "${DTX:-negotiated}" --quiet)
    [[ -n $slots ]] && args+=(--video --slots "$slots")
    # LOAD_ARGS: more `chorus load` options for every run (e.g. "--sockets shared").
    read -r -a extra <<<"${LOAD_ARGS:-}"
    args+=("${extra[@]}")
    "$B" "${args[@]}" >/dev/null || echo "($label $name round $round did not pass)" >&2
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

for round in $(seq 1 "$ROUNDS"); do
    for spec in $SCENARIOS; do
        run_one before "$A" "$spec" "$round"
        run_one after "$B" "$spec" "$round"
    done
done

python3 - "$OUT" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| run | server CPU-ms per participant-s | generator cores | host steal % | loss % | mouth-to-ear p50 / p95 ms | passed |")
print("|---|---|---|---|---|---|---|")
for path in sorted(out.glob("*/results.json")):
    r = json.loads(path.read_text())
    cpu = r.get("serverCPUSecondsPerParticipantSecond")
    m = r.get("mouthToEar") or {}
    steal = r.get("hostStealPercent")
    print(f"| {path.parent.name} | {cpu * 1000:.2f} | {r.get('generatorCPUCores', float('nan')):.2f} | "
          f"{'' if steal is None else format(steal, '.1f')} | {r.get('audioLossPercent', 0):.2f} | "
          f"{m.get('p50', float('nan')):.0f} / {m.get('p95', float('nan')):.0f} | {r.get('passed')} |"
          if cpu is not None else f"| {path.parent.name} | n/a | | | | | {r.get('passed')} |")
PY
