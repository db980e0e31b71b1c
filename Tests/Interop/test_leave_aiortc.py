"""How calls end, seen by a real WebRTC stack (aiortc) on loopback (issue 15, item 4).

Whenever the server ends a call — the user's DELETE, the application's kick, the room's close,
SIGTERM — it says so on the event stream and then to the peer: an RTCP BYE for its streams and
a DTLS close_notify, so the peer's DTLS transport turns `closed` at once instead of when its
consent runs out ~30 s later. A peer's own close_notify ends its call `hungUp` at once, and a
BYE alone (aiortc sends one when a sender stops) ends nothing.
"""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from peers import Peer
from test_hostile_datagrams import metric
from test_hostile_system import join_peer
from test_join_aiortc import participant, register, wait_until

CLOSE_BOUND = 2.0  # seconds from the server's action to the peer's transport turning closed


class ClosingPeer(Peer):
    """An aiortc peer that notes when its DTLS transport turned `closed` (monotonic time)."""

    def __init__(self, **kwargs):
        super().__init__(video=False, **kwargs)
        self.dtls_closed_at: float | None = None

    def watch_dtls(self) -> None:
        transport = self.pc.getTransceivers()[0].receiver.transport

        @transport.on("statechange")
        def on_state():
            if transport.state == "closed" and self.dtls_closed_at is None:
                self.dtls_closed_at = time.monotonic()


def established_peer(server, loop, room: str, user: str) -> tuple[ClosingPeer, str]:
    peer = ClosingPeer(frequency=440.0)
    call_id, _ = join_peer(server, loop, peer, room, user)
    peer.watch_dtls()
    wait_until(lambda: participant(server, room, call_id)["state"] == "established", 10)
    loop.run_until_complete(asyncio.sleep(0.5))
    assert peer.dtls_closed_at is None
    return peer, call_id


def ended_call(server, call_id: str, timeout: float = 5.0) -> dict:
    return wait_until(lambda: (lambda c: c if c.get("state") == "ended" else None)(
        server.request("GET", f"/v1/calls/{call_id}").json()), timeout)


@pytest.mark.parametrize("how,cause", [("user", "hungUp"), ("kick", "kicked"), ("room", "roomClosed")])
def test_the_peer_learns_at_once_that_the_server_ended_its_call(chorus_server, how, cause):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    token = register(chorus_server, "leaver")
    peer, call_id = established_peer(chorus_server, loop, "leaving", "leaver")
    try:
        path = f"/v1/rooms/leaving/participants/{call_id}"
        asked = time.monotonic()
        if how == "user":
            reply = chorus_server.request("DELETE", path, headers={"Authorization": f"Bearer {token}"}, auth=None)
        elif how == "kick":
            reply = chorus_server.request("DELETE", path)
        else:
            reply = chorus_server.request("DELETE", "/v1/rooms/leaving")
        assert reply.status_code in (200, 204), reply.text
        wait_until(lambda: peer.dtls_closed_at is not None, CLOSE_BOUND + 1)
        took = peer.dtls_closed_at - asked
        print(f"{how}: aiortc's DTLS transport closed {took * 1000:.0f} ms after the DELETE was sent")
        assert took < CLOSE_BOUND, took
        assert ended_call(chorus_server, call_id)["endCause"] == cause
    finally:
        loop.run_until_complete(peer.close())
        loop.close()


def test_sigterm_says_goodbye_before_the_server_exits(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer, call_id = established_peer(chorus_server, loop, "draining", "stayer")
    try:
        signalled = time.monotonic()
        chorus_server.process.send_signal(signal.SIGTERM)
        wait_until(lambda: peer.dtls_closed_at is not None, CLOSE_BOUND + 1)
        assert peer.dtls_closed_at - signalled < CLOSE_BOUND
        assert chorus_server.stop() == 0
    finally:
        loop.run_until_complete(peer.close())
        loop.close()


def test_the_peers_close_notify_ends_its_call_hung_up_within_a_second(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer, call_id = established_peer(chorus_server, loop, "hanging", "hanger")
    closed = time.monotonic()
    loop.run_until_complete(peer.close())  # aiortc sends close_notify from RTCDtlsTransport.stop
    loop.close()
    deadline = closed + 1.0
    while time.monotonic() < deadline:
        reply = chorus_server.request("GET", f"/v1/rooms/hanging/participants/{call_id}")
        if reply.status_code == 404:
            break
        time.sleep(0.02)
    took = time.monotonic() - closed
    assert took < 1.0, f"the call was still there {took:.2f} s after the peer's close_notify"
    call = chorus_server.request("GET", f"/v1/calls/{call_id}").json()
    deadline = time.monotonic() + 5
    while call.get("state") != "ended" and time.monotonic() < deadline:
        time.sleep(0.05)
        call = chorus_server.request("GET", f"/v1/calls/{call_id}").json()
    assert call["endCause"] == "hungUp", call


def test_a_bye_alone_is_counted_and_ends_nothing(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer, call_id = established_peer(chorus_server, loop, "bye", "sayer")
    try:
        before = metric(chorus_server, "chorus_rtcp_goodbye_received_total")
        # Stopping the sender makes aiortc send an RTCP BYE for its SSRC; the connection stays.
        loop.run_until_complete(peer.pc.getTransceivers()[0].sender.stop())
        wait_until(lambda: metric(chorus_server, "chorus_rtcp_goodbye_received_total") > before, 5)
        loop.run_until_complete(asyncio.sleep(2.0))
        assert participant(chorus_server, "bye", call_id)["state"] == "established"
        assert peer.dtls_closed_at is None
    finally:
        loop.run_until_complete(peer.close())
        loop.close()
