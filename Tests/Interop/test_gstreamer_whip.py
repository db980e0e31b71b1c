"""GStreamer's `webrtcbin` (Debian's 1.22, libnice ICE) joins by WHIP and outlasts the consent timeout.

A user's report: with webrtcbin joining by WHIP, audio and video both ways, the server ended the
call with `timeout` exactly 30 s after it connected. libnice keeps a path alive with STUN Binding
indications (every 25 s) and sends no consent checks once connected, and the server counted only
checks as consent. It now counts authenticated SRTP/SRTCP from the selected address as consent
and takes indications as keepalives; when it ends a call it sends an RTCP BYE and a DTLS
close_notify.

The GStreamer peer (gst_whip_peer.py, under Debian's /usr/bin/python3, which has PyGObject)
sends a 660 Hz sine as Opus and a solid blue picture as VP8 on two sendrecv transceivers
(bundle-policy max-bundle, no STUN or TURN server) and POSTs its complete offer as
`application/sdp` with the application's Basic credentials. An aiortc listener in the same room
sends a 440 Hz tone and a green camera, with one video slot. The server runs with a 10 s consent
timeout (the flag's default is 30 s; the shorter one keeps the test's wait short and proves the
same), and for 25 s, two and a half times the consent timeout:

- the participant stays `established` (its resource, the calls API, no `participant.ended` on
  the room's event stream) and webrtcbin stays `connected`;
- at the end, the listener hears the GStreamer peer's tone (an FFT: a real level at 660 Hz, well
  over a band with nothing in it) and decodes its blue video; the GStreamer peer decodes the
  room's mix at a real level, loudest in the 440 Hz band, and decodes the listener's video.

Then the application DELETEs the Location the WHIP reply gave: the call record ends `kicked`
(the application's DELETE; a user deleting its own call would be `hungUp`), and webrtcbin shows
the end within a few seconds: its rtpbin gets the BYE and its DTLS transport turns `closed` on
the close_notify (its ICE and peer connection states stay `connected`: only the DTLS transport
tells, as in the browsers).

libnice gathers no loopback candidate by default, and it makes no UDP pair from its own
interface address to the server's 127.0.0.1: left alone it connects over ICE-TCP (which also held
the minute, checked once by hand). The peer is given 127.0.0.1 as its one local address
(`add-local-ip-address`, nothing else changed) so the path is UDP on loopback, as a real client's
would be UDP on its network, and the test checks the selected pair in webrtcbin's statistics; UPnP
discovery is off so nothing leaves loopback. ~30 s.

Measured here (GStreamer 1.22.0, libnice 0.1.21, a debug build): after its two checks at connect
(the second with USE-CANDIDATE), libnice sends only unsigned Binding indications, one every 25 s;
the call stayed established through a minute (with the default 30 s timeout; the test now
holds 25 s against 10 s). The listener hears 660 Hz at ~120 dB (1 kHz ~47 dB) and decodes 15 blue frames a second; webrtcbin's mix is at ~-18 dBFS, loudest at 451 Hz
(the spectrum's bin next to 440), with 30 frames a second of the listener's camera. On the DELETE
the BYE (for the mix and the slot) and the DTLS transport's `closed` arrive ~8 ms after the
request was sent; nothing else changes state. The server of the commit before the fix (45f3092), or this one
with consent from media disabled, ends the call `timeout` 30.4 s after it was established.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from functools import partial
from pathlib import Path

import numpy
import pytest

from chromium import wait_for
from conftest import ChorusServer, started
from peers import EventStream, ThreadedPeer, nearest_colour
from test_audio_mix import tone_db

ROOM = "gst-whip"
SYSTEM_PYTHON = "/usr/bin/python3"
PEER_SCRIPT = Path(__file__).with_name("gst_whip_peer.py")
CONSENT_TIMEOUT = 10  # s, the server's --consent-timeout here
HOLD = 25.0  # s the call must stay established after it was: 2.5 times the consent timeout
STEP = 15.0  # bound of each wait for setup
CLOSE_BOUND = 3.0  # s from the DELETE to webrtcbin showing the end
LISTENER_TONE, GST_TONE = 440.0, 660.0
COLOURS = {"blue": (0, 0, 255), "green": (0, 255, 0)}
poll = partial(wait_for, interval=0.1)  # every wait here on the server: 100 ms between probes


class GstPeer:
    """gst_whip_peer.py as a child process; its JSON lines collected on a thread."""

    def __init__(self, server, log_path: Path):
        self.events: list[dict] = []
        self.cond = threading.Condition()
        self.log_path = log_path
        key, secret = server.auth
        self.process = subprocess.Popen(
            [SYSTEM_PYTHON, str(PEER_SCRIPT), "--url", server.url(f"/v1/rooms/{ROOM}/participants?userId=gst"),
             "--user", key, "--password", secret, "--frequency", str(GST_TONE), "--colour", "0xff0000ff",
             "--local-address", "127.0.0.1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(log_path, "w"), text=True, bufsize=1,
            env={**os.environ, "GST_DEBUG": os.environ.get("GST_DEBUG", "*:1"), "GST_DEBUG_NO_COLOR": "1"}, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.events.append(event)
                self.cond.notify_all()

    def wait_for(self, what: str, predicate, timeout: float = STEP) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for event in self.events:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.process.poll() is not None:
                    pytest.fail(f"GStreamer peer, {what}: not within {timeout:.0f} s (exit {self.process.poll()}); "
                                f"events {self.brief()}; log:\n{self.log_tail()}")
                self.cond.wait(min(remaining, 0.5))

    def of(self, kind: str, since: float = 0.0) -> list[dict]:
        with self.cond:
            return [e for e in self.events if e["event"] == kind and e["t"] >= since]

    def states(self, what: str) -> list[str]:
        return [e["state"] for e in self.of("state") if e["what"] == what]

    def brief(self) -> list:
        with self.cond:
            return [(e["event"], e.get("what"), e.get("state") or e.get("message") or e.get("status"))
                    for e in self.events if e["event"] not in ("audio", "video")]

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def close(self) -> None:
        """Closes its stdin (the peer stops its pipeline and exits), then SIGTERM, then SIGKILL."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        for action in (None, self.process.terminate, self.process.kill):
            if action is not None:
                action()
            try:
                self.process.wait(timeout=5)
                return
            except subprocess.TimeoutExpired:
                continue


