"""What listeners actually hear: three aiortc peers send distinct tones through the room's
mixer; each hears the other two and not itself (FFT of the decoded audio)."""

from __future__ import annotations

import asyncio
import time

import numpy
import pytest
import requests

from peers import EventStream, Peer
from test_join_aiortc import participant, wait_until

TONES = {"a": 440.0, "b": 660.0, "c": 880.0}


def tone_db(pcm: numpy.ndarray, frequency: float, half_band: float = 3.0) -> float:
    """Power at `frequency` (± `half_band` Hz) in dB, from a windowed FFT of 48 kHz audio. The band is
    narrow on purpose: a tone's power sits in a few bins (the tones are exact at 48 kHz), while
    the broadband energy of glitches on a loaded machine spreads over all of them."""
    if len(pcm) < 4800:
        return -200.0
    window = numpy.hanning(len(pcm))
    # Normalised by length, so windows of different lengths compare.
    spectrum = numpy.abs(numpy.fft.rfft(pcm * window)) ** 2 / len(pcm)
    freqs = numpy.fft.rfftfreq(len(pcm), 1 / 48000)
    band = (freqs > frequency - half_band) & (freqs < frequency + half_band)
    return 10 * numpy.log10(spectrum[band].sum() + 1e-12)


def server_view(server, room: str, calls: dict[str, str]) -> str:
    """Each participant's media counters and audio statistics, for assertion messages."""
    lines = []
    for name, call in calls.items():
        reply = server.request("GET", f"/v1/rooms/{room}/participants/{call}")
        body = reply.json() if reply.status_code == 200 else {"status": reply.status_code}
        lines.append(f"{name}: media {body.get('media')} audio {body.get('audio')}")
    return "\n".join(lines)


def join(server, loop, peer: Peer, room: str, user: str) -> str:
    offer = loop.run_until_complete(peer.offer())
    reply = server.request("POST", f"/v1/rooms/{room}/participants", json={"sdp": offer, "userId": user})
    assert reply.status_code == 201, reply.text
    loop.run_until_complete(peer.answer(reply.json()["sdp"]))
    return reply.json()["callId"]


def test_each_hears_the_others_and_not_itself_and_mute_removes_a_voice(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peers = {name: Peer(frequency=f, video=False) for name, f in TONES.items()}
    peers["d"] = Peer(frequency=300.0, amplitude=0, video=False)  # a silent listener
    try:
        calls = {}
        events = None
        for name, peer in peers.items():
            calls[name] = join(chorus_server, loop, peer, "mix", f"user-{name}")
            if events is None:  # the room exists once the first participant joined
                events = EventStream(chorus_server.url("/v1/rooms/mix/events"), auth=chorus_server.auth)
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
                assert levels[other] > levels.get(name, -200) + 30, (name, levels, server_view(chorus_server, "mix", calls))
            if name in TONES:
                loudest_other = max(v for k, v in levels.items() if k != name)
                assert levels[name] < loudest_other - 30, (name, levels, server_view(chorus_server, "mix", calls))

        # Server-side voice activity (aiortc's level extension always says V=0): the three
        # talkers start talking, the silent listener never does, and one of them has the floor.
        for name in TONES:
            events.wait_for(lambda e, c=calls[name]: e.get("type") == "talking.started" and e.get("callId") == c)
        dominant = events.wait_for(lambda e: e.get("type") == "speaker.dominant" and e.get("callId"))
        assert dominant["callId"] in [calls[n] for n in TONES]
        assert not [e for e in events.events if e.get("type") == "talking.started" and e.get("callId") == calls["d"]]

        # Muting A removes A's tone from B's and C's audio within 200 ms.
        reply = chorus_server.request("PATCH", f"/v1/rooms/mix/participants/{calls['a']}", json={"audioMuted": True})
        assert reply.status_code == 200 and reply.json()["audioMuted"] is True
        muted_at = time.monotonic()
        loop.run_until_complete(asyncio.sleep(1.5))
        for name in ("b", "c", "d"):
            before = peers[name].audio_between(muted_at - 1.2, muted_at - 0.1)
            after = peers[name].audio_between(muted_at + 0.2, muted_at + 1.4)
            other = "b" if name != "b" else "c"
            levels = {"a before": tone_db(before, TONES["a"]), f"{other} before": tone_db(before, TONES[other]),
                      "a after": tone_db(after, TONES["a"]), f"{other} after": tone_db(after, TONES[other])}
            context = (name, levels, server_view(chorus_server, "mix", calls))
            # A was heard before, as loud as another speaker; after, A is gone and the others
            # are still heard, far above what is left of A.
            assert levels["a before"] > levels[f"{other} before"] - 10, context
            assert levels["a after"] < levels["a before"] - 30, context
            assert levels[f"{other} after"] > levels["a after"] + 30, context
        events.wait_for(lambda e: e.get("type") == "audio.muted" and e.get("callId") == calls["a"])
        events.wait_for(lambda e: e.get("type") == "talking.stopped" and e.get("callId") == calls["a"])

        # Decoding is spent on talkers only: the silent listener (its client reports -127 dBov)
        # and the muted A are not decoded; B and C always are.
        audio = {name: participant(chorus_server, "mix", call)["audio"] for name, call in calls.items()}
        assert audio["d"]["skippedDecodes"] > 100, audio["d"]
        assert audio["a"]["skippedDecodes"] >= 50, audio["a"]  # 1.5 s muted
        assert audio["b"]["skippedDecodes"] == 0 and audio["c"]["skippedDecodes"] == 0, (audio["b"], audio["c"])
        # With A muted, B's mix is C alone and C's is B alone: each got the other's own packets,
        # relayed unchanged (and heard the right tone above); D's mix of two was encoded.
        assert audio["b"]["mixFramesRelayed"] >= 40 and audio["c"]["mixFramesRelayed"] >= 40, (audio["b"], audio["c"])
        assert audio["d"]["mixFramesRelayed"] < audio["d"]["mixFramesSent"] / 2, audio["d"]

        # Muting C too leaves B the only talker: everyone else gets B's own packets, relayed,
        # and nobody decodes them (B's client sends its level with every packet).
        reply = chorus_server.request("PATCH", f"/v1/rooms/mix/participants/{calls['c']}", json={"audioMuted": True})
        assert reply.status_code == 200
        alone_at = time.monotonic()
        loop.run_until_complete(asyncio.sleep(1.5))
        heard = peers["d"].audio_between(alone_at + 0.3, alone_at + 1.4)
        levels = {name: tone_db(heard, TONES[name]) for name in ("b", "c")}
        assert levels["b"] > levels["c"] + 30, (levels, server_view(chorus_server, "mix", calls))
        alone = {name: participant(chorus_server, "mix", call)["audio"] for name, call in calls.items()}
        assert alone["b"]["undecodedFrames"] >= audio["b"]["undecodedFrames"] + 40, (audio["b"], alone["b"])
        assert alone["d"]["mixFramesRelayed"] >= audio["d"]["mixFramesRelayed"] + 40, (audio["d"], alone["d"])
    finally:
        for peer in peers.values():
            loop.run_until_complete(peer.close())
        loop.close()
