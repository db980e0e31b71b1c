#!/usr/bin/env python3
"""`make bench-capacity`: the largest load each server carries on this machine, searched side by
side with one client (`chorus load`) and one bar (`LoadBars`: everyone joined and heard, loss by
both measures < 0.5 %, mouth-to-ear p95 ≤ 400 ms, ≥ 99.5 % of the onsets detected).

Two shapes: one room with 3 talkers (its size searched), and rooms of 10 with one talker each
(their number searched). Three servers: Chorus (release build, loopback), Janus 1.1.2's
AudioBridge with its defaults, and the same Janus with its prebuffering set to 2 packets, the
40 ms that Chorus's jitter buffer starts with (a fairer latency comparison; Janus runs in a
network namespace, `Benchmarks/Janus/janus-netns.sh`, so this needs root).

The search walks a ladder of sizes upwards. A size is held when 3 of 3 runs pass; the first
failed run ends that server's search, and its capacity is the last size held. The searches are
interleaved: each round gives every unfinished search its next run, so Chorus and Janus runs
alternate and share the machine's state of the moment. Every run gets a freshly started server.

Output under $OUT (default bench-output/capacity): one folder per run with `chorus load`'s
results.json and report.html, runs.tsv (a line per run), and capacity.md: capacity per shape and
server with the ratios, then the cost per participant at the sizes both servers held (per-CPU
ratios at equal load, not extrapolated).

Environment: OUT; DURATION seconds of media per run (20); REPEATS (3); SERVERS (default
"chorus janus janus-matched"; "janus-loops2" adds Janus with event_loops = 2, bench-compare's
tuned setting, whose runs are listed in runs.tsv and the capacity table); SHAPES ("room meetings"); ROOM_SIZES and MEETING_ROOMS (the
ladders; per server as CHORUS_ROOM_SIZES, JANUS_ROOM_SIZES, CHORUS_MEETING_ROOMS,
JANUS_MEETING_ROOMS, where JANUS_* apply to both Janus settings). A shorter ladder that starts
higher saves time but proves less: capacity.md prints each ladder. CHORUS_SOCKETS: how
`chorus load` holds Chorus's participants, "shared" (default: a UDP socket per 64 participants,
each on a loopback address of its own, which costs the generator about a third less CPU at
2,500 listeners and leaves that to the server) or "per-participant" (a socket each, as the
searches before 2026-11-27 did). Janus runs in a network namespace, not on loopback, so its
participants always have a socket each (its capacities are 10-20 times smaller: the
generator's share of the machine there is small either way).
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".build/release/chorus"
NETNS = ROOT / "Benchmarks/Janus/janus-netns.sh"
JANUS_URL = "http://198.18.0.2:8088"
HTTP_PORT = int(os.environ.get("CHORUS_HTTP_PORT", "18092"))
OUT = Path(os.environ.get("OUT", ROOT / "bench-output/capacity"))
DURATION = float(os.environ.get("DURATION", "20"))
REPEATS = int(os.environ.get("REPEATS", "3"))
# Chorus's jitter buffer starts at 40 ms (JitterBufferConfiguration.initialTargetMs): 2 packets.
MATCHED_PREBUFFER = 2
CHORUS_SOCKETS = os.environ.get("CHORUS_SOCKETS", "shared")

LABELS = {"chorus": "Chorus", "janus": "Janus 1.1.2 (defaults: prebuffer 6 packets)",
          "janus-matched": f"Janus 1.1.2 (prebuffer {MATCHED_PREBUFFER} packets, as Chorus's 40 ms)",
          "janus-loops2": "Janus 1.1.2 (event_loops = 2: a static pool of two event loops)"}
SHAPES = {"room": "one room, 3 talkers (participants)", "meetings": "rooms of 10, 1 talker each (rooms)"}
DEFAULT_LADDERS = {
    "room": "40 80 120 160 200 250 320 400 600 800 1000 1250 1500 2000 2500 3000",
    "meetings": "5 10 15 20 30 40 50 60 75 100 125 150",
}


def ladder(server: str, shape: str) -> list[int]:
    kind = "ROOM_SIZES" if shape == "room" else "MEETING_ROOMS"
    family = "CHORUS" if server == "chorus" else "JANUS"
    text = os.environ.get(f"{family}_{kind}") or os.environ.get(kind) or DEFAULT_LADDERS[shape]
    return [int(size) for size in text.split()]


@dataclass
class Search:
    """One server's walk up one shape's ladder."""
    server: str
    shape: str
    sizes: list[int]
    step: int = 0
    passes: int = 0
    held: int | None = None
    ended: str | None = None
    runs: list[dict] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.sizes[self.step]

    def record(self, run: dict) -> None:
        self.runs.append(run)
        if not run["passed"]:
            self.ended = f"{self.size} failed: {run['why']}"
            return
        self.passes += 1
        if self.passes == REPEATS:
            self.held, self.passes = self.size, 0
            self.step += 1
            if self.step == len(self.sizes):
                self.ended = "top of the ladder held"


def shape_load(shape: str, size: int) -> tuple[int, int, int]:
    """Rooms, participants per room and talkers per room for one probe."""
    return (1, size, 3) if shape == "room" else (size, 10, 1)


def start_chorus(folder: Path) -> tuple[subprocess.Popen, str, str]:
    log = folder / "chorus.log"
    server = subprocess.Popen(
        [str(BIN), "serve", "--db", str(folder / "chorus.sqlite"), "--dev-app", "--http-host", "127.0.0.1",
         "--http-port", str(HTTP_PORT), "--media-port", "0", "--rate-limit", "0", "--log-level", "warning"],
        stdout=log.open("w"), stderr=subprocess.STDOUT)
    for _ in range(200):
        text = log.read_text() if log.exists() else ""
        key, secret = re.search(r"^  key: +(\S+)", text, re.M), re.search(r"^  secret: +(\S+)", text, re.M)
        if key and secret:
            return server, key.group(1), secret.group(1)
        time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"chorus did not start: {log.read_text()}")


def probe(search: Search, repeat: int) -> dict:
    """One run of `chorus load` at the search's current size against a fresh server."""
    rooms, participants, talkers = shape_load(search.shape, search.size)
    folder = OUT / f"{search.server}-{search.shape}-{search.size}-{repeat}"
    subprocess.run(["rm", "-rf", str(folder)], check=True)
    folder.mkdir(parents=True)
    total = rooms * participants
    # Joins take about 15 s at any size (20…150 a second), so a run's length barely grows with it.
    ramp = min(150, max(20, total / 15))
    args = [str(BIN), "load", "--rooms", str(rooms), "--participants", str(participants), "--talkers", str(talkers),
            "--duration", str(DURATION), "--ramp-up", f"{ramp:.0f}", "--dtx", "on", "--output", str(folder),
            "--quiet"]
    if search.server == "chorus":
        server, key, secret = start_chorus(folder)
        args += ["--url", f"http://127.0.0.1:{HTTP_PORT}", "--app-key", key, "--app-secret", secret,
                 "--server-pid", str(server.pid), "--sockets", CHORUS_SOCKETS]
        stop = lambda: (server.terminate(), server.wait(timeout=30))  # noqa: E731
    else:
        # janus-loops2: the tuned setting of bench-compare (Janus spreads its peer connections
        # over a fixed pool of two loops instead of a thread per connection).
        environment = os.environ | ({"EVENT_LOOPS": "2"} if search.server == "janus-loops2" else {})
        started = subprocess.run([str(NETNS), "up", str(folder / "janus.log")], capture_output=True, text=True,
                                 env=environment)
        pid = started.stdout.strip()
        if started.returncode != 0 or not pid.isdigit():
            subprocess.run([str(NETNS), "down"], capture_output=True)
            return {"server": search.server, "shape": search.shape, "size": search.size, "repeat": repeat,
                    "passed": False, "why": f"janus did not start: {started.stderr.strip()[-200:]}"}
        args += ["--target", "janus", "--url", JANUS_URL, "--server-pid", pid]
        if search.server == "janus-matched":
            args += ["--janus-prebuffer", str(MATCHED_PREBUFFER)]
        stop = lambda: subprocess.run([str(NETNS), "down"], capture_output=True)  # noqa: E731
    try:
        subprocess.run(args, stdout=(folder / "load.out").open("w"), stderr=subprocess.STDOUT, timeout=900)
    finally:
        stop()
    return summarise(folder / "results.json", search, repeat)


