"""Hostile clients against a whole `chorus serve` process, on loopback only (issue 14, item 6).

Every case checks three things: the attack gets a clear 4xx whose JSON body names the problem
(never a 5xx for a client's mistake), or a closed connection where HTTP framing leaves no other
answer, or a drop counted in /metrics; the server is still alive and answering afterwards; and
nothing it acknowledged is lost. Resource use is read from /proc/<pid> (VmRSS, open descriptors).

1. JSON bombs (100,000 nesting levels) and 20 MB bodies on the POST endpoints: 400/413, RSS flat.
2. A 1 MB header and 10,000 headers (431), and 50 slowloris sockets dribbling a header byte a
   second: normal requests stay fast, and the server closes the slowloris sockets at its idle
   timeout (3 s here, `--http-idle-timeout`).
3. Path traversal against the web client's static files: 400/404, never a file's content.
4. Forged access tokens (`alg: none`, tampered signature or claims, expired): 401 with a JSON
   body; another application's user or credentials on a room: refused as if the room did not
   exist (404, so nothing leaks), a user outside the room: 403.
5. 50 parallel registrations of one user with one sequence: one 201, 49 409 `sequenceReplayed`.
6. `kill -9` during registrations: after a restart on the same file every acknowledged sequence
   is still refused as a replay (the high-water mark survived).
7. A flood of random, truncated and unknown-ufrag STUN datagrams from 200 source ports while an
   aiortc listener keeps hearing a talker: audio keeps arriving, the drops are counted.
8. SDP bombs (10 MB, 10,000 m-lines, 100,000 attribute lines, very long lines): 413/422, fast.
9. 300 idle SSE streams: the server stays responsive and bounded, and their descriptors are
   released as soon as the clients close.
10. SIGTERM with participants in a room: exit 0 within the bound, calls recorded as ended with
    cause serverShutdown.
11. Malformed HTTP framing over raw sockets: 4xx or a closed connection, never a 5xx or a hang.

Every loop is bounded in count and time; the file runs in well under a minute.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import random
import re
import select
import socket
import sqlite3
import struct
import subprocess
import threading
import time
import uuid
from contextlib import closing
from pathlib import Path

import pytest
import requests

from conftest import REPO_ROOT, ChorusServer
from peers import Peer
from test_hostile_datagrams import metric, stun_with_username
from test_audio_mix import tone_db
from test_join_aiortc import participant, wait_until

RSS_BOUND_KIB = 100 * 1024  # memory growth allowed across an attack
FAST = 2.0  # seconds within which a refusal or a normal request must answer
SDP_FIXTURE = REPO_ROOT / "Tests" / "Fixtures" / "sdp" / "aiortc-audio-only.sdp"


# -- process and answer helpers -------------------------------------------------------------------

def rss_kib(server: ChorusServer) -> int:
    with open(f"/proc/{server.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def open_sockets(server: ChorusServer) -> int:
    """The server's open socket descriptors (files such as the database's readers left out)."""
    fd_dir = f"/proc/{server.process.pid}/fd"
    count = 0
    for name in os.listdir(fd_dir):
        try:
            count += os.readlink(f"{fd_dir}/{name}").startswith("socket:")
        except OSError:
            pass  # closed meanwhile
    return count


def assert_api_error(reply: requests.Response, statuses: tuple[int, ...], codes: tuple[str, ...] = ()) -> str:
    """The reply is one of `statuses` with the API's JSON error body; returns its code."""
    context = (reply.request.method, reply.request.url[:120], reply.status_code, reply.text[:300])
    assert reply.status_code in statuses, context
    assert reply.headers.get("content-type", "").startswith("application/json"), context
    error = reply.json()["error"]
    assert error["code"] and error["message"], context
    assert not codes or error["code"] in codes, context
    return error["code"]


def assert_serving(server: ChorusServer) -> None:
    """Alive and answering both an anonymous and an authenticated request quickly."""
    assert server.running, f"the server died; log:\n{server.log_tail()}"
    for path, auth in (("/healthz", None), ("/v1/rooms", server.auth)):
        started = time.monotonic()
        reply = requests.get(server.url(path), auth=auth, timeout=FAST + 3)
        assert reply.status_code == 200, reply.text
        assert time.monotonic() - started < FAST, f"{path} took {time.monotonic() - started:.2f}s"


def assert_no_server_errors(server: ChorusServer) -> None:
    """No 5xx was counted and no request failed inside the server."""
    assert metric(server, "chorus_http_errors_total", code="internal") == 0
    assert "unhandled error" not in server.log_tail(200_000), server.log_tail()


def registration_signature(user: str, key: str, sequence: int, secret: str) -> str:
    return base64.b64encode(hashlib.sha1(f"{user}{key}{sequence}{secret}".encode()).digest()).decode()


