"""IPv6 and several addresses (issue 15, item 5): `--public-ip` may be given more than once and
the answer carries host candidates (UDP, then ICE-TCP) for every address, the first preferred;
the default media socket is one dual-stack socket (`::`) that IPv4 clients reach too (their
addresses normalised from ::ffff:a.b.c.d, so STUN tells them their IPv4 address); and clients
on ::1 join and hear each other.

A socket bound to a wildcard answers from the address the client sent to (IP_PKTINFO /
IPV6_PKTINFO), not from the one the kernel's route would pick: on loopback a reply to a client
that checked 127.0.0.2 would otherwise come from 127.0.0.1, and aioice (like every ICE stack)
fails the check for "source address mismatch".
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aioice.ice

from conftest import ChorusServer
from peers import Peer
from test_audio_mix import tone_db
from test_hostile_system import join_peer
from test_join_aiortc import participant, wait_until


def candidates(sdp: str) -> list[tuple[str, str, int]]:
    """(transport, address, priority) of the first media section's host candidates."""
    section = sdp.split("m=")[1]
    return [(m.group(1).lower(), m.group(3), int(m.group(2))) for m in
            re.finditer(r"a=candidate:\S+ 1 (\S+) (\d+) (\S+) \d+ typ host", section)]


def served(chorus_bin: str, tmp_path: Path, *args: str) -> ChorusServer:
    server = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log", extra_args=list(args))
    server.start()
    return server


def test_every_announced_address_gets_candidates_and_ipv4_clients_use_the_dual_stack_socket(chorus_bin, tmp_path):
    server = served(chorus_bin, tmp_path, "--media-host", "::", "--public-ip", "::1", "--public-ip", "127.0.0.1")
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer = Peer(frequency=440.0, video=False)
    try:
        call_id, answer = join_peer(server, loop, peer, "dual", "v4")
        found = candidates(answer)
        assert [(t, a) for t, a, _ in found] == [("udp", "::1"), ("tcp", "::1"), ("udp", "127.0.0.1"),
                                                 ("tcp", "127.0.0.1")], found
        assert found[0][2] > found[2][2] > found[1][2] > found[3][2], "UDP before TCP, the first address first"
        wait_until(lambda: participant(server, "dual", call_id)["state"] == "established", 10)
        loop.run_until_complete(asyncio.sleep(1.0))
        assert participant(server, "dual", call_id)["media"]["packetsReceived"] > 20
    finally:
        loop.run_until_complete(peer.close())
        loop.close()
        assert server.stop() == 0, server.log_tail()


def test_clients_on_ipv6_loopback_join_and_hear_each_other(chorus_bin, tmp_path, monkeypatch):
    # peers.py keeps aiortc on 127.0.0.1; here its only address is ::1.
    monkeypatch.setattr(aioice.ice, "get_host_addresses", lambda use_ipv4, use_ipv6: ["::1"])
    server = served(chorus_bin, tmp_path, "--media-host", "::1", "--public-ip", "::1")
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker, listener = Peer(frequency=440.0, video=False), Peer(frequency=300.0, amplitude=0, video=False)
    try:
        calls = [join_peer(server, loop, peer, "six", name)[0] for name, peer in (("talker", talker), ("listener", listener))]
        for call in calls:
            wait_until(lambda c=call: participant(server, "six", c)["state"] == "established", 10)
        loop.run_until_complete(asyncio.sleep(2.5))
        last = listener.audio[-1][0]
        heard = listener.audio_between(last - 2.0, last + 0.1)
        assert len(heard) > 48000 and tone_db(heard, 440.0) > tone_db(heard, 1000.0) + 20, "no audio over IPv6"
        remote = listener.pc.getTransceivers()[0].receiver.transport.transport.getRemoteCandidates()
        assert remote and all(c.ip == "::1" for c in remote), remote
    finally:
        for peer in (talker, listener):
            loop.run_until_complete(peer.close())
        loop.close()
        assert server.stop() == 0, server.log_tail()


def test_a_wildcard_socket_answers_from_the_announced_address_not_the_routed_one(chorus_bin, tmp_path):
    server = served(chorus_bin, tmp_path, "--media-host", "::", "--public-ip", "127.0.0.2")
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker, listener = Peer(frequency=440.0, video=False), Peer(frequency=300.0, amplitude=0, video=False)
    try:
        calls = [join_peer(server, loop, peer, "alias", name)[0] for name, peer in (("talker", talker), ("listener", listener))]
        for call in calls:
            wait_until(lambda c=call: participant(server, "alias", c)["state"] == "established", 10)
        loop.run_until_complete(asyncio.sleep(2.5))
        last = listener.audio[-1][0]
        heard = listener.audio_between(last - 2.0, last + 0.1)
        assert len(heard) > 48000 and tone_db(heard, 440.0) > tone_db(heard, 1000.0) + 20, "no audio through 127.0.0.2"
        pair = listener.pc.getTransceivers()[0].receiver.transport.transport._connection._nominated
        assert pair and all(p.remote_candidate.host == "127.0.0.2" for p in pair.values()), pair
    finally:
        for peer in (talker, listener):
            loop.run_until_complete(peer.close())
        loop.close()
        assert server.stop() == 0, server.log_tail()