def summarise(path: Path, search: Search, repeat: int) -> dict:
    run = {"server": search.server, "shape": search.shape, "size": search.size, "repeat": repeat}
    try:
        results = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return run | {"passed": False, "why": f"no results ({error})"}
    why = results.get("failedBars") or []
    if not why and not results["passed"]:
        why = results.get("errors")[:1] or ["not everyone joined and heard"]
    cost = results.get("serverCPUSecondsPerParticipantSecond")
    return run | {
        "passed": bool(results["passed"]), "why": "; ".join(why),
        "participants": results["participants"], "cpuMsPerParticipantSecond": cost * 1000 if cost else None,
        "serverCores": results.get("serverCPUCores"), "generatorCores": results["generatorCPUCores"],
        "lossPercent": results["audioLossPercent"], "rateLossPercent": results.get("audioRateLossPercent"),
        "p50": results["mouthToEar"]["p50"], "p95": results["mouthToEar"]["p95"],
        "stealPercent": results.get("hostStealPercent"),
    }


def tsv_line(run: dict) -> str:
    def fmt(value, spec=".2f"):
        return "" if value is None else format(value, spec)
    return "\t".join([run["server"], run["shape"], str(run["size"]), str(run["repeat"]), str(run["passed"]),
                      run["why"], fmt(run.get("cpuMsPerParticipantSecond"), ".3f"), fmt(run.get("serverCores")),
                      fmt(run.get("generatorCores")), fmt(run.get("lossPercent")), fmt(run.get("rateLossPercent")),
                      fmt(run.get("p50"), ".0f"), fmt(run.get("p95"), ".0f"), fmt(run.get("stealPercent"), ".1f")])


