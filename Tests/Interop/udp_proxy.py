"""A userspace UDP relay that drops a seeded fraction of one direction's RTP (this kernel has no
netem): the client's uplink toward the server or the server's downlink toward the client.
Loopback only: it listens on 127.0.0.1 and relays to a 127.0.0.1 server port."""

from __future__ import annotations

import asyncio
import random
import re


class _Side(asyncio.DatagramProtocol):
    def __init__(self, on_datagram):
        self.on_datagram = on_datagram
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.on_datagram(data, addr)


class LossyRelay:
    """Client ⇄ relay ⇄ server. `loss` applies to RTP (first byte 128–191, not RTCP) in one
    direction: `"to_server"` (the default: what the client sends, e.g. a lossy uplink) or
    `"to_client"` (what the server sends the client, e.g. a subscriber's lossy downlink). STUN,
    DTLS and RTCP pass untouched either way so the call sets up normally and feedback (NACK, PLI)
    gets through. `dropped`/`relayed` count the RTP of the lossy direction only."""

    DIRECTIONS = ("to_server", "to_client")

    def __init__(self, server_port: int, loss: float, seed: int = 7, direction: str = "to_server"):
        assert direction in self.DIRECTIONS, f"direction must be one of {self.DIRECTIONS}"
        self.server = ("127.0.0.1", server_port)
        self.loss = loss
        self.direction = direction
        self.rng = random.Random(seed)
        self.client_addr = None
        self.dropped = 0
        self.relayed = 0
        self.front: asyncio.DatagramTransport | None = None
        self.back: asyncio.DatagramTransport | None = None

    async def start(self) -> int:
        loop = asyncio.get_event_loop()
        self.front, _ = await loop.create_datagram_endpoint(
            lambda: _Side(self._from_client), local_addr=("127.0.0.1", 0))
        self.back, _ = await loop.create_datagram_endpoint(
            lambda: _Side(self._from_server), remote_addr=self.server)
        return self.front.get_extra_info("sockname")[1]

    def _passes(self, data: bytes, direction: str) -> bool:
        """False when this datagram is RTP of the lossy direction and the dice say drop."""
        if direction != self.direction:
            return True
        # RTP/SRTP: version 2 (first byte 128–191); RTCP shares that byte but has a payload type
        # of 192–223 in the second (RFC 5761), STUN starts with 0–3 and DTLS with 20–63.
        if not (len(data) > 1 and 128 <= data[0] <= 191 and not 192 <= data[1] <= 223):
            return True
        if self.rng.random() < self.loss:
            self.dropped += 1
            return False
        self.relayed += 1
        return True

    def _from_client(self, data: bytes, addr) -> None:
        self.client_addr = addr
        if self._passes(data, "to_server"):
            self.back.sendto(data)

    def _from_server(self, data: bytes, addr) -> None:
        # The server (ICE-lite) only answers, so the client has always spoken first.
        if self.client_addr is not None and self._passes(data, "to_client"):
            self.front.sendto(data, self.client_addr)

    def close(self) -> None:
        for side in (self.front, self.back):
            if side is not None:
                side.close()


def via_relay(answer_sdp: str, relay_port: int) -> str:
    """The answer with its host candidate moved to the relay's port."""
    return re.sub(r"(a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 )(\d+)( typ host)",
                  lambda m: m.group(1) + str(relay_port) + m.group(3), answer_sdp)


class RebindingNAT(LossyRelay):
    """A NAT in front of the client that can give it a new public port at any moment (NAT
    rebinding): `rebind()` replaces the socket that talks to the server, so everything the
    client sends comes from a new port from then on, and the old one is closed. Nothing is
    dropped otherwise."""

    def __init__(self, server_port: int):
        super().__init__(server_port, loss=0.0)
        self.rebinds = 0

    async def rebind(self) -> int:
        old = self.back
        loop = asyncio.get_event_loop()
        self.back, _ = await loop.create_datagram_endpoint(
            lambda: _Side(self._from_server), remote_addr=self.server)
        old.close()
        self.rebinds += 1
        return self.back.get_extra_info("sockname")[1]
