"""The `--dev-app` banner: its curl line works as printed, and survives a restart."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

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
