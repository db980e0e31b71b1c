"""10 % packet loss on one sender's path (a userspace relay; this kernel has no netem): the
listener hears no gap longer than 60 ms, and the server's FEC and concealment counters rise."""

from __future__ import annotations

import asyncio
import time

import numpy
from aiortc.codecs import opus as aiortc_opus

from peers import Peer
from test_audio_mix import tone_db
from test_join_aiortc import participant, wait_until
from udp_proxy import LossyRelay, via_relay


def _encoder_with_fec(original_init):
    """aiortc's Opus encoder (libavcodec's libopus) with in-band FEC on, as browsers send it."""
    def init(self):
        original_init(self)
        self.codec.options = {"application": "voip", "fec": "1", "packet_loss": "10"}
    return init


def longest_gap_ms(pcm: numpy.ndarray, frequency: float) -> int:
    """Longest run of 20 ms blocks in which the tone is more than 20 dB below its median."""
    blocks = [pcm[i:i + 960] for i in range(0, len(pcm) - 960, 960)]
    levels = numpy.array([tone_db(numpy.tile(b, 5), frequency, half_band=10.0) for b in blocks])
    if len(levels) == 0:
        return 10**6
    quiet = levels < numpy.median(levels) - 20
    longest = run = 0
    for q in quiet:
        run = run + 1 if q else 0
        longest = max(longest, run)
    return longest * 20


def test_ten_percent_loss_is_repaired(chorus_server, monkeypatch):
    monkeypatch.setattr(aiortc_opus.OpusEncoder, "__init__", _encoder_with_fec(aiortc_opus.OpusEncoder.__init__))
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker = Peer(frequency=440.0, video=False)
    listener = Peer(frequency=300.0, amplitude=0, video=False)
    relay = None
    try:
        offer = loop.run_until_complete(talker.offer())
        reply = chorus_server.request("POST", "/v1/rooms/lossy/participants", json={"sdp": offer, "userId": "talker"})
        assert reply.status_code == 201, reply.text
        answer = reply.json()["sdp"]
        talker_call = reply.json()["callId"]
        server_port = int(answer.split(" typ host")[0].rsplit(" ", 1)[1])
        relay = LossyRelay(server_port, loss=0.10, seed=11)
        relay_port = loop.run_until_complete(relay.start())
        loop.run_until_complete(talker.answer(via_relay(answer, relay_port)))

        offer = loop.run_until_complete(listener.offer())
        reply = chorus_server.request("POST", "/v1/rooms/lossy/participants", json={"sdp": offer, "userId": "listener"})
        assert reply.status_code == 201, reply.text
        loop.run_until_complete(listener.answer(reply.json()["sdp"]))
        for call in (talker_call, reply.json()["callId"]):
            wait_until(lambda: participant(chorus_server, "lossy", call)["state"] == "established", 5)

        loop.run_until_complete(asyncio.sleep(8.0))
        end = time.monotonic()
        heard = listener.audio_between(end - 6.0, end)
        assert len(heard) >= 96000, f"the listener received too little audio ({len(heard)} samples)"
        assert relay.dropped > 20, relay.dropped
        assert longest_gap_ms(heard, 440.0) <= 60

        assert chorus_server.request("DELETE", f"/v1/rooms/lossy/participants/{talker_call}").status_code == 204
        record = wait_until(lambda: (lambda c: c if c.get("state") == "ended" else None)(
            chorus_server.request("GET", f"/v1/calls/{talker_call}").json()), 5)
        audio = record["serverStatistics"]["audio"]
        assert audio["fecRecoveries"] > 0, audio
        assert audio["concealedFrames"] > 0, audio
        assert audio["lost"] > 0, audio
    finally:
        if relay is not None:
            relay.close()
        for peer in (talker, listener):
            loop.run_until_complete(peer.close())
        loop.close()
