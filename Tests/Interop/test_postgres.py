"""Chorus on PostgreSQL (`--db postgres://…`, a throwaway server from Debian's binaries): a real
aiortc participant's call and its statistics upload go through the server into PostgreSQL and
back; registrations race on one sequence; an outage answers 503 with Retry-After and heals by
itself; a bad URL is a startup error that names the problem. (The `kill -9` durability test runs
on PostgreSQL too: test_durability.py.)"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from conftest import ChorusServer
from peers import Peer
from postgres import PostgresServer


def signature(server, user: str, sequence: int) -> str:
    key, secret = server.auth
    return base64.b64encode(hashlib.sha1(f"{user}{key}{sequence}{secret}".encode()).digest()).decode()


def register(server, user: str, sequence: int = 1, timeout: float = 10) -> requests.Response:
    return requests.post(server.url(f"/v1/users/{user}/registrations"), timeout=timeout,
                         json={"applicationKey": server.auth[0], "sequence": sequence,
                               "signature": signature(server, user, sequence)})


def test_join_and_statistics_round_trip_through_postgres(chorus_pg_server):
    server = chorus_pg_server
    reply = register(server, "alice")
    assert reply.status_code == 201, reply.text
    token = reply.json()["accessToken"]
    bearer = {"Authorization": f"Bearer {token}"}
    assert server.request("POST", "/v1/rooms", json={"roomId": "pg-room"}).status_code == 201

    loop = asyncio.new_event_loop()
    peer = Peer(frequency=440, video=False)
    try:
        offer = loop.run_until_complete(peer.offer())
        reply = requests.post(server.url("/v1/rooms/pg-room/participants"), headers=bearer, timeout=10,
                              json={"sdp": offer, "displayName": "Alice"})
        assert reply.status_code == 201, reply.text
        call_id = reply.json()["callId"]
        loop.run_until_complete(peer.answer(reply.json()["sdp"]))

        async def until(state: str) -> dict:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                call = server.request("GET", f"/v1/calls/{call_id}").json()
                if call.get("state") == state:
                    return call
                await asyncio.sleep(0.1)
            raise AssertionError(f"the call record never became {state}: {call}")

        # The call record in PostgreSQL follows the media: established, then ended at hang-up.
        established = loop.run_until_complete(until("established"))
        assert established["userId"] == "alice" and established["roomId"] == "pg-room"
        left = requests.delete(server.url(f"/v1/rooms/pg-room/participants/{call_id}"), headers=bearer, timeout=10)
        assert left.status_code in (200, 204), left.text
        ended = loop.run_until_complete(until("ended"))
        assert ended["endCause"] == "hungUp"
    finally:
        loop.run_until_complete(peer.close())
        loop.close()

    # The participant uploads its statistics; a retry with the same key is the same upload.
    body = {"audio": {"jitterMs": [1, 2.5], "codec": "opus"}, "durationS": 3, "note": "é ✓"}
    headers = {**bearer, "Idempotency-Key": "pg-upload-1"}
    first = requests.post(server.url(f"/v1/calls/{call_id}/statistics"), json=body, headers=headers, timeout=10)
    assert first.status_code == 201, first.text
    again = requests.post(server.url(f"/v1/calls/{call_id}/statistics"), json=body, headers=headers, timeout=10)
    assert again.status_code in (200, 201) and again.json()["statisticsId"] == first.json()["statisticsId"]
    listed = server.request("GET", f"/v1/calls/{call_id}/statistics")
    assert listed.status_code == 200, listed.text
    items = listed.json()["statistics"]
    assert [item["statisticsId"] for item in items] == [first.json()["statisticsId"]]
    assert items[0]["data"] == body and items[0]["uploadedBy"] == "user:alice"

    # And it is really in PostgreSQL.
    postgres, database = server.postgres
    stored = postgres.psql("""SELECT count(*) FROM "callStatistics" WHERE "callId" = :'call';""",
                           database=database, variables={"call": call_id})
    assert stored.strip() == "1"


def test_fifty_parallel_registrations_with_one_sequence(chorus_pg_server):
    assert register(chorus_pg_server, "racer", 1).status_code == 201
    with ThreadPoolExecutor(max_workers=50) as pool:
        codes = list(pool.map(lambda _: register(chorus_pg_server, "racer", 2).status_code, range(50)))
    assert codes.count(201) == 1 and codes.count(409) == 49, codes


def test_outage_answers_503_with_retry_after_and_recovers(chorus_bin: str, tmp_path: Path):
    postgres = PostgresServer()  # its own server: this test stops it
    server = ChorusServer(chorus_bin, postgres.url(postgres.create_database()), tmp_path / "chorus.log")
    try:
        server.start()
        assert register(server, "bob", 1).status_code == 201
        postgres.stop_server()
        started = time.monotonic()
        for sequence in (2, 3):
            reply = register(server, "bob", sequence, timeout=20)
            assert reply.status_code == 503, reply.text
            assert reply.json()["error"]["code"] == "storageUnavailable"
            assert int(reply.headers["Retry-After"]) >= 1
        rooms = server.request("POST", "/v1/rooms", json={"roomId": "down"}, timeout=20)
        assert rooms.status_code == 503 and "Retry-After" in rooms.headers, rooms.text
        assert time.monotonic() - started < 25, "each refusal must come within the operation timeout"
        assert server.running, "the server must survive its database's outage"

        postgres.start_server()
        deadline = time.monotonic() + 30
        while (reply := register(server, "bob", 4)).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert reply.status_code == 201, reply.text
        assert server.stop() == 0
    finally:
        if server.running:
            server.kill()
        postgres.remove()


def test_bad_database_urls_are_startup_errors(tmp_path: Path):
    for url, expected in [
        ("postgres://chorus@127.0.0.1:99999/db", "port 99999"),
        ("postgres://127.0.0.1/db", "no user name"),
        ("postgres://u:secret@127.0.0.1:5432/", "must name one database"),
        ("mysql://u:secret@host/db", "unsupported database URL scheme"),
    ]:
        result = subprocess.run([os.environ.get("CHORUS_BIN", "chorus"), "serve", "--db", url, "--http-port", "0",
                                 "--media-port", "0"], capture_output=True, text=True, timeout=60)
        assert result.returncode != 0, url
        assert expected in result.stderr, (url, result.stderr)
        assert "secret" not in result.stderr and "Fatal error" not in result.stderr, result.stderr