def system_python_has_webrtcbin() -> str | None:
    """Why the GStreamer peer cannot run here, or None."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"{SYSTEM_PYTHON} is missing"
    check = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import gi; gi.require_version('Gst', '1.0'); gi.require_version('GstWebRTC', '1.0');"
         "from gi.repository import Gst; Gst.init(None); import sys;"
         "sys.exit(0 if all(Gst.ElementFactory.find(e) for e in ('webrtcbin', 'nicesrc', 'opusenc', 'vp8enc',"
         " 'opusdec', 'vp8dec', 'level', 'spectrum')) else 3)"],
        capture_output=True, text=True, timeout=30)
    return None if check.returncode == 0 else f"GStreamer or its plugins are missing: {check.stderr[-500:]}"


def participant(server, call_id: str) -> dict | None:
    reply = server.request("GET", f"/v1/rooms/{ROOM}/participants/{call_id}")
    return reply.json() if reply.status_code == 200 else None


def call_record(server, call_id: str) -> dict:
    return server.request("GET", f"/v1/calls/{call_id}").json()


@pytest.fixture
def chorus_server(chorus_bin: str, tmp_path: Path):
    """This module's server: consent expires after CONSENT_TIMEOUT seconds."""
    yield from started(ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                                    extra_args=["--consent-timeout", str(CONSENT_TIMEOUT)]))


