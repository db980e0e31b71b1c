"""Malformed and hostile datagrams on the media port never crash the server: they are dropped
and counted, and an established participant keeps its call."""

from __future__ import annotations

import asyncio
import random
import re
import socket
import struct

import requests

from peers import Peer
from test_join_aiortc import participant, wait_until


def metric(server, name: str, **labels: str) -> float:
    text = requests.get(server.url("/metrics"), timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def stun_with_username(username: bytes, rng: random.Random) -> bytes:
    """A Binding request naming the participant's ufrag, with garbage after USERNAME."""
    attr = struct.pack("!HH", 0x0006, len(username)) + username + b"\0" * (-len(username) % 4)
    junk = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))
    body = attr + junk
    return struct.pack("!HHI", 0x0001, len(body), 0x2112A442) + rng.randbytes(12) + body


def test_garbage_is_dropped_and_counted_while_a_call_goes_on(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer = Peer(video=False)
    try:
        offer = loop.run_until_complete(peer.offer())
        reply = chorus_server.request("POST", "/v1/rooms/hostile/participants",
                                      json={"sdp": offer, "userId": "victim"})
        assert reply.status_code == 201, reply.text
        answer = reply.json()["sdp"]
        call_id = reply.json()["callId"]
        loop.run_until_complete(peer.answer(answer))
        wait_until(lambda: participant(chorus_server, "hostile", call_id)["state"] == "established", 5)

        port = int(re.search(r"a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 (\d+) typ host", answer).group(1))
        ufrag = re.search(r"a=ice-ufrag:(\S+)", answer).group(1).encode()
        before = metric(chorus_server, "chorus_media_dropped_total")
        rng = random.Random(1234)
        attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sent = 0
        for i in range(3000):
            kind = i % 6
            if kind == 0:
                datagram = rng.randbytes(rng.randrange(0, 1500))
            elif kind == 1:
                datagram = stun_with_username(ufrag + b":" + rng.randbytes(4).hex().encode(), rng)
            elif kind == 2:
                datagram = bytes([rng.randrange(20, 64)]) + rng.randbytes(rng.randrange(0, 300))  # DTLS-ish
            elif kind == 3:
                datagram = bytes([0x80 | rng.randrange(64), rng.randrange(256)]) + rng.randbytes(rng.randrange(0, 200))
            elif kind == 4:
                datagram = bytes([0x80, rng.randrange(192, 224)]) + rng.randbytes(rng.randrange(0, 100))  # RTCP-ish
            else:
                datagram = stun_with_username(ufrag + b":" + b"x" * rng.randrange(0, 600), rng)
            attacker.sendto(datagram, ("127.0.0.1", port))
            sent += 1
        attacker.close()
        loop.run_until_complete(asyncio.sleep(1.0))

        # Still serving, the call untouched, the garbage counted.
        assert requests.get(chorus_server.url("/healthz"), timeout=5).status_code == 200
        state = participant(chorus_server, "hostile", call_id)
        assert state["state"] == "established"
        first = state["media"]["packetsReceived"]
        loop.run_until_complete(asyncio.sleep(1.0))
        assert participant(chorus_server, "hostile", call_id)["media"]["packetsReceived"] > first
        after = metric(chorus_server, "chorus_media_dropped_total")
        assert after - before >= sent * 0.5, (before, after, sent)
        assert metric(chorus_server, "chorus_media_datagrams_total", direction="in") >= sent
        assert metric(chorus_server, "chorus_dtls_handshakes_total", result="ok") >= 1
        assert metric(chorus_server, "chorus_participants", state="established") == 1
    finally:
        loop.run_until_complete(peer.close())
        loop.close()
