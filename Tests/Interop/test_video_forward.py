"""What subscribers actually see: aiortc peers publish solid-colour cameras and receive the
others' cameras in their video slots (their receive-only video m-lines). The server says who is in
which slot (`video.slots` events); the decoded pictures must agree: each slot's mid shows the
colour of the publisher the server named there. Covers slot choice (join order, never yourself),
pause and resume, pinning, and retransmission toward a subscriber behind 5 % downlink loss.

aiortc (1.16) behaviour these tests rely on or work around:
- its VP8 encoder makes a keyframe at start and on PLI/FIR only (gop 3000, ~100 s), so a slot
  switch completes quickly only if the server asks the new publisher for a keyframe;
- its jitter buffer hands nothing on past a missing packet until that packet arrives or 512
  later packets overflow it (many seconds), so a subscriber under loss keeps decoding only if
  the server retransmits what it NACKs;
- it routes an RTX packet by payload type only when a single receiver has that payload type,
  so the lossy subscriber has one slot (with two, RTX retransmissions would be dropped by aiortc;
  retransmissions in the original stream would still work).

Audio is silent throughout (amplitude 0): no one becomes a dominant speaker, so the slots are
filled in join order.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any, Callable

import pytest

from peers import EventStream, Peer, nearest_colour
from udp_proxy import LossyRelay, via_relay

COLOURS = {"a": (255, 0, 0), "b": (0, 255, 0), "c": (0, 0, 255)}
VIDEO_STATS = ("packetsReceived", "bytesReceived", "packetsForwarded", "bytesForwarded",
               "keyframeRequestsReceived", "keyframeRequestsSent", "nacksReceived", "nacksAnswered",
               "nacksSent", "retransmissions", "slotSwitches")
WAIT = 10.0  # bound of every wait: a debug server next to several aiortc peers on 2 cores is slow


class VideoRoom:
    """Peers in one room, their callIds and the room's events. Everything runs on one asyncio loop,
    and every wait here keeps that loop running: a stalled loop stops aiortc's cameras, which the
    server may rightly take for inactive publishers."""

    def __init__(self, server, room: str):
        self.server = server
        self.room = room
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.peers: dict[str, Peer] = {}
        self.colours: dict[str, tuple[int, int, int]] = {}
        self.calls: dict[str, str] = {}
        self.relays: dict[str, LossyRelay] = {}
        self.events: EventStream | None = None

    # -- joining ---------------------------------------------------------------------------------

    def join(self, name: str, rgb: tuple[int, int, int], slots: int = 2,
             downlink_loss: float | None = None) -> str:
        """Joins a silent peer publishing `rgb`; with `downlink_loss`, behind a relay that drops that
        fraction of the RTP the server sends it."""
        peer = Peer(frequency=300.0, amplitude=0, rgb=rgb, slots=slots)
        self.peers[name], self.colours[name] = peer, rgb
        offer = self.run(peer.offer())
        reply = self.server.request("POST", f"/v1/rooms/{self.room}/participants",
                                    json={"sdp": offer, "userId": f"user-{name}"})
        assert reply.status_code == 201, reply.text
        answer = reply.json()["sdp"]
        if downlink_loss is not None:
            server_port = int(answer.split(" typ host")[0].rsplit(" ", 1)[1])
            relay = LossyRelay(server_port, loss=downlink_loss, seed=5, direction="to_client")
            self.relays[name] = relay
            answer = via_relay(answer, self.run(relay.start()))
        self.run(peer.answer(answer))
        self.calls[name] = reply.json()["callId"]
        if self.events is None:  # the room exists once the first participant joined
            self.events = EventStream(self.server.url(f"/v1/rooms/{self.room}/events"), auth=self.server.auth)
        return self.calls[name]

    def wait_established(self) -> None:
        for name in self.calls:
            self.until(lambda n=name: self.participant(n).get("state") == "established",
                       f"{name} established")

    def close(self) -> None:
        for peer in self.peers.values():
            self.run(peer.close())
        for relay in self.relays.values():
            relay.close()
        if self.events is not None:
            self.events.close()
        self.loop.close()

    # -- waiting ---------------------------------------------------------------------------------

    def run(self, awaitable):
        return self.loop.run_until_complete(awaitable)

    def sleep(self, seconds: float) -> None:
        self.run(asyncio.sleep(seconds))

    def sleep_until(self, at: float) -> None:
        self.sleep(max(0.0, at - time.monotonic()))

    def until(self, predicate: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        """Polls `predicate` while aiortc runs; fails with the server's view after `timeout`."""
        async def poll():
            deadline = time.monotonic() + timeout
            while True:
                value = predicate()
                if value:
                    return value
                if time.monotonic() > deadline:
                    return None
                await asyncio.sleep(0.1)
        value = self.run(poll())
        assert value, self.explain(f"not within {timeout}s: {what}")
        return value

    def event(self, predicate: Callable[[dict], bool], what: str, timeout: float = WAIT) -> dict:
        """The first room event matching `predicate`, waiting for it (bounded) while aiortc runs."""
        assert self.events is not None

        def find():
            with self.events.cond:
                return next((e for e in self.events.events if predicate(e)), None)
        return self.until(find, what, timeout)

    # -- the server's view -----------------------------------------------------------------------

    def participant(self, name: str) -> dict:
        reply = self.server.request("GET", f"/v1/rooms/{self.room}/participants/{self.calls[name]}")
        return reply.json() if reply.status_code == 200 else {"status": reply.status_code, "body": reply.text}

    def patch(self, name: str, body: dict) -> dict:
        reply = self.server.request("PATCH", f"/v1/rooms/{self.room}/participants/{self.calls[name]}", json=body)
        assert reply.status_code == 200, self.explain(f"PATCH {name} {body}: {reply.status_code} {reply.text}")
        return reply.json()

    def video_stats(self) -> dict[str, dict]:
        return {name: self.participant(name).get("video") or {} for name in self.calls}

    def explain(self, what: str) -> str:
        """`what`, then each participant as the server sees it and what its peer decoded, the video
        events so far and the end of the server's log: the context of a failed assertion."""
        lines = [what]
        for name in self.calls:
            body = self.participant(name)
            peer = self.peers[name]
            decoded = {mid: (peer.frames_on(mid), self.last_seen(name, mid)) for mid in peer.slot_mids()}
            lines.append(f"{name} {self.calls[name]}: state {body.get('state')} videoPaused "
                         f"{body.get('videoPaused')} pinned {body.get('pinned')} video {body.get('video')} "
                         f"media {body.get('media')}; decoded per slot mid (frames, last colour) {decoded}; "
                         f"errors {peer.errors[:3]}")
        for name, relay in self.relays.items():
            lines.append(f"relay of {name}: dropped {relay.dropped}, relayed {relay.relayed}")
        if self.events is not None:
            with self.events.cond:
                video = [e for e in self.events.events if str(e.get("type", "")).startswith("video.")]
            lines.append(f"video events: {video}")
        lines.append(f"server log tail:\n{self.server.log_tail(1500)}")
        return "\n".join(lines)

    # -- what peers decoded ----------------------------------------------------------------------

    def seen(self, name: str, mid: str, start: float = float("-inf"), end: float = float("inf")) -> Counter:
        """Whose colour `name` decoded on `mid` between two monotonic times, frame by frame (None:
        none of the room's colours)."""
        rgbs = self.peers[name].colours_between(mid, start, end)
        return Counter(nearest_colour(rgb, self.colours) for rgb in rgbs)

    def last_seen(self, name: str, mid: str) -> str | None:
        rgbs = self.peers[name].colours_between(mid)
        return nearest_colour(rgbs[-1], self.colours) if rgbs else None

    def showing(self, name: str, mid: str, publisher: str, window: float = 1.0, frames: int = 10) -> bool:
        """Whether, over the last `window` seconds, `name` decoded at least `frames` frames on `mid`
        and every one of them is `publisher`'s colour."""
        now = time.monotonic()
        seen = self.seen(name, mid, now - window, now)
        return set(seen) == {publisher} and seen[publisher] >= frames

    # -- slots -----------------------------------------------------------------------------------

    def name_of(self, call_id: str | None) -> str | None:
        return next((n for n, c in self.calls.items() if c == call_id), None)

    def latest_slots(self, name: str) -> dict | None:
        """The last `video.slots` event about subscriber `name`: its current assignment."""
        assert self.events is not None
        with self.events.cond:
            found = [e for e in self.events.events
                     if e.get("type") == "video.slots" and e.get("callId") == self.calls[name]]
        return found[-1] if found else None

    def publishers(self, event: dict | None) -> list[str | None]:
        """Who is in each slot of a `video.slots` event, by peer name, in slot order."""
        if event is None:
            return []
        return [self.name_of(s.get("publisherCallId")) for s in sorted(event["slots"], key=lambda s: s["slot"])]


