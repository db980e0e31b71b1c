"""Samples a server's resources every 10 s during a soak and judges their growth.

Every sample: resident memory (VmRSS), threads, open file descriptors (/proc/<pid>/...), and from
/metrics the participants established, the datagrams waiting on room queues and the media
drops. After the warm-up (the first 10 % of the run, at least 2 minutes, by which time every
join has long finished), the run fails when:
- resident memory grows by more than max(64 MB, 15 %) from the median of the first three
  post-warm-up samples to the median of the last three;
- open descriptors grow by more than 16, or threads by more than 8 (same medians);
- fewer than 95 % of the expected participants are established in any post-warm-up sample;
- a post-warm-up sample finds more than 5,000 datagrams waiting on room queues (a backlog:
  at this load a healthy server has a few hundred at most);
- more than 10 % of the samples could not be taken (/metrics did not answer within 30 s).
Writes samples.csv and summary.md to --out; exits 1 on failure.
"""

from __future__ import annotations

import argparse
import csv
import pathlib
import statistics
import sys
import time
import urllib.request

INTERVAL = 10


def proc_status(pid: int) -> dict[str, int]:
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "Threads"):
            fields[key] = int(value.split()[0])
    fields["fds"] = len(list(pathlib.Path(f"/proc/{pid}/fd").iterdir()))
    return fields


def metrics(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=30).read().decode()
    wanted = {"established": 0.0, "queue": 0.0, "dropped": 0.0}
    for line in text.splitlines():
        if line.startswith('chorus_participants{state="established"}'):
            wanted["established"] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("chorus_room_queue_datagrams"):
            wanted["queue"] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("chorus_media_dropped_total"):
            wanted["dropped"] += float(line.rsplit(" ", 1)[1])
    return wanted


def sample(pid: int, url: str, start: float) -> dict[str, float]:
    row: dict[str, float] = {"t": round(time.monotonic() - start)}
    status = proc_status(pid)
    row["rss_mb"] = status["VmRSS"] / 1024
    row["threads"] = status["Threads"]
    row["fds"] = status["fds"]
    row.update(metrics(url))
    return row


def judge(rows: list[dict[str, float]], warmup: float, participants: int) -> list[str]:
    steady = [r for r in rows if r["t"] >= warmup]
    if len(steady) < 6:
        return [f"too few samples after the warm-up ({len(steady)})"]
    first, last = steady[:3], steady[-3:]
    problems = []

    def growth(key: str) -> float:
        return statistics.median(r[key] for r in last) - statistics.median(r[key] for r in first)

    rss_base = statistics.median(r["rss_mb"] for r in first)
    if growth("rss_mb") > max(64.0, 0.15 * rss_base):
        problems.append(f"resident memory grew {growth('rss_mb'):.1f} MB from {rss_base:.1f} MB")
    if growth("fds") > 16:
        problems.append(f"open descriptors grew by {growth('fds'):.0f}")
    if growth("threads") > 8:
        problems.append(f"threads grew by {growth('threads'):.0f}")
    low = [r for r in steady if r["established"] < 0.95 * participants]
    if low:
        problems.append(f"{len(low)} samples with fewer than 95 % of {participants} participants established "
                        f"(lowest {min(r['established'] for r in low):.0f})")
    backlog = [r for r in steady if r["queue"] > 5000]
    if backlog:
        problems.append(f"{len(backlog)} samples with a room-queue backlog (max {max(r['queue'] for r in backlog):.0f})")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--seconds", type=int, required=True)
    parser.add_argument("--participants", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    warmup = max(120.0, 0.1 * args.seconds)
    start = time.monotonic()
    rows: list[dict[str, float]] = []
    missed = 0
    with open(out / "samples.csv", "w", newline="") as file:
        writer = None
        # Stop 20 s before the loads do: their hang-ups at the end are not a fault to judge.
        while time.monotonic() - start < args.seconds - 20:
            time.sleep(INTERVAL)
            try:
                row = sample(args.pid, args.url, start)
            except (OSError, ValueError) as error:
                # A busy server may answer late; a run of misses fails the soak below.
                missed += 1
                print(f"soak: sample missed at {time.monotonic() - start:.0f} s: {error}", file=sys.stderr)
                continue
            rows.append(row)
            if writer is None:
                writer = csv.DictWriter(file, fieldnames=list(row))
                writer.writeheader()
            writer.writerow(row)
            file.flush()
    if not rows:
        print(f"soak: no sample could be taken ({missed} missed)", file=sys.stderr)
        return 1
    problems = judge(rows, warmup, args.participants)
    if missed > 0.1 * (len(rows) + missed):
        problems.append(f"{missed} of {len(rows) + missed} samples missed")
    steady = [r for r in rows if r["t"] >= warmup] or rows
    lines = [
        f"# Soak: {args.seconds / 60:.0f} min, {args.participants} participants, {len(rows)} samples",
        "",
        f"- warm-up: first {warmup:.0f} s",
        f"- resident memory after warm-up: {min(r['rss_mb'] for r in steady):.1f}–{max(r['rss_mb'] for r in steady):.1f} MB",
        f"- threads: {min(r['threads'] for r in steady):.0f}–{max(r['threads'] for r in steady):.0f}; "
        f"open descriptors: {min(r['fds'] for r in steady):.0f}–{max(r['fds'] for r in steady):.0f}",
        f"- established: {min(r['established'] for r in steady):.0f}–{max(r['established'] for r in steady):.0f}; "
        f"room-queue datagrams: max {max(r['queue'] for r in steady):.0f}",
        f"- media drops (cumulative at the end): {rows[-1]['dropped']:.0f}; samples missed: {missed}",
        "- verdict: " + ("PASSED" if not problems else "FAILED: " + "; ".join(problems)),
    ]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