def main() -> int:
    servers = os.environ.get("SERVERS", "chorus janus janus-matched").split()
    shapes = os.environ.get("SHAPES", "room meetings").split()
    if not BIN.exists():
        print(f"{BIN} missing: swift build -c release --product chorus", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    searches = [Search(server, shape, ladder(server, shape)) for shape in shapes for server in servers]
    tsv = OUT / "runs.tsv"
    tsv.write_text("server\tshape\tsize\trepeat\tpassed\tfailed\tcpu_ms_per_participant_s\tserver_cores\t"
                   "generator_cores\tloss_pct\trate_loss_pct\tp50_ms\tp95_ms\thost_steal_pct\n")
    while active := [search for search in searches if search.ended is None]:
        for search in active:
            run = probe(search, search.passes + 1)
            search.record(run)
            with tsv.open("a") as file:
                file.write(tsv_line(run) + "\n")
            print(tsv_line(run), flush=True)
    report = render(searches)
    (OUT / "capacity.md").write_text(report)
    print(report)
    return 0


def render(searches: list[Search]) -> str:
    lines = [f"Each size held when {REPEATS} of {REPEATS} runs of {DURATION:.0f} s passed; "
             "searches interleaved round by round, a fresh server per run. "
             f"Chorus's participants on sockets: {CHORUS_SOCKETS}; Janus's: per participant.", ""]
    shapes = list(dict.fromkeys(search.shape for search in searches))
    lines += ["| shape | server | ladder | capacity (last size held) | search ended | vs Janus defaults |",
              "|---|---|---|---|---|---|"]
    for shape in shapes:
        by_server = {search.server: search for search in searches if search.shape == shape}
        janus = by_server.get("janus")
        for server, search in by_server.items():
            ratio = (f"{search.held / janus.held:.1f}×" if janus and janus.held and search.held and server != "janus"
                     else "—")
            lines.append(f"| {SHAPES[shape]} | {LABELS[server]} | {' '.join(map(str, search.sizes))} | "
                         f"{search.held if search.held is not None else 'below the ladder'} | {search.ended} | {ratio} |")
    lines += ["", "Cost at the sizes both servers held (medians of the passing runs; per-CPU ratio at equal load):", "",
              "| shape | size | Chorus CPU-ms per participant-s | Janus (defaults) | ratio | Janus (matched) | ratio "
              "| mouth-to-ear p50/p95 ms: Chorus · Janus defaults · matched |",
              "|---|---|---|---|---|---|---|---|"]
    for shape in shapes:
        costs = equal_load(searches, shape)
        for size, row in sorted(costs.items()):
            lines.append(f"| {shape} | {size} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def equal_load(searches: list[Search], shape: str) -> dict[int, list[str]]:
    def passing(server: str) -> dict[int, list[dict]]:
        runs: dict[int, list[dict]] = {}
        for search in searches:
            if search.server == server and search.shape == shape:
                for run in search.runs:
                    if run["passed"] and run.get("cpuMsPerParticipantSecond"):
                        runs.setdefault(run["size"], []).append(run)
        return runs
    chorus, janus, matched = passing("chorus"), passing("janus"), passing("janus-matched")
    rows: dict[int, list[str]] = {}
    for size in sorted(set(chorus) & (set(janus) | set(matched))):
        median = lambda runs, key: statistics.median(run[key] for run in runs)  # noqa: E731
        ours = median(chorus[size], "cpuMsPerParticipantSecond")
        cells = [f"{ours:.3f}"]
        for other in (janus, matched):
            theirs = median(other[size], "cpuMsPerParticipantSecond") if size in other else None
            cells += [f"{theirs:.3f}", f"{theirs / ours:.1f}×"] if theirs else ["—", "—"]
        latency = [f"{median(runs[size], 'p50'):.0f}/{median(runs[size], 'p95'):.0f}" if size in runs else "—"
                   for runs in (chorus, janus, matched)]
        rows[size] = cells + [" · ".join(latency)]
    return rows


if __name__ == "__main__":
    sys.exit(main())
