"""H.264 forwarded end to end, with a real H.264 publisher: headless Chromium sends its fake camera
(`--use-fake-device-for-media-stream`) in H.264, and two viewers receive it through a video slot
and decode it: an aiortc peer (ffmpeg's H.264 decoder through PyAV) and a second peer connection
in the same Chromium (its own H.264 decoder).

H.264 is forced with `RTCRtpTransceiver.setCodecPreferences`: every peer offers H.264 only on its
video sections (packetization-mode=1 entries first, then mode 0, plus RTX). H.264 merely listed
first would not do: Chorus answers VP8 whenever a section offers it (the one codec every browser
has, so every camera fits every slot), whatever the offer's order.

Everything joins through the REST API (`POST /v1/rooms/{room}/participants`) on loopback, with no
STUN or TURN server. What is checked:
- the answers: each video section answers one H.264 payload type (the first packetization-mode=1
  one offered) with packetization-mode=1 and the offered profile-level-id, and its RTX;
- the publisher's own statistics: it encodes H.264 (outbound codec video/H264) and received the
  server's PLIs;
- the viewers decode H.264: Chromium's inbound codec is video/H264 with frames and key frames
  decoded; aiortc built an H.264 decoder and decoded frames from RTP of the answered H.264 payload
  type;
- the server's counters: the publisher's packets received and keyframe requests sent, each
  viewer's packets forwarded and slot switches;
- keyframe-gated switching for H.264 (RFC 6184 payloads: STAP-A, FU-A). Chromium answers a PLI
  with a key frame on its very next frame, so a slot would rarely see a delta frame before its key
  frame and a switch on any packet would mostly look right too. The publisher therefore runs its
  encoded frames through an encoded transform (`createEncodedStreams`) that, while the aiortc
  viewer joins, drops key frames and passes delta frames: the server receives those delta frames
  while the viewer's slot waits, and must forward none of them (no packet reaches aiortc, the
  viewer's packetsForwarded and slotSwitches stay 0). Then key frames pass again, the Chromium
  viewer's join asks for one, and aiortc's slot stream (its lowest sequence number) starts with
  that H.264 key frame: an SPS, a STAP-A holding an SPS or IDR, or the first FU-A fragment of an
  IDR.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Callable

import aiortc.rtcrtpreceiver
import pytest

from chromium import Page, wait_for
from conftest import ChorusServer
from peers import EventStream, Peer

ROOM = "h264-room"
BUDGET = 50.0  # the whole test's bound (it passes in about 7 s); every wait stops within it
STEP = 20.0  # bound of one wait
MIN_FRAMES = 30  # frames each viewer must decode (the camera asks for 30 fps; ~20 are encoded on 2 busy cores)
H264 = "video/H264"

# Installed once in the page: two peer connections (the publisher and a viewer) whose video
# sections offer H.264 only, the publisher's camera behind the key-frame `gate`; `stats` summarises
# one connection's video RTP statistics with their codecs.
PAGE_SCRIPT = r"""
window.h264 = (() => {
  const pcs = {};
  function preferH264(transceiver) {
    const codecs = RTCRtpReceiver.getCapabilities('video').codecs;
    const h264 = codecs.filter((c) => c.mimeType === 'video/H264');
    const mode1 = h264.filter((c) => /packetization-mode=1/.test(c.sdpFmtpLine || ''));
    const rest = h264.filter((c) => !mode1.includes(c));
    transceiver.setCodecPreferences([...mode1, ...rest, ...codecs.filter((c) => c.mimeType === 'video/rtx')]);
  }
  async function offer(pc) {
    await pc.setLocalDescription(await pc.createOffer());
    if (pc.iceGatheringState !== 'complete') {
      await new Promise((resolve) => {
        pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
        setTimeout(resolve, 3000);
      });
    }
    return pc.localDescription.sdp;
  }
  return {
    // The camera's encoded frames pass through `gate`: with `dropKeys` set, key frames are dropped
    // (never packetized) and delta frames still go out.
    gate: { dropKeys: false, keys: 0, deltas: 0, droppedKeys: 0, deltasAfterDrop: 0 },
    async publish() {
      const stream = await navigator.mediaDevices.getUserMedia(
        { audio: true, video: { width: 640, height: 480, frameRate: 30 } });
      // With encoded insertable streams, every sender and receiver must pipe its frames.
      const pc = pcs.publisher = new RTCPeerConnection({ iceServers: [], encodedInsertableStreams: true });
      pc.ontrack = (event) => { const s = event.receiver.createEncodedStreams(); s.readable.pipeTo(s.writable); };
      const audio = pc.addTransceiver(stream.getAudioTracks()[0], { direction: 'sendrecv', streams: [stream] });
      const audioFrames = audio.sender.createEncodedStreams();
      audioFrames.readable.pipeTo(audioFrames.writable);
      const video = pc.addTransceiver(stream.getVideoTracks()[0], { direction: 'sendonly', streams: [stream] });
      preferH264(video);
      const gate = window.h264.gate;
      const frames = video.sender.createEncodedStreams();
      frames.readable.pipeThrough(new TransformStream({
        transform(frame, controller) {
          if (frame.type === 'key') {
            gate.keys++;
            if (gate.dropKeys) { gate.droppedKeys++; return; }
          } else {
            gate.deltas++;
            if (gate.dropKeys && gate.droppedKeys > 0) gate.deltasAfterDrop++;
          }
          controller.enqueue(frame);
        },
      })).pipeTo(frames.writable);
      return offer(pc);
    },
    async view() {
      const pc = pcs.viewer = new RTCPeerConnection({ iceServers: [] });
      pc.addTransceiver('audio', { direction: 'recvonly' });
      preferH264(pc.addTransceiver('video', { direction: 'recvonly' }));
      return offer(pc);
    },
    async answer(name, sdp) {
      await pcs[name].setRemoteDescription({ type: 'answer', sdp });
      return true;
    },
    async stats(name) {
      const pc = pcs[name];
      const report = await pc.getStats();
      const codec = (id) => (report.get(id) ? { mimeType: report.get(id).mimeType,
        payloadType: report.get(id).payloadType, sdpFmtpLine: report.get(id).sdpFmtpLine } : null);
      const video = (type) => [...report.values()].filter((s) => s.type === type && s.kind === 'video')
        .map((s) => ({ ...s, codec: codec(s.codecId) }));
      return { connectionState: pc.connectionState, outbound: video('outbound-rtp'), inbound: video('inbound-rtp') };
    },
    close() { for (const pc of Object.values(pcs)) pc.close(); return true; },
  };
})();
true
"""


# -- SDP -----------------------------------------------------------------------------------------

def video_sections(sdp: str) -> list[list[str]]:
    """The lines of each m=video section."""
    sections, current = [], None
    for line in sdp.splitlines():
        if line.startswith("m="):
            current = [line] if line.startswith("m=video") else None
            if current is not None:
                sections.append(current)
        elif current is not None:
            current.append(line)
    return sections


def codecs_of(section: list[str]) -> dict[int, dict[str, str]]:
    """Payload type -> {"name", "fmtp"} for one section, in m= line order."""
    formats = [int(f) for f in section[0].split()[3:]]
    codecs: dict[int, dict[str, str]] = {pt: {"name": "", "fmtp": ""} for pt in formats}
    for line in section:
        for prefix, key in (("a=rtpmap:", "name"), ("a=fmtp:", "fmtp")):
            if line.startswith(prefix):
                pt, _, value = line[len(prefix):].partition(" ")
                if int(pt) in codecs:
                    codecs[int(pt)][key] = value.split("/")[0] if key == "name" else value
    return codecs


def fmtp(value: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in value.split(";") if "=" in item)


def check_h264_answer(who: str, offer: str, answer: str) -> int:
    """Checks that the answer's one video section chose the first packetization-mode=1 H.264 of
    the offer, with that format's profile-level-id, and its RTX; returns the H.264 payload type."""
    (offered,), (answered,) = video_sections(offer), video_sections(answer)
    offered_codecs, answered_codecs = codecs_of(offered), codecs_of(answered)
    assert {c["name"] for c in offered_codecs.values()} <= {"H264", "rtx"}, f"{who} offered {offered_codecs}"
    expected = next(pt for pt, c in offered_codecs.items()
                    if c["name"] == "H264" and fmtp(c["fmtp"]).get("packetization-mode") == "1")
    media = [pt for pt, c in answered_codecs.items() if c["name"] != "rtx"]
    assert media == [expected], f"{who}'s answer chose {answered_codecs}, expected H.264 {expected}:\n{answer}"
    assert answered_codecs[expected]["name"] == "H264", answered_codecs
    parameters = fmtp(answered_codecs[expected]["fmtp"])
    assert parameters.get("packetization-mode") == "1", f"{who}'s answer fmtp {parameters}"
    assert parameters.get("profile-level-id") == fmtp(offered_codecs[expected]["fmtp"])["profile-level-id"], (
        f"{who}'s answer fmtp {parameters}, offered {offered_codecs[expected]['fmtp']}")
    rtx = [pt for pt, c in answered_codecs.items() if c["name"] == "rtx"]
    assert len(rtx) == 1 and fmtp(answered_codecs[rtx[0]]["fmtp"]).get("apt") == str(expected), answered_codecs
    return expected