def register(server: ChorusServer, user: str, sequence: int, key: str | None = None,
             secret: str | None = None, session=requests) -> requests.Response:
    key, secret = key or server.auth[0], secret or server.auth[1]
    body = {"applicationKey": key, "sequence": sequence,
            "signature": registration_signature(user, key, sequence, secret)}
    return session.post(server.url(f"/v1/users/{user}/registrations"), json=body, timeout=10)


# -- raw HTTP over sockets -------------------------------------------------------------------------

def raw_exchange(server: ChorusServer, data: bytes, half_close: bool = False,
                 timeout: float = 5.0) -> tuple[bytes, str, float]:
    """Sends `data` as is; returns (what came back, how it ended, seconds).

    The end is "eof" (the server closed), "reset", or "timeout" (still open after `timeout`).
    """
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.banner.port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before reading everything: read the answer
        received, end = b"", "eof"
        while time.monotonic() - started < timeout:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                end = "timeout"
                break
            except ConnectionResetError:
                end = "reset"
                break
            if not chunk:
                break
            received += chunk
        else:
            end = "timeout"
    return received, end, time.monotonic() - started


def raw_status(received: bytes) -> int | None:
    match = re.match(rb"HTTP/1\.1 (\d{3}) ", received)
    return int(match.group(1)) if match else None


def raw_error_code(received: bytes) -> str | None:
    """The `error.code` of the first response in `received`, when it has a JSON body."""
    head, _, rest = received.partition(b"\r\n\r\n")
    length = re.search(rb"(?i)content-length: *(\d+)", head)
    if not length or b"application/json" not in head.lower():
        return None
    return json.loads(rest[:int(length.group(1))])["error"]["code"]


# -- 1. JSON bombs and oversized bodies -----------------------------------------------------------

JSON_BOMBS = {
    "100k nested arrays": b"[" * 100_000 + b"]" * 100_000,
    "100k nested objects": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "30k nested arrays (under the 64 KiB limits)": b"[" * 30_000 + b"]" * 30_000,
    "20 MB string": b'{"x":"' + b"a" * (20 << 20) + b'"}',
}


def test_json_bombs_and_oversized_bodies_are_refused_without_growing(chorus_server, insert_call):
    assert chorus_server.stop() == 0
    call_id = insert_call(chorus_server, room_id="bombs", user_id="bomber")
    chorus_server.start()
    endpoints = ["/v1/rooms", "/v1/rooms/bombs/participants", "/v1/users/bomber/registrations",
                 f"/v1/calls/{call_id}/statistics"]
    before = rss_kib(chorus_server)
    for path in endpoints:
        for name, body in JSON_BOMBS.items():
            started = time.monotonic()
            reply = chorus_server.request("POST", path, data=body, headers={"Content-Type": "application/json"})
            code = assert_api_error(reply, (400, 413), ("invalidJson", "payloadTooLarge"))
            assert time.monotonic() - started < FAST, (path, name, code)
    grown = rss_kib(chorus_server) - before
    print(f"JSON bombs: RSS {before} KiB -> {before + grown} KiB")
    assert grown < RSS_BOUND_KIB, f"RSS grew by {grown} KiB"
    assert chorus_server.request("GET", f"/v1/calls/{call_id}/statistics").json() == {"statistics": []}
    assert_serving(chorus_server)
    assert_no_server_errors(chorus_server)


# -- 2. oversized headers and slowloris -----------------------------------------------------------

IDLE_TIMEOUT = 3  # seconds: the slowloris server's --http-idle-timeout
SLOWLORIS_SOCKETS = 50


@pytest.fixture
def idle_server(chorus_bin: str, tmp_path: Path):
    """A server that closes connections idle for IDLE_TIMEOUT s; stopped (exit 0) after the test."""
    server = ChorusServer(chorus_bin, tmp_path / "idle.sqlite", tmp_path / "idle.log",
                          extra_args=["--http-idle-timeout", str(IDLE_TIMEOUT)])
    server.start()
    yield server
    if server.running:
        assert server.stop() == 0, server.log_tail()


def test_oversized_headers_get_431(chorus_server):
    cases = {
        "one 1 MB header": b"X-Big: " + b"a" * (1 << 20) + b"\r\n",
        "10,000 headers": b"".join(b"X-H%d: v\r\n" % i for i in range(10_000)),
    }
    for name, headers in cases.items():
        request = b"GET /healthz HTTP/1.1\r\nHost: chorus\r\n" + headers + b"\r\n"
        received, end, seconds = raw_exchange(chorus_server, request)
        assert raw_status(received) == 431 and raw_error_code(received) == "headersTooLarge", (name, received[:300])
        assert end != "timeout" and seconds < FAST, (name, end, seconds)
    assert metric(chorus_server, "chorus_http_errors_total", code="headersTooLarge") == len(cases)
    assert_serving(chorus_server)


def connect_slowloris(server: ChorusServer) -> list[socket.socket]:
    sockets = []
    for _ in range(SLOWLORIS_SOCKETS):
        sock = socket.create_connection(("127.0.0.1", server.banner.port), timeout=2)
        sock.setblocking(False)
        sockets.append(sock)
    return sockets


