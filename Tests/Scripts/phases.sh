#!/usr/bin/env bash
# Runs `make test`'s phases in order: each argument is "name::command". Each phase's output goes
# to the terminal and to test-output/<name>.log; the first phase that fails stops the run. At the
# end (pass or fail) it prints each phase's time and the test counts the logs report (Swift
# Testing's and XCTest's summaries, pytest's), so a run that silently ran fewer tests shows.
set -uo pipefail
mkdir -p test-output
names=() times=() results=()
status=0
for phase in "$@"; do
    name=${phase%%::*} command=${phase#*::}
    log="test-output/${name// /-}.log"
    echo "== $name: $command"
    start=$(date +%s)
    bash -c "$command" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    names+=("$name") times+=($(( $(date +%s) - start ))) results+=("$([ "$status" = 0 ] && echo ok || echo FAILED)")
    [ "$status" = 0 ] || break
done

counts() {
    local log="test-output/${1// /-}.log"
    [ -f "$log" ] || return 0
    # Swift Testing's and XCTest's run summaries, and pytest's final line ("76 passed, 2 skipped
    # in 147.47s", between '=' rules or not); anchored, so no test's own output can match.
    {
        grep -hoE "^. Test run with [0-9]+ tests?" "$log" | sed 's/^. //'
        grep -hoE "^Executed [1-9][0-9]* tests?, with [0-9]+ failures?" "$log"
        grep -hE "^=* ?[0-9]+ (passed|failed|skipped|errors?)[a-z0-9., ]* in [0-9.]+s" "$log" | sed -E 's/^=+ //; s/ \(.*//; s/ =+$//'
    } | sort -u | tr '\n' ';' | sed 's/;$//; s/;/; /g'
}

echo
echo "== make test: phase times"
total=0
for index in "${!names[@]}"; do
    seconds=${times[$index]}
    total=$(( total + seconds ))
    printf '  %-12s %4d min %02d s  %-6s %s\n' "${names[$index]}" $(( seconds / 60 )) $(( seconds % 60 )) \
        "${results[$index]}" "$(counts "${names[$index]}")"
done
printf '  %-12s %4d min %02d s\n' "total" $(( total / 60 )) $(( total % 60 ))
exit "$status"
