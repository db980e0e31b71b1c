#!/usr/bin/env python3
"""The side-by-side table of `make bench-compare`: reads every <server>-<scenario>/results.json
under the output folder (written by `chorus load`) and prints a Markdown table per scenario,
with Chorus's capacity as a multiple of Janus's (participants per server CPU-second)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

LABELS = {"chorus": "Chorus", "janus": "Janus 1.1.2 (defaults)", "janus2": "Janus 1.1.2 (event_loops = 2)"}
ORDER = ["chorus", "janus", "janus2"]


def load(folder: Path) -> dict[str, dict[str, dict]]:
    runs: dict[str, dict[str, dict]] = {}
    for results in sorted(folder.glob("*-*/results.json")):
        server, scenario = results.parent.name.split("-", 1)
        runs.setdefault(scenario, {})[server] = json.loads(results.read_text())
    return runs


def capacity(run: dict) -> float | None:
    """Participants carried per server CPU-second (1 / CPU-seconds per participant-second)."""
    cost = run.get("serverCPUSecondsPerParticipantSecond")
    return 1 / cost if cost else None


def kernel_share(run: dict) -> str:
    """The part of the server's CPU spent in the kernel (system time), percent. On loopback it
    includes delivering the server's datagrams into the generator's sockets and waking their
    readers, which every server pays per datagram: Janus's total CPU over Chorus's system CPU
    bounds the per-CPU ratio whatever Chorus's own code costs."""
    cores, system = run.get("serverCPUCores"), run.get("serverSystemCPUCores")
    return f"{system * 100 / cores:.0f} %" if cores and system is not None else "—"


def kernel_bound(servers: dict[str, dict]) -> float | None:
    """Janus's (defaults) CPU per participant-second over Chorus's system CPU per
    participant-second."""
    chorus, janus = servers.get("chorus"), servers.get("janus")
    if not chorus or not janus:
        return None
    system, established = chorus.get("serverSystemCPUCores"), chorus.get("established")
    cost = janus.get("serverCPUSecondsPerParticipantSecond")
    if not system or not established or not cost:
        return None
    return cost / (system / established)


def row(server: str, run: dict, janus_capacity: float | None) -> str:
    m2e = run["mouthToEar"]
    cap = capacity(run)
    ratio = f"{cap / janus_capacity:.1f}×" if cap and janus_capacity else "—"
    cores = run.get("serverCPUCores")
    return " | ".join([
        LABELS.get(server, server),
        f"{run['established']}/{run['participants']}",
        f"{run['listenersWithAudio']}",
        f"{run.get('participantsInDTX', 0)}",
        f"{run['audioLossPercent']:.2f}",
        f"{m2e['p50']:.0f} / {m2e['p95']:.0f}" if m2e["count"] else "—",
        f"{run['joinTime']['p50']:.0f}",
        f"{cores:.3f}" if cores is not None else "—",
        kernel_share(run),
        f"{run['serverCPUSecondsPerParticipantSecond'] * 1000:.2f}" if cap else "—",
        f"{cap:.0f}" if cap else "—",
        ratio,
        f"{run['subscribersWithVideo']}/{run['videoSubscribers']}, {run['videoLossPercent']:.2f} %"
        if run["scenario"].get("video") else "—",
        f"{run['generatorCPUCores']:.2f}",
        "pass" if run["passed"] else "FAIL",
    ])


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-output/compare")
    runs = load(folder)
    if not runs:
        print(f"no results under {folder}", file=sys.stderr)
        return 1
    header = ("| server | established | listeners with audio | silent in DTX | loss % | mouth-to-ear p50 / p95 ms | join p50 ms "
              "| server cores | of it in the kernel | server CPU-ms per participant-s | participants per core | vs Janus defaults "
              "| video: subscribers seeing, loss | generator cores | verdict |")
    for scenario, servers in sorted(runs.items()):
        first = next(iter(servers.values()))["scenario"]
        video = f", video with {first['slots']} slots" if first.get("video") else ", audio only"
        print(f"\n### {scenario}: {first['rooms']} room(s) × {first['participantsPerRoom']} participants, "
              f"{first['talkersPerRoom']} talker(s) each{video}, {first['durationSeconds']:.0f} s\n")
        print(header)
        print("|" + "---|" * (header.count("|") - 1))
        janus_capacity = capacity(servers["janus"]) if "janus" in servers else None
        for server in sorted(servers, key=lambda s: ORDER.index(s) if s in ORDER else 99):
            print("| " + row(server, servers[server], janus_capacity) + " |")
        bound = kernel_bound(servers)
        if bound:
            print(f"\nJanus's CPU over Chorus's kernel time alone: {bound:.1f}× "
                  "(the ratio this run could reach if Chorus's own code cost nothing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
