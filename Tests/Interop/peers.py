"""aiortc peers for interop tests: a real WebRTC stack written elsewhere, on loopback only.

A `Peer` records what it decodes: audio as samples, video as the mean colour of each frame per
receiving m-line (mid), so a test can tell whose solid-colour camera arrives in which video slot.
A `ThreadedPeer` is one on a loop of its own thread, for tests that block on something else.
"""

from __future__ import annotations

import asyncio
import fractions
import json
import math
import socket
import threading
import time
from typing import Any

import aioice.ice
import numpy
import requests
from aiortc import RTCBundlePolicy, RTCConfiguration, RTCPeerConnection, RTCRtpReceiver, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack, VideoStreamTrack
from av import AudioFrame, VideoFrame

# aioice skips 127.0.0.1 when gathering host candidates; tests must stay on loopback, so the
# only candidate is 127.0.0.1 (the server's candidate is 127.0.0.1 too).
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]


class ToneTrack(AudioStreamTrack):
    """A sine tone at `frequency` Hz (amplitude 0 = silence), 48 kHz mono, 20 ms frames."""

    def __init__(self, frequency: float, amplitude: float = 8000):
        super().__init__()
        self.frequency = frequency
        self.amplitude = amplitude
        self.samples = 0
        self.started: float | None = None

    async def recv(self) -> AudioFrame:
        samples = 960
        # Paced by the wall clock, not by sleep(0.02) (which drifts late on a busy machine).
        if self.started is None:
            self.started = time.monotonic()
        wait = self.started + self.samples / 48000 - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        t = (numpy.arange(samples) + self.samples) / 48000
        pcm = (numpy.sin(2 * math.pi * self.frequency * t) * self.amplitude).astype(numpy.int16)
        frame = AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = 48000
        frame.pts = self.samples
        frame.time_base = fractions.Fraction(1, 48000)
        self.samples += samples
        return frame


class ColorTrack(VideoStreamTrack):
    """A solid-colour 320x240 picture."""

    def __init__(self, rgb: tuple[int, int, int]):
        super().__init__()
        self.rgb = rgb

    async def recv(self) -> VideoFrame:
        pts, time_base = await self.next_timestamp()
        image = numpy.zeros((240, 320, 3), numpy.uint8)
        image[:, :] = self.rgb
        frame = VideoFrame.from_ndarray(image, format="rgb24")
        frame.pts, frame.time_base = pts, time_base
        return frame


def mean_colour(frame: VideoFrame) -> tuple[float, float, float]:
    """Mean RGB of the middle half of a decoded frame. The centre only: VP8's 4:2:0 chroma and the
    YUV round trip smear colour at the edges, while a solid picture's centre stays within a few
    steps of what was sent."""
    image = frame.to_ndarray(format="rgb24")
    height, width = image.shape[:2]
    centre = image[height // 4:height - height // 4, width // 4:width - width // 4]
    red, green, blue = centre.reshape(-1, 3).mean(axis=0)
    return (float(red), float(green), float(blue))


def nearest_colour(rgb: tuple[float, float, float], palette: dict[str, tuple[int, int, int]],
                   tolerance: float = 60.0) -> str | None:
    """The name of the palette colour closest to `rgb`, or None when none is within `tolerance`
    (Euclidean distance in RGB; a decoded solid colour lands within ~10 of the original)."""
    best, distance = None, tolerance
    for name, colour in palette.items():
        d = math.dist(rgb, colour)
        if d <= distance:
            best, distance = name, d
    return best


class Peer:
    """One aiortc participant: audio (tone) + camera + `slots` receive-only video m-lines (the
    server's video slots). Records what it decodes: `audio`, and `video` per receiving mid.

    `camera=False` leaves the camera out (a viewer only). `slot_codec` (a mimeType such as
    "video/H264") offers only that codec (and RTX) on the slots, in aiortc's order, instead of
    aiortc's VP8 first."""

    def __init__(self, frequency: float = 440.0, rgb=(255, 0, 0), video: bool = True, slots: int = 2,
                 amplitude: float = 8000, camera: bool = True, slot_codec: str | None = None):
        # max-bundle: every transceiver shares one transport from the start. With aiortc's default
        # (balanced) the 2nd and later video transceivers ride the first video one's transport, which
        # setRemoteDescription discards when it applies BUNDLE, so only one video m-line would ever
        # send or receive (aiortc 1.16; the server bundles everything on its one UDP port anyway).
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[], bundlePolicy=RTCBundlePolicy.MAX_BUNDLE))
        self.pc.addTrack(ToneTrack(frequency, amplitude))
        if video:
            if camera:
                self.pc.addTransceiver(ColorTrack(rgb), direction="sendonly")
            for _ in range(slots):
                transceiver = self.pc.addTransceiver("video", direction="recvonly")
                if slot_codec is not None:
                    codecs = RTCRtpReceiver.getCapabilities("video").codecs
                    transceiver.setCodecPreferences(
                        [c for c in codecs if c.mimeType.lower() in (slot_codec.lower(), "video/rtx")])
        self.received: dict[str, int] = {}
        # Decoded audio as it arrives: (arrival time, mono float samples at 48 kHz).
        self.audio: list[tuple[float, numpy.ndarray]] = []
        # Decoded video per receiving mid: (arrival time, mean RGB of the frame's centre).
        self.video: dict[str, list[tuple[float, tuple[float, float, float]]]] = {}
        self.errors: list[str] = []

        @self.pc.on("track")
        def on_track(track):
            asyncio.ensure_future(self._drain(track))

    def _mid_of(self, track) -> str | None:
        for transceiver in self.pc.getTransceivers():
            if transceiver.receiver.track is track:
                return transceiver.mid
        return None

    async def _drain(self, track) -> None:
        # The "track" event fires during setRemoteDescription, after the transceiver got its mid.
        mid = self._mid_of(track) if track.kind == "video" else None
        if track.kind == "video":
            self.video.setdefault(mid or "?", [])
        while True:
            try:
                frame = await track.recv()
            except Exception:  # MediaStreamError: the track ended (the peer connection closed)
                return
            self.received[track.kind] = self.received.get(track.kind, 0) + 1
            try:
                if track.kind == "audio":
                    pcm = frame.to_ndarray().astype(numpy.float64).reshape(-1)
                    channels = len(frame.layout.channels)
                    if channels > 1:
                        pcm = pcm.reshape(-1, channels).mean(axis=1)
                    self.audio.append((time.monotonic(), pcm))
                else:
                    self.video[mid or "?"].append((time.monotonic(), mean_colour(frame)))
            except Exception as error:  # keep draining: a lost task would look like silence
                self.errors.append(repr(error))

    def audio_between(self, start: float, end: float) -> numpy.ndarray:
        """The decoded audio received between two monotonic times, concatenated."""
        parts = [pcm for at, pcm in self.audio if start <= at < end]
        return numpy.concatenate(parts) if parts else numpy.zeros(0)

    def slot_mids(self) -> list[str]:
        """The mids of the receive-only video m-lines (the video slots), in offer order."""
        return [t.mid for t in self.pc.getTransceivers()
                if t.kind == "video" and t.direction == "recvonly" and t.mid is not None]

    def colours_between(self, mid: str, start: float = float("-inf"),
                        end: float = float("inf")) -> list[tuple[float, float, float]]:
        """Mean colours of the frames decoded on `mid` between two monotonic times."""
        return [rgb for at, rgb in self.video.get(mid, []) if start <= at < end]

    def frames_on(self, mid: str, start: float = float("-inf"), end: float = float("inf")) -> int:
        """How many frames were decoded on `mid` between two monotonic times."""
        return sum(1 for at, _ in self.video.get(mid, []) if start <= at < end)

    async def offer(self) -> str:
        await self.pc.setLocalDescription(await self.pc.createOffer())
        return self.pc.localDescription.sdp

    async def answer(self, sdp: str) -> None:
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="answer"))

    async def close(self) -> None:
        await self.pc.close()

    async def remote_reports(self) -> int:
        """How many RTCP report blocks about our streams the server sent (remote-inbound stats)."""
        stats = await self.pc.getStats()
        return sum(1 for s in stats.values() if s.type == "remote-inbound-rtp")


