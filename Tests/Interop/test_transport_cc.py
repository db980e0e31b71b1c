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

import pytest

from browser_netns import GATHERED_OFFER_JS
from chromium import wait_for
from conftest import ChorusServer

ROOM = "twcc"
TWCC = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

PAGE_SCRIPT = r"""
window.twcc = (() => {
  const pcs = {};
%GATHERED_OFFER%
  return {
    async publish(name) {
      const stream = await navigator.mediaDevices.getUserMedia(
        { audio: true, video: { width: 1280, height: 720, frameRate: 30 } });
      const pc = pcs[name] = new RTCPeerConnection({ iceServers: [] });
      pc.addTransceiver(stream.getAudioTracks()[0], { direction: 'sendrecv', streams: [stream] });
      pc.addTransceiver(stream.getVideoTracks()[0], { direction: 'sendonly', streams: [stream] });
      return offer(pc);
    },
    async view(name) {
      const pc = pcs[name] = new RTCPeerConnection({ iceServers: [] });
      pc.addTransceiver('audio', { direction: 'recvonly' });
      pc.addTransceiver('video', { direction: 'recvonly' });
      return offer(pc);
    },
    async answer(name, sdp) { await pcs[name].setRemoteDescription({ type: 'answer', sdp }); return true; },
    async estimate(name) {
      const report = await pcs[name].getStats();
      const pair = [...report.values()].find((s) => s.type === 'candidate-pair' && s.nominated);
      const video = [...report.values()].find((s) => s.type === 'inbound-rtp' && s.kind === 'video');
      return { state: pcs[name].connectionState, available: pair ? pair.availableOutgoingBitrate || 0 : 0,
               framesDecoded: video ? video.framesDecoded : 0 };
    },
    close() { for (const pc of Object.values(pcs)) pc.close(); return true; },
  };
})();
true
""".replace("%GATHERED_OFFER%", GATHERED_OFFER_JS)


def test_chromium_estimates_its_uplink_from_the_servers_transport_cc_feedback(
        chorus_server: ChorusServer, chromium: Chromium):
    server = chorus_server
    page = chromium.open(server.url("/healthz"))
    assert page.evaluate(PAGE_SCRIPT) is True
    offer = page.evaluate("window.twcc.publish('publisher')")
    reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "publisher"})
    assert reply.status_code == 201, reply.text
    call, answer = reply.json()["callId"], reply.json()["sdp"]

    # Answered on every section: the extension under the offer's ID, and the feedback.
    sections = answer.split("m=")[1:]
    twcc_id = next(line.split()[0].split(":")[1] for line in offer.splitlines() if line.endswith(TWCC))
    assert all(f"a=extmap:{twcc_id} {TWCC}" in section for section in sections), answer
    assert all(" transport-cc" in section for section in sections), answer

    assert page.evaluate(f"window.twcc.answer('publisher', {answer!r})") is True

    def participant() -> dict:
        got = server.request("GET", f"/v1/rooms/{ROOM}/participants/{call}")
        assert got.status_code == 200, got.text
        return got.json()

    wait_for("the publisher established", lambda: participant()["state"] == "established", timeout=15)
    started = time.monotonic()
    sent_before = participant()["media"]["transportFeedbackSent"]
    estimates = []

    def climbed() -> bool:
        estimates.append(page.evaluate("window.twcc.estimate('publisher')")["available"])
        return estimates[-1] > 1_000_000

    wait_for("Chromium's estimate above 1 Mbit/s", climbed, timeout=15,
             detail=lambda: f"estimates {estimates}\n{participant()}\n{server.log_tail(1500)}")
    # Count over at least a second: Chromium may be above the bar at the first look.
    time.sleep(max(0.0, started + 1.0 - time.monotonic()))
    elapsed = time.monotonic() - started
    sent = participant()["media"]["transportFeedbackSent"] - sent_before
    # About ten messages a second (one per 100 ms, more when many packets arrived).
    assert sent >= 5 * elapsed, f"{sent} feedback messages in {elapsed:.1f} s"
    page.evaluate("window.twcc.close()")


def test_a_chromium_viewers_feedback_drives_the_servers_estimate_of_its_downlink(
        chorus_server: ChorusServer, chromium: Chromium):
    """Send side: every packet the server sends carries its own transport-wide sequence number,
    the Chromium viewer reports their arrivals, and the server's estimator turns the reports into
    the viewer's downlink estimate (shown in its participant resource), which follows the video
    it forwards (about 1–2 Mbit/s of 720p on loopback) instead of staying at the start value."""
    server = chorus_server
    page = chromium.open(server.url("/healthz"))
    assert page.evaluate(PAGE_SCRIPT) is True
    calls = {}
    for name, script in (("publisher", "publish"), ("viewer", "view")):
        offer = page.evaluate(f"window.twcc.{script}('{name}')")
        reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": name})
        assert reply.status_code == 201, reply.text
        calls[name] = reply.json()["callId"]
        assert page.evaluate(f"window.twcc.answer('{name}', {reply.json()['sdp']!r})") is True

    def participant(name: str) -> dict:
        got = server.request("GET", f"/v1/rooms/{ROOM}/participants/{calls[name]}")
        assert got.status_code == 200, got.text
        return got.json()

    for name in calls:
        wait_for(f"{name} established", lambda n=name: participant(n)["state"] == "established", timeout=15)
    wait_for("the viewer decodes video", lambda: page.evaluate("window.twcc.estimate('viewer')")["framesDecoded"] > 30,
             timeout=15, detail=lambda: participant("viewer"))

    sample: dict = {}

    def estimated() -> bool:
        # The acknowledged rate follows what is forwarded second by second, so the assertions
        # below check the one reading that met the bar rather than a later, differently-timed one.
        sample.clear()
        sample.update(participant("viewer"))
        downlink = sample.get("downlink") or {}
        # The round-trip time comes with the viewer's first receiver report about the mix (about
        # a second into the call): the estimate can meet its bar before that (seen in a fresh
        # clone's run on 2026-11-29), so the wait includes it.
        return (downlink.get("source") == "transportCC" and downlink.get("bitrate", 0) > 500_000
                and downlink.get("acknowledgedBitrate", 0) > 300_000 and "roundTripTimeMilliseconds" in downlink)

    wait_for("the server's estimate of the viewer's downlink above 500 kbit/s, 300 kbit/s acknowledged", estimated,
             timeout=20,
             detail=lambda: participant("viewer"))
    viewer = sample
    assert viewer["media"]["transportFeedbackReceived"] > 10, viewer["media"]
    downlink = viewer["downlink"]
    assert 0 <= downlink["lossFraction"] < 0.05, downlink
    # Loopback: the round trip is the browser's and the server's scheduling, well under 200 ms.
    assert 0 <= downlink.get("roundTripTimeMilliseconds", -1) < 200, downlink
    metrics = server.request("GET", "/metrics").text
    counts = [float(line.split()[-1]) for line in metrics.splitlines()
              if line.startswith("chorus_downlink_estimate_bits_per_second_count")]
    assert counts and counts[0] >= 1, "no downlink estimate sampled in /metrics"
    print(f"viewer downlink {downlink}, probes {viewer['video']['probePacketsSent']}")
    page.evaluate("window.twcc.close()")
