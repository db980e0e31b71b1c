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

import base64
import io

import av
import numpy
import pytest

from browser_netns import CHROMIUM_RECEIVE, LAST_SECOND, MEDIA_PERMISSION, OSCILLATOR, BrowserCall, page_setup
from chromium import wait_for
from netns import Namespace

ROOM = "tcp-only"

# What each browser sends (`stream`, `track`) and how it keeps what it decodes; see the docstring.
SEND = {
    "chromium": MEDIA_PERMISSION + OSCILLATOR,
    # The fake microphone, at 660 Hz by the profile's prefs (see FIREFOX_PREFS).
    "firefox": """
  const stream = await navigator.mediaDevices.getUserMedia({audio: true}), track = stream.getAudioTracks()[0];""",
}

RECEIVE = {
    "chromium": CHROMIUM_RECEIVE,
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

# The browser's inbound RTP counters and how much it kept, for a failure message.
INBOUND = ("(async () => { const r = []; (await window.t.pc.getStats()).forEach((s) => { if (s.type === 'inbound-rtp') "
           "r.push([s.packetsReceived, s.totalSamplesReceived, s.audioLevel]); }); return [r, window.t.heard.length]; })()")


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


@pytest.fixture
def namespace(namespace: Namespace) -> Namespace:
    """conftest's namespace behind a firewall that drops every UDP datagram (netns.drop_udp)."""
    namespace.drop_udp()
    return namespace


@pytest.mark.parametrize("kind", ["chromium", "firefox"])
def test_browser_without_udp_joins_over_tcp_hears_and_is_heard(netns_server, namespace, tmp_path, kind):
    session = BrowserCall(netns_server, namespace, tmp_path, ROOM, kind, FIREFOX_PREFS)
    try:
        page = session.page
        offer = page.evaluate(page_setup(SEND[kind], RECEIVE[kind]))
        assert "tcptype active" in offer, f"{kind} offered no TCP candidate: " + str([l for l in offer.splitlines() if "candidate" in l])
        call_id, answer = session.join(offer)
        assert "tcptype passive" in answer, answer
        session.connect(call_id, answer)
        pair = wait_for("a selected pair", session.pumped(lambda: page.evaluate(SELECTED_PAIR)), timeout=10)
        assert pair["local"] == "tcp" and pair["remote"] == "tcp" and pair["tcpType"] == "active", pair
        assert namespace.dropped_udp_packets() > 0, "the firewall saw no UDP: the test would prove nothing"

        # Three seconds of media both ways, then what each side heard.
        media, talker_levels, browser_levels = session.exchange_audio(
            call_id, heard_by_browser=lambda: heard_last_second(page, kind), detail=lambda: page.evaluate(INBOUND))
        print(f"\nICE-TCP {kind}: pair {pair}, server counters {media}, UDP dropped {namespace.dropped_udp_packets()}, "
              f"dB heard by the talker {talker_levels}, by the browser {browser_levels}")
    finally:
        session.close()