class ThreadedPeer:
    """A `Peer` on an asyncio loop of its own thread, so that it keeps receiving while the test
    waits on something else (a browser, a child process) with plain blocking calls. `peer_args`
    go to `Peer`, which is made on that loop (aiortc's senders keep the loop they were made on);
    `timeout` bounds each coroutine `run` on it."""

    def __init__(self, timeout: float = 20.0, **peer_args: Any):
        self.timeout = timeout
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def make() -> Peer:
            return Peer(**peer_args)
        self.peer = self.run(make())

    def run(self, coroutine, timeout: float | None = None):
        """Runs `coroutine` on the peer's loop; its result (fails after `timeout`, default the peer's)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout or self.timeout)

    def join(self, server, room: str, user: str = "listener") -> str:
        """Joins `room` as `user` with the application's credentials; returns the callId."""
        offer = self.run(self.peer.offer())
        reply = server.request("POST", f"/v1/rooms/{room}/participants", json={"sdp": offer, "userId": user})
        assert reply.status_code == 201, reply.text
        self.run(self.peer.answer(reply.json()["sdp"]))
        return reply.json()["callId"]

    def close(self) -> None:
        """Closes the peer connection, then stops the loop and its thread."""
        try:
            self.run(self.peer.close(), timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)


class EventStream:
    """Reads a room's Server-Sent Events on a thread; `wait_for` blocks until one matches."""

    def __init__(self, url: str, **kwargs: Any):
        self.events: list[dict] = []
        self.cond = threading.Condition()
        self.response = requests.get(url, stream=True, timeout=(5, 60), **kwargs)
        assert self.response.status_code == 200, self.response.text
        assert self.response.headers["content-type"].startswith("text/event-stream")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        event: dict[str, Any] = {}
        try:
            for raw in self.response.iter_lines(decode_unicode=True):
                if raw is None:
                    continue
                if raw == "":
                    if "data" in event:
                        item = json.loads(event["data"])
                        item["_id"] = event.get("id")
                        with self.cond:
                            self.events.append(item)
                            self.cond.notify_all()
                    event = {}
                elif not raw.startswith(":") and ":" in raw:
                    key, _, value = raw.partition(":")
                    event[key] = value.lstrip(" ")
        except Exception:
            pass

    def wait_for(self, predicate, timeout: float = 5.0) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for item in self.events:
                    if predicate(item):
                        return item
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no matching event within {timeout}s; saw {self.events}")
                self.cond.wait(remaining)

    def close(self) -> None:
        # The reader thread sits in a read that holds the response's buffer lock, so a plain close
        # would wait for the server's next event or keep-alive comment (up to 15 s); shutting the
        # socket down first ends that read at once.
        connection = getattr(self.response.raw, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.response.close()