@pytest.fixture
def room(chorus_server):
    video_room = VideoRoom(chorus_server, "video")
    try:
        yield video_room
    finally:
        video_room.close()  # before the fixture stops the server


def join_three(room: VideoRoom) -> None:
    """A, B and C (red, green, blue) join in that order with two slots each; returns once every
    one of them decodes both its slots and the server told each who is in them.

    C joins only once A's and B's cameras are showable (each has the other in a slot): slots are
    sticky, so a camera whose first keyframe came after C's join would take C's later slot and
    the join order the tests expect would depend on that race."""
    names = list(COLOURS)
    for name in names[:2]:
        room.join(name, COLOURS[name])
    room.wait_established()
    for name, other in ((names[0], names[1]), (names[1], names[0])):
        room.event(lambda e, n=name, o=other: e.get("type") == "video.slots"
                   and e.get("callId") == room.calls[n] and o in room.publishers(e),
                   f"a video.slots event for {name} naming {other}")
    room.join(names[2], COLOURS[names[2]])
    room.wait_established()
    for name, peer in room.peers.items():
        others = {n for n in COLOURS if n != name}
        room.event(lambda e, n=name, o=others: e.get("type") == "video.slots"
                   and e.get("callId") == room.calls[n] and set(room.publishers(e)) == o,
                   f"a video.slots event for {name} naming {sorted(others)}")
        for mid in peer.slot_mids():
            room.until(lambda p=peer, m=mid: p.frames_on(m, time.monotonic() - 2.0, time.monotonic()) >= 10,
                       f"{name} decodes frames on its slot mid {mid}")


