"""RTP out (issue 19, item 4): the room's full mix sent as RTP to a UDP socket of the test,
plain and SRTP (unprotected with pylibsrtp, aiortc's own libsrtp binding), decoded with PyAV's
Opus decoder: it carries the three talkers' tones. A loopback destination is refused unless the
server allows private addresses (`--webhooks-allow-private`)."""

from __future__ import annotations

import base64
import os
import socket
import time
from pathlib import Path

import av
import numpy
import pylibsrtp
import pytest

from conftest import ChorusServer, started
from test_audio_mix import tone_db
from test_recording import TONES, talkers


@pytest.fixture
def forwarding_server(chorus_bin: str, tmp_path: Path):
    # Its own database: the test also takes `chorus_server` (same tmp_path), and two live
    # servers on one database under one node ID are refused (the second does not start).
    yield from started(ChorusServer(chorus_bin, tmp_path / "forwarding.sqlite", tmp_path / "forwarding.log",
                                    extra_args=["--webhooks-allow-private"]))


def receive(sock: socket.socket, seconds: float, srtp: pylibsrtp.Session | None) -> list[tuple[int, int, bytes]]:
    """(sequence, timestamp, payload) of every RTP packet that arrives in `seconds`."""
    packets = []
    deadline = time.monotonic() + seconds
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            data = sock.recv(2048)
        except socket.timeout:
            continue
        if srtp is not None:
            data = srtp.unprotect(data)
        assert data[0] >> 6 == 2 and data[1] & 0x7F == 111
        count = data[0] & 0x0F
        packets.append((int.from_bytes(data[2:4], "big"), int.from_bytes(data[4:8], "big"), data[12 + 4 * count:]))
    return packets


def decode(payloads: list[bytes]) -> numpy.ndarray:
    codec = av.CodecContext.create("opus", "r")
    codec.sample_rate = 48000
    out = []
    for payload in payloads:
        for frame in codec.decode(av.Packet(payload)):
            out.append(frame.to_ndarray().astype(numpy.float64)[0])  # levels are compared, not scaled
    return numpy.concatenate(out) if out else numpy.zeros(0)


def test_the_mix_forwarded_as_rtp_and_srtp_carries_the_tones(forwarding_server, chorus_server):
    assert chorus_server.request("POST", "/v1/rooms", json={"roomId": "x"}).status_code == 201
    refused = chorus_server.request("POST", "/v1/rooms/x/forwarders", json={"host": "127.0.0.1", "port": 9})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "forwarderNotAllowed", refused.text
    peers, _ = talkers(forwarding_server, "fwd")
    plain, secure = socket.socket(socket.AF_INET, socket.SOCK_DGRAM), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        plain.bind(("127.0.0.1", 0))
        secure.bind(("127.0.0.1", 0))
        key = os.urandom(30)
        created = []
        for sock, srtp in [(plain, None), (secure, {"profile": "AES_CM_128_HMAC_SHA1_80", "key": base64.b64encode(key).decode()})]:
            body = {"host": "127.0.0.1", "port": sock.getsockname()[1]} | ({"srtp": srtp} if srtp else {})
            reply = forwarding_server.request("POST", "/v1/rooms/fwd/forwarders", json=body)
            assert reply.status_code == 201, reply.text
            created.append(reply.json())
        policy = pylibsrtp.Policy(key=key, ssrc_type=pylibsrtp.Policy.SSRC_ANY_INBOUND,
                                  srtp_profile=pylibsrtp.Policy.SRTP_PROFILE_AES128_CM_SHA1_80)
        got_plain = receive(plain, 4, None)
        got_secure = receive(secure, 1, pylibsrtp.Session(policy))
        listed = forwarding_server.request("GET", "/v1/rooms/fwd/forwarders").json()["forwarders"]
        assert {f["forwarderId"] for f in listed} == {c["forwarderId"] for c in created}
        assert all(f["packetsSent"] > 0 for f in listed)
        for forwarder in created:
            assert forwarding_server.request("DELETE", f"/v1/rooms/fwd/forwarders/{forwarder['forwarderId']}").status_code == 204
    finally:
        for peer in peers:
            peer.close()
        plain.close()
        secure.close()
    assert len(got_plain) >= 150, len(got_plain)  # 50 a second while the room talks
    steps = {(b[0] - a[0]) % 65536 for a, b in zip(got_plain, got_plain[1:])}
    assert steps == {1}, steps
    assert all((b[1] - a[1]) % 2**32 == 960 for a, b in zip(got_plain, got_plain[1:]))
    pcm = decode([p for _, _, p in got_plain])
    floor = tone_db(pcm[48000:], 1500, half_band=5)
    assert all(tone_db(pcm[48000:], f, half_band=5) > floor + 30 for f in TONES), [tone_db(pcm[48000:], f, 5) for f in TONES]
    assert len(got_secure) >= 30
    secure_pcm = decode([p for _, _, p in got_secure])
    assert tone_db(secure_pcm, TONES[1], half_band=5) > tone_db(secure_pcm, 1500, half_band=5) + 30
