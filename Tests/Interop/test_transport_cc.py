"""Transport-wide congestion control, receive side (issue 16, item 1): a Chromium publisher
whose offer asks for transport-cc gets it answered (the transport-wide sequence number
extension on every section, `a=rtcp-fb:<pt> transport-cc` on its codecs), the server sends it
transport-cc feedback about ten times a second, and Chromium's own send-side estimator runs on
that feedback: its available outgoing bitrate climbs far above the 300 kbit/s it starts from.

Why that proves the feedback is read: with transport-cc negotiated, Chromium's estimate moves
only on feedback (its start-up probes at 3× and 6× the start rate are judged from the arrival
times the feedback reports). Without feedback, or with feedback it cannot parse, the estimate
stays at the start value or falls; on loopback with good feedback it reaches megabits at once
(measured: 1.4–1.9 Mbit/s within half a second of the connection, from its first probes; with
the server's feedback turned off, the same test saw 300 kbit/s for 2 s, then a fall to 115
kbit/s, and failed).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chromium import Chromium, wait_for
from conftest import ChorusServer

ROOM = "twcc"
TWCC = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

PAGE_SCRIPT = r"""
window.twcc = (() => {
  let pc;
  return {
    async publish() {
      const stream = await navigator.mediaDevices.getUserMedia(
        { audio: true, video: { width: 1280, height: 720, frameRate: 30 } });
      pc = new RTCPeerConnection({ iceServers: [] });
      pc.addTransceiver(stream.getAudioTracks()[0], { direction: 'sendrecv', streams: [stream] });
      pc.addTransceiver(stream.getVideoTracks()[0], { direction: 'sendonly', streams: [stream] });
      await pc.setLocalDescription(await pc.createOffer());
      await new Promise((resolve) => {
        if (pc.iceGatheringState === 'complete') return resolve();
        pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
        setTimeout(resolve, 3000);
      });
      return pc.localDescription.sdp;
    },
    async answer(sdp) { await pc.setRemoteDescription({ type: 'answer', sdp }); return true; },
    async estimate() {
      const report = await pc.getStats();
      const pair = [...report.values()].find((s) => s.type === 'candidate-pair' && s.nominated);
      return { state: pc.connectionState, available: pair ? pair.availableOutgoingBitrate || 0 : 0 };
    },
    close() { pc.close(); return true; },
  };
})();
true
"""


@pytest.fixture
def chromium(tmp_path: Path):
    browser = Chromium(tmp_path / "chromium-profile", tmp_path / "chromium.log")
    yield browser
    browser.close()


def test_chromium_estimates_its_uplink_from_the_servers_transport_cc_feedback(
        chorus_server: ChorusServer, chromium: Chromium):
    server = chorus_server
    page = chromium.open(server.url("/healthz"))
    assert page.evaluate(PAGE_SCRIPT) is True
    offer = page.evaluate("window.twcc.publish()")
    reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "publisher"})
    assert reply.status_code == 201, reply.text
    call, answer = reply.json()["callId"], reply.json()["sdp"]

    # Answered on every section: the extension under the offer's ID, and the feedback.
    sections = answer.split("m=")[1:]
    twcc_id = next(line.split()[0].split(":")[1] for line in offer.splitlines() if line.endswith(TWCC))
    assert all(f"a=extmap:{twcc_id} {TWCC}" in section for section in sections), answer
    assert all(" transport-cc" in section for section in sections), answer

    assert page.evaluate(f"window.twcc.answer({answer!r})") is True

    def participant() -> dict:
        got = server.request("GET", f"/v1/rooms/{ROOM}/participants/{call}")
        assert got.status_code == 200, got.text
        return got.json()

    wait_for("the publisher established", lambda: participant()["state"] == "established", timeout=15)
    started = time.monotonic()
    sent_before = participant()["media"]["transportFeedbackSent"]
    estimates = []

    def climbed() -> bool:
        estimates.append(page.evaluate("window.twcc.estimate()")["available"])
        return estimates[-1] > 1_000_000

    wait_for("Chromium's estimate above 1 Mbit/s", climbed, timeout=15,
             detail=lambda: f"estimates {estimates}\n{participant()}\n{server.log_tail(1500)}")
    elapsed = time.monotonic() - started
    sent = participant()["media"]["transportFeedbackSent"] - sent_before
    # About ten messages a second (one per 100 ms, more when many packets arrived).
    assert sent >= 5 * elapsed, f"{sent} feedback messages in {elapsed:.1f} s"
    page.evaluate("window.twcc.close()")