def test_each_sees_the_other_two_in_join_order_and_never_itself(room):
    join_three(room)
    order = list(COLOURS)
    for name, peer in room.peers.items():
        event = room.latest_slots(name)
        expected = [n for n in order if n != name]
        assert room.publishers(event) == expected, room.explain(f"{name}'s slots {event}, expected {expected} (join order)")
        assert event["userId"] == f"user-{name}", room.explain(f"video.slots event {event}")
        slots = sorted(event["slots"], key=lambda s: s["slot"])
        assert [s["slot"] for s in slots] == [0, 1], room.explain(f"{name}'s slot indexes in {event}")
        assert [s["mid"] for s in slots] == peer.slot_mids(), room.explain(
            f"{name}'s slot mids {[s['mid'] for s in slots]}, its receive-only video mids {peer.slot_mids()}")
        for s in slots:
            assert s.get("publisherUserId") == f"user-{room.name_of(s['publisherCallId'])}", room.explain(f"slot {s}")

    # The pictures agree with the events, and no one ever received their own camera.
    end = time.monotonic()
    for name, peer in room.peers.items():
        publishers = room.publishers(room.latest_slots(name))
        for mid, publisher in zip(peer.slot_mids(), publishers):
            seen = room.seen(name, mid, end - 2.0, end)
            assert set(seen) == {publisher} and seen[publisher] >= 10, room.explain(
                f"{name} decoded {dict(seen)} on mid {mid} in the last 2 s; the server put {publisher} there")
            ever = room.seen(name, mid)
            assert ever[name] == 0, room.explain(f"{name} received its own camera on mid {mid}: {dict(ever)}")

    # Every participant both publishes and subscribes, so every counter block is busy.
    for name, video in room.video_stats().items():
        missing = [k for k in VIDEO_STATS if not isinstance(video.get(k), int)]
        assert not missing, room.explain(f"{name}'s video statistics lack integer {missing}")
        assert video["packetsReceived"] > 0 and video["packetsForwarded"] > 0, room.explain(f"{name}: {video}")


