"""`chorus load` with simulcast and transport-cc, and over ICE-TCP (issue 16 item 5, issue 15).

- `--video --simulcast`: every generated camera sends three layers (RIDs q, h, f at 320×180,
  640×360 and 1280×720, each with its own SSRC and its RID in the RtpStreamId extension, as
  Chromium sends them), and every participant negotiates transport-cc and returns transport-wide
  feedback. While the run goes on, the server must have learned the three layers of every
  publisher from the packets (`publishedLayers`: three entries, RIDs and keyframe heights in
  order, each measured) and must estimate every subscriber's downlink from its transport-cc
  feedback (`downlink.source == "transportCC"`), which the layer allocation then uses.
- `--tcp`: every participant connects to the answer's passive ICE-TCP candidate and runs ICE,
  DTLS and SRTP over RFC 4571 framing; every listener must hear audio, and the server must have
  accepted exactly one TCP connection per participant.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# The capacity bars of `chorus load` (loss < 0.5 %, onsets detected >= 99.5 %) are for release
# builds on a quiet machine. These runs check correctness on a debug build that shares two cores
# with the test runner, where one stalled tick can cost an onset out of a few dozen: they hold it
# to loss < 1 % and 90 % of the onsets, and assert the figures themselves below.
TEST_BARS = ["--max-loss-percent", "1", "--min-onsets-percent", "90"]


def load_command(chorus_bin: str, server, output: Path, *extra: str) -> list[str]:
    key, secret = server.auth
    return [chorus_bin, "load", "--url", server.base_url, "--app-key", key, "--app-secret", secret,
            "--output", str(output), "--quiet", *TEST_BARS, *extra]


def watch_participants(server, stop: threading.Event, seen: dict[str, list[dict]]) -> None:
    """Polls every live load room's participants twice a second until `stop`, keeping each
    participant's resources by call ID (the run's rooms are named load-<run>-<n>)."""
    while not stop.is_set():
        try:
            rooms = server.request("GET", "/v1/rooms?pageSize=50").json().get("rooms", [])
            for room in rooms:
                if not room["roomId"].startswith("load-"):
                    continue
                listed = server.request("GET", f"/v1/rooms/{room['roomId']}/participants")
                if listed.status_code != 200:
                    continue
                for participant in listed.json()["participants"]:
                    got = server.request("GET", f"/v1/rooms/{room['roomId']}/participants/{participant['callId']}")
                    if got.status_code == 200:
                        seen.setdefault(participant["callId"], []).append(got.json())
        except Exception:  # noqa: BLE001 - a poll racing the run's end; the assertions judge what was seen
            pass
        stop.wait(0.5)


def test_simulcast_publishers_and_transport_cc_subscribers(chorus_server, chorus_bin):
    output = REPO_ROOT / "test-output" / "load-simulcast"
    stop, seen = threading.Event(), {}
    watcher = threading.Thread(target=watch_participants, args=(chorus_server, stop, seen), daemon=True)
    watcher.start()
    try:
        run = subprocess.run(
            load_command(chorus_bin, chorus_server, output, "--rooms", "1", "--participants", "3", "--talkers", "1",
                         "--video", "--simulcast", "--slots", "2", "--duration", "12", "--ramp-up", "20"),
            capture_output=True, text=True, timeout=180)
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert run.returncode == 0, f"chorus load --simulcast failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    results = json.loads((output / "results.json").read_text())
    assert results["scenario"]["simulcast"] is True and results["scenario"]["transportCC"] is True
    assert results["subscribersWithVideo"] == 3 and results["listenersWithAudio"] >= 2, run.stdout
    # About ten messages a second from each of the three subscribers.
    assert results["transportFeedbackSent"] > 3 * 5 * 12, results["transportFeedbackSent"]

    assert len(seen) == 3, f"participants seen: {list(seen)}"
    for call_id, views in seen.items():
        # Three layers learned from the packets, in the offer's order, with their keyframe heights.
        layered = [view["publishedLayers"] for view in views
                   if len(view["publishedLayers"]) == 3 and all(layer["bitrate"] > 0 for layer in view["publishedLayers"])]
        assert layered, f"{call_id}: never three measured layers: {views[-1]['publishedLayers']}"
        last = layered[-1]
        assert [layer["rid"] for layer in last] == ["q", "h", "f"], last
        assert [layer.get("height") for layer in last] == [180, 360, 720], last
        # The subscriber's downlink is the server's own estimate from our transport-cc feedback.
        sources = {(view.get("downlink") or {}).get("source") for view in views}
        assert "transportCC" in sources, f"{call_id}: downlink sources {sources}"
        assert "remb" not in sources, f"{call_id}: downlink sources {sources}"
        estimated = [view["downlink"]["bitrate"] for view in views if view.get("downlink")]
        assert max(estimated) > 100_000, estimated
        # Each slot forwards a layer the allocation chose for that estimate.
        assert any(slot.get("rid") in ("q", "h", "f") for view in views for slot in view["slots"]), views[-1]["slots"]
        assert views[-1]["media"]["transportFeedbackReceived"] > 0, views[-1]["media"]


def metric(server, name: str, labels: str) -> float:
    text = server.request("GET", "/metrics").text
    match = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} ([0-9.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_ice_tcp_run_hears_audio(chorus_server, chorus_bin):
    output = REPO_ROOT / "test-output" / "load-tcp"
    accepted = metric(chorus_server, "chorus_media_tcp_connections_total", 'result="accepted"')
    run = subprocess.run(
        load_command(chorus_bin, chorus_server, output, "--rooms", "1", "--participants", "4", "--talkers", "1",
                     "--tcp", "--duration", "8", "--ramp-up", "20"),
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"chorus load --tcp failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    results = json.loads((output / "results.json").read_text())
    assert results["scenario"]["transport"] == "tcp"
    assert results["established"] == 4 and results["listenersWithAudio"] == 3, run.stdout
    assert results["audioLossPercent"] < 1.0 and results["mouthToEar"]["count"] >= 5, run.stdout
    assert metric(chorus_server, "chorus_media_tcp_connections_total", 'result="accepted"') - accepted == 4
