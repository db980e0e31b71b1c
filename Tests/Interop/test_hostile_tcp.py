"""Hostile clients on the ICE-TCP port (issue 15, "bad input"): oversized and zero-length frames,
random bytes, a length prefix that never completes, and hundreds of connections from one
address. Each gets a closed connection or a counted drop; none grows the server's memory or
disturbs a participant already in a call, who keeps hearing the room.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import time

from conftest import ChorusServer
from peers import Peer
from test_audio_mix import tone_db
from test_hostile_datagrams import metric
from test_hostile_system import join_established, rss_kib
from test_join_aiortc import participant

FIRST_CHECK_TIMEOUT = 10.0  # MediaTCPListener.Limits.firstCheckTimeout
PER_HOST_LIMIT = 16


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return sock


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closes (EOF or reset) within `within` seconds."""
    sock.settimeout(within)
    try:
        while True:
            if sock.recv(4096) == b"":
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_hostile_tcp_clients_are_closed_and_counted_while_a_call_goes_on(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker, listener = Peer(frequency=440.0, video=False), Peer(frequency=300.0, amplitude=0, video=False)
    try:
        calls = join_established(chorus_server, loop, "tcp-attack", {"talker": talker, "listener": listener})
        answer = calls["listener"][1]
        port = int(next(line.split()[5] for line in answer.splitlines()
                        if line.startswith("a=candidate:") and " tcp " in line))
        rss_before = rss_kib(chorus_server)
        closed_before = {reason: metric(chorus_server, "chorus_media_tcp_closed_total", reason=reason)
                         for reason in ("frame_too_long", "no_check")}

        # A frame longer than the 4 KiB maximum: closed at once.
        oversized = connect(port)
        oversized.sendall(b"\xff\xff" + os.urandom(1000))
        assert closed_by_server(oversized, 2.0), "an oversized frame did not close the connection"

        # Random bytes in frames, zero-length frames, and a prefix that never completes: no STUN
        # for a known ufrag, so each is closed at the first-check timeout, and not before.
        started = time.monotonic()
        random_frames, empty_frames, stalled = connect(port), connect(port), connect(port)
        for _ in range(50):
            payload = os.urandom(200)
            random_frames.sendall(struct.pack(">H", len(payload)) + payload)
        empty_frames.sendall(b"\x00\x00" * 100)
        stalled.sendall(b"\x05\xdc" + os.urandom(10))

        # Hundreds of connections from one address: only a handful are kept.
        crowd = []
        for _ in range(300):
            try:
                crowd.append(connect(port))
            except OSError:
                break
        time.sleep(0.5)
        still_open = sum(1 for sock in crowd if not closed_by_server(sock, 0.01))
        assert still_open <= PER_HOST_LIMIT, f"{still_open} connections from one address stayed open"
        assert metric(chorus_server, "chorus_media_tcp_connections_total", result="over_limit") >= 300 - PER_HOST_LIMIT
        for sock in crowd:
            sock.close()

        # Meanwhile the call goes on: the listener hears the talker throughout.
        while time.monotonic() - started < FIRST_CHECK_TIMEOUT - 2:
            loop.run_until_complete(asyncio.sleep(0.1))
        for name, sock in (("random frames", random_frames), ("empty frames", empty_frames), ("stalled", stalled)):
            assert not closed_by_server(sock, 0.01), f"{name}: closed before the first-check timeout"
        for name, sock in (("random frames", random_frames), ("empty frames", empty_frames), ("stalled", stalled)):
            assert closed_by_server(sock, 5.0), f"{name}: not closed after the first-check timeout"
        end = time.monotonic()
        heard = listener.audio_between(end - 3.0, end)
        assert len(heard) >= 24000 and tone_db(heard, 440.0) > tone_db(heard, 1000.0) + 20, len(heard)
        assert metric(chorus_server, "chorus_media_tcp_closed_total", reason="frame_too_long") > closed_before["frame_too_long"]
        assert metric(chorus_server, "chorus_media_tcp_closed_total", reason="no_check") >= closed_before["no_check"] + 3
        assert metric(chorus_server, "chorus_media_dropped_total", reason="unroutable") >= 50
        assert rss_kib(chorus_server) - rss_before < 50 * 1024
        for call_id, _ in calls.values():
            assert participant(chorus_server, "tcp-attack", call_id)["state"] == "established"
    finally:
        for peer in (talker, listener):
            loop.run_until_complete(peer.close())
        loop.close()
