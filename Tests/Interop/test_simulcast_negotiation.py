"""Simulcast in, the negotiation (issue 16, item 2): headless Chromium and Firefox ESR publish
their camera with three encodings (`sendEncodings` q, h, f, listed low to high), the server
answers `a=rid:<id> recv` for each and `a=simulcast:recv q;h;f` with the RID header extensions,
both browsers accept the answer, keep their three encodings and send all three over the
established connection (each encoding's `outbound-rtp` counts packets). An offer with more
streams than the server receives is refused with 422 `tooManySimulcastStreams`.

This checks the SDP only: which layer a subscriber is forwarded is the rooms' business.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chromium import Chromium, wait_for
from conftest import ChorusServer
from firefox import Firefox

ROOM = "simulcast"

PAGE_SCRIPT = r"""
window.simulcast = (() => {
  let pc;
  return {
    async publish() {
      const stream = await navigator.mediaDevices.getUserMedia(
        { audio: true, video: { width: 1280, height: 720, frameRate: 30 } });
      pc = new RTCPeerConnection({ iceServers: [] });
      pc.addTransceiver(stream.getAudioTracks()[0], { direction: 'sendrecv', streams: [stream] });
      pc.addTransceiver(stream.getVideoTracks()[0], { direction: 'sendonly', streams: [stream], sendEncodings: [
        { rid: 'q', scaleResolutionDownBy: 4 }, { rid: 'h', scaleResolutionDownBy: 2 }, { rid: 'f' }] });
      await pc.setLocalDescription(await pc.createOffer());
      await new Promise((resolve) => {
        if (pc.iceGatheringState === 'complete') return resolve();
        pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
        setTimeout(resolve, 5000);
      });
      return pc.localDescription.sdp;
    },
    async answer(sdp) {
      await pc.setRemoteDescription({ type: 'answer', sdp });
      return pc.getSenders()[1].getParameters().encodings.map((e) => e.rid);
    },
    async sent() {
      const report = await pc.getStats();
      const layers = {};
      for (const s of report.values()) {
        if (s.type === 'outbound-rtp' && s.kind === 'video') layers[s.rid || '?'] = s.packetsSent || 0;
      }
      return { state: pc.connectionState, layers };
    },
    close() { pc.close(); return true; },
  };
})();
true
"""

BROWSERS = {"chromium": Chromium, "firefox": Firefox}


@pytest.fixture(params=sorted(BROWSERS))
def browser(request, tmp_path: Path):
    instance = BROWSERS[request.param](tmp_path / f"{request.param}-profile", tmp_path / f"{request.param}.log")
    yield instance
    instance.close()


def test_a_browsers_three_encodings_are_answered_and_sent(chorus_server: ChorusServer, browser):
    server = chorus_server
    page = browser.open(server.url("/healthz"))
    assert page.evaluate(PAGE_SCRIPT) is True
    offer = page.evaluate("window.simulcast.publish()")
    assert "a=simulcast:send q;h;f" in offer, offer  # both browsers keep the encodings' order

    reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "publisher"})
    assert reply.status_code == 201, reply.text
    call, answer = reply.json()["callId"], reply.json()["sdp"]
    video = answer.split("m=video")[1]
    assert re.findall(r"a=rid:(\w+) recv", video) == ["q", "h", "f"], answer
    assert "a=simulcast:recv q;h;f" in video, answer
    assert "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id" in video, answer
    assert "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id" in video, answer

    # The browser accepts it and keeps its three encodings.
    assert page.evaluate(f"window.simulcast.answer({answer!r})") == ["q", "h", "f"]

    def participant() -> dict:
        got = server.request("GET", f"/v1/rooms/{ROOM}/participants/{call}")
        assert got.status_code == 200, got.text
        return got.json()

    wait_for("the publisher established", lambda: participant()["state"] == "established", timeout=15,
             detail=lambda: server.log_tail(1500))
    samples = []

    def all_three_sent() -> bool:
        samples.append(page.evaluate("window.simulcast.sent()"))
        layers = samples[-1]["layers"]
        return all(layers.get(rid, 0) > 20 for rid in ("q", "h", "f"))

    wait_for("packets on every encoding", all_three_sent, timeout=20, detail=lambda: samples[-3:])
    page.evaluate("window.simulcast.close()")


def test_an_offer_with_fifty_streams_is_refused(chorus_server: ChorusServer):
    """Bad input: 50 RIDs in `a=simulcast` (a real Chromium offer, edited) is a 422 naming it."""
    fixture = Path(__file__).resolve().parents[1] / "Fixtures" / "sdp" / "chrome-simulcast.sdp"
    rids = [f"r{index}" for index in range(50)]
    lines = [line for line in fixture.read_bytes().decode().split("\r\n") if not line.startswith(("a=rid:", "a=simulcast:"))]
    offer = "\r\n".join(lines).rstrip("\r\n") + "\r\n" + "".join(f"a=rid:{rid} send\r\n" for rid in rids)
    offer += "a=simulcast:send " + ";".join(rids) + "\r\n"
    reply = chorus_server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "hostile"})
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "tooManySimulcastStreams", error
    assert "50 streams" in error["message"], error
