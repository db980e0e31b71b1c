"""`chorus load` cannot be fooled (issue 18, item 2): a run passes only when every listener's
audio meets the bars, by sequence gaps *and* by packets received against the stream's own
timing. Two servers that fail on purpose, each caught by the measure meant for it:

- a server that skips every third audio tick (`CHORUS_FAULT_SKIP_AUDIO_TICKS=3`, a fault the
  rooms commit only when told to) sends a third fewer packets with sequence numbers and
  timestamps still continuous: no gap anywhere, yet the run must fail on the packet-rate loss;
- a real 5 % loss on the path to the listeners (an nftables `numgen random` rule on the UDP
  into the generator's own network namespace; this kernel has no netem) must fail the run on
  the sequence-gap loss.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import ChorusServer, started
from netns import Namespace

# The same relaxed bars as the other make-test load runs (test_load.py): the faults below are far
# past them, so they fail even a debug build's run, and a healthy run passes them.
TEST_BARS = ["--max-loss-percent", "1", "--min-onsets-percent", "90"]


def load(chorus_bin: str, url: str, auth: tuple[str, str], output: Path, prefix: list[str] | None = None,
         duration: int = 8) -> tuple[subprocess.CompletedProcess, dict]:
    key, secret = auth
    run = subprocess.run(
        [*(prefix or []), chorus_bin, "load", "--url", url, "--app-key", key, "--app-secret", secret,
         "--rooms", "1", "--participants", "4", "--talkers", "2", "--duration", str(duration), "--ramp-up", "20",
         "--output", str(output), "--quiet", *TEST_BARS],
        capture_output=True, text=True, timeout=120)
    return run, json.loads((output / "results.json").read_text())


@pytest.fixture
def skipping_server(chorus_bin: str, tmp_path: Path):
    yield from started(ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                                    extra_env={"CHORUS_FAULT_SKIP_AUDIO_TICKS": "3"}))


def test_a_server_that_skips_every_third_tick_fails_by_packet_rate(skipping_server, chorus_bin, tmp_path):
    run, results = load(chorus_bin, skipping_server.base_url, skipping_server.auth, tmp_path / "load")
    assert run.returncode != 0 and results["passed"] is False, run.stdout
    # Nothing is missing by sequence number: the streams are continuous…
    assert results["audioLossPercent"] < 1.0, run.stdout
    # …but a third of each second's packets never came.
    assert 25 < results["audioRateLossPercent"] < 40, run.stdout
    assert any("short of the streams' timing" in bar for bar in results["failedBars"]), results["failedBars"]
    assert not any("by sequence" in bar for bar in results["failedBars"]), results["failedBars"]


@pytest.fixture
def netns_server_args() -> list[str]:
    # The generator runs inside the namespace and reaches the API at the veth's host side.
    return ["--http-host", "0.0.0.0"]


def test_five_percent_loss_toward_the_listeners_fails_the_run(netns_server, namespace: Namespace, chorus_bin,
                                                             tmp_path):
    namespace.nft("""
        table inet chorus_loss {
            chain input { type filter hook input priority 0; policy accept;
                iifname != "lo" meta l4proto udp numgen random mod 100 < 5 counter drop
            }
        }""")
    url = f"http://{namespace.host_ip}:{netns_server.banner.port}"
    run, results = load(chorus_bin, url, netns_server.auth, tmp_path / "load", prefix=namespace.prefix())
    assert results["established"] == 4, run.stdout
    assert run.returncode != 0 and results["passed"] is False, run.stdout
    assert 3 < results["audioLossPercent"] < 8, run.stdout
    assert any("by sequence" in bar for bar in results["failedBars"]), results["failedBars"]
    assert int(subprocess.run([*namespace.prefix(), "nft", "list", "table", "inet", "chorus_loss"], capture_output=True,
                              text=True, check=True).stdout.split("packets")[1].split()[0]) >= 20
