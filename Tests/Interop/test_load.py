"""The short load run of `make test`: `chorus load` (the same binary) drives a real server with
simulated participants over real connections (registration, REST join, ICE, DTLS, SRTP, Opus)
and must finish with every listener hearing audio and loss under 1 %. It asserts correctness,
not speed: the numbers of record come from release builds (docs/PERFORMANCE.md)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_two_rooms_of_five_hear_each_other(chorus_server, chorus_bin, tmp_path):
    output = REPO_ROOT / "test-output" / "load"
    key, secret = chorus_server.auth
    run = subprocess.run(
        [chorus_bin, "load", "--url", chorus_server.base_url, "--app-key", key, "--app-secret", secret,
         "--rooms", "2", "--participants", "5", "--talkers", "2", "--duration", "10", "--ramp-up", "20",
         "--output", str(output), "--quiet"],
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"chorus load failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    results = json.loads((output / "results.json").read_text())
    assert results["passed"] is True, results["errors"]
    assert results["established"] == 10 and results["listenersWithAudio"] == 10, run.stdout
    assert results["audioLossPercent"] < 1.0, run.stdout
    # Every second of the run was sampled, and the probes timed the burst talker's onsets.
    assert len(results["samples"]) >= 9, run.stdout
    assert results["mouthToEar"]["count"] >= 10, run.stdout
    assert (output / "report.html").exists()

    # The server saw the same calls: ten ended (hung up) with audio both ways.
    deadline = time.monotonic() + 5
    while True:
        calls = chorus_server.request("GET", "/v1/calls?pageSize=50").json()["calls"]
        ended = [c for c in calls if c.get("state") == "ended"]
        if len(ended) == 10 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(ended) == 10, calls
    for call in ended:
        assert call["endCause"] == "hungUp", call
        stats = call["serverStatistics"]
        assert stats["packetsReceived"] > 300 and stats["packetsSent"] > 50, stats
