"""NAT rebinding (issue 15, item 3): an aiortc participant behind a NAT that moves it to a new
public port mid-call, with nothing from the client to say so (aiortc sends its next consent
check up to 6 s later). Its authentic SRTP from the new port makes the server check that
address; once the client answers, the mix follows it, with no gap in what it hears longer than
a second, and the call counts one path change.
"""

from __future__ import annotations

import asyncio
import time

from peers import Peer
from test_audio_mix import tone_db
from test_hostile_system import join_peer
from test_join_aiortc import participant, wait_until
from udp_proxy import RebindingNAT, via_relay

ROOM = "rebinding"


def longest_gap(arrivals: list[float]) -> float:
    return max((b - a for a, b in zip(arrivals, arrivals[1:])), default=float("inf"))


def test_the_mix_follows_a_client_whose_nat_rebinds(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker = Peer(frequency=440.0, video=False)
    mover = Peer(frequency=300.0, video=False)
    nat = None
    try:
        talker_call, _ = join_peer(chorus_server, loop, talker, ROOM, "talker")
        offer = loop.run_until_complete(mover.offer())
        reply = chorus_server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "mover"})
        assert reply.status_code == 201, reply.text
        answer, mover_call = reply.json()["sdp"], reply.json()["callId"]
        server_port = int(answer.split(" typ host")[0].rsplit(" ", 1)[1])
        nat = RebindingNAT(server_port)
        nat_port = loop.run_until_complete(nat.start())
        loop.run_until_complete(mover.answer(via_relay(answer, nat_port)))
        for call in (talker_call, mover_call):
            wait_until(lambda c=call: participant(chorus_server, ROOM, c)["state"] == "established", 10)
        loop.run_until_complete(asyncio.sleep(2.0))

        rebound_at = time.monotonic()
        loop.run_until_complete(nat.rebind())
        loop.run_until_complete(asyncio.sleep(4.0))
        end = time.monotonic()

        arrivals = [at for at, _ in mover.audio if rebound_at - 1.0 <= at <= end]
        gap = longest_gap(arrivals)
        media = participant(chorus_server, ROOM, mover_call)["media"]
        print(f"NAT rebinding: longest gap in the mover's audio {gap * 1000:.0f} ms, "
              f"path changes {media['pathChanges']}")
        assert gap < 1.0, f"the mover heard nothing for {gap:.2f} s"
        assert media["pathChanges"] == 1, media
        heard = mover.audio_between(end - 1.0, end)
        assert len(heard) > 24000 and tone_db(heard, 440.0) > tone_db(heard, 1000.0) + 20, "the mover does not hear the talker"
        assert participant(chorus_server, ROOM, mover_call)["state"] == "established"
    finally:
        if nat is not None:
            nat.close()
        for peer in (talker, mover):
            loop.run_until_complete(peer.close())
        loop.close()
