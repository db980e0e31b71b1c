"""An aiortc talker for a network namespace: joins ROOM at URL as USER with the application's
credentials, prints its callId, and sends a tone until killed (or SECONDS pass).

Usage: python netns_aiortc_peer.py URL KEY SECRET ROOM USER SECONDS LOCAL_IP

LOCAL_IP is the namespace's address, its one host candidate (peers.py keeps aiortc on loopback).
"""

from __future__ import annotations

import asyncio
import sys

import aioice.ice
import requests

from peers import Peer


async def main(url: str, key: str, secret: str, room: str, user: str, seconds: float) -> None:
    peer = Peer(frequency=440.0, video=False)
    offer = await peer.offer()
    reply = requests.post(f"{url}/v1/rooms/{room}/participants", json={"sdp": offer, "userId": user},
                          auth=(key, secret), timeout=10)
    reply.raise_for_status()
    body = reply.json()
    await peer.answer(body["sdp"])
    print(body["callId"], flush=True)
    await asyncio.sleep(seconds)
    await peer.close()


if __name__ == "__main__":
    url, key, secret, room, user, seconds, local_ip = sys.argv[1:8]
    aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: [local_ip]
    asyncio.run(main(url, key, secret, room, user, float(seconds)))
