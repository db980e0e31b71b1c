"""aiortc peers for interop tests: a real WebRTC stack written elsewhere, on loopback only."""

from __future__ import annotations

import asyncio
import fractions
import json
import math
import threading
import time
from typing import Any

import aioice.ice
import numpy
import requests
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
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


class Peer:
    """One aiortc participant: audio (tone) + camera + `slots` receive-only video m-lines."""

    def __init__(self, frequency: float = 440.0, rgb=(255, 0, 0), video: bool = True, slots: int = 2,
                 amplitude: float = 8000):
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.pc.addTrack(ToneTrack(frequency, amplitude))
        if video:
            self.pc.addTransceiver(ColorTrack(rgb), direction="sendonly")
            for _ in range(slots):
                self.pc.addTransceiver("video", direction="recvonly")
        self.received: dict[str, int] = {}
        # Decoded audio as it arrives: (arrival time, mono float samples at 48 kHz).
        self.audio: list[tuple[float, numpy.ndarray]] = []
        self.errors: list[str] = []

        @self.pc.on("track")
        def on_track(track):
            asyncio.ensure_future(self._drain(track))

    async def _drain(self, track) -> None:
        while True:
            try:
                frame = await track.recv()
            except Exception:
                return
            self.received[track.kind] = self.received.get(track.kind, 0) + 1
            if track.kind == "audio":
                try:
                    pcm = frame.to_ndarray().astype(numpy.float64).reshape(-1)
                    channels = len(frame.layout.channels)
                    if channels > 1:
                        pcm = pcm.reshape(-1, channels).mean(axis=1)
                except Exception as error:  # keep draining: a lost task would look like silence
                    self.errors.append(repr(error))
                    continue
                self.audio.append((time.monotonic(), pcm))

    def audio_between(self, start: float, end: float) -> numpy.ndarray:
        """The decoded audio received between two monotonic times, concatenated."""
        parts = [pcm for at, pcm in self.audio if start <= at < end]
        return numpy.concatenate(parts) if parts else numpy.zeros(0)

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
        self.response.close()
