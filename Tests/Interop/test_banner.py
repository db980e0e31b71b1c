"""The `--dev-app` banner: its curl line works as printed, and survives a restart. With `--demo`
(or CHORUS_DEMO=1) it also points at the web client, which the server then serves with its token
route; without it, the token route does not exist."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import requests

from conftest import ChorusServer

WEB_FILES = {"/": "text/html", "/app.js": "text/javascript", "/style.css": "text/css"}
ROOM_FIELDS = {"roomId", "maxParticipants", "mixedSpeakers", "videoSlots", "createdAt"}


def run_curl_line(line: str, home: Path) -> tuple[int, dict]:
    """Runs the printed curl line verbatim through bash; returns (HTTP status, JSON body).

    The status comes from a `.curlrc` in `CURL_HOME` (curl reads it before its arguments), so
    the command itself runs exactly as a user would paste it.
    """
    home.mkdir(exist_ok=True)
    (home / ".curlrc").write_text('write-out = "\\n%{http_code}"\n')
    env = {**os.environ, "CURL_HOME": str(home), "HOME": str(home)}
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 0, f"curl failed ({done.returncode}): {done.stderr}"
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body)


def test_banner_curl_line_creates_a_room_and_the_key_survives_a_restart(chorus_server, tmp_path):
    first = chorus_server.banner
    assert first.created, f"an empty database should get a new development application:\n{first.text}"
    assert first.curl_line.startswith("curl -s -u '"), first.curl_line
    assert f"-u '{first.key}:{first.secret}'" in first.curl_line

    status, room = run_curl_line(first.curl_line, tmp_path / "curl-home")
    assert status == 201, room
    assert set(room) == ROOM_FIELDS, room
    assert (room["maxParticipants"], room["mixedSpeakers"], room["videoSlots"]) == (100, 3, 9)
    assert chorus_server.request("GET", f"/v1/rooms/{room['roomId']}").json() == room

    assert chorus_server.stop() == 0
    second = chorus_server.start()
    assert not second.created, f"the restart should reuse the application:\n{second.text}"
    assert "\nDevelopment application:\n" in second.text, second.text
    assert (second.key, second.secret) == (first.key, first.secret)

    # The room is still there, and the new curl line (new port) works too.
    assert chorus_server.request("GET", f"/v1/rooms/{room['roomId']}").json() == room
    status, another = run_curl_line(second.curl_line, tmp_path / "curl-home")
    assert status == 201, another
    assert another["roomId"] != room["roomId"]


def web_client_line(port: int) -> str:
    return f"open http://localhost:{port}/ in two browser tabs"


def test_without_demo_there_is_no_token_route_and_no_web_client_line(chorus_server):
    assert web_client_line(chorus_server.banner.port) not in chorus_server.banner.text
    refused = requests.post(chorus_server.url("/demo/token"), json={"userId": "alice"}, timeout=10)
    assert refused.status_code == 404, refused.text
    # The page itself is always there; it explains that it needs a --demo server for tokens.
    assert requests.get(chorus_server.url("/"), timeout=10).status_code == 200


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_demo_banner_page_and_token(chorus_bin, tmp_path, how):
    server = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                          extra_args=["--demo"] if how == "flag" else [],
                          extra_env={"CHORUS_DEMO": "1"} if how == "environment" else None)
    banner = server.start()
    try:
        assert f"Web client: {web_client_line(banner.port)}\n" in banner.text, banner.text
        for path, content_type in WEB_FILES.items():
            page = requests.get(server.url(path), timeout=10)
            assert page.status_code == 200, (path, page.text)
            assert page.headers["content-type"].split(";")[0] == content_type, (path, page.headers)
        assert "/app.js" in requests.get(server.url("/"), timeout=10).text

        # A token for any valid user ID, which then works as that user (it may create rooms).
        token = requests.post(server.url("/demo/token"), json={"userId": "alice"}, timeout=10)
        assert token.status_code == 200, token.text
        assert token.json()["userId"] == "alice" and banner.secret not in token.text
        bearer = {"Authorization": f"Bearer {token.json()['accessToken']}"}
        assert requests.get(server.url("/v1/calls"), headers=bearer, timeout=10).status_code == 200
        bad = requests.post(server.url("/demo/token"), json={"userId": "not valid!"}, timeout=10)
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalidUserId", bad.text
    finally:
        assert server.stop() == 0, server.log_tail()
