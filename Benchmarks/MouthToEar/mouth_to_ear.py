"""Mouth-to-ear latency the server adds, over loopback: an aiortc talker sends 200 ms tone bursts,
an aiortc listener detects each onset in what it decodes. Measured through Chorus's mixer and,
as a baseline, directly between the two aiortc peers; the difference is what the server adds
(its jitter buffer, the 20 ms tick, decode, mix, encode).

Run: CHORUS_BIN=.build/release/chorus .venv/bin/python Benchmarks/MouthToEar/mouth_to_ear.py
Bounded: 20 bursts (~20 s) per path, loopback only."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "Interop"))
import conftest  # noqa: E402
from aiortc import RTCPeerConnection, RTCConfiguration  # noqa: E402
from peers import Peer, ToneTrack  # noqa: E402

BURSTS = 20


class BurstTrack(ToneTrack):
    """200 ms of 1 kHz every second; remembers when each burst's first frame was handed over."""

    def __init__(self):
        super().__init__(1000.0)
        self.onsets: list[float] = []

    async def recv(self):
        frame = await super().recv()
        phase = (self.samples - 960) % 48000
        pcm = frame.to_ndarray()
        if phase < 9600:
            if phase == 0:
                self.onsets.append(time.monotonic())
        else:
            pcm[:] = 0
        frame.planes[0].update(pcm.tobytes())
        return frame


def onsets_heard(peer: Peer) -> list[float]:
    heard, quiet = [], True
    for at, pcm in peer.audio:
        loud = numpy.sqrt(numpy.mean(pcm ** 2)) > 500
        if loud and quiet:
            heard.append(at)
        quiet = not loud
    return heard


def latencies(sent: list[float], heard: list[float]) -> list[float]:
    out = []
    for s in sent:
        after = [h - s for h in heard if 0 <= h - s < 0.5]
        if after:
            out.append(min(after) * 1000)
    return out


async def via_chorus(server) -> tuple[list[float], dict]:
    talker, listener = Peer(video=False), Peer(video=False, amplitude=0)
    track = BurstTrack()
    talker.pc.getSenders()[0].replaceTrack(track)
    calls = {}
    for name, peer in (("talker", talker), ("listener", listener)):
        offer = await peer.offer()
        reply = server.request("POST", "/v1/rooms/latency/participants", json={"sdp": offer, "userId": name})
        calls[name] = reply.json()["callId"]
        await peer.answer(reply.json()["sdp"])
    await asyncio.sleep(BURSTS + 2)
    result = latencies(track.onsets[2:], onsets_heard(listener))
    # What the server's jitter buffer did with the talker's packets.
    audio = server.request("GET", f"/v1/rooms/latency/participants/{calls['talker']}").json()["audio"]
    jitter_buffer = {key: audio[key] for key in ("jitterBufferDelayMeanMs", "jitterBufferTargetMs", "discarded")}
    await talker.close()
    await listener.close()
    return result, jitter_buffer


async def direct() -> list[float]:
    talker, listener = Peer(video=False), Peer(video=False, amplitude=0)
    track = BurstTrack()
    talker.pc.getSenders()[0].replaceTrack(track)
    await talker.pc.setLocalDescription(await talker.pc.createOffer())
    await listener.pc.setRemoteDescription(talker.pc.localDescription)
    await listener.pc.setLocalDescription(await listener.pc.createAnswer())
    await talker.pc.setRemoteDescription(listener.pc.localDescription)
    await asyncio.sleep(BURSTS + 2)
    result = latencies(track.onsets[2:], onsets_heard(listener))
    await talker.close()
    await listener.close()
    return result


def summary(values: list[float]) -> dict:
    return {"count": len(values), "median_ms": round(statistics.median(values), 1) if values else None,
            "p90_ms": round(numpy.percentile(values, 90), 1) if values else None}


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    server = conftest.ChorusServer(conftest.os.environ["CHORUS_BIN"], folder / "m2e.sqlite", folder / "server.log")
    server.start()
    try:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        chorus, jitter_buffer = loop.run_until_complete(via_chorus(server))
        baseline = loop.run_until_complete(direct())
    finally:
        server.stop()
    report = {"via_chorus": summary(chorus), "direct_aiortc": summary(baseline),
              "server_jitter_buffer_of_talker": jitter_buffer}
    if chorus and baseline:
        report["added_by_server_median_ms"] = round(statistics.median(chorus) - statistics.median(baseline), 1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
