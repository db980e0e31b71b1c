"""A real WebRTC stack (aiortc, from PyPI) joins a room over loopback: ICE-lite, DTLS-SRTP and
RTP/RTCP against the server's one UDP port, driven through the REST API."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import time

import pytest
import requests

from peers import EventStream, Peer


def register(server, user: str, sequence: int = 1) -> str:
    key, secret = server.auth
    signature = base64.b64encode(
        hashlib.sha1(f"{user}{key}{sequence}{secret}".encode()).digest()).decode()
    reply = requests.post(server.url(f"/v1/users/{user}/registrations"), timeout=10,
                          json={"applicationKey": key, "sequence": sequence, "signature": signature})
    assert reply.status_code == 201, reply.text
    return reply.json()["accessToken"]


def participant(server, room: str, call_id: str) -> dict:
    reply = server.request("GET", f"/v1/rooms/{room}/participants/{call_id}")
    assert reply.status_code == 200, reply.text
    return reply.json()


def wait_until(predicate, timeout: float, interval: float = 0.05):
    """Polls `predicate`, letting the current asyncio loop (aiortc's) run in between."""
    loop = asyncio.get_event_loop()

    async def poll():
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            await asyncio.sleep(interval)
        raise AssertionError(f"condition not met within {timeout}s")
    return loop.run_until_complete(poll())


def test_aiortc_joins_reaches_established_and_exchanges_srtp(chorus_server):
    token = register(chorus_server, "alice")
    assert chorus_server.request("POST", "/v1/rooms", json={"roomId": "interop"}).status_code == 201
    events = EventStream(chorus_server.url("/v1/rooms/interop/events"), auth=chorus_server.auth)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer = Peer(frequency=440, rgb=(255, 0, 0), slots=2)
    try:
        offer = loop.run_until_complete(peer.offer())
        started = time.monotonic()
        reply = requests.post(chorus_server.url("/v1/rooms/interop/participants"), timeout=10,
                              headers={"Authorization": f"Bearer {token}"},
                              json={"sdp": offer, "displayName": "Alice",
                                    "headers": {"x-ticket": "4711", "lang": "sv"}})
        assert reply.status_code == 201, reply.text
        body = reply.json()
        assert reply.headers["location"].endswith(body["callId"])
        assert body["userId"] == "alice" and body["roomId"] == "interop"
        assert "a=ice-lite" in body["sdp"]
        loop.run_until_complete(peer.answer(body["sdp"]))
        call_id = body["callId"]

        joined = events.wait_for(lambda e: e["type"] == "participant.joined" and e["callId"] == call_id)
        assert joined["userId"] == "alice"
        # The caller's custom headers: told to the room, kept in the call record.
        assert joined["headers"] == {"x-ticket": "4711", "lang": "sv"}
        assert chorus_server.request("GET", f"/v1/calls/{call_id}").json()["headers"] == {"x-ticket": "4711", "lang": "sv"}

        # ICE + DTLS complete within 2 s of the join.
        async def until_established():
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                if participant(chorus_server, "interop", call_id)["state"] == "established":
                    return True
                await asyncio.sleep(0.05)
            return False
        assert loop.run_until_complete(until_established()), participant(chorus_server, "interop", call_id)
        assert time.monotonic() - started < 2.5
        events.wait_for(lambda e: e["type"] == "participant.established" and e["callId"] == call_id)

        # The server decrypts the peer's SRTP: its counters rise while aiortc sends.
        first = participant(chorus_server, "interop", call_id)["media"]["packetsReceived"]
        loop.run_until_complete(asyncio.sleep(1.5))
        second = participant(chorus_server, "interop", call_id)["media"]
        assert second["packetsReceived"] > first + 20, second
        assert second["packetsDropped"] == 0, second

        # aiortc accepted the server's RTCP receiver reports about its streams.
        async def reports():
            deadline = time.monotonic() + 6.0
            while time.monotonic() < deadline:
                if await peer.remote_reports() > 0:
                    return True
                await asyncio.sleep(0.2)
            return False
        assert loop.run_until_complete(reports()), "aiortc saw no RTCP report from the server"

        # Leaving: DELETE by the user is a hang-up.
        gone = requests.delete(chorus_server.url(f"/v1/rooms/interop/participants/{call_id}"), timeout=10,
                               headers={"Authorization": f"Bearer {token}"})
        assert gone.status_code == 204, gone.text
        ended = events.wait_for(lambda e: e["type"] == "participant.ended" and e["callId"] == call_id)
        assert ended["endCause"] == "hungUp"
        call = wait_until(lambda: (lambda c: c if c.get("state") == "ended" else None)(
            chorus_server.request("GET", f"/v1/calls/{call_id}").json()), 5)
        assert call["endCause"] == "hungUp"
        assert call["establishedAt"] and call["endedAt"]
        assert call["serverStatistics"]["packetsReceived"] > 0
    finally:
        loop.run_until_complete(peer.close())
        loop.close()
        events.close()


def test_certificate_not_matching_the_offer_is_refused(chorus_server):
    token = register(chorus_server, "mallory")
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer = Peer(video=False)
    try:
        offer = loop.run_until_complete(peer.offer())
        # Same offer, but the fingerprints name a certificate the peer does not have.
        forged = re.sub(r"a=fingerprint:(\S+) [0-9A-F:]+",
                        lambda m: "a=fingerprint:" + m.group(1) + " " + ":".join(["AB"] * (32 if m.group(1) == "sha-256" else 48 if m.group(1) == "sha-384" else 64)),
                        offer)
        assert forged != offer
        reply = requests.post(chorus_server.url("/v1/rooms/forged/participants"), timeout=10,
                              headers={"Authorization": f"Bearer {token}"}, json={"sdp": forged})
        assert reply.status_code == 201, reply.text
        call_id = reply.json()["callId"]
        loop.run_until_complete(peer.answer(reply.json()["sdp"]))
        ended = wait_until(lambda: (lambda p: p if p["state"] == "ended" else None)(
            participant_or_call(chorus_server, "forged", call_id)), 10)
        assert ended["endCause"] == "failed"
    finally:
        loop.run_until_complete(peer.close())
        loop.close()


def participant_or_call(server, room: str, call_id: str) -> dict:
    reply = server.request("GET", f"/v1/rooms/{room}/participants/{call_id}")
    if reply.status_code == 200:
        return reply.json()
    return server.request("GET", f"/v1/calls/{call_id}").json()


def test_join_without_credentials_is_401(chorus_server):
    reply = requests.post(chorus_server.url("/v1/rooms/anon/participants"), timeout=10, json={"sdp": "v=0"})
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "missingCredentials"


def test_whip_form_join_and_leave(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer = Peer(video=False)
    try:
        offer = loop.run_until_complete(peer.offer())
        reply = requests.post(chorus_server.url("/v1/rooms/whip/participants?userId=whipper"), data=offer,
                              auth=chorus_server.auth, headers={"Content-Type": "application/sdp"}, timeout=10)
        assert reply.status_code == 201, reply.text
        assert reply.headers["content-type"].startswith("application/sdp")
        location = reply.headers["location"]
        loop.run_until_complete(peer.answer(reply.text))
        call_id = location.rsplit("/", 1)[-1]
        wait_until(lambda: participant(chorus_server, "whip", call_id)["state"] == "established", 3)
        gone = requests.delete(chorus_server.url(location), auth=chorus_server.auth, timeout=10)
        assert gone.status_code == 204
        # The call record is written asynchronously after the DELETE answers.
        call = wait_until(lambda: (lambda c: c if c.get("state") == "ended" else None)(
            chorus_server.request("GET", f"/v1/calls/{call_id}").json()), 5)
        assert call["endCause"] == "kicked"
    finally:
        loop.run_until_complete(peer.close())
        loop.close()


def test_a_refused_join_leaves_no_room_and_no_call(chorus_server):
    reply = requests.post(chorus_server.url("/v1/rooms/ghost/participants"), data="garbage",
                          auth=chorus_server.auth, headers={"Content-Type": "application/sdp"}, timeout=10)
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["code"] == "malformed"
    assert chorus_server.request("GET", "/v1/rooms/ghost").status_code == 404
    assert chorus_server.request("GET", "/v1/calls?roomId=ghost").json()["calls"] == []
