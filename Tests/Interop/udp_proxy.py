"""A userspace UDP relay that drops a seeded fraction of one direction's RTP (this kernel has no
netem). Loopback only: it listens on 127.0.0.1 and relays to a 127.0.0.1 server port."""

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
    """Client ⇄ relay ⇄ server. `loss` applies to RTP (first byte 128–191, not RTCP) from the
    client to the server; STUN, DTLS and RTCP pass untouched so the call sets up normally."""

    def __init__(self, server_port: int, loss: float, seed: int = 7):
        self.server = ("127.0.0.1", server_port)
        self.loss = loss
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

    def _from_client(self, data: bytes, addr) -> None:
        self.client_addr = addr
        is_rtp = len(data) > 1 and 128 <= data[0] <= 191 and not 192 <= data[1] <= 223
        if is_rtp and self.rng.random() < self.loss:
            self.dropped += 1
            return
        self.relayed += 1
        self.back.sendto(data)

    def _from_server(self, data: bytes, addr) -> None:
        if self.client_addr is not None:
            self.front.sendto(data, self.client_addr)

    def close(self) -> None:
        for side in (self.front, self.back):
            if side is not None:
                side.close()


def via_relay(answer_sdp: str, relay_port: int) -> str:
    """The answer with its host candidate moved to the relay's port."""
    return re.sub(r"(a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 )(\d+)( typ host)",
                  lambda m: m.group(1) + str(relay_port) + m.group(3), answer_sdp)
