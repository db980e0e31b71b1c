#!/usr/bin/env bash
# `make bench-instructions`: instruction and allocation counts of the room's two hot steps, which
# (unlike times) repeat exactly on a noisy machine. Release profile executables run N steps under
# callgrind with collection on only inside the measured step (`--toggle-collect`): setup, the
# client peers' handshakes and the building of the packets are not counted. Divided by N:
#   - TickProfile P: one audio tick of a room of P (3 talkers, the rest silent in DTX): that
#     tick's packets received, the mixer, the distinct encodes, every listener's packet protected;
#   - ForwardProfile KIND: one publisher video packet forwarded to 10 viewers.
# Allocations are the heap blocks allocated in the measured steps (DHAT: a run's minus those of
# the same run with --build-only). Prints a table and writes
# $OUT/instructions.tsv.
#
# Environment: TICKS (200), PACKETS (2000), ROOMS ("40 1000"), OUT (bench-output/instructions).
set -euo pipefail
cd "$(dirname "$0")/../.."

TICKS=${TICKS:-200}
PACKETS=${PACKETS:-2000}
ROOMS=${ROOMS:-"40 1000"}
OUT=${OUT:-bench-output/instructions}
mkdir -p "$OUT"
for product in TickProfile ForwardProfile; do
    swift build -c release --scratch-path .build-bench --product "$product" >"$OUT/build.log" 2>&1 ||
        { cat "$OUT/build.log"; exit 1; }
done
BIN=.build-bench/release

# "<instructions> <allocations>" per step of one profile run; $1 the step's (mangled) symbol glob,
# $2 the number of steps, the rest the command (its last argument the step count).
# Instructions: callgrind, collecting only inside the toggled function. Allocations: DHAT's blocks
# of the run minus those of the same run with `--build-only` (the same setup and packets, no step
# run), over $2. (Callgrind's call counts cannot give them: it records calls, to the allocator
# too, outside the toggled window, so its counts included the setup's.)
per_step() {
    local glob=$1 steps=$2 file
    shift 2
    file=$(mktemp "$OUT/callgrind.XXXXXX")
    valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$glob" --callgrind-out-file="$file" \
        "$@" >/dev/null 2>&1
    local instructions full setup
    instructions=$(python3 Benchmarks/Instructions/callgrind_counts.py "$file" | awk '{ print $1 }')
    full=$(blocks "$@")
    setup=$(blocks "$@" --build-only)
    awk -v i="$instructions" -v f="$full" -v s="$setup" -v n="$steps" 'BEGIN { printf "%.0f\t%.2f", i / n, (f - s) / n }'
    rm -f "$file"
}

# The heap blocks a command allocates in its whole run (DHAT).
blocks() {
    valgrind --tool=dhat --dhat-out-file=/dev/null "$@" 2>&1 >/dev/null |
        awk '/Total:/ { gsub(",", "", $(NF - 1)); print $(NF - 1) }'
}

printf 'step\tinstructions\tallocations\n' | tee "$OUT/instructions.tsv"
for room in $ROOMS; do
    printf 'audio tick, room of %s\t%s\n' "$room" \
        "$(per_step '*17AudioTickScenarioC3run*' "$TICKS" "$BIN/TickProfile" "$room" "$TICKS")" | tee -a "$OUT/instructions.tsv"
done
for kind in plain simulcast+transport-cc; do
    printf 'video packet to 10 viewers, %s\t%s\n' "$kind" \
        "$(per_step '*19RoomForwardScenarioC7forward*' "$PACKETS" "$BIN/ForwardProfile" "$kind" "$PACKETS")" |
        tee -a "$OUT/instructions.tsv"
done
