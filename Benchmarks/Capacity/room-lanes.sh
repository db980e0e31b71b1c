#!/usr/bin/env bash
# `make bench-lanes`: one big room (3 talkers) against the release server with every room on its
# own queue (--room-lanes 1) and with a big room's per-listener work on one lane per core
# (the default), interleaved: for each round, each size, both settings back to back, each on a
# fresh server. Prints one line per run and writes $OUT/lanes.tsv; each run's results.json and
# report.html are under $OUT/<lanes>-<size>-<round>/.
#
# Environment: SIZES (default "1500 2000 2500 3000"), ROUNDS (3), DURATION seconds (30),
# RAMP_UP joins per second (150), LANES (the settings to compare, default "1 $(nproc)"),
# OUT (bench-output/lanes). The generator shares the machine: its own CPU and tick lag are in
# each results.json.
set -euo pipefail
cd "$(dirname "$0")/../.."

SIZES=${SIZES:-"1500 2000 2500 3000"}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-30}
RAMP_UP=${RAMP_UP:-150}
LANES=${LANES:-"1 $(nproc)"}
OUT=${OUT:-bench-output/lanes}
BIN=.build/release/chorus
HTTP_PORT=${CHORUS_HTTP_PORT:-18091}

server_pid=""
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT
mkdir -p "$OUT"
printf 'round\tsize\tlanes\tpassed\tfailed_bars\tloss_pct\trate_loss_pct\tp95_ms\tonsets\tserver_cores\tcpu_ms_per_participant_s\tgenerator_cores\n' >"$OUT/lanes.tsv"

for round in $(seq 1 "$ROUNDS"); do
  for size in $SIZES; do
    for lanes in $LANES; do
      dir="$OUT/$lanes-$size-$round"
      rm -rf "$dir" "$OUT/chorus.sqlite"*
      "$BIN" serve --db "$OUT/chorus.sqlite" --dev-app --http-host 127.0.0.1 --http-port "$HTTP_PORT" \
        --media-port 0 --rate-limit 0 --log-level warning --room-lanes "$lanes" >"$OUT/chorus.log" 2>&1 &
      server_pid=$!
      for _ in $(seq 1 100); do grep -q '^  secret:' "$OUT/chorus.log" 2>/dev/null && break; sleep 0.1; done
      key=$(awk '/^  key:/ {print $2}' "$OUT/chorus.log")
      secret=$(awk '/^  secret:/ {print $2}' "$OUT/chorus.log")
      "$BIN" load --url "http://127.0.0.1:$HTTP_PORT" --app-key "$key" --app-secret "$secret" --rooms 1 \
        --participants "$size" --talkers 3 --duration "$DURATION" --ramp-up "$RAMP_UP" --server-pid "$server_pid" \
        --output "$dir" --quiet >/dev/null 2>&1 || true
      kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
      python3 - "$dir/results.json" "$round" "$size" "$lanes" >>"$OUT/lanes.tsv" <<'PY'
import json, sys
path, round_, size, lanes = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as error:
    print(f"{round_}\t{size}\t{lanes}\tno-result\t{error}\t\t\t\t\t\t\t")
    sys.exit()
onsets = f"{r.get('onsetsDetected')}/{r.get('onsetsExpected')}"
cpu = r.get("serverCPUSecondsPerParticipantSecond")
print("\t".join(str(x) for x in [round_, size, lanes, r["passed"], ",".join(r.get("failedBars") or []),
      f"{r['audioLossPercent']:.2f}", f"{(r.get('audioRateLossPercent') or 0):.2f}", f"{r['mouthToEar']['p95']:.0f}",
      onsets, f"{(r.get('serverCPUCores') or 0):.2f}", f"{cpu * 1000:.3f}" if cpu else "", f"{r['generatorCPUCores']:.2f}"]))
PY
      tail -1 "$OUT/lanes.tsv"
    done
  done
done
