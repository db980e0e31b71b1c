"""The `chorus apps` commands work on the same database file the server uses."""

from __future__ import annotations

import os
import re
import subprocess

import requests


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([os.environ["CHORUS_BIN"], *args], capture_output=True, text=True, timeout=60)


def test_apps_create_and_list(tmp_path):
    db = str(tmp_path / "cli.sqlite")
    created = run("apps", "create", "--name", "billing", "--db", db)
    assert created.returncode == 0, created.stderr
    key = re.search(r"key:\s+([0-9a-f-]{36})", created.stdout).group(1)
    secret = re.search(r"secret:\s+(\S+)", created.stdout).group(1)
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", key)
    assert len(__import__("base64").b64decode(secret, validate=True)) == 16

    listed = run("apps", "list", "--db", db)
    assert listed.returncode == 0, listed.stderr
    assert key in listed.stdout and "billing" in listed.stdout
    assert secret not in listed.stdout  # secrets are shown once, at creation


def test_created_application_authenticates(chorus_server):
    # An application created from the CLI while the server runs on the same file works at once.
    created = run("apps", "create", "--name", "second", "--db", str(chorus_server.db_path))
    assert created.returncode == 0, created.stderr
    key = re.search(r"key:\s+(\S+)", created.stdout).group(1)
    secret = re.search(r"secret:\s+(\S+)", created.stdout).group(1)
    reply = requests.get(chorus_server.url("/v1/rooms"), auth=(key, secret), timeout=10)
    assert reply.status_code == 200, reply.text


def test_bad_options_are_refused_without_a_trace(tmp_path):
    bad = run("serve", "--http-port", "70000", "--db", str(tmp_path / "x.sqlite"))
    assert bad.returncode != 0
    assert "ports must be between" in bad.stderr


def test_application_can_forbid_room_creation_on_join(chorus_server):
    created = run("apps", "create", "--name", "strict", "--no-auto-create-rooms", "--db", str(chorus_server.db_path))
    assert created.returncode == 0, created.stderr
    key = re.search(r"key:\s+(\S+)", created.stdout).group(1)
    secret = re.search(r"secret:\s+(\S+)", created.stdout).group(1)
    reply = requests.post(chorus_server.url("/v1/rooms/nowhere/participants"), auth=(key, secret), timeout=10,
                          json={"sdp": "v=0\r\n", "userId": "u1"})
    assert reply.status_code == 404 and reply.json()["error"]["code"] == "roomNotFound"


def test_nodes_list_shows_the_running_node(chorus_server):
    listed = run("nodes", "list", "--db", str(chorus_server.db_path))
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert len(rows) == 1, listed.stdout
    node_id, state = rows[0][0], rows[0][1]
    assert state == "up", listed.stdout
    # The same node as the API shows, with the advertise URL last.
    nodes = chorus_server.request("GET", "/v1/nodes").json()["nodes"]
    assert [n["nodeId"] for n in nodes] == [node_id]
    assert rows[0][-1] == nodes[0]["advertiseUrl"]