# -- H.264 payloads (RFC 6184), read independently of the server's detector ------------------------

def nal_units(payload: bytes) -> list[tuple[int, str]]:
    """(NAL unit type, how it is carried) for each NAL unit an RTP payload starts or holds: a
    single NAL unit ("single"), the units of a STAP-A ("stap-a"), or an FU-A fragment ("fu-a
    start", "fu-a")."""
    if not payload:
        return []
    kind = payload[0] & 0x1F
    if kind == 24:
        units, index = [], 1
        while index + 2 <= len(payload):
            size = int.from_bytes(payload[index:index + 2], "big")
            if size == 0 or index + 2 + size > len(payload):
                break
            units.append((payload[index + 2] & 0x1F, "stap-a"))
            index += 2 + size
        return units
    if kind == 28 and len(payload) >= 2:
        return [(payload[1] & 0x1F, "fu-a start" if payload[1] & 0x80 else "fu-a")]
    return [(kind, "single")]


def starts_keyframe(payload: bytes) -> bool:
    """An SPS or an IDR slice, whole or in a STAP-A, or the first fragment of either."""
    return any(kind in (5, 7) and how != "fu-a" for kind, how in nal_units(payload))


# -- peers ---------------------------------------------------------------------------------------

class AiortcLoop:
    """aiortc on its own thread, so that its media keeps flowing while the test blocks on
    Chromium's DevTools socket or on REST calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, awaitable, timeout: float = STEP) -> Any:
        return asyncio.run_coroutine_threadsafe(awaitable, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()


class SlotRecorder:
    """Records the RTP packets an aiortc receiver gets, before its jitter buffer (by wrapping the
    receiver's `_handle_rtp_packet`, where aiortc 1.16 hands it each decrypted packet)."""

    def __init__(self, receiver) -> None:
        self.packets: list[tuple[float, int, int, int, bytes]] = []  # (at, pt, ssrc, seq, payload head)
        original = receiver._handle_rtp_packet

        async def recording(packet, arrival_time_ms: int) -> None:
            if len(self.packets) < 2000:
                self.packets.append((time.monotonic(), packet.payload_type, packet.ssrc,
                                     packet.sequence_number, bytes(packet.payload[:64])))
            await original(packet, arrival_time_ms)
        receiver._handle_rtp_packet = recording

    def media(self, payload_type: int) -> list[tuple[float, int, int, int, bytes]]:
        return [p for p in self.packets if p[1] == payload_type]

    def first_of_stream(self, payload_type: int) -> tuple[float, int, int, int, bytes] | None:
        """The received packet with the lowest sequence number (16-bit arithmetic from the first
        one received): the packet the slot stream started with, even if it arrived out of order."""
        packets = self.media(payload_type)
        if not packets:
            return None
        base = packets[0][3]
        return min(packets, key=lambda p: ((p[3] - base + 0x8000) & 0xFFFF) - 0x8000)


@pytest.fixture
def aiortc_loop():
    loop = AiortcLoop()
    yield loop
    loop.close()


@pytest.fixture
def decoders(monkeypatch):
    """The mimeType of every decoder aiortc creates (its decoder thread calls `get_decoder`)."""
    created: list[str] = []
    original = aiortc.rtcrtpreceiver.get_decoder

    def recording(codec):
        created.append(codec.mimeType)
        return original(codec)
    monkeypatch.setattr(aiortc.rtcrtpreceiver, "get_decoder", recording)
    return created


def test_chromium_h264_camera_is_forwarded_and_decoded(chorus_server: ChorusServer, chromium: Chromium,
                                                       aiortc_loop: AiortcLoop, decoders: list[str]):
    server = chorus_server
    deadline = time.monotonic() + BUDGET

    def until(what: str, probe: Callable[[], Any], detail: Callable[[], Any] = lambda: "") -> Any:
        return wait_for(what, probe, timeout=max(1.0, min(STEP, deadline - time.monotonic())), detail=detail)

    def join(offer: str, user: str) -> tuple[str, str]:
        reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": user})
        assert reply.status_code == 201, f"{user}: {reply.status_code} {reply.text}"
        return reply.json()["callId"], reply.json()["sdp"]

    def events_so_far() -> list[dict]:
        with events.cond:
            return list(events.events)

    def participant(call: str) -> dict:
        reply = server.request("GET", f"/v1/rooms/{ROOM}/participants/{call}")
        assert reply.status_code == 200, reply.text
        return reply.json()

    # A page on the server's origin (127.0.0.1 is a secure context: getUserMedia works there).
    page: Page = chromium.open(server.url("/healthz"))
    assert page.evaluate(PAGE_SCRIPT) is True
    video = lambda name: page.evaluate(f"window.h264.stats('{name}')")
    gate = lambda: page.evaluate("window.h264.gate")

    # 1. The Chromium publisher joins; its answer is H.264, and it encodes H.264.
    offer = page.evaluate("window.h264.publish()")
    publisher, answer = join(offer, "chromium-publisher")
    publisher_pt = check_h264_answer("the publisher", offer, answer)
    assert page.evaluate(f"window.h264.answer('publisher', {answer!r})") is True
    events = EventStream(server.url(f"/v1/rooms/{ROOM}/events"), auth=server.auth)
    viewer: Peer | None = None
    try:
        def explain_publisher() -> str:
            return (f"publisher {participant(publisher)}\nChromium publisher {video('publisher')}\n"
                    f"gate {gate()}\nserver log:\n{server.log_tail(2000)}")
        until("the publisher established", lambda: participant(publisher)["state"] == "established",
              explain_publisher)
        sending = lambda: next((s for s in video("publisher")["outbound"] if s.get("framesEncoded", 0) >= 30), None)
        outbound = until("the publisher encodes 30 frames", sending, explain_publisher)
        assert outbound["codec"]["mimeType"] == H264 and outbound["codec"]["payloadType"] == publisher_pt, outbound
        until("the server receives the camera", lambda: participant(publisher)["video"]["packetsReceived"] > 0,
              explain_publisher)

        # 2. The aiortc viewer joins while the camera runs and key frames are withheld.
        assert page.evaluate("window.h264.gate.dropKeys = true") is True

        async def make_viewer() -> Peer:
            return Peer(amplitude=0, camera=False, slots=1, slot_codec=H264)
        viewer = aiortc_loop.run(make_viewer())
        (slot,) = [t for t in viewer.pc.getTransceivers() if t.kind == "video"]
        recorder = SlotRecorder(slot.receiver)
        viewer_offer = aiortc_loop.run(viewer.offer())
        aiortc_call, viewer_answer = join(viewer_offer, "aiortc-viewer")
        aiortc_pt = check_h264_answer("the aiortc viewer", viewer_offer, viewer_answer)
        aiortc_loop.run(viewer.answer(viewer_answer))
        chromium_call: str | None = None

        def explain() -> str:
            first = recorder.first_of_stream(aiortc_pt)
            lines = [f"publisher {participant(publisher)}", f"aiortc viewer {participant(aiortc_call)}"]
            if chromium_call is not None:
                lines += [f"Chromium viewer {participant(chromium_call)}", f"Chromium viewer {video('viewer')}"]
            lines += [f"Chromium publisher {video('publisher')}", f"gate {gate()}",
                      f"aiortc: {len(recorder.packets)} packets, first of the stream "
                      f"{first and (first[3], nal_units(first[4]))}, decoders {decoders}, "
                      f"decoded {viewer.frames_on(slot.mid)}, errors {viewer.errors[:3]}",
                      f"server log:\n{server.log_tail(2000)}"]
            return "\n".join(lines)

        def slot_shows_publisher(call: str) -> bool:
            return any(e.get("type") == "video.slots" and e.get("callId") == call
                       and [s.get("publisherCallId") for s in e.get("slots", [])] == [publisher]
                       for e in events_so_far())

        # The server puts the publisher in the viewer's slot and asks it for a key frame; Chromium
        # makes one, the gate drops it, and delta frames keep reaching the server.
        until("a video.slots event for the aiortc viewer naming the publisher",
              lambda: slot_shows_publisher(aiortc_call), explain)
        until("a keyframe request to the publisher", lambda: participant(publisher)["video"]["keyframeRequestsSent"] >= 1,
              explain)
        until("the requested key frame dropped", lambda: gate()["droppedKeys"] >= 1, explain)
        received = participant(publisher)["video"]["packetsReceived"]
        until("10 delta frames sent after it", lambda: gate()["deltasAfterDrop"] >= 10, explain)
        until("the server receives them", lambda: participant(publisher)["video"]["packetsReceived"] >= received + 10,
              explain)
        waiting = participant(aiortc_call)["video"]
        assert waiting["packetsForwarded"] == 0 and waiting["slotSwitches"] == 0, (
            f"the slot switched without a key frame: {waiting}\n{explain()}")
        assert not recorder.packets, f"aiortc received slot packets before any key frame\n{explain()}"

        # 3. Key frames pass again; the Chromium viewer's join asks for one, which completes both
        # viewers' slot switches.
        assert page.evaluate("window.h264.gate.dropKeys = false") is False
        chromium_offer = page.evaluate("window.h264.view()")
        chromium_call, chromium_answer = join(chromium_offer, "chromium-viewer")
        chromium_pt = check_h264_answer("the Chromium viewer", chromium_offer, chromium_answer)
        assert page.evaluate(f"window.h264.answer('viewer', {chromium_answer!r})") is True
        until("a video.slots event for the Chromium viewer naming the publisher",
              lambda: slot_shows_publisher(chromium_call), explain)

        # 4. Both viewers decode H.264 frames.
        until(f"aiortc decodes {MIN_FRAMES} frames", lambda: viewer.frames_on(slot.mid) >= MIN_FRAMES, explain)
        decoding = lambda: next((s for s in video("viewer")["inbound"] if s.get("framesDecoded", 0) >= MIN_FRAMES),
                                None)
        inbound = until(f"Chromium decodes {MIN_FRAMES} frames", decoding, explain)
        assert inbound["codec"]["mimeType"] == H264 and inbound["codec"]["payloadType"] == chromium_pt, explain()
        assert inbound["keyFramesDecoded"] >= 1 and inbound["frameWidth"] > 0, explain()
        # aiortc decoded video with an H.264 decoder, and only that (its other decoder is the mix's Opus).
        assert [d for d in decoders if d.startswith("video/")] == [H264], explain()
        assert not viewer.errors, explain()
        rtx = {pt for pt, c in codecs_of(video_sections(viewer_answer)[0]).items() if c["name"] == "rtx"}
        assert len(recorder.media(aiortc_pt)) >= MIN_FRAMES and {p[1] for p in recorder.packets} <= {aiortc_pt} | rtx, (
            explain())

        # 5. The slot stream starts with the H.264 key frame (its lowest sequence number, in case
        # the first packets arrived out of order).
        first = recorder.first_of_stream(aiortc_pt)
        assert first is not None and starts_keyframe(first[4]), (
            f"the slot stream starts with NAL units {first and nal_units(first[4])}, not a key frame\n{explain()}")
        # Chromium sends the parameter sets in a STAP-A ahead of the IDR: the stream starts there,
        # so the decoder gets them (a switch on the IDR's first fragment would leave them behind).
        assert 7 in {kind for kind, _ in nal_units(first[4])}, (
            f"the slot stream starts with NAL units {nal_units(first[4])}, without the SPS\n{explain()}")

        # 6. The server's counters, and the publisher's view of them.
        stats = {name: participant(call)["video"] for name, call in
                 (("publisher", publisher), ("aiortc", aiortc_call), ("chromium", chromium_call))}
        assert stats["publisher"]["packetsReceived"] > received, explain()
        assert stats["publisher"]["keyframeRequestsSent"] >= 2, explain()
        for name in ("aiortc", "chromium"):
            assert stats[name]["packetsForwarded"] >= MIN_FRAMES, explain()
            assert stats[name]["slotSwitches"] >= 1, explain()
        outbound = next(s for s in video("publisher")["outbound"] if s["codec"])
        assert outbound["codec"]["mimeType"] == H264, outbound
        assert outbound["pliCount"] >= 2 and outbound["keyFramesEncoded"] >= 3, explain()
    finally:
        events.close()
        page.evaluate("window.h264.close()")
        if viewer is not None:
            aiortc_loop.run(viewer.close())
