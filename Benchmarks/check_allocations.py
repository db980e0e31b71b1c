#!/usr/bin/env python3
"""`make bench`'s allocation check: each benchmark's allocations (mallocCountTotal, p90) from the
run just made (files `<target>.<name>.p90.json` that `swift package benchmark thresholds update`
wrote into CURRENT) against the stored ones (Benchmarks/Thresholds, in git). More than the stored
count + SLACK (or the file's own "slack", for a benchmark whose count varies from run to run)
fails (exit 2); fewer is reported, to be stored with `make bench-thresholds`.
Times are printed, never checked: this machine is too noisy for that.

(The benchmark plugin's own `thresholds check` cannot be used: version 1.38 writes the files
with spaces replaced by underscores but looks them up by the raw names.)

Usage: check_allocations.py CURRENT STORED           (check)
       check_allocations.py --store CURRENT STORED   (store CURRENT's counts, keeping each
                                                      stored file's "slack" and "why")
"""
import json
import sys
from pathlib import Path

SLACK = 2


def main(current_dir: str, stored_dir: str) -> int:
    regressions, improvements, missing = [], [], []
    print(f"{'benchmark':<100} {'wall p90':>12} {'mallocs':>8} {'stored':>7}")
    for path in sorted(Path(current_dir).glob("*.p90.json")):
        now = json.loads(path.read_text())
        stored_path = Path(stored_dir) / path.name
        stored_file = json.loads(stored_path.read_text()) if stored_path.exists() else {}
        stored = stored_file.get("mallocCountTotal")
        slack = stored_file.get("slack", SLACK)
        mallocs = now.get("mallocCountTotal")
        name = path.name.removesuffix(".p90.json")
        print(f"{name:<100} {now.get('wallClock', '-'):>12} {mallocs if mallocs is not None else '-':>8} "
              f"{stored if stored is not None else '-':>7}")
        if mallocs is None:
            continue
        if stored is None:
            missing.append(name)
        elif mallocs > stored + slack:
            regressions.append(f"{name}: {mallocs} allocations, stored {stored}")
        elif mallocs < stored:
            improvements.append(name)
    for name in missing:
        print(f"no stored threshold: {name} (make bench-thresholds)")
    if improvements:
        print(f"{len(improvements)} benchmark(s) allocate less than stored: store them with make bench-thresholds")
    for regression in regressions:
        print(f"REGRESSION {regression}")
    return 2 if regressions else 0


def store(current_dir: str, stored_dir: str) -> int:
    for path in sorted(Path(current_dir).glob("*.p90.json")):
        now = json.loads(path.read_text())
        if "mallocCountTotal" not in now:
            continue
        target = Path(stored_dir) / path.name
        old = json.loads(target.read_text()) if target.exists() else {}
        kept = {k: v for k, v in old.items() if k in ("slack", "why")}
        target.write_text(json.dumps({"mallocCountTotal": now["mallocCountTotal"], **kept}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--store":
        sys.exit(store(sys.argv[2], sys.argv[3]))
    sys.exit(main(sys.argv[1], sys.argv[2]))
