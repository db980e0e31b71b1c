"""ICE-TCP (RFC 6544, issue 15 item 1): a browser on a network that drops all UDP joins over TCP.

Headless Chromium runs in a network namespace whose nftables firewall drops every UDP datagram
(the test shows the rule was hit). The server answers with its UDP host candidate and a passive
TCP one on the same port number; Chromium's checks over UDP die in the firewall, so it connects
over TCP, and STUN, DTLS and SRTP run in RFC 4571 frames on that connection. An aiortc listener
on the host side joins the same room over UDP and hears the browser's 660 Hz oscillator (FFT),
and the browser hears the aiortc talker's 440 Hz in the mix, decoded in the page
(MediaStreamTrackProcessor) and measured here.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import numpy
import pytest

from chromium import Chromium, wait_for
from conftest import ChorusServer
from netns import Namespace
from peers import Peer
from test_audio_mix import tone_db
from test_hostile_system import join_peer
from test_join_aiortc import participant, wait_until

ROOM = "tcp-only"

# The page: a 660 Hz oscillator as microphone, an offer once gathering is complete, and the
# decoded audio of what the server sends, kept for the test to read.
PAGE_SETUP = """
(async () => {
  // Media permission first: without it Chromium gathers only the default route's UDP candidate
  // and no TCP candidate at all. The fake microphone is then set aside for a steady tone.
  (await navigator.mediaDevices.getUserMedia({audio: true})).getTracks().forEach((track) => track.stop());
  const ctx = new AudioContext({sampleRate: 48000});
  const osc = ctx.createOscillator();
  osc.frequency.value = 660;
  const gain = ctx.createGain(); gain.gain.value = 0.3;
  const dest = ctx.createMediaStreamDestination();
  osc.connect(gain).connect(dest); osc.start();
  const pc = new RTCPeerConnection({bundlePolicy: 'max-bundle'});
  window.t = {pc, states: [], heard: [], ctx};
  pc.addTrack(dest.stream.getAudioTracks()[0], dest.stream);
  pc.onconnectionstatechange = () => window.t.states.push([Date.now(), pc.connectionState]);
  pc.ontrack = (event) => {
    // Chromium decodes remote audio only while something plays it out.
    const element = new Audio();
    element.srcObject = new MediaStream([event.track]);
    element.play();
    window.t.element = element;
    const reader = new MediaStreamTrackProcessor({track: event.track}).readable.getReader();
    (async () => {
      for (;;) {
        const {value, done} = await reader.read();
        if (done) return;
        const samples = new Float32Array(value.numberOfFrames);
        value.copyTo(samples, {planeIndex: 0, format: 'f32-planar'});
        window.t.heard.push([performance.now(), Array.from(samples)]);
        if (window.t.heard.length > 400) window.t.heard.shift();
        value.close();
      }
    })();
  };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((resolve) => {
    if (pc.iceGatheringState === 'complete') return resolve();
    pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && resolve();
    setTimeout(resolve, 5000);
  });
  return pc.localDescription.sdp;
})()
"""

SELECTED_PAIR = """
(async () => {
  const stats = await window.t.pc.getStats();
  let pair = null;
  stats.forEach((s) => { if (s.type === 'transport' && s.selectedCandidatePairId) pair = stats.get(s.selectedCandidatePairId); });
  if (!pair) return null;
  const local = stats.get(pair.localCandidateId), remote = stats.get(pair.remoteCandidateId);
  return {local: local.protocol, tcpType: local.tcpType, remote: remote.protocol, remotePort: remote.port,
          bytesReceived: pair.bytesReceived, bytesSent: pair.bytesSent};
})()
"""

# The last second of decoded audio, concatenated.
LAST_SECOND = """
(() => {
  const now = performance.now();
  return window.t.heard.filter(([at]) => at > now - 1000).flatMap(([, s]) => s);
})()
"""


def open_page(browser: Chromium):
    try:
        return browser.open("http://127.0.0.1:8765/")
    except Exception:  # the namespace's http.server not up yet
        return None


@pytest.fixture
def udpless():
    namespace = Namespace.create()
    try:
        namespace.drop_udp()
        yield namespace
    finally:
        namespace.remove()


@pytest.fixture
def server(chorus_bin: str, tmp_path: Path, udpless: Namespace):
    # Media on the veth's host side, announced there; the TCP port defaults to the UDP port's
    # number. Bound to that address, not 0.0.0.0: the aiortc talker checks from 127.0.0.1, and a
    # wildcard socket would answer from 127.0.0.1 too, which aioice rightly refuses.
    chorus = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                          extra_args=["--media-host", udpless.host_ip, "--public-ip", udpless.host_ip])
    chorus.start()
    yield chorus
    if chorus.running:
        assert chorus.stop() == 0, chorus.log_tail()


def test_chromium_without_udp_joins_over_tcp_hears_and_is_heard(server, udpless, tmp_path):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker = Peer(frequency=440.0, video=False)
    # A page on the namespace's own loopback: a secure context, so getUserMedia is there.
    (tmp_path / "www").mkdir()
    udpless.spawn(["python3", "-m", "http.server", "8765", "--bind", "127.0.0.1", "--directory", str(tmp_path / "www")],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    browser = Chromium(tmp_path / "chromium-profile", tmp_path / "chromium.log", namespace=udpless)
    try:
        page = wait_for("the page", lambda: open_page(browser), timeout=10)
        talker_call, _ = join_peer(server, loop, talker, ROOM, "talker")
        wait_until(lambda: participant(server, ROOM, talker_call)["state"] == "established", 10)
        # The aiortc talker keeps running while the test waits on the browser.
        pumped = lambda probe: lambda: (loop.run_until_complete(asyncio.sleep(0.05)), probe())[1]

        offer = page.evaluate(PAGE_SETUP)
        assert "tcptype active" in offer, "Chromium offered no TCP candidate: " + str([l for l in offer.splitlines() if "candidate" in l])
        reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "browser"})
        assert reply.status_code == 201, reply.text
        answer, call_id = reply.json()["sdp"], reply.json()["callId"]
        assert "tcptype passive" in answer, answer
        page.evaluate(f"window.t.pc.setRemoteDescription({{type: 'answer', sdp: {answer!r}}})")

        state = lambda: (page.evaluate("window.t.states"), participant(server, ROOM, call_id)["state"])
        wait_for("the browser connected", pumped(lambda: participant(server, ROOM, call_id)["state"] == "established"),
                 timeout=30, detail=lambda: (state(), server.log_tail(2000)))
        pair = wait_for("a selected pair", pumped(lambda: page.evaluate(SELECTED_PAIR)), timeout=10)
        assert pair["local"] == "tcp" and pair["remote"] == "tcp" and pair["tcpType"] == "active", pair
        assert udpless.dropped_udp_packets() > 0, "the firewall saw no UDP: the test would prove nothing"

        # Three seconds of media both ways, then what each side heard.
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            loop.run_until_complete(asyncio.sleep(0.1))
        end = time.monotonic()
        heard_by_talker = talker.audio_between(end - 2.0, end)
        assert len(heard_by_talker) >= 48000, f"the aiortc talker got {len(heard_by_talker)} samples"
        assert tone_db(heard_by_talker, 660.0) > tone_db(heard_by_talker, 1000.0) + 20, "the talker did not hear the browser"
        heard_by_browser = numpy.array(page.evaluate(LAST_SECOND), dtype=numpy.float64)
        inbound = page.evaluate("(async () => { const r = []; (await window.t.pc.getStats()).forEach((s) => { if (s.type === 'inbound-rtp') r.push([s.packetsReceived, s.totalSamplesReceived, s.audioLevel]); }); return [r, window.t.heard.length]; })()")
        assert len(heard_by_browser) >= 24000, f"the browser decoded {len(heard_by_browser)} samples in the last second; {inbound}"
        assert tone_db(heard_by_browser, 440.0) > tone_db(heard_by_browser, 1000.0) + 20, "the browser did not hear the room"
        media = participant(server, ROOM, call_id)["media"]
        assert media["packetsReceived"] > 100 and media["packetsSent"] > 100, media
        print(f"ICE-TCP: pair {pair}, server counters {media}, UDP dropped {udpless.dropped_udp_packets()}")
    finally:
        browser.close()
        loop.run_until_complete(talker.close())
        loop.close()
