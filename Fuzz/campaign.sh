#!/usr/bin/env bash
# A long fuzzing campaign: each target runs CAMPAIGN_SECONDS (3600) from the committed corpus
# plus its own working corpus, CAMPAIGN_JOBS (2) targets at a time at the lowest CPU priority,
# then the committed corpus is replaced by the minimised union of seeds and growth
# (libFuzzer -merge=1), so that every `make test` replays it and the next campaign starts there.
# Usage: Fuzz/campaign.sh [Target ...]   (default: every target built by `make fuzz`)
# Logs and the summary table: $FUZZ_SCRATCH/campaign/ (the `make fuzz` scratch folder).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${CAMPAIGN_SECONDS:-3600}
jobs=${CAMPAIGN_JOBS:-2}
scratch=${FUZZ_SCRATCH:-.build-fuzz}
out="$scratch/campaign"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(FuzzSTUN FuzzRTP FuzzRTCP FuzzSDP FuzzDTLS FuzzDatagram)
mkdir -p "$out"

run_one() {
  local t=$1 bin="$scratch/release/$1"
  mkdir -p "$out/$t.corpus" "Fuzz/Crashes/$t"
  echo "$(date -u +%FT%TZ) start $t ($seconds s)"
  # -rss_limit_mb: a leak or an allocation bomb is a finding, not a reason to swap.
  # -timeout=120: at nice 19 a busy machine can starve a fuzzer for seconds; 10 s reported two
  # inputs that replay in 6 and 113 ms as hangs and stopped their runs (2026-11-25).
  SWIFT_BACKTRACE=enable=no nice -n 19 "$bin" -max_total_time="$seconds" -timeout=120 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="Fuzz/Crashes/$t/" \
    "$out/$t.corpus" "Fuzz/Corpus/$t" >"$out/$t.log" 2>&1 || echo "$t: FAILED (see $out/$t.log)"
  echo "$(date -u +%FT%TZ) done $t"
}

summarise() {
  local t=$1 log="$out/$1.log"
  local units cov ft
  # A log without the final stats (a run still going, or stopped) must not end the script.
  units=$({ grep -o 'stat::number_of_executed_units: [0-9]*' "$log" || true; } | awk '{print $2}' | tail -1)
  cov=$({ grep -o 'cov: [0-9]*' "$log" || true; } | tail -1 | awk '{print $2}')
  ft=$({ grep -o 'ft: [0-9]*' "$log" || true; } | tail -1 | awk '{print $2}')
  local before after
  before=$(ls "Fuzz/Corpus/$t" | wc -l)
  # Minimise seeds + growth into a fresh folder, then make it the committed corpus.
  rm -rf "$out/$t.merged"; mkdir -p "$out/$t.merged"
  SWIFT_BACKTRACE=enable=no nice -n 19 "$scratch/release/$t" -merge=1 -timeout=10 \
    "$out/$t.merged" "Fuzz/Corpus/$t" "$out/$t.corpus" >"$out/$t.merge.log" 2>&1
  after=$(ls "$out/$t.merged" | wc -l)
  # The named seeds stay as they are: tests read some of them as fixtures (a real ClientHello).
  find "Fuzz/Corpus/$t" -type f ! -regex '.*/[0-9a-f]\{40\}' -exec cp {} "$out/$t.merged/" \;
  rm -rf "Fuzz/Corpus/$t"; cp -r "$out/$t.merged" "Fuzz/Corpus/$t"
  local crashes; crashes=$(ls "Fuzz/Crashes/$t" | wc -l)
  printf '| `%s` | %s | %s | %s | %s → %s | %s |\n' "$t" "$seconds" "${units:-?}" "${cov:-?}/${ft:-?}" \
    "$before" "$after" "$crashes" | tee -a "$out/summary.md"
}

# CAMPAIGN_SUMMARISE_ONLY=1: no fuzzing, only the merge and summary of runs already made.
running=0
[ "${CAMPAIGN_SUMMARISE_ONLY:-0}" = 1 ] && targets_to_run=() || targets_to_run=("${targets[@]}")
for t in "${targets_to_run[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
if [ ! -f "$out/summary.md" ]; then
  echo '| Target | Seconds | Inputs run | Edges/features | Corpus files (seeds → minimised) | Crash files |' >"$out/summary.md"
  echo '|---|---|---|---|---|---|' >>"$out/summary.md"
fi
for t in "${targets[@]}"; do summarise "$t"; done
