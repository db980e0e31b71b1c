"""Contract tests: the running server against its own OpenAPI document.

1. The server serves the document (GET /v1/openapi.yaml), and it lists every endpoint.
2. Schemathesis (its CLI, run as a subprocess) generates requests for every operation of the
   served document - valid and invalid ones, through its examples, coverage, fuzzing and stateful
   (OpenAPI links) phases - and checks each response: no 5xx, only documented status codes, the
   documented content type, and a body that matches the documented schema.
3. Requests schemathesis cannot make on its own (valid registration signatures, user tokens,
   signed application requests, idempotent retries, oversized bodies, unknown paths and methods)
   are made by hand here and their responses checked against the document the same way.

Nothing is excluded from the schemathesis run.
"""

from __future__ import annotations

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
}
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
MAX_EXAMPLES = int(os.environ.get("CHORUS_SCHEMATHESIS_MAX_EXAMPLES", "25"))
# A fixed seed keeps `make test` repeatable; CHORUS_SCHEMATHESIS_SEED=random explores afresh.
SEED = os.environ.get("CHORUS_SCHEMATHESIS_SEED", "20261122")
SCHEMATHESIS_TIMEOUT = 170  # seconds; a normal run takes well under a minute


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
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", str(document),
        "--url", contract_server.base_url,
        "--auth", f"{key}:{secret}",
        "--checks", CHECKS,
        "--max-examples", str(MAX_EXAMPLES),
        "--workers", "2",
        "--request-timeout", "10",
    ]
    if SEED != "random":
        command += ["--seed", SEED]
    reports = REPO_ROOT / "test-output"
    if reports.is_dir():  # `make test` creates it; keep a JUnit report there for CI
        command += ["--report", "junit", "--report-junit-path", str(reports / "schemathesis-junit.xml")]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}
    started = time.monotonic()
    # cwd: schemathesis keeps its Hypothesis example database and caches in the working directory;
    # a fresh one per run keeps runs independent of each other.
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=SCHEMATHESIS_TIMEOUT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, (
        f"schemathesis found contract violations (exit {done.returncode}, "
        f"{time.monotonic() - started:.0f}s):\n{output}\nserver log:\n{contract_server.log_tail()}")
    assert "Tested: 14" in output, output  # every operation, the document's own included


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
