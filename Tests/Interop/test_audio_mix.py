"""What listeners actually hear: three aiortc peers send distinct tones through the room's
mixer; each hears the other two and not itself (FFT of the decoded audio)."""

from __future__ import annotations

import asyncio
import time

import numpy
import pytest
import requests

from peers import Peer
from test_join_aiortc import participant, wait_until

TONES = {"a": 440.0, "b": 660.0, "c": 880.0}


def tone_db(pcm: numpy.ndarray, frequency: float) -> float:
    """Power at `frequency` (±10 Hz) in dB, from a windowed FFT of 48 kHz audio."""
    if len(pcm) < 4800:
        return -200.0
    window = numpy.hanning(len(pcm))
    # Normalised by length, so windows of different lengths compare.
    spectrum = numpy.abs(numpy.fft.rfft(pcm * window)) ** 2 / len(pcm)
    freqs = numpy.fft.rfftfreq(len(pcm), 1 / 48000)
    band = (freqs > frequency - 10) & (freqs < frequency + 10)
    return 10 * numpy.log10(spectrum[band].sum() + 1e-12)


def join(server, loop, peer: Peer, room: str, user: str) -> str:
    offer = loop.run_until_complete(peer.offer())
    reply = server.request("POST", f"/v1/rooms/{room}/participants", json={"sdp": offer, "userId": user})
    assert reply.status_code == 201, reply.text
    loop.run_until_complete(peer.answer(reply.json()["sdp"]))
    return reply.json()["callId"]


# Known bug (issue 4 stays open): in about one run of three, the server stops sending the first
# participant its mix about 0.5 s after the room fills (packetsSent stalls at ~25 while its
# packetsReceived keeps rising); the other participants hear everything and the FFT checks pass
# whenever audio flows. Not strict, so a fix shows as XPASS; the assertion message carries the
# server's counters for the participant that starved.
@pytest.mark.xfail(strict=False, reason="known intermittent stall of one participant's mix (issue 4)")
def test_each_hears_the_others_and_not_itself_and_mute_removes_a_voice(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peers = {name: Peer(frequency=f, video=False) for name, f in TONES.items()}
    peers["d"] = Peer(frequency=300.0, amplitude=0, video=False)  # a silent listener
    try:
        calls = {name: join(chorus_server, loop, peer, "mix", f"user-{name}") for name, peer in peers.items()}
        for name, call in calls.items():
            wait_until(lambda: participant(chorus_server, "mix", call)["state"] == "established", 5)
        # Wait (bounded) until every peer has a second of audio in the last three: a debug build
        # next to four aiortc peers on two cores drops ticks at times (see docs/PERFORMANCE.md).
        deadline = time.monotonic() + 12.0
        loop.run_until_complete(asyncio.sleep(3.0))
        while True:
            end = time.monotonic()
            windows = {name: peer.audio_between(end - 3.0, end) for name, peer in peers.items()}
            if all(len(w) >= 48000 for w in windows.values()) or end > deadline:
                break
            loop.run_until_complete(asyncio.sleep(0.5))
        for name, peer in peers.items():
            heard = windows[name]
            assert len(heard) >= 48000, (f"{name} received too little audio ({len(heard)} samples, "
                                         f"{len(peer.audio)} frames in all, errors {peer.errors[:3]}, server "
                                         f"{participant(chorus_server, 'mix', calls[name])['media']})")
            levels = {other: tone_db(heard, f) for other, f in TONES.items()}
            for other in TONES:
                if other == name:
                    continue
                assert levels[other] > levels.get(name, -200) + 30, (name, levels)
            if name in TONES:
                loudest_other = max(v for k, v in levels.items() if k != name)
                assert levels[name] < loudest_other - 30, (name, levels)

        # Muting A removes A's tone from B's and C's audio within 200 ms.
        reply = chorus_server.request("PATCH", f"/v1/rooms/mix/participants/{calls['a']}", json={"audioMuted": True})
        assert reply.status_code == 200 and reply.json()["audioMuted"] is True
        muted_at = time.monotonic()
        loop.run_until_complete(asyncio.sleep(1.5))
        for name in ("b", "c", "d"):
            before = peers[name].audio_between(muted_at - 1.2, muted_at - 0.1)
            after = peers[name].audio_between(muted_at + 0.2, muted_at + 1.4)
            assert tone_db(after, TONES["a"]) < tone_db(before, TONES["a"]) - 30, name
            # The others are still heard, far above what is left of A.
            other = "b" if name != "b" else "c"
            assert tone_db(after, TONES[other]) > tone_db(after, TONES["a"]) + 30, name
    finally:
        for peer in peers.values():
            loop.run_until_complete(peer.close())
        loop.close()
