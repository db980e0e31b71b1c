"""Durable signed webhooks (issue 19): a real receiver (webhook_receiver.py) verifies every
delivery with the `standardwebhooks` package.

- A scripted room (create, two joins, a kick, a leave, close): every event arrives exactly once
  per webhook-id, in order for the room, with a valid signature, and the deliveries list says so.
- The receiver down for 30 s: nothing is lost; every event arrives once it is back.
- `kill -9` of the server while deliveries are in flight (the receiver holds them): after a
  restart every event still arrives (at least once).
- Bad endpoints and receivers: URLs that are not http(s), too long, or private (without
  --webhooks-allow-private) are 400s; a 410 disables the endpoint; a redirect is not followed;
  a receiver that never answers is given up on after 10 s and retried; a huge response body is
  not read to its end.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import ChorusServer, started
from peers import ThreadedPeer
from webhook_receiver import WebhookReceiver

ROOM_EVENTS = ["room.started", "participant.joined", "participant.joined", "participant.left", "call.ended",
               "participant.left", "call.ended", "room.ended"]


@pytest.fixture
def webhook_server(chorus_bin: str, tmp_path: Path):
    # Its own database and log: a test that also takes `chorus_server` (same tmp_path) would
    # otherwise run two servers on one outbox, and the other's dispatcher, without
    # --webhooks-allow-private, could claim this one's deliveries and refuse the loopback receiver.
    yield from started(ChorusServer(chorus_bin, tmp_path / "webhooks.sqlite", tmp_path / "webhooks.log",
                                    extra_args=["--webhooks-allow-private"]))


@pytest.fixture
def receiver():
    receiver = WebhookReceiver()
    yield receiver
    receiver.close()


def subscribe(server, receiver: WebhookReceiver, events: list[str] | None = None) -> dict:
    body = {"url": receiver.url} | ({"events": events} if events else {})
    reply = server.request("POST", "/v1/webhooks", json=body)
    assert reply.status_code == 201, reply.text
    endpoint = reply.json()
    assert endpoint["secret"].startswith("whsec_")
    receiver.secret = endpoint["secret"]
    return endpoint


def script_room(server, room: str) -> dict[str, str]:
    """Create, two joins, kick bob, alice leaves, close. Returns the call IDs by user."""
    assert server.request("POST", "/v1/rooms", json={"roomId": room}).status_code == 201
    calls = {}
    peers = [ThreadedPeer(video=False) for _ in range(2)]
    try:
        for user, peer in zip(["alice", "bob"], peers):
            offer = peer.run(peer.peer.offer())
            reply = server.request("POST", f"/v1/rooms/{room}/participants", json={"sdp": offer, "userId": user})
            assert reply.status_code == 201, reply.text
            calls[user] = reply.json()["callId"]
        for user in ["bob", "alice"]:
            gone = server.request("DELETE", f"/v1/rooms/{room}/participants/{calls[user]}")
            assert gone.status_code == 204, gone.text
        time.sleep(0.5)  # the call records are written by the recorder, in order
        assert server.request("DELETE", f"/v1/rooms/{room}").status_code in (200, 204)
    finally:
        for peer in peers:
            peer.close()
    return calls


def room_types(deliveries, room: str) -> list[str]:
    return [d.type for d in deliveries if (d.body.get("data") or {}).get("roomId") == room]


def test_a_scripted_room_is_delivered_once_in_order_and_signed(webhook_server, receiver):
    endpoint = subscribe(webhook_server, receiver)
    calls = script_room(webhook_server, "hooked")
    got = receiver.wait_for(lambda d: len(room_types(d, "hooked")) >= len(ROOM_EVENTS), timeout=20)
    time.sleep(1.0)  # anything extra would arrive now
    got = receiver.received()
    assert room_types(got, "hooked") == ROOM_EVENTS, [(d.type, d.body["data"].get("callId")) for d in got]
    assert all(d.valid for d in got), "a signature did not verify"
    assert len({d.webhook_id for d in got}) == len(got), "a webhook-id arrived twice"
    by_type = [(d.type, d.body["data"].get("callId"), d.body["data"].get("endCause")) for d in got]
    assert ("participant.left", calls["bob"], "kicked") in by_type
    ended = next(d for d in got if d.type == "call.ended" and d.body["data"]["callId"] == calls["bob"])
    assert ended.body["data"]["state"] == "ended" and ended.body["data"]["userId"] == "bob"
    # The endpoint's deliveries: all delivered, first time.
    listing = webhook_server.request("GET", f"/v1/webhooks/{endpoint['endpointId']}/deliveries").json()
    states = {(d["state"], d["attempts"], d["lastStatus"]) for d in listing["deliveries"]}
    assert states == {("delivered", 1, 204)}, listing
    # An event filter: only the room's lifecycle.
    receiver2 = WebhookReceiver()
    try:
        subscribe(webhook_server, receiver2, events=["room.started", "room.ended"])
        script_room(webhook_server, "filtered")
        got2 = receiver2.wait_for(lambda d: len(d) >= 2, timeout=20)
        time.sleep(1.0)
        assert [d.type for d in receiver2.received()] == ["room.started", "room.ended"]
        assert all(d.valid for d in got2)
    finally:
        receiver2.close()


def test_a_receiver_down_for_30_s_still_gets_every_event(webhook_server, receiver):
    subscribe(webhook_server, receiver)
    receiver.stop()
    script_room(webhook_server, "outage")
    time.sleep(30)
    assert receiver.received() == []
    receiver.start()
    got = receiver.wait_for(lambda d: len(room_types(d, "outage")) >= len(ROOM_EVENTS), timeout=90)
    assert room_types(got, "outage") == ROOM_EVENTS
    assert all(d.valid for d in got)


def test_kill_9_mid_delivery_loses_no_event(chorus_bin, tmp_path, receiver):
    server = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                          extra_args=["--webhooks-allow-private"])
    server.start()
    try:
        subscribe(server, receiver)
        receiver.mode = "hang"  # deliveries in flight when the server dies
        script_room(server, "killed")
        deadline = time.monotonic() + 10
        while receiver.requests == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert receiver.requests > 0
        server.kill()
        receiver.mode = "ok"
        receiver.release.set()
        server.start()
        # Claims of the dead node lapse after 30 s; then every event goes out.
        got = receiver.wait_for(lambda d: len(room_types(d, "killed")) >= len(ROOM_EVENTS), timeout=90)
        assert room_types(got, "killed") == ROOM_EVENTS
        assert all(d.valid for d in got)
    finally:
        if server.running:
            assert server.stop() == 0


def test_bad_endpoints_and_receivers(chorus_server, webhook_server, receiver):
    # Without --webhooks-allow-private, a loopback endpoint is refused.
    private = chorus_server.request("POST", "/v1/webhooks", json={"url": receiver.url})
    assert private.status_code == 400 and private.json()["error"]["code"] == "webhookUrlNotAllowed", private.text
    for url in ["ftp://example.com/x", "http://", "http://example.com/" + "a" * 2100, "not a url"]:
        reply = webhook_server.request("POST", "/v1/webhooks", json={"url": url})
        assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalidWebhookUrl", (url, reply.text)
    unknown = webhook_server.request("POST", "/v1/webhooks", json={"url": receiver.url, "events": ["room.exploded"]})
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknownEventType"

    # A redirect is a failed attempt, not followed.
    endpoint = subscribe(webhook_server, receiver, events=["room.started"])
    path = f"/v1/webhooks/{endpoint['endpointId']}/deliveries"

    def latest(predicate, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        delivery: dict = {}
        while time.monotonic() < deadline:
            deliveries = webhook_server.request("GET", path).json()["deliveries"]
            delivery = deliveries[-1] if deliveries else {}
            if delivery and predicate(delivery):
                break
            time.sleep(0.2)
        return delivery

    receiver.mode = "redirect"
    assert webhook_server.request("POST", "/v1/rooms", json={"roomId": "redirected"}).status_code == 201
    delivery = latest(lambda d: d.get("lastStatus"), timeout=10)
    assert delivery["state"] == "pending" and delivery["lastStatus"] == 302, delivery
    assert "redirect" in delivery["lastError"] and receiver.redirected_hits == 0

    # A huge body: delivered (2xx) at the retry, the body not read to its end.
    receiver.mode = "huge"
    delivery = latest(lambda d: d["state"] == "delivered", timeout=15)
    assert delivery["state"] == "delivered" and delivery["lastStatus"] == 200, delivery

    # A receiver that never answers: given up after 10 s, retried later.
    receiver.mode = "hang"
    assert webhook_server.request("POST", "/v1/rooms", json={"roomId": "hung"}).status_code == 201
    delivery = latest(lambda d: d.get("lastError"), timeout=20)
    assert "no answer within 10 s" in delivery["lastError"] and delivery["state"] == "pending", delivery
    receiver.release.set()

    # 410 Gone disables the endpoint and fails what it still had pending.
    receiver.mode = "gone"
    deadline = time.monotonic() + 60
    state = {}
    while time.monotonic() < deadline:
        state = webhook_server.request("GET", f"/v1/webhooks/{endpoint['endpointId']}").json()
        if not state["enabled"]:
            break
        time.sleep(0.5)
    assert state["enabled"] is False and "410" in state["disabledReason"], state
    assert latest(lambda d: True, 1)["state"] == "failed"
    assert webhook_server.request("DELETE", f"/v1/webhooks/{endpoint['endpointId']}").status_code == 204
    assert webhook_server.request("GET", f"/v1/webhooks/{endpoint['endpointId']}").status_code == 404
