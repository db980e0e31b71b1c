"""ICE-TCP (RFC 6544, issue 15 item 1): a browser on a network that drops all UDP joins over TCP.

Headless Chromium, then headless Firefox ESR, runs in a network namespace whose nftables firewall
drops every UDP datagram (the test shows the rule was hit). The server answers with its UDP host
candidate and a passive TCP one on the same port number; the browser's checks over UDP die in the
firewall, so it connects over TCP (its active candidate), and STUN, DTLS and SRTP run in RFC 4571
frames on that connection. An aiortc talker on the host side joins the same room over UDP and
hears the browser's 660 Hz tone (FFT), and the browser hears the talker's 440 Hz in the mix,
decoded in the page and measured here; each tone is compared with a silent band at 1 kHz.

How each browser makes its tone and hands over what it decoded:
- Chromium: a WebAudio oscillator as microphone; the remote track read with
  MediaStreamTrackProcessor (decoded PCM frames).
- Firefox has no MediaStreamTrackProcessor, and WebAudio does not run here: with no audio output
  (no PulseAudio on this machine; cubeb: "couldn't init pulse's context") its media graph falls
  back to a system clock, but an AudioContext stays `suspended` for good and `resume()` never
  settles (MOZ_LOG=MediaTrackGraph:4 shows "Attempting to re-init audio stream from fallback
  driver" over and over), so neither an oscillator nor an AnalyserNode / ScriptProcessor would
  produce a sample. Instead its fake microphone plays 660 Hz (`media.navigator.audio.fake_frequency`;
  1 kHz by default, the reference band), and a MediaRecorder records the remote track, which the
  graph does run: the browser's decoded audio, encoded again as Opus in Ogg, which PyAV decodes
  here for the FFT.
"""

from __future__ import annotations

import asyncio
import base64
import io
import subprocess
import time
from pathlib import Path

import av
import numpy
import pytest

from chromium import Chromium, wait_for
from firefox import Firefox
from conftest import ChorusServer
from netns import Namespace
from peers import Peer
from test_audio_mix import tone_db
from test_hostile_system import join_peer
from test_join_aiortc import participant, wait_until

ROOM = "tcp-only"

