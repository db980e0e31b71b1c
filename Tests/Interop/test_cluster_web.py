"""The web client in a cluster (issue 17): a Chromium page served by one node joins a room that
another node runs (the page follows the 307 to that node's origin and repeats the request with its
token), hears the room there, and when that node is killed rejoins by itself (backoff 1-8 s) on a
surviving node and hears the room again."""

from __future__ import annotations

import time

import pytest

from chromium import wait_for
from cluster import Cluster, ClusterClient
from peers import ThreadedPeer

ROOM = "web-cluster"
CLIENT_READY = "document.readyState === 'complete' && typeof window.chorus === 'object'"


@pytest.fixture
def cluster(chorus_bin, postgres, tmp_path):
    started = Cluster(chorus_bin, postgres, tmp_path, extra_args=["--demo"])
    try:
        started.start()
        yield started
    finally:
        started.stop()


def received(cluster: Cluster, node: int, call_id: str) -> int:
    reply = cluster.nodes[node].request("GET", f"/v1/rooms/{ROOM}/participants/{call_id}", allow_redirects=False)
    return reply.json()["media"]["packetsReceived"] if reply.status_code == 200 else -1


def test_the_web_client_follows_the_room_to_its_node_and_rejoins_when_that_node_dies(cluster, chromium):
    client = ClusterClient(cluster)
    assert cluster.nodes[0].request("POST", "/v1/rooms", json={"roomId": ROOM}).status_code == 201
    owner = client.owner(ROOM)
    page_node = (owner + 1) % 3
    # Someone in the room already, joined at its node, so the room outlives the page's call.
    talker = ThreadedPeer(frequency=440, video=False)
    try:
        offer = talker.run(talker.peer.offer())
        reply, _ = client.request(owner, "POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "talker"})
        assert reply.status_code == 201, reply.text
        talker.run(talker.peer.answer(reply.json()["sdp"]))

        page = chromium.open(cluster.nodes[page_node].url(f"/?room={ROOM}&user=walker"), ready=CLIENT_READY)
        state = lambda: {**page.chorus(), "console": page.console[-8:]}
        page.evaluate("document.getElementById('join').click()")
        wait_for("the page established on the room's node", lambda: page.chorus()["state"] == "established",
                 timeout=30, detail=state)
        first = page.chorus()
        assert first["node"] == cluster.nodes[owner].base_url, first
        # Its media reaches the owner, where its participant lives.
        before = received(cluster, owner, first["callId"])
        wait_for("the page's media at the owner", lambda: received(cluster, owner, first["callId"]) > before + 20,
                 detail=state)

        killed = time.monotonic()
        cluster.nodes[owner].kill()
        talker.close()
        talker = None
        wait_for("the page rejoined by itself", lambda: page.chorus()["rejoins"] >= 1
                 and page.chorus()["state"] == "established", timeout=45, detail=state)
        rejoined = page.chorus()
        took = time.monotonic() - killed
        survivor = cluster.node_at(rejoined["node"] or cluster.nodes[page_node].base_url)
        assert survivor != owner and rejoined["callId"] != first["callId"], rejoined
        before = received(cluster, survivor, rejoined["callId"])
        wait_for("the rejoined page's media at its new node",
                 lambda: received(cluster, survivor, rejoined["callId"]) > before + 20, detail=state)
        print(f"rejoined {took:.1f} s after the kill, on n{survivor}")
        # The lost call is recorded as such by the surviving nodes.
        wait_for("the first call ended nodeLost", lambda: cluster.nodes[page_node].request(
            "GET", f"/v1/calls/{first['callId']}").json().get("endCause") == "nodeLost", timeout=20)
    finally:
        if talker is not None:
            talker.close()