def test_gstreamer_webrtcbin_outlasts_the_consent_timeout_and_sees_the_leave(chorus_server, tmp_path):
    missing = system_python_has_webrtcbin()
    if missing:
        pytest.fail(f"{missing} (`make deps` installs them)")
    assert chorus_server.request("POST", "/v1/rooms", json={"roomId": ROOM}).status_code == 201
    events = EventStream(chorus_server.url(f"/v1/rooms/{ROOM}/events"), auth=chorus_server.auth)
    # An aiortc listener on a thread of its own, so that it keeps receiving while the test waits: a
    # 440 Hz tone, a green camera and one video slot.
    listener = ThreadedPeer(timeout=STEP, frequency=LISTENER_TONE, rgb=COLOURS["green"], slots=1)
    gst = None
    try:
        listener_call = listener.join(chorus_server, ROOM)
        gst = GstPeer(chorus_server, tmp_path / "gst-peer.log")
        whip = gst.wait_for("the WHIP reply", lambda e: e["event"] in ("whip", "error"))
        assert whip["event"] == "whip" and whip["status"] == 201, (whip, gst.log_tail())
        location = whip["location"]
        assert location.startswith(f"/v1/rooms/{ROOM}/participants/"), location
        call_id = location.rsplit("/", 1)[-1]
        detail = lambda: f"webrtcbin {gst.brief()}\nserver log:\n{chorus_server.log_tail(3000)}"  # noqa: E731
        gst.wait_for("connected", lambda e: e["event"] == "state" and e["what"] == "connection-state"
                     and e["state"] == "connected")
        poll("the call established", lambda: (participant(chorus_server, call_id) or {}).get("state") == "established",
             STEP, detail=detail)
        established = time.monotonic()
        # The path is UDP on loopback (webrtcbin's statistics name the selected pair).
        pair = gst.wait_for("the selected pair", lambda e: e["event"] == "pair", 5.0)
        print(f"\nGStreamer: {gst.of('started')[0]['gstreamer']}; offer candidates: {gst.of('offer')[0]['candidates']}; "
              f"selected pair {pair['local']} -> {pair['remote']}")
        assert (pair["local"] or {}).get("protocol") == "udp" and pair["local"]["address"] == "127.0.0.1" \
            and (pair["remote"] or {}).get("address") == "127.0.0.1", pair

        # HOLD seconds, checked every second: established on every view, webrtcbin still connected.
        while time.monotonic() - established < HOLD:
            time.sleep(1.0)
            state = (participant(chorus_server, call_id) or {}).get("state")
            record = call_record(chorus_server, call_id)
            ended = [e for e in events.events if e.get("type") == "participant.ended"]
            held = time.monotonic() - established
            assert state == "established" and record.get("state") == "established" and not ended, (
                f"after {held:.1f} s: participant {state}, call record {record.get('state')} "
                f"({record.get('endCause')}), ended events {ended}; {detail()}")
            assert gst.states("connection-state")[-1] == "connected", (held, gst.brief())
            assert not gst.of("error"), (held, gst.of("error"), gst.log_tail())
        now, wall = time.monotonic(), time.time()

        # The listener hears the GStreamer peer's 660 Hz tone in the last 3 s (and nothing else:
        # the mix leaves out its own 440 Hz), and decodes its blue picture on its one slot.
        pcm = listener.peer.audio_between(now - 3.0, now)
        heard, quiet = tone_db(pcm, GST_TONE), tone_db(pcm, 1000.0)
        slot = listener.peer.slot_mids()[0]
        colours = listener.peer.colours_between(slot, now - 3.0, now)
        mean = tuple(numpy.mean(colours, axis=0)) if colours else None
        # The GStreamer peer's own view of the last 3 s: level, loudest band, frames.
        levels = gst.of("audio", since=wall - 3.0)
        video = gst.of("video", since=wall - 3.0)
        frames = video[-1]["frames"] - video[0]["frames"] if len(video) >= 2 else 0
        print(f"listener: {len(pcm) / 48000:.1f} s of audio, {GST_TONE:.0f} Hz at {heard:.1f} dB "
              f"(1 kHz {quiet:.1f} dB); {len(colours)} frames on its slot, mean colour {mean}")
        print(f"GStreamer peer: audio {[(round(e['rms'], 1), e['peak_hz'], e['buffers']) for e in levels]}; "
              f"{frames} video frames in {video[-1]['t'] - video[0]['t'] if len(video) >= 2 else 0:.1f} s")
        assert len(pcm) > 48000 * 2, f"the listener decoded {len(pcm) / 48000:.1f} s of the last 3"
        assert heard > 80.0 and heard - quiet > 30.0, (heard, quiet)
        assert len(colours) >= 10 and nearest_colour(mean, COLOURS) == "blue", (len(colours), mean)
        # Every 0.5 s window, or all but one (a glitch on a loaded machine): loud, and loudest at 440 Hz.
        assert len(levels) >= 4 and sum(e["rms"] > -40.0 for e in levels) >= len(levels) - 1, levels
        assert sum(e["peak_hz"] is not None and abs(e["peak_hz"] - LISTENER_TONE) < 50 for e in levels) \
            >= len(levels) - 1, levels
        assert levels[-1]["buffers"] > levels[0]["buffers"], levels
        assert frames >= 10, video

        # The application's DELETE of the WHIP resource: the call ends `kicked`, and webrtcbin sees
        # the end (RTCP BYE, then close_notify turns its DTLS transport closed).
        asked, asked_wall = time.monotonic(), time.time()
        reply = chorus_server.request("DELETE", location)
        assert reply.status_code == 204, reply.text
        ended_event = events.wait_for(lambda e: e.get("type") == "participant.ended" and e.get("callId") == call_id)
        assert ended_event["endCause"] == "kicked", ended_event
        record = poll("the call record ended", lambda: (lambda c: c if c.get("state") == "ended" else None)(
            call_record(chorus_server, call_id)), 5.0)
        assert record["endCause"] == "kicked", record
        seen = gst.wait_for("the DTLS transport closed", lambda e: e["event"] == "state" and (
            (e["what"] == "dtls" and e["state"] in ("closed", "failed"))
            or (e["what"] == "connection-state" and e["state"] in ("closed", "failed"))), CLOSE_BOUND + 2)
        took = seen["t"] - asked_wall
        byes = gst.of("bye", since=asked_wall)
        after = [(e["what"], e["state"], round(e["t"] - asked_wall, 3)) for e in gst.of("state", since=asked_wall)]
        print(f"DELETE answered in {(time.monotonic() - asked) * 1000:.0f} ms; webrtcbin: {seen['what']} "
              f"{seen['state']} {took * 1000:.0f} ms after it was sent; BYE for {len(byes)} SSRCs "
              f"({[round(e['t'] - asked_wall, 3) for e in byes]} s); every state change after it: {after}")
        assert took < CLOSE_BOUND, took
        # The listener is still in the room, alone.
        assert (participant(chorus_server, listener_call) or {}).get("state") == "established"
    finally:
        if gst is not None:
            gst.close()
        listener.close()
        events.close()