# The page: a 660 Hz tone as microphone (SEND), an offer once gathering is complete, and the
# decoded audio of what the server sends kept for the test to read (RECEIVE); both per browser.
PAGE_SETUP = """
(async () => {
  window.t = {states: [], heard: []};
SEND
  const pc = new RTCPeerConnection({bundlePolicy: 'max-bundle'});
  window.t.pc = pc;
  pc.addTrack(track, stream);
  pc.onconnectionstatechange = () => window.t.states.push([Date.now(), pc.connectionState]);
  pc.ontrack = (event) => {
RECEIVE
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

SEND = {
    "chromium": """
  // Media permission first: without it Chromium gathers only the default route's UDP candidate
  // and no TCP candidate at all. The fake microphone is then set aside for a steady tone.
  (await navigator.mediaDevices.getUserMedia({audio: true})).getTracks().forEach((track) => track.stop());
  const ctx = new AudioContext({sampleRate: 48000});
  const osc = ctx.createOscillator();
  osc.frequency.value = 660;
  const gain = ctx.createGain(); gain.gain.value = 0.3;
  const dest = ctx.createMediaStreamDestination();
  osc.connect(gain).connect(dest); osc.start();
  const stream = dest.stream, track = stream.getAudioTracks()[0];
  window.t.ctx = ctx;""",
    # The fake microphone, at 660 Hz by the profile's prefs (see FIREFOX_PREFS).
    "firefox": """
  const stream = await navigator.mediaDevices.getUserMedia({audio: true}), track = stream.getAudioTracks()[0];""",
}

RECEIVE = {
    "chromium": """
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
    })();""",
    # Everything the browser decodes from the first packet on, recorded at a high bit rate (the
    # test reads the end of it).
    "firefox": """
    const recorder = new MediaRecorder(new MediaStream([event.track]),
                                       {mimeType: 'audio/ogg;codecs=opus', audioBitsPerSecond: 128000});
    recorder.ondataavailable = (blob) => window.t.heard.push(blob.data);
    recorder.start(500);
    window.t.recorder = recorder;""",
}

FIREFOX_PREFS = {"media.navigator.audio.fake_frequency": 660}

# Chromium's whole page, as the other namespaced-Chromium tests (restart, TURN) use it.
CHROMIUM_PAGE_SETUP = PAGE_SETUP.replace("SEND", SEND["chromium"]).replace("RECEIVE", RECEIVE["chromium"])

SELECTED_PAIR = """
(async () => {
  const stats = await window.t.pc.getStats();
  let pair = null;
  stats.forEach((s) => { if (s.type === 'transport' && s.selectedCandidatePairId) pair = stats.get(s.selectedCandidatePairId); });
  if (!pair) return null;
  const local = stats.get(pair.localCandidateId), remote = stats.get(pair.remoteCandidateId);
  return {local: local.protocol, tcpType: local.tcpType, remote: remote.protocol, remotePort: remote.port,
          localAddress: local.address, remoteAddress: remote.address, state: pair.state, nominated: pair.nominated,
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

# Firefox: the recording so far, as base64 (the recorder stopped, its last data handed over).
RECORDING = """
(async () => {
  const recorder = window.t.recorder;
  if (!recorder) return null;
  const stopped = new Promise((resolve) => recorder.addEventListener('stop', resolve));
  recorder.stop();
  await stopped;
  const url = await new Promise((resolve) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.readAsDataURL(new Blob(window.t.heard, {type: recorder.mimeType}));
  });
  return url.slice(url.indexOf(',') + 1);
})()
"""


def heard_last_second(page, kind: str) -> numpy.ndarray:
    """The last second the browser decoded, 48 kHz mono."""
    if kind == "chromium":
        return numpy.array(page.evaluate(LAST_SECOND), dtype=numpy.float64)
    recording = page.evaluate(RECORDING)
    if not recording:
        return numpy.zeros(0)
    parts = []
    with av.open(io.BytesIO(base64.b64decode(recording))) as container:
        for frame in container.decode(audio=0):
            assert frame.sample_rate == 48000, frame.sample_rate
            samples = frame.to_ndarray()  # (channels, n) planar, (1, n * channels) packed
            parts.append(samples[0] if frame.format.is_planar else samples[0, ::len(frame.layout.channels)])
    pcm = numpy.concatenate(parts).astype(numpy.float64) if parts else numpy.zeros(0)
    return pcm[-48000:]


def open_page(browser, namespace: Namespace):
    """The page on the namespace's loopback (its folder's listing, not an error page), once its
    http.server listens."""
    wait_for("the page's server", lambda: serving(namespace), timeout=10)
    return browser.open("http://127.0.0.1:8765/", ready="document.readyState === 'complete' && "
                                                      "document.title.startsWith('Directory listing')")


def serving(namespace: Namespace) -> bool:
    """Whether the page's http.server listens yet on the namespace's loopback."""
    probe = "import socket; socket.create_connection(('127.0.0.1', 8765), 1)"
    return subprocess.run([*namespace.prefix(), "python3", "-c", probe], capture_output=True, timeout=10).returncode == 0


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


@pytest.mark.parametrize("kind", ["chromium", "firefox"])
def test_browser_without_udp_joins_over_tcp_hears_and_is_heard(server, udpless, tmp_path, kind):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker = Peer(frequency=440.0, video=False)
    # A page on the namespace's own loopback: a secure context, so getUserMedia is there.
    (tmp_path / "www").mkdir()
    udpless.spawn(["python3", "-m", "http.server", "8765", "--bind", "127.0.0.1", "--directory", str(tmp_path / "www")],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if kind == "chromium":
        browser = Chromium(tmp_path / "chromium-profile", tmp_path / "chromium.log", namespace=udpless)
    else:
        browser = Firefox(tmp_path / "firefox-profile", tmp_path / "firefox.log", prefs=FIREFOX_PREFS, namespace=udpless)
    try:
        wait_for("the page's server", lambda: serving(udpless), timeout=10)
        # The listing of the page's (empty) folder, not an error page.
        page = browser.open("http://127.0.0.1:8765/", ready="document.readyState === 'complete' && "
                                                          "document.title.startsWith('Directory listing')")
        talker_call, _ = join_peer(server, loop, talker, ROOM, "talker")
        wait_until(lambda: participant(server, ROOM, talker_call)["state"] == "established", 10)
        # The aiortc talker keeps running while the test waits on the browser.
        pumped = lambda probe: lambda: (loop.run_until_complete(asyncio.sleep(0.05)), probe())[1]

        offer = page.evaluate(PAGE_SETUP.replace("SEND", SEND[kind]).replace("RECEIVE", RECEIVE[kind]))
        assert "tcptype active" in offer, f"{kind} offered no TCP candidate: " + str([l for l in offer.splitlines() if "candidate" in l])
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
        talker_levels = {hz: round(float(tone_db(heard_by_talker, hz)), 1) for hz in (660.0, 1000.0)}
        assert talker_levels[660.0] > talker_levels[1000.0] + 20, f"the talker did not hear the browser: dB {talker_levels}"
        inbound = page.evaluate("(async () => { const r = []; (await window.t.pc.getStats()).forEach((s) => { if (s.type === 'inbound-rtp') r.push([s.packetsReceived, s.totalSamplesReceived, s.audioLevel]); }); return [r, window.t.heard.length]; })()")
        heard_by_browser = heard_last_second(page, kind)
        assert len(heard_by_browser) >= 24000, f"the browser decoded {len(heard_by_browser)} samples in the last second; {inbound}"
        browser_levels = {hz: round(float(tone_db(heard_by_browser, hz)), 1) for hz in (440.0, 1000.0)}
        assert browser_levels[440.0] > browser_levels[1000.0] + 20, f"the browser did not hear the room: dB {browser_levels}"
        media = participant(server, ROOM, call_id)["media"]
        assert media["packetsReceived"] > 100 and media["packetsSent"] > 100, media
        print(f"\nICE-TCP {kind}: pair {pair}, server counters {media}, UDP dropped {udpless.dropped_udp_packets()}, "
              f"dB heard by the talker {talker_levels}, by the browser {browser_levels}")
    finally:
        browser.close()
        loop.run_until_complete(talker.close())
        loop.close()