def test_a_paused_camera_disappears_and_comes_back(room):
    join_three(room)
    body = room.patch("a", {"videoPaused": True})
    paused_at = time.monotonic()
    assert body["videoPaused"] is True, room.explain(f"PATCH answered {body}")
    paused = room.event(lambda e: e.get("type") == "video.paused" and e.get("callId") == room.calls["a"],
                        "video.paused for a")
    assert paused.get("reason") == "request", room.explain(f"video.paused event {paused}")

    # After a 2 s grace, B and C get no more of A's pictures, while still receiving each other.
    room.sleep_until(paused_at + 4.0)
    for name, other in (("b", "c"), ("c", "b")):
        seen = Counter()
        for mid in room.peers[name].slot_mids():
            seen += room.seen(name, mid, paused_at + 2.0, paused_at + 4.0)
        assert seen["a"] == 0, room.explain(f"{name} still decoded a's camera 2–4 s after the pause: {dict(seen)}")
        assert seen[other] >= 10, room.explain(f"{name} stopped decoding {other} too: {dict(seen)}")

    body = room.patch("a", {"videoPaused": False})
    resumed_at = time.monotonic()
    assert body["videoPaused"] is False, room.explain(f"PATCH answered {body}")
    room.event(lambda e: e.get("type") == "video.resumed" and e.get("callId") == room.calls["a"],
               "video.resumed for a")
    for name in ("b", "c"):
        peer = room.peers[name]
        room.until(lambda n=name, p=peer: sum(room.seen(n, m, resumed_at)["a"] for m in p.slot_mids()) >= 10,
                   f"{name} decodes a's camera again after the resume")


def test_pinning_puts_the_pinned_publisher_in_slot_zero(room):
    join_three(room)
    slot0, slot1 = room.peers["b"].slot_mids()
    before = room.latest_slots("b")
    assert room.publishers(before) == ["a", "c"], room.explain(f"b's slots before pinning {before}")
    stats_before = room.video_stats()

    body = room.patch("b", {"pinned": [room.calls["c"]]})
    assert body.get("pinned") == [room.calls["c"]], room.explain(f"PATCH answered {body}")
    event = room.event(lambda e: e.get("type") == "video.slots" and e.get("callId") == room.calls["b"]
                       and room.publishers(e)[:1] == ["c"], "a video.slots event for b with c in slot 0")
    assert room.publishers(event) == ["c", "a"], room.explain(f"b's slots after pinning c: {event}")
    assert [s["mid"] for s in sorted(event["slots"], key=lambda s: s["slot"])] == [slot0, slot1], room.explain(
        f"slot mids in {event}")

    # The switch waits for keyframes from the new publishers (aiortc sends one only when asked).
    room.until(lambda: room.showing("b", slot0, "c") and room.showing("b", slot1, "a"),
               f"b decodes only c on slot 0 (mid {slot0}) and only a on slot 1 (mid {slot1})")
    stats_after = room.video_stats()
    assert stats_after["b"]["slotSwitches"] > stats_before["b"]["slotSwitches"], room.explain(
        f"b's slotSwitches {stats_before['b'].get('slotSwitches')} -> {stats_after['b'].get('slotSwitches')}")
    requested = [sum(s.get("keyframeRequestsSent", 0) for s in stats.values()) for stats in (stats_before, stats_after)]
    assert requested[1] > requested[0], room.explain(f"keyframe requests sent in the room: {requested[0]} -> {requested[1]}")


def test_five_percent_loss_toward_a_subscriber_is_repaired(room):
    # One slot each: see the module docstring (aiortc cannot route RTX to one of several slots).
    room.join("p", (255, 0, 0), slots=1)
    room.join("d", (255, 255, 0), slots=1, downlink_loss=0.05)
    room.wait_established()
    (mid,) = room.peers["d"].slot_mids()
    room.until(lambda: room.showing("d", mid, "p", window=2.0), "d decodes p's camera")

    lossy_from = time.monotonic()
    room.sleep(6.0)
    video = room.until(lambda: (lambda v: v if v.get("nacksReceived", 0) > 0 and v.get("retransmissions", 0) > 0
                                else None)(room.participant("d").get("video") or {}),
                       "the server receives d's NACKs and retransmits")
    relay = room.relays["d"]
    assert relay.dropped > 10, room.explain(f"the relay dropped only {relay.dropped} packets toward d")

    # Without retransmissions aiortc would freeze on the first lost packet for many seconds.
    end = time.monotonic()
    recent = room.seen("d", mid, end - 2.0, end)
    assert set(recent) == {"p"} and recent["p"] > 10, room.explain(
        f"d decoded {dict(recent)} in the last 2 s under loss (video {video})")
    lossy = room.peers["d"].frames_on(mid, lossy_from, end)
    assert lossy >= 10 * (end - lossy_from), room.explain(
        f"d decoded {lossy} frames in {end - lossy_from:.1f} s under loss")
