"""Contract tests: the running server against its own OpenAPI document.

1. The server serves the document (GET /v1/openapi.yaml), and it lists every endpoint.
2. Schemathesis (its CLI, run as a subprocess) generates requests for every operation of the
   served document - valid and invalid ones, through its examples, coverage, fuzzing and stateful
   (OpenAPI links) phases - and checks each response: no 5xx, only documented status codes, the
   documented content type, and a body that matches the documented schema (for the room event
   stream: each event it reads, and the JSON of each event's data).
3. Requests schemathesis cannot make on its own (valid registration signatures, user tokens,
   signed application requests, idempotent retries, oversized bodies, unknown paths and methods,
   participants in several states, an event stream followed to its end) are made by hand here and
   their responses checked against the document the same way.

One operation is left out of the schemathesis run: `POST /v1/nodes/{nodeId}/drain`, which with
the node's own ID (from `GET /v1/nodes`, an inferred link) drains the server under test, after
which every join and room creation is a 503; it is checked by hand below instead. Two settings
make the run reach everything else: `schemathesis_hooks.py` lets it send the WHIP form of a join
(`application/sdp`), and the event stream gets a short request timeout (see SCHEMATHESIS_CONFIG).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import schemathesis
import yaml

from peers import Peer

REPO_ROOT = Path(__file__).resolve().parents[2]
OPENAPI_PATH = REPO_ROOT / "Sources" / "ControlAPI" / "Resources" / "openapi.yaml"

# Every operation the API serves.
EXPECTED_OPERATIONS = {
    "/healthz": {"get"},
    "/readyz": {"get"},
    "/metrics": {"get"},
    "/v1/openapi.yaml": {"get"},
    "/v1/users/{userId}/registrations": {"post"},
    "/v1/rooms": {"get", "post"},
    "/v1/rooms/{roomId}": {"get", "patch", "delete"},
    "/v1/calls": {"get"},
    "/v1/calls/{callId}": {"get"},
    "/v1/calls/{callId}/statistics": {"get", "post"},
    "/v1/rooms/{roomId}/participants": {"get", "post"},
    "/v1/rooms/{roomId}/participants/{callId}": {"get", "patch", "delete"},
    "/v1/rooms/{roomId}/events": {"get"},
    "/v1/nodes": {"get"},
    "/v1/nodes/{nodeId}/drain": {"post"},
    "/v1/rooms/{roomId}/recordings": {"get", "post"},
    "/v1/rooms/{roomId}/forwarders": {"get", "post"},
    "/v1/rooms/{roomId}/forwarders/{forwarderId}": {"delete"},
    "/v1/rooms/{roomId}/recordings/{recordingId}": {"delete"},
    "/v1/rooms/{roomId}/recordings/{recordingId}/file": {"get"},
    "/v1/rooms/{roomId}/recordings/{recordingId}/tracks/{callId}/file": {"get"},
    "/v1/webhooks": {"get", "post"},
    "/v1/webhooks/{endpointId}": {"get", "patch", "delete"},
    "/v1/webhooks/{endpointId}/secret": {"post"},
    "/v1/webhooks/{endpointId}/deliveries": {"get"},
}
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
MAX_EXAMPLES = int(os.environ.get("CHORUS_SCHEMATHESIS_MAX_EXAMPLES", "25"))
# A fixed seed keeps `make test` repeatable; CHORUS_SCHEMATHESIS_SEED=random explores afresh.
SEED = os.environ.get("CHORUS_SCHEMATHESIS_SEED", "20261122")
SCHEMATHESIS_TIMEOUT = 170  # seconds; a normal run takes well under a minute
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
# Schemathesis reads an event stream until the server ends it, 20 events have come, or the request
# timeout has passed. GET /v1/rooms/{roomId}/events stays open as long as the room and is mostly
# silent, so every 200 it answers would hold a worker for the whole request timeout (10 s): a short
# one for that operation keeps the run fast. The events read by then are still checked.
SCHEMATHESIS_CONFIG = """
[[operations]]
include-operation-id = "getRoomEvents"
request-timeout = 3
"""


@pytest.fixture
def contract_server(chorus_server, insert_call):
    """The server with a few calls of the development application, so that the call and
    statistics endpoints answer 200/201 and not only 404."""
    assert chorus_server.stop() == 0
    now = dt.datetime.now(dt.timezone.utc)
    calls = {
        "ended": insert_call(
            chorus_server, room_id="contract-room", user_id="alice", display_name="Alice",
            state="ended", joined_at=now - dt.timedelta(minutes=10),
            established_at=now - dt.timedelta(minutes=9, seconds=58),
            ended_at=now - dt.timedelta(minutes=1), end_cause="hungUp",
            server_stats={"packetsLost": 3, "rttMs": 41.5, "codec": "opus"}),
        "established": insert_call(
            chorus_server, room_id="contract-room", user_id="alice", state="established",
            joined_at=now - dt.timedelta(minutes=5), established_at=now - dt.timedelta(minutes=5)),
        "progressing": insert_call(chorus_server, room_id="other-room", user_id="bob", joined_at=now),
    }
    # Schemathesis may create webhook endpoints and RTP forwards to any public address: this node
    # sends nothing outbound.
    chorus_server.extra_args += ["--outbound", "off"]
    chorus_server.start()
    chorus_server.calls = calls
    return chorus_server


def load_served_document(server) -> tuple[requests.Response, dict]:
    response = requests.get(server.url("/v1/openapi.yaml"), timeout=10)
    assert response.status_code == 200, response.text
    return response, yaml.safe_load(response.content)


def test_served_document_parses_and_lists_every_operation(chorus_server):
    response, document = load_served_document(chorus_server)
    assert response.headers["content-type"].split(";")[0].strip() == "application/yaml"
    assert response.headers.get("x-request-id")
    assert response.content == OPENAPI_PATH.read_bytes(), "the server should serve the repository's document"
    assert str(document["openapi"]).startswith("3.1.")
    served = {path: {m for m in item if m in HTTP_METHODS} for path, item in document["paths"].items()}
    assert served == EXPECTED_OPERATIONS
    assert {"basicAuth", "bearerAuth", "applicationSignature"} <= set(document["components"]["securitySchemes"])
    # The docs/ copy is a link to the same file.
    docs = REPO_ROOT / "docs" / "openapi.yaml"
    assert docs.is_symlink() and os.readlink(docs) == "../Sources/ControlAPI/Resources/openapi.yaml"


def test_schemathesis_finds_no_contract_violation(contract_server, tmp_path):
    # The document as the server serves it, loaded from a file: schemathesis leaves out the
    # operation that serves the schema it loaded from a URL, and this way it tests that one too.
    response, _ = load_served_document(contract_server)
    document = tmp_path / "openapi.yaml"
    document.write_bytes(response.content)
    key, secret = contract_server.auth
    config = tmp_path / "schemathesis.toml"
    config.write_text(SCHEMATHESIS_CONFIG)
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", str(document),
        "--url", contract_server.base_url,
        "--auth", f"{key}:{secret}",
        "--checks", CHECKS,
        "--max-examples", str(MAX_EXAMPLES),
        "--workers", "2",
        "--request-timeout", "10",
        "--exclude-operation-id", "drainNode",
    ]
    if SEED != "random":
        command += ["--seed", SEED]
    reports = REPO_ROOT / "test-output"
    if reports.is_dir():  # `make test` creates it; keep a JUnit report there for CI
        command += ["--report", "junit", "--report-junit-path", str(reports / "schemathesis-junit.xml")]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120", "SCHEMATHESIS_HOOKS": str(HOOKS)}
    started = time.monotonic()
    # cwd: schemathesis keeps its Hypothesis example database and caches in the working directory;
    # a fresh one per run keeps runs independent of each other.
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=SCHEMATHESIS_TIMEOUT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, (
        f"schemathesis found contract violations (exit {done.returncode}, "
        f"{time.monotonic() - started:.0f}s):\n{output}\nserver log:\n{contract_server.log_tail()}")
    operations = sum(map(len, EXPECTED_OPERATIONS.values())) - 1  # drainNode, checked by hand
    assert f"Tested: {operations}" in output, output  # every operation, the document's own included


# -- hand-made requests -------------------------------------------------------------------------


class Contract:
    """Checks hand-made responses the way schemathesis does (status code and content type
    documented for the operation, body matching the schema), plus the API-wide rules."""

    def __init__(self):
        self.raw = yaml.safe_load(OPENAPI_PATH.read_text())
        self.schema = schemathesis.openapi.from_dict(self.raw)

    def _resolve(self, node: dict) -> dict:
        while "$ref" in node:
            target = self.raw
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            node = target
        return node

    def check(self, response: requests.Response, method: str, path: str, *, status: int,
              code: str | None = None) -> requests.Response:
        where = f"{method} {response.request.url} -> {response.status_code} {response.text[:300]}"
        assert response.status_code == status, where
        assert response.headers.get("x-request-id"), f"no x-request-id: {where}"
        documented = self.raw["paths"][path][method.lower()]["responses"]
        assert str(status) in documented, f"undocumented status: {where}"
        definition = self._resolve(documented[str(status)])
        for name, header in definition.get("headers", {}).items():
            if self._resolve(header).get("required"):
                assert name in response.headers, f"missing documented header {name}: {where}"
        content = definition.get("content")
        if content:
            media_type = response.headers.get("content-type", "").split(";")[0].strip()
            assert media_type in content, f"undocumented content type {media_type!r}: {where}"
        else:
            assert not response.content, f"body where none is documented: {where}"
        self.schema[path][method.upper()].validate_response(response)
        if status >= 400:
            check_error(response, code)
        return response


def check_error(response: requests.Response, code: str | None) -> None:
    assert response.headers.get("content-type", "").startswith("application/json"), response.headers
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert isinstance(body["error"]["message"], str)
    if code is not None:
        assert body["error"]["code"] == code, body


def registration_body(user_id: str, key: str, secret: str, sequence: int | str) -> dict:
    message = f"{user_id}{key}{sequence}{secret}".encode()
    return {"applicationKey": key, "sequence": sequence,
            "signature": base64.b64encode(hashlib.sha1(message).digest()).decode()}


def signed_headers(key: str, secret: str, method: str, path_with_query: str, body: bytes,
                   content_type: str, timestamp: str | None = None) -> dict:
    timestamp = timestamp or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode() if body else ""
    to_sign = "\n".join([method, md5, content_type, "x-timestamp:" + timestamp, path_with_query])
    mac = hmac.new(base64.b64decode(secret), to_sign.encode(), hashlib.sha256).digest()
    headers = {"Authorization": f"Application {key}:{base64.b64encode(mac).decode()}", "x-timestamp": timestamp}
    if content_type:
        headers["Content-Type"] = content_type
    return headers


def test_hand_made_requests_conform(contract_server):
    server, contract = contract_server, Contract()
    key, secret = server.auth
    calls = server.calls
    post, get = requests.post, requests.get

    # Registration with a valid signature, then the same sequence again.
    url = server.url("/v1/users/alice/registrations")
    registered = contract.check(post(url, json=registration_body("alice", key, secret, 7), timeout=10),
                                "POST", "/v1/users/{userId}/registrations", status=201).json()
    assert registered["userId"] == "alice"
    contract.check(post(url, json=registration_body("alice", key, secret, "7"), timeout=10),
                   "POST", "/v1/users/{userId}/registrations", status=409, code="sequenceReplayed")
    big = "123456789012345678901234567890"  # beyond 64 bits: only as a string
    contract.check(post(url, json=registration_body("alice", key, secret, big), timeout=10),
                   "POST", "/v1/users/{userId}/registrations", status=201)
    contract.check(post(url, data="{}", headers={"Content-Type": "text/plain"}, timeout=10),
                   "POST", "/v1/users/{userId}/registrations", status=415, code="unsupportedMediaType")
    bearer = {"Authorization": f"Bearer {registered['accessToken']}"}

    # A user sees its own calls only.
    listed = contract.check(get(server.url("/v1/calls"), headers=bearer, timeout=10),
                            "GET", "/v1/calls", status=200).json()
    assert {c["callId"] for c in listed["calls"]} == {calls["ended"], calls["established"]}
    contract.check(get(server.url("/v1/calls?userId=bob"), headers=bearer, timeout=10),
                   "GET", "/v1/calls", status=403, code="forbidden")
    ended = contract.check(get(server.url(f"/v1/calls/{calls['ended']}"), headers=bearer, timeout=10),
                           "GET", "/v1/calls/{callId}", status=200).json()
    assert ended["endCause"] == "hungUp" and ended["serverStatistics"]["rttMs"] == 41.5
    assert ended["durationSeconds"] == pytest.approx(538, abs=1)
    contract.check(get(server.url(f"/v1/calls/{calls['progressing']}"), headers=bearer, timeout=10),
                   "GET", "/v1/calls/{callId}", status=403, code="forbidden")
    contract.check(get(server.url("/v1/rooms"), headers=bearer, timeout=10),
                   "GET", "/v1/rooms", status=403, code="applicationAuthRequired")
    contract.check(get(server.url("/v1/calls"), headers={"Authorization": "Bearer nope"}, timeout=10),
                   "GET", "/v1/calls", status=401, code="invalidToken")

    # Statistics: by the user, by the application, an idempotent retry, a reused key, too large.
    stats = f"/v1/calls/{calls['ended']}/statistics"
    contract.check(post(server.url(stats), json={"mos": 4.2}, headers=bearer, timeout=10),
                   "POST", "/v1/calls/{callId}/statistics", status=201)
    retry = {"Idempotency-Key": "upload-1"}
    first = contract.check(server.request("POST", stats, json={"jitter": 3}, headers=retry),
                           "POST", "/v1/calls/{callId}/statistics", status=201)
    again = contract.check(server.request("POST", stats, json={"jitter": 3}, headers=retry),
                           "POST", "/v1/calls/{callId}/statistics", status=201)
    assert again.json() == first.json() and again.headers.get("idempotent-replayed") == "true"
    contract.check(server.request("POST", stats, json={"jitter": 4}, headers=retry),
                   "POST", "/v1/calls/{callId}/statistics", status=422, code="idempotencyKeyReused")
    contract.check(server.request("POST", stats, json={"x": "y" * (256 * 1024)}),
                   "POST", "/v1/calls/{callId}/statistics", status=413, code="payloadTooLarge")
    contract.check(server.request("POST", stats, json=[1, 2]),
                   "POST", "/v1/calls/{callId}/statistics", status=400, code="notAnObject")
    listed = contract.check(server.request("GET", stats), "GET", "/v1/calls/{callId}/statistics",
                            status=200).json()["statistics"]
    assert [s["uploadedBy"] for s in listed] == ["user:alice", "application"]
    assert [s["data"] for s in listed] == [{"mos": 4.2}, {"jitter": 3}]

    # A signed application request, and a stale one.
    body = json.dumps({"roomId": "signed-room", "videoSlots": 4}).encode()
    headers = signed_headers(key, secret, "POST", "/v1/rooms", body, "application/json")
    room = contract.check(post(server.url("/v1/rooms"), data=body, headers=headers, timeout=10),
                          "POST", "/v1/rooms", status=201).json()
    assert room["roomId"] == "signed-room" and room["videoSlots"] == 4
    headers = signed_headers(key, secret, "GET", "/v1/rooms?pageSize=1", b"", "")
    page = contract.check(get(server.url("/v1/rooms?pageSize=1"), headers=headers, timeout=10),
                          "GET", "/v1/rooms", status=200).json()
    assert len(page["rooms"]) == 1
    oversized = b"{}" + b" " * (1 << 20)  # a signature covers the body, so any signed request reads it
    headers = signed_headers(key, secret, "GET", "/v1/rooms", oversized, "application/json")
    contract.check(get(server.url("/v1/rooms"), data=oversized, headers=headers, timeout=10),
                   "GET", "/v1/rooms", status=413, code="payloadTooLarge")
    stale = signed_headers(key, secret, "GET", "/v1/rooms", b"", "", timestamp="2001-01-01T00:00:00Z")
    contract.check(get(server.url("/v1/rooms"), headers=stale, timeout=10),
                   "GET", "/v1/rooms", status=401, code="staleTimestamp")

    # Rooms: duplicate, immutable id, any body over 1 MiB.
    contract.check(server.request("POST", "/v1/rooms", json={"roomId": "signed-room"}),
                   "POST", "/v1/rooms", status=409, code="roomExists")
    contract.check(server.request("PATCH", "/v1/rooms/signed-room", json={"roomId": "other"}),
                   "PATCH", "/v1/rooms/{roomId}", status=422, code="roomIdImmutable")
    contract.check(server.request("POST", "/v1/rooms", json={"roomId": "x", "pad": "p" * (1 << 20)}),
                   "POST", "/v1/rooms", status=413, code="payloadTooLarge")
    contract.check(server.request("DELETE", "/v1/rooms/signed-room"),
                   "DELETE", "/v1/rooms/{roomId}", status=204)

    # The cluster (one node here): its list, a drain of an unknown node, then of this node, last
    # because a drained node creates no rooms.
    nodes = contract.check(server.request("GET", "/v1/nodes"), "GET", "/v1/nodes", status=200).json()["nodes"]
    assert len(nodes) == 1 and nodes[0]["live"] and nodes[0]["state"] == "up", nodes
    contract.check(server.request("POST", "/v1/nodes/nobody/drain"), "POST", "/v1/nodes/{nodeId}/drain",
                   status=404, code="nodeNotFound")
    contract.check(server.request("POST", "/v1/nodes/no%20spaces/drain"), "POST", "/v1/nodes/{nodeId}/drain",
                   status=400, code="invalidNodeId")
    drained = contract.check(server.request("POST", f"/v1/nodes/{nodes[0]['nodeId']}/drain"),
                             "POST", "/v1/nodes/{nodeId}/drain", status=202).json()
    assert drained["state"] == "draining"
    contract.check(server.request("POST", "/v1/rooms", json={"roomId": "after-drain"}),
                   "POST", "/v1/rooms", status=503, code="draining")

    # Paths and methods outside the document.
    unknown = requests.get(server.url("/v1/nothing-here"), timeout=10)
    assert unknown.status_code == 404 and unknown.headers.get("x-request-id")
    check_error(unknown, "notFound")
    for method, path, allow in [("PUT", "/v1/rooms", "GET, POST"), ("POST", "/healthz", "GET"),
                                ("DELETE", "/v1/calls/x/statistics", "GET, POST")]:
        refused = server.request(method, path)
        assert refused.status_code == 405 and refused.headers.get("x-request-id"), refused.text
        assert refused.headers.get("Allow") == allow
        check_error(refused, "methodNotAllowed")


# -- participants and events --------------------------------------------------------------------

PARTICIPANTS = "/v1/rooms/{roomId}/participants"
PARTICIPANT = "/v1/rooms/{roomId}/participants/{callId}"
EVENTS = "/v1/rooms/{roomId}/events"


class EventReader:
    """A room's Server-Sent Events, read in the test's own thread: `next()` blocks until the next
    event and returns its data (plus `_id` and `_event`, the frame's fields); `finish()` returns
    the events left until the server ends the stream (after `room.closed`) and keeps the bytes
    read, so that the contract can check the whole response like any other."""

    def __init__(self, response: requests.Response):
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "text/event-stream", response.headers
        self.response = response
        self.raw = bytearray()
        self._events = self._read()

    def _read(self):
        fields: dict[str, str] = {}
        for line in self.response.iter_lines():
            self.raw += line + b"\n"
            if line.startswith(b":"):  # a comment (keep-alive)
                continue
            if line:
                name, _, value = line.decode().partition(":")
                fields[name] = value.removeprefix(" ")
                continue
            if "data" in fields:
                yield {**json.loads(fields["data"]), "_id": int(fields["id"]), "_event": fields["event"]}
            fields = {}

    def next(self) -> dict:
        event = next(self._events, None)
        assert event is not None, f"the event stream ended early: {bytes(self.raw)!r}"
        return event

    def finish(self) -> list[dict]:
        rest = list(self._events)
        # The body as if it had been read at once, for `Contract.check`.
        self.response._content, self.response._content_consumed = bytes(self.raw), True
        return rest


def follow_events(server, room: str, headers: dict | None = None, auth=None) -> EventReader:
    return EventReader(requests.get(server.url(f"/v1/rooms/{room}/events"), headers=headers, auth=auth,
                                    stream=True, timeout=(5, 20)))


def register(server, user: str) -> dict:
    """A registered user's Authorization header."""
    key, secret = server.auth
    reply = requests.post(server.url(f"/v1/users/{user}/registrations"), timeout=10,
                          json=registration_body(user, key, secret, 1))
    assert reply.status_code == 201, reply.text
    return {"Authorization": f"Bearer {reply.json()['accessToken']}"}


def test_participants_and_events_conform(chorus_server):
    server, contract = chorus_server, Contract()
    post, get, patch, delete = requests.post, requests.get, requests.patch, requests.delete
    join_forms = contract.raw["paths"][PARTICIPANTS]["post"]["requestBody"]["content"]
    example = join_forms["application/json"]["example"]
    offer = join_forms["application/sdp"]["example"]
    assert example["sdp"] == offer
    bob, carol = register(server, "bob"), register(server, "carol")
    room = "/v1/rooms/contract-join"
    participants = server.url(room + "/participants")

    # The document's own example joins (JSON form, application credentials) and creates the room.
    joined = contract.check(server.request("POST", room + "/participants", json=example),
                            "POST", PARTICIPANTS, status=201)
    alice = joined.json()
    assert (alice["roomId"], alice["userId"], alice["eventsUrl"]) == ("contract-join", "alice", room + "/events")
    assert joined.headers["location"] == f"{room}/participants/{alice['callId']}"
    assert "a=ice-lite" in alice["sdp"]
    contract.check(server.request("GET", room), "GET", "/v1/rooms/{roomId}", status=200)
    alice_path = f"{room}/participants/{alice['callId']}"

    # The stream replays the room's events so far, then follows new ones.
    events = follow_events(server, "contract-join", auth=server.auth)
    first = events.next()
    # Ids increase by one per event; they start from the wall clock, not from 1.
    base = first["_id"] - 1
    assert base > 1_700_000_000_000_000
    assert (first["_event"], first["type"]) == ("participant.joined", "participant.joined")
    assert (first["callId"], first["userId"], first["displayName"]) == (alice["callId"], "alice", "Alice")

    # Bob joins as himself in the WHIP form, with his user token.
    whip = contract.check(post(participants + "?displayName=Bob", data=offer, timeout=10,
                               headers={**bob, "Content-Type": "application/sdp"}),
                          "POST", PARTICIPANTS, status=201)
    assert whip.headers["content-type"] == "application/sdp" and whip.text.startswith("v=0")
    bob_path = whip.headers["location"]
    bob_call = bob_path.rsplit("/", 1)[1]
    assert bob_path == f"{room}/participants/{bob_call}"
    event = events.next()
    assert (event["_id"], event["type"], event["callId"], event["userId"], event["displayName"]) == (
        base + 2, "participant.joined", bob_call, "bob", "Bob")

    # The room is open to the application and to users in it, not to other users.
    listed = contract.check(get(participants, headers=bob, timeout=10), "GET", PARTICIPANTS, status=200).json()
    assert [p["callId"] for p in listed["participants"]] == [alice["callId"], bob_call]
    assert {p["state"] for p in listed["participants"]} == {"progressing"}
    one = contract.check(server.request("GET", bob_path), "GET", PARTICIPANT, status=200).json()
    assert (one["userId"], one["displayName"], one["audioMuted"], one["media"]["packetsDropped"]) == (
        "bob", "Bob", False, 0)
    contract.check(get(participants, headers=carol, timeout=10), "GET", PARTICIPANTS, status=403, code="forbidden")
    contract.check(get(server.url(bob_path), headers=carol, timeout=10), "GET", PARTICIPANT, status=403,
                   code="forbidden")
    contract.check(get(server.url(room + "/events"), headers=carol, timeout=10), "GET", EVENTS, status=403,
                   code="forbidden")

    # Muting and pausing: by the participant's own user or the application; each change is an event.
    contract.check(patch(server.url(alice_path), json={"audioMuted": True}, headers=bob, timeout=10),
                   "PATCH", PARTICIPANT, status=403, code="forbidden")
    muted = contract.check(patch(server.url(bob_path), json={"audioMuted": True}, headers=bob, timeout=10),
                           "PATCH", PARTICIPANT, status=200).json()
    assert muted["audioMuted"] and not muted["videoPaused"]
    paused = contract.check(server.request("PATCH", alice_path, json={"videoPaused": True}),
                            "PATCH", PARTICIPANT, status=200).json()
    assert paused["videoPaused"] and not paused["audioMuted"]
    event = events.next()
    assert (event["_id"], event["type"], event["callId"], event["userId"]) == (base + 3, "audio.muted", bob_call, "bob")
    event = events.next()
    assert (event["_id"], event["type"], event["callId"], event["reason"]) == (
        base + 4, "video.paused", alice["callId"], "request")

    # Bob's own stream resumes after the last event he saw.
    bobs_events = follow_events(server, "contract-join", headers={**bob, "Last-Event-ID": str(base + 3)})
    assert bobs_events.next()["_id"] == base + 4
    contract.check(server.request("PATCH", alice_path, json={"videoPaused": False}),
                   "PATCH", PARTICIPANT, status=200)
    for stream in (events, bobs_events):
        event = stream.next()
        assert (event["_id"], event["type"], "reason" in event) == (base + 5, "video.resumed", False)

    # Joins refused (and no event for any of them).
    refusals = [
        (server.request("POST", room + "/participants", json={"sdp": offer}), 400, "missingUserId"),
        (server.request("POST", room + "/participants", json={**example, "displayName": "a\x07b"}),
         400, "invalidDisplayName"),
        (server.request("POST", room + "/participants", data=b"", headers={"Content-Type": "application/sdp"}),
         400, "invalidOffer"),
        (post(participants, json={"sdp": offer, "userId": "alice"}, headers=bob, timeout=10), 403, "forbidden"),
        (server.request("POST", room + "/participants", data=offer, headers={"Content-Type": "text/plain"}),
         415, "unsupportedMediaType"),
        (server.request("POST", room + "/participants", data=b"v" * (256 * 1024 + 1),
                        headers={"Content-Type": "application/sdp"}), 413, "payloadTooLarge"),
        (server.request("POST", room + "/participants", json={"sdp": "v" * (256 * 1024 + 1), "userId": "x"}),
         413, "payloadTooLarge"),
        (server.request("POST", room + "/participants", json={**example, "sdp": offer.replace("opus", "ISAC")}),
         422, "noOpus"),
    ]
    for reply, status, code in refusals:
        contract.check(reply, "POST", PARTICIPANTS, status=status, code=code)
    contract.check(server.request("PATCH", room, json={"maxParticipants": 2}), "PATCH", "/v1/rooms/{roomId}",
                   status=200)
    contract.check(post(participants, json={"sdp": offer}, headers=carol, timeout=10),
                   "POST", PARTICIPANTS, status=409, code="roomFull")
    strict = subprocess.run([server.binary, "apps", "create", "--name", "strict", "--no-auto-create-rooms",
                             "--db", str(server.db_path)], capture_output=True, text=True, timeout=60)
    assert strict.returncode == 0, strict.stderr
    strict_auth = tuple(strict.stdout.split(f"{name}:")[1].split()[0] for name in ("key", "secret"))
    contract.check(post(server.url("/v1/rooms/contract-join/participants"), json=example, auth=strict_auth,
                        timeout=10), "POST", PARTICIPANTS, status=404, code="roomNotFound")

    # Participants and rooms that are not there.
    unknown = "00000000-0000-4000-8000-000000000000"
    contract.check(server.request("GET", f"{room}/participants/{unknown}"), "GET", PARTICIPANT, status=404,
                   code="participantNotFound")
    contract.check(server.request("GET", f"{room}/participants/NOT-A-GUID"), "GET", PARTICIPANT, status=400,
                   code="invalidCallId")
    contract.check(server.request("GET", "/v1/rooms/nowhere/participants"), "GET", PARTICIPANTS, status=404,
                   code="roomNotFound")

    # Leaving: Bob hangs up, the application kicks Alice.
    contract.check(delete(server.url(bob_path), headers=bob, timeout=10), "DELETE", PARTICIPANT, status=204)
    contract.check(server.request("DELETE", alice_path), "DELETE", PARTICIPANT, status=204)
    contract.check(server.request("DELETE", alice_path), "DELETE", PARTICIPANT, status=404,
                   code="participantNotFound")
    # Closing the room ends every stream on it with `room.closed`.
    contract.check(server.request("DELETE", room), "DELETE", "/v1/rooms/{roomId}", status=204)
    rest = events.finish()
    assert [(e["_id"], e["type"], e.get("endCause")) for e in rest] == [
        (base + 6, "participant.ended", "hungUp"), (base + 7, "participant.ended", "kicked"),
        (base + 8, "room.closed", None)]
    assert rest[0]["callId"] == bob_call and rest[0]["established"] is False
    assert rest[2]["roomId"] == "contract-join"
    assert [e["_id"] for e in bobs_events.finish()] == [base + 6, base + 7, base + 8]
    for stream in (events, bobs_events):  # every frame and every event's data, against the document
        contract.check(stream.response, "GET", EVENTS, status=200)
        assert stream.response.headers["cache-control"] == "no-cache"
    contract.check(server.request("GET", room + "/events"), "GET", EVENTS, status=404, code="roomNotFound")

    # Methods these paths do not serve.
    for method, path, allow in [("PUT", room + "/participants", "GET, POST"),
                                ("POST", alice_path, "DELETE, GET, PATCH"), ("DELETE", room + "/events", "GET")]:
        refused = server.request(method, path)
        assert refused.status_code == 405 and refused.headers.get("Allow") == allow, refused.text
        check_error(refused, "methodNotAllowed")


def test_an_established_participant_conforms(chorus_server):
    """Only a real WebRTC peer gets to `established`: aiortc joins, then the participant and the
    `participant.established` event carry the SRTP profile."""
    server, contract = chorus_server, Contract()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer = Peer(video=False)
    try:
        offer = loop.run_until_complete(peer.offer())
        joined = contract.check(server.request("POST", "/v1/rooms/contract-live/participants",
                                               json={"sdp": offer, "userId": "dave"}),
                                "POST", PARTICIPANTS, status=201).json()
        path = f"/v1/rooms/contract-live/participants/{joined['callId']}"
        loop.run_until_complete(peer.answer(joined["sdp"]))

        async def established() -> requests.Response:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                reply = server.request("GET", path)
                if reply.status_code != 200 or reply.json()["state"] != "progressing":
                    return reply
                await asyncio.sleep(0.05)  # lets aiortc run
            raise AssertionError("not established within 10 s")
        participant = contract.check(loop.run_until_complete(established()), "GET", PARTICIPANT,
                                     status=200).json()
        assert participant["state"] == "established", participant
        assert participant["srtpProfile"] and participant["establishedAt"] >= participant["joinedAt"]

        events = follow_events(server, "contract-live", auth=server.auth)
        assert events.next()["type"] == "participant.joined"
        event = events.next()
        assert (event["type"], event["srtpProfile"]) == ("participant.established", participant["srtpProfile"])
        contract.check(server.request("DELETE", "/v1/rooms/contract-live"), "DELETE", "/v1/rooms/{roomId}",
                       status=204)
        ended, closed = events.finish()
        assert (ended["endCause"], ended["established"], closed["type"]) == ("roomClosed", True, "room.closed")
        contract.check(events.response, "GET", EVENTS, status=200)
    finally:
        loop.run_until_complete(peer.close())
        loop.close()