def closed_by_server(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(4096) == b""
    except (ConnectionResetError, BlockingIOError):
        return True


def dribble(sock: socket.socket, byte: bytes) -> bool:
    """Sends one more header byte; False once the server has closed the socket."""
    if closed_by_server(sock):
        return False
    try:
        sock.send(byte)
    except OSError:
        return False
    return True


def test_slowloris_sockets_do_not_slow_others_and_are_closed(idle_server):
    baseline = open_sockets(idle_server)
    sockets = connect_slowloris(idle_server)
    prefix = b"GET /healthz HTTP/1.1\r\nHost: chorus\r\nX-Slow: " + b"s" * 100
    still_open, latencies, peak_sockets = set(sockets), [], 0
    started = time.monotonic()
    for second in range(IDLE_TIMEOUT + 5):  # a header byte a second each, bounded
        still_open = {sock for sock in still_open if dribble(sock, prefix[second:second + 1])}
        peak_sockets = max(peak_sockets, open_sockets(idle_server))
        for _ in range(4):  # normal requests meanwhile
            t = time.monotonic()
            assert requests.get(idle_server.url("/healthz"), timeout=FAST + 3).status_code == 200
            latencies.append(time.monotonic() - t)
            time.sleep(0.2)
        if not still_open:
            break
    closed_after = time.monotonic() - started
    for sock in sockets:
        sock.close()
    print(f"slowloris: {SLOWLORIS_SOCKETS} sockets, server sockets {baseline} -> peak {peak_sockets}, all closed by "
          f"the server after {closed_after:.1f}s, normal request latency max {max(latencies) * 1000:.0f} ms")
    assert peak_sockets >= baseline + SLOWLORIS_SOCKETS - 5, (baseline, peak_sockets)  # they really were held
    assert max(latencies) < 1.0, f"normal requests took up to {max(latencies):.2f}s beside the slowloris sockets"
    assert not still_open, f"{len(still_open)} slowloris sockets still open after {closed_after:.1f}s"
    assert closed_after < IDLE_TIMEOUT + 3, closed_after
    assert open_sockets(idle_server) <= baseline + 2
    assert_serving(idle_server)


MAX_CONNECTIONS = 20


def test_connections_past_the_limit_get_503_and_cost_no_descriptor(chorus_bin: str, tmp_path: Path):
    """A connection flood cannot take every descriptor (running out kills the process: Dispatch
    aborts when it cannot open /proc/<tid>/stat): past --http-max-connections a new connection
    is answered 503 tooManyConnections at once and closed; the held ones keep working, and once
    they close the server serves again."""
    server = ChorusServer(chorus_bin, tmp_path / "limit.sqlite", tmp_path / "limit.log",
                          extra_args=["--http-max-connections", str(MAX_CONNECTIONS)])
    server.start()
    try:
        baseline = open_sockets(server)
        held = [socket.create_connection(("127.0.0.1", server.banner.port), timeout=2) for _ in range(MAX_CONNECTIONS)]
        refused = 0
        for _ in range(200):
            received, end, seconds = raw_exchange(server, b"")
            assert raw_status(received) == 503 and raw_error_code(received) == "tooManyConnections", received[:300]
            assert seconds < FAST, seconds
            refused += 1
        peak = open_sockets(server)
        assert peak <= baseline + MAX_CONNECTIONS + 2, (baseline, peak)
        # A held connection still gets answers.
        held[0].sendall(b"GET /healthz HTTP/1.1\r\nHost: chorus\r\n\r\n")
        held[0].settimeout(5)
        assert held[0].recv(4096).startswith(b"HTTP/1.1 200"), "a held connection was not served"
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 10
        while requests.get(server.url("/healthz"), timeout=FAST + 3).status_code != 200:
            assert time.monotonic() < deadline, "the server did not serve new connections again"
            time.sleep(0.1)
        assert metric(server, "chorus_http_errors_total", code="tooManyConnections") >= refused
    finally:
        if server.running:
            assert server.stop() == 0, server.log_tail()


# -- 3. path traversal on the static files --------------------------------------------------------

TRAVERSALS = [
    "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/app.js/../../Package.swift",
    "/..%2f..%2f..%2fetc%2fpasswd", "/%2e%2e%2f%2e%2e%2fPackage.swift", "/%252e%252e/%252e%252e/etc/passwd",
    "/style.css/..%2f..%2f..%2f..%2fetc/passwd", "//etc/passwd", "/.%2e/.%2e/Package.swift",
    "/Chorus_ControlAPI.resources/web/../../../../Package.swift", "/web/app.js", "/app.js%00.html",
    "/..\\..\\etc\\passwd", "/Resources/web/../../ControlAPI.swift",
]
SECRETS = (b"root:x:0:0", b"swift-tools-version", b"import PackageDescription", b"public final class ControlAPI")


def test_path_traversal_never_reads_a_file(chorus_server):
    for path in TRAVERSALS:
        request = f"GET {path} HTTP/1.1\r\nHost: chorus\r\nConnection: close\r\n\r\n".encode()
        received, end, seconds = raw_exchange(chorus_server, request)
        assert raw_status(received) in (400, 404), (path, received[:300])
        assert raw_error_code(received) in ("notFound", "malformedRequest"), (path, received[:300])
        assert not any(secret in received for secret in SECRETS), path
        assert seconds < FAST, (path, seconds)
    assert requests.get(chorus_server.url("/app.js"), timeout=5).status_code == 200  # the real files still work
    assert_serving(chorus_server)
    assert_no_server_errors(chorus_server)


# -- 4. forged access tokens ----------------------------------------------------------------------

def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make_token(header: dict, claims: dict, key: bytes | None) -> str:
    """A compact JWS; HS256 with `key`, or an empty signature when `key` is None."""
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    signature = b"" if key is None else hmac.new(key, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def token_key(server: ChorusServer) -> bytes:
    """The server's token signing key, read from its database (what an attacker must not have)."""
    with closing(sqlite3.connect(server.db_path)) as conn:
        return bytes(conn.execute("SELECT value FROM serverSecret WHERE name = 'accessTokenKey'").fetchone()[0])


def create_application(server: ChorusServer, name: str) -> tuple[str, str]:
    created = subprocess.run([server.binary, "apps", "create", "--name", name, "--db", str(server.db_path)],
                             capture_output=True, text=True, timeout=30)
    assert created.returncode == 0, created.stderr
    return (re.search(r"key:\s+(\S+)", created.stdout).group(1), re.search(r"secret:\s+(\S+)", created.stdout).group(1))


def forged_tokens(valid: str, key: bytes, other_app: str) -> dict[str, str]:
    header_text, claims_text, signature = valid.split(".")
    claims = json.loads(b64url_decode(claims_text))
    now = int(time.time())
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    return {
        "alg none": make_token({"alg": "none", "typ": "JWT"}, claims, None),
        "alg none, real signature": b64url(b'{"alg":"none","typ":"JWT"}') + "." + claims_text + "." + signature,
        "alg HS512": make_token({"alg": "HS512", "typ": "JWT"}, claims, key),
        "tampered signature": f"{header_text}.{claims_text}.{flipped}",
        "no signature": f"{header_text}.{claims_text}.",
        "tampered subject": f"{header_text}.{b64url(json.dumps({**claims, 'sub': 'mallory'}).encode())}.{signature}",
        "tampered application": f"{header_text}.{b64url(json.dumps({**claims, 'app': other_app}).encode())}.{signature}",
        "tampered expiry": f"{header_text}.{b64url(json.dumps({**claims, 'exp': now + 10**9}).encode())}.{signature}",
        "expired": make_token({"alg": "HS256", "typ": "JWT"}, {**claims, "iat": now - 7200, "exp": now - 60}, key),
        "garbage": "not.a.token",
        "8 KB": "a" * 8192,
    }


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_forged_tokens_are_refused(chorus_server):
    app_b = create_application(chorus_server, "application-b")
    alice = register(chorus_server, "alice", 1).json()["accessToken"]
    key = token_key(chorus_server)

    def list_calls(token: str) -> requests.Response:
        return requests.get(chorus_server.url("/v1/calls"), headers=bearer(token), timeout=10)

    # The forging method is right: a token signed with the server's own key is accepted.
    _, claims_text, _ = alice.split(".")
    resigned = make_token({"alg": "HS256", "typ": "JWT"}, json.loads(b64url_decode(claims_text)), key)
    assert list_calls(alice).status_code == 200 and list_calls(resigned).status_code == 200
    for name, token in forged_tokens(alice, key, app_b[0]).items():
        code = assert_api_error(list_calls(token), (401,), ("invalidToken", "tokenExpired"))
        assert (code == "tokenExpired") == (name == "expired"), (name, code)
    assert_serving(chorus_server)
    assert_no_server_errors(chorus_server)


def test_another_applications_credentials_do_not_reach_a_room(chorus_server):
    app_b = create_application(chorus_server, "application-b")
    assert chorus_server.request("POST", "/v1/rooms", json={"roomId": "a-room"}).status_code == 201
    alice = register(chorus_server, "alice", 1).json()["accessToken"]  # a user of application A
    bob = register(chorus_server, "bob", 1, *app_b).json()["accessToken"]  # a user of application B

    # B's user on A's room is refused exactly as for a room that does not exist: nothing leaks.
    for path in ("/v1/rooms/a-room/events", f"/v1/rooms/a-room/participants/{uuid.uuid4()}"):
        refused = requests.get(chorus_server.url(path), headers=bearer(bob), timeout=10)
        missing = requests.get(chorus_server.url(path.replace("a-room", "no-room")), headers=bearer(bob), timeout=10)
        assert_api_error(refused, (403, 404), ("roomNotFound", "forbidden"))
        assert refused.json()["error"] == missing.json()["error"]
    # Application B itself, A's own user outside the room, and a user on an application's route.
    assert_api_error(requests.get(chorus_server.url("/v1/rooms/a-room"), auth=app_b, timeout=10),
                     (404,), ("roomNotFound",))
    assert_api_error(requests.get(chorus_server.url("/v1/rooms/a-room/events"), headers=bearer(alice), timeout=10),
                     (403,), ("forbidden",))
    assert_api_error(requests.post(chorus_server.url("/v1/rooms"), json={}, headers=bearer(alice), timeout=10),
                     (403,), ("applicationAuthRequired",))
    assert_serving(chorus_server)
    assert_no_server_errors(chorus_server)


# -- 5. parallel registrations with one sequence --------------------------------------------------

def test_parallel_registrations_with_one_sequence_accept_exactly_one(chorus_server):
    parallel = 50
    barrier = threading.Barrier(parallel, timeout=20)
    replies: list[requests.Response] = []
    lock = threading.Lock()

    def attempt():
        barrier.wait()
        reply = register(chorus_server, "racer", 7)
        with lock:
            replies.append(reply)

    threads = [threading.Thread(target=attempt) for _ in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    statuses = sorted(reply.status_code for reply in replies)
    assert len(replies) == parallel and statuses.count(201) == 1, statuses
    for reply in replies:
        if reply.status_code != 201:
            assert_api_error(reply, (409,), ("sequenceReplayed",))
    assert_api_error(register(chorus_server, "racer", 7), (409,), ("sequenceReplayed",))
    assert register(chorus_server, "racer", 8).status_code == 201
    assert_serving(chorus_server)
    assert_no_server_errors(chorus_server)


# -- 6. kill -9 right after acknowledged registrations --------------------------------------------

class Registrar(threading.Thread):
    """Registers one user with increasing sequences until stopped; records the acknowledged ones."""

    def __init__(self, server: ChorusServer, user: str):
        super().__init__(daemon=True)
        self.server, self.user = server, user
        self.acked: list[int] = []
        self.refused: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        session = requests.Session()
        deadline = time.monotonic() + 30
        sequence = 0
        while not self.stop.is_set() and time.monotonic() < deadline:
            sequence += 1
            try:
                reply = register(self.server, self.user, sequence, session=session)
            except requests.RequestException:
                break  # killed: whatever was in flight was not acknowledged
            if reply.status_code == 201:
                self.acked.append(sequence)
            else:
                self.refused.append(f"{reply.status_code} {reply.text[:120]}")


def test_acknowledged_registration_sequences_survive_kill_9(chorus_server):
    registrars = [Registrar(chorus_server, f"durable-{i}") for i in range(4)]
    for registrar in registrars:
        registrar.start()
    deadline = time.monotonic() + 10
    while min(len(r.acked) for r in registrars) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    chorus_server.kill()  # mid-loop: each registrar has a request in flight or about to be
    for registrar in registrars:
        registrar.stop.set()
        registrar.join(timeout=15)
        assert not registrar.is_alive() and not registrar.refused, registrar.refused[:3]
        assert len(registrar.acked) >= 5, (registrar.user, registrar.acked)

    chorus_server.start()
    for registrar in registrars:
        highest = registrar.acked[-1]
        for sequence in (highest, highest - 1, 1):
            reply = register(chorus_server, registrar.user, sequence)
            assert_api_error(reply, (409,), ("sequenceReplayed",))
            stored = int(re.search(r"\((\d+)\)", reply.json()["error"]["message"]).group(1))
            # The mark is the last acknowledged sequence, or the one in flight at the kill.
            assert stored in (highest, highest + 1), (registrar.user, highest, stored)
        assert register(chorus_server, registrar.user, highest + 2).status_code == 201
    assert_serving(chorus_server)


# -- 7. a datagram flood while a listener hears the mix --------------------------------------------

FLOOD_SOCKETS = 200
FLOOD_DATAGRAMS = 4000
FLOOD_SECONDS = 2.0


def flood_datagram(rng: random.Random, i: int, ufrag: bytes) -> bytes:
    kind = i % 6
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 1200))  # random
    if kind == 1:  # a Binding request for an unknown ufrag
        return stun_with_username(rng.randbytes(4).hex().encode() + b":" + rng.randbytes(4).hex().encode(), rng)
    if kind == 2:  # a Binding request naming the listener's ufrag, cut anywhere
        whole = stun_with_username(ufrag + b":" + rng.randbytes(4).hex().encode(), rng)
        return whole[:rng.randrange(0, len(whole))]
    if kind == 3:  # an RTP header cut short, or RTP-looking garbage
        return bytes([0x80, rng.randrange(96, 128)]) + rng.randbytes(rng.randrange(0, 200))
    if kind == 4:  # DTLS-looking garbage
        return bytes([22, 0xFE, 0xFD]) + rng.randbytes(rng.randrange(0, 300))
    return struct.pack("!HHI", 0x0001, rng.randrange(0, 2000), 0x2112A442) + rng.randbytes(rng.randrange(0, 40))


def flood(port: int, ufrag: bytes, sent: list[int]) -> None:
    """FLOOD_DATAGRAMS datagrams from FLOOD_SOCKETS source ports, spread over FLOOD_SECONDS."""
    rng = random.Random(7)
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(FLOOD_SOCKETS)]
    bursts = 40
    try:
        for burst in range(bursts):
            for i in range(FLOOD_DATAGRAMS // bursts):
                rng.choice(sockets).sendto(flood_datagram(rng, burst * 1000 + i, ufrag), ("127.0.0.1", port))
                sent[0] += 1
            time.sleep(FLOOD_SECONDS / bursts)
    finally:
        for sock in sockets:
            sock.close()


def join_peer(server: ChorusServer, loop, peer: Peer, room: str, user: str) -> tuple[str, str]:
    """Joins `peer`; returns (callId, the server's answer)."""
    offer = loop.run_until_complete(peer.offer())
    reply = server.request("POST", f"/v1/rooms/{room}/participants", json={"sdp": offer, "userId": user})
    assert reply.status_code == 201, reply.text
    loop.run_until_complete(peer.answer(reply.json()["sdp"]))
    return reply.json()["callId"], reply.json()["sdp"]


def join_established(server: ChorusServer, loop, room: str, peers: dict[str, Peer]) -> dict[str, tuple[str, str]]:
    """Joins each of `peers` to `room` as the user it is keyed by (join_peer), then waits until
    every one is established (10 s each); (callId, the server's answer) by name."""
    calls = {name: join_peer(server, loop, peer, room, name) for name, peer in peers.items()}
    for call_id, _ in calls.values():
        wait_until(lambda c=call_id: participant(server, room, c)["state"] == "established", 10)
    return calls


def audio_frames_between(peer: Peer, start: float, end: float) -> int:
    return sum(1 for at, _ in peer.audio if start <= at < end)


def test_datagram_flood_is_dropped_and_counted_while_the_mix_goes_on(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker, listener = Peer(frequency=440.0, video=False), Peer(frequency=300.0, amplitude=0, video=False)
    try:
        calls = join_established(chorus_server, loop, "flood", {"talker": talker, "listener": listener})
        wait_until(lambda: audio_frames_between(listener, time.monotonic() - 0.5, time.monotonic()) > 10, 10)
        answer = calls["listener"][1]
        port = int(re.search(r"a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 (\d+) typ host", answer).group(1))
        ufrag = re.search(r"a=ice-ufrag:(\S+)", answer).group(1).encode()
        dropped_before = metric(chorus_server, "chorus_media_dropped_total")

        sent = [0]
        attacker = threading.Thread(target=flood, args=(port, ufrag, sent), daemon=True)
        started = time.monotonic()
        attacker.start()
        while attacker.is_alive() and time.monotonic() - started < FLOOD_SECONDS + 10:
            loop.run_until_complete(asyncio.sleep(0.1))
        loop.run_until_complete(asyncio.sleep(1.0))
        ended = time.monotonic()

        # Audio kept arriving through the flood: every half second had some, and most of it came.
        windows = [audio_frames_between(listener, t, t + 0.5) for t in window_starts(started, ended - 0.5, 0.5)]
        assert windows and min(windows) >= 5, f"audio frames per 0.5 s during the flood: {windows}"
        assert sum(windows) >= 0.5 * 50 * 0.5 * len(windows), windows
        # And what arrived is the mix: the talker's 440 Hz stands well above a tone nobody sends.
        heard = listener.audio_between(started, ended)
        assert tone_db(heard, 440.0) > tone_db(heard, 1000.0) + 20, (tone_db(heard, 440.0), tone_db(heard, 1000.0))
        dropped = metric(chorus_server, "chorus_media_dropped_total") - dropped_before
        print(f"flood: sent {sent[0]}, dropped +{dropped:.0f}, listener audio frames per 0.5 s {windows}")
        assert sent[0] == FLOOD_DATAGRAMS and dropped >= 0.5 * sent[0], (sent[0], dropped)
        for call_id, _ in calls.values():
            assert participant(chorus_server, "flood", call_id)["state"] == "established"
        assert_serving(chorus_server)
    finally:
        for peer in (talker, listener):
            loop.run_until_complete(peer.close())
        loop.close()


def window_starts(start: float, stop: float, step: float) -> list[float]:
    return [start + i * step for i in range(max(0, int((stop - start) / step) + 1))]


# -- 8. SDP bombs ----------------------------------------------------------------------------------

def sdp_bombs() -> dict[str, tuple[str, tuple[int, ...], tuple[str, ...]]]:
    """name -> (offer, statuses, codes). A real aiortc offer, swollen or bent."""
    base = SDP_FIXTURE.read_text().replace("\r\n", "\n").replace("\n", "\r\n")
    many_mids = [f"v{i}" for i in range(1200)]
    within_limit = base.replace("a=group:BUNDLE 0", "a=group:BUNDLE 0 " + " ".join(many_mids)) + "".join(
        f"m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:{mid}\r\n" for mid in many_mids)
    too_large = ((413,), ("payloadTooLarge",))
    return {
        "10 MB": (base + "a=x-pad:" + "p" * (10 << 20) + "\r\n", *too_large),
        "10,000 m-lines": (base + "".join(f"m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:v{i}\r\n" for i in range(10_000)),
                           *too_large),
        "100,000 attribute lines": (base + "a=rtcp-mux\r\n" * 100_000, *too_large),
        "a 300 KB line": (base + "a=x-long:" + "l" * 300_000 + "\r\n", *too_large),
        "a 60 KB ice-ufrag": (base.replace("a=ice-ufrag:p2t6", "a=ice-ufrag:" + "u" * 60_000), (422,),
                              ("invalidIceCredentials",)),
        "a 60 KB fingerprint": (base.replace("a=setup:actpass", "a=fingerprint:sha-256 " + "AB:" * 20_000
                                             + "AB\r\na=setup:actpass"), (422,), ("malformed",)),
        "1,200 m-lines within 256 KiB": (within_limit, (422,), ("multipleVideoSenders", "tooManyVideoSlots")),
    }


def test_sdp_bombs_are_refused_fast(chorus_server):
    for name, (offer, statuses, codes) in sdp_bombs().items():
        for form in ("json", "whip"):
            started = time.monotonic()
            if form == "json":
                reply = chorus_server.request("POST", "/v1/rooms/sdp-bombs/participants",
                                              json={"sdp": offer, "userId": "bomber"})
            else:
                reply = chorus_server.request("POST", "/v1/rooms/sdp-bombs/participants?userId=bomber",
                                              data=offer.encode(), headers={"Content-Type": "application/sdp"})
            assert_api_error(reply, statuses, codes)
            assert time.monotonic() - started < FAST, (name, form, time.monotonic() - started)
    # Nothing was left behind: no call, no room created by a refused join.
    assert chorus_server.request("GET", "/v1/calls").json()["calls"] == []
    assert chorus_server.request("GET", "/v1/rooms/sdp-bombs").status_code == 404
    assert_serving(chorus_server)
    assert_no_server_errors(chorus_server)


def test_a_listener_asking_for_every_video_slot_is_not_refused_as_a_bomb(chorus_server):
    """The offer limit is set by legitimate offers: Chrome's receive-only video section is ~5 KB,
    so a listener asking for a room's 25 slots sends ~130 KB, twice what a 64 KiB bound allows."""
    text = (REPO_ROOT / "Tests" / "Fixtures" / "sdp" / "chrome-listener.sdp").read_text()
    text = text.replace("\r\n", "\n")
    last = text.rindex("m=video")
    section, mid = text[last:], re.search(r"a=mid:(\S+)", text[last:]).group(1)
    bundle = re.search(r"a=group:BUNDLE .*", text).group(0)
    extra = [str(int(mid) + i) for i in range(1, 22)]
    text = text.replace(bundle, bundle + " " + " ".join(extra)) + "".join(
        section.replace(f"a=mid:{mid}\n", f"a=mid:{m}\n") for m in extra)
    offer = text.replace("\n", "\r\n")
    assert offer.count("m=video") == 25 and len(offer.encode()) > 96 * 1024, (offer.count("m=video"), len(offer))
    assert chorus_server.request("POST", "/v1/rooms", json={"roomId": "wall", "videoSlots": 25}).status_code == 201
    for form, reply in (
            ("whip", chorus_server.request("POST", "/v1/rooms/wall/participants?userId=wall-whip",
                                           data=offer.encode(), headers={"Content-Type": "application/sdp"})),
            ("json", chorus_server.request("POST", "/v1/rooms/wall/participants",
                                           json={"sdp": offer, "userId": "wall-json"}))):
        assert reply.status_code == 201, (form, reply.status_code, reply.text[:300])
        answer = reply.text if form == "whip" else reply.json()["sdp"]
        assert answer.count("m=video") == 25, (form, answer.count("m=video"))


# -- 9. many idle event streams -------------------------------------------------------------------

SSE_STREAMS = 300


def open_event_stream(server: ChorusServer, room: str) -> socket.socket:
    credentials = base64.b64encode(f"{server.auth[0]}:{server.auth[1]}".encode()).decode()
    sock = socket.create_connection(("127.0.0.1", server.banner.port), timeout=10)
    sock.sendall(f"GET /v1/rooms/{room}/events HTTP/1.1\r\nHost: chorus\r\n"
                 f"Authorization: Basic {credentials}\r\n\r\n".encode())
    return sock


def test_idle_event_streams_stay_bounded_and_are_released_on_close(chorus_server):
    assert chorus_server.request("POST", "/v1/rooms", json={"roomId": "watched"}).status_code == 201
    sockets_before, rss_before = open_sockets(chorus_server), rss_kib(chorus_server)
    streams = [open_event_stream(chorus_server, "watched") for _ in range(SSE_STREAMS)]
    try:
        for sock in streams:
            head = sock.recv(4096)
            assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head, head[:200]
        held = open_sockets(chorus_server) - sockets_before
        assert held >= SSE_STREAMS - 5, held  # each stream holds its connection
        assert_serving(chorus_server)
        grown = rss_kib(chorus_server) - rss_before
        print(f"SSE: {SSE_STREAMS} streams held {held} sockets, RSS +{grown} KiB")
        assert grown < RSS_BOUND_KIB, f"RSS grew by {grown} KiB for {SSE_STREAMS} streams"
    finally:
        for sock in streams:
            sock.close()
    # Released as soon as the clients close, not at the next keep-alive comment (15 s).
    deadline = time.monotonic() + 5
    while open_sockets(chorus_server) > sockets_before + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert open_sockets(chorus_server) <= sockets_before + 2, (sockets_before, open_sockets(chorus_server))
    print(f"SSE: sockets back to {open_sockets(chorus_server)} (from {sockets_before}) "
          f"{time.monotonic() - (deadline - 5):.2f}s after the clients closed")
    assert_serving(chorus_server)


# -- 10. SIGTERM with rooms running ---------------------------------------------------------------

SHUTDOWN_BOUND = 5.0  # seconds: --drain-seconds is 0, so closing rooms and flushing records is all


def test_sigterm_with_participants_exits_cleanly_and_records_the_calls(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peers = [Peer(frequency=f, video=False) for f in (440.0, 660.0)]
    try:
        calls = [join_peer(chorus_server, loop, peer, "shutdown", f"user-{i}")[0] for i, peer in enumerate(peers)]
        for call_id in calls:
            wait_until(lambda c=call_id: participant(chorus_server, "shutdown", c)["state"] == "established", 10)
        started = time.monotonic()
        code = chorus_server.stop()
        elapsed = time.monotonic() - started
        assert code == 0, chorus_server.log_tail()
        assert elapsed < SHUTDOWN_BOUND, f"SIGTERM took {elapsed:.2f}s"
        print(f"SIGTERM: exit {code} after {elapsed:.2f}s")
    finally:
        for peer in peers:
            loop.run_until_complete(peer.close())
        loop.close()
    chorus_server.start()
    recorded = {c["callId"]: c for c in chorus_server.request("GET", "/v1/calls?roomId=shutdown").json()["calls"]}
    assert set(recorded) == set(calls), recorded
    for call in recorded.values():
        assert call["state"] == "ended" and call["endCause"] == "serverShutdown", call
        assert call["establishedAt"] and call["endedAt"], call
    assert_serving(chorus_server)


# -- 11. malformed HTTP framing -------------------------------------------------------------------

def framing_cases(server: ChorusServer) -> dict[str, tuple[bytes, bool]]:
    """name -> (bytes, half-close after sending). Sent to endpoints that read their body."""
    credentials = base64.b64encode(f"{server.auth[0]}:{server.auth[1]}".encode()).decode()
    registration = b"POST /v1/users/framed/registrations HTTP/1.1\r\nHost: chorus\r\nContent-Type: application/json\r\n"
    rooms = (b"POST /v1/rooms HTTP/1.1\r\nHost: chorus\r\nContent-Type: application/json\r\n"
             b"Authorization: Basic " + credentials.encode() + b"\r\n")
    cases = {}
    for target, head in (("registration", registration), ("rooms", rooms)):
        cases.update({
            f"{target}: chunk size not hex": (head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", False),
            f"{target}: chunk size overflow": (head + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
                                               False),
            f"{target}: Content-Length with chunked": (head + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                       b"2\r\n{}\r\n0\r\n\r\n", False),
            f"{target}: body shorter than Content-Length": (head + b'Content-Length: 100\r\n\r\n{"a":', True),
            f"{target}: two different Content-Lengths": (head + b"Content-Length: 2\r\nContent-Length: 5\r\n\r\n{}", False),
        })
    return cases


def test_malformed_framing_gets_4xx_or_a_close_never_5xx(chorus_server):
    for name, (data, half_close) in framing_cases(chorus_server).items():
        received, end, seconds = raw_exchange(chorus_server, data, half_close=half_close)
        status = raw_status(received)
        assert end != "timeout" and seconds < FAST, (name, end, seconds, received[:200])
        assert status is None or 400 <= status < 500, (name, received[:300])
        if status is not None:
            assert raw_error_code(received), (name, received[:300])  # a JSON body naming the problem
    # A body cut short by a full close: no answer can arrive; the server must just carry on.
    with socket.create_connection(("127.0.0.1", chorus_server.banner.port), timeout=5) as sock:
        sock.sendall(b"POST /v1/users/framed/registrations HTTP/1.1\r\nHost: chorus\r\n"
                     b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":')
    assert_serving(chorus_server)
    assert_no_server_errors(chorus_server)
    assert register(chorus_server, "framed", 1).status_code == 201  # no half-read request was applied
