"""Shared fixtures of the interop tests: a real `chorus serve` process on a temporary database.

Run with `CHORUS_BIN=/path/to/chorus .venv/bin/python -m pytest Tests/Interop -q`.

`chorus_server` starts `$CHORUS_BIN serve --dev-app` on 127.0.0.1 with an ephemeral port, learns
the development application's key and secret and the port from the banner the server prints on
stdout, and at teardown stops it with SIGTERM, asserting a clean exit (status 0 within 10 s).
A test may stop, kill (-9) and start the same server again on the same database file.

`namespace` is a network namespace for a client on another network (netns.py), and
`netns_server` a server whose media is on the namespace's host side.

`insert_call` writes a row into the `call` table while the server is stopped: calls are
normally created by a media join, which the control API cannot do.

`postgres` is a throwaway PostgreSQL server (postgres.py) shared by the session, and
`chorus_pg_server` a started server on a fresh database of it (`--db postgres://…`);
`storage_backend` runs a test once on SQLite and once on PostgreSQL (`backend_server` is
then the started server of that backend).
"""

from __future__ import annotations

import atexit
import datetime as dt
import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import threading
import time
import uuid
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pytest
import requests

from netns import Namespace
from postgres import PostgresServer

REPO_ROOT = Path(__file__).resolve().parents[2]
OPENAPI_PATH = REPO_ROOT / "Sources" / "ControlAPI" / "Resources" / "openapi.yaml"

STARTUP_TIMEOUT = 60.0  # a debug build on a busy 2-core machine can be slow to start
STOP_TIMEOUT = 10.0

CURL_LINE = re.compile(r"^\s*(curl .*http://127\.0\.0\.1:(\d+)/v1/rooms)\s*$")


@dataclass
class Banner:
    """What `chorus serve --dev-app` printed once it was listening."""

    created: bool  # "Created the development application:" (else "Development application:")
    key: str
    secret: str
    curl_line: str
    port: int
    text: str


def parse_banner(lines: list[str]) -> Banner:
    text = "".join(lines)
    header = key = secret = curl = port = None
    for line in lines:
        stripped = line.strip()
        if stripped in ("Created the development application:", "Development application:"):
            header = stripped
        elif stripped.startswith("key:"):
            key = stripped.removeprefix("key:").strip()
        elif stripped.startswith("secret:"):
            secret = stripped.removeprefix("secret:").strip()
        elif match := CURL_LINE.match(line):
            curl, port = match.group(1), int(match.group(2))
    assert header and key and secret and curl and port, f"unexpected banner:\n{text}"
    return Banner(header.startswith("Created"), key, secret, curl, port, text)


class ChorusServer:
    """One `chorus serve` process at a time on one database file; restartable.

    `extra_args` are appended to the command line (e.g. `["--demo"]`) and `extra_env` to the
    environment (which otherwise has no CHORUS_ variable but CHORUS_OPENAPI_PATH).
    """

    def __init__(self, binary: str, db_path: Path | str, log_path: Path, extra_args: Sequence[str] = (),
                 extra_env: dict[str, str] | None = None, http_port: int = 0):
        self.binary = binary
        self.http_port = http_port  # 0: a free one, chosen by the server
        self.db_path = db_path  # an SQLite file, or a postgres:// URL
        self.log_path = log_path
        self.postgres: tuple[PostgresServer, str] | None = None  # (server, database) for a PostgreSQL URL
        self.extra_args = list(extra_args)
        self.extra_env = dict(extra_env or {})
        self.process: subprocess.Popen[str] | None = None
        self.banner: Banner | None = None
        self.starts = 0

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def environment(self) -> dict[str, str]:
        """The process environment: no CHORUS_ variable but the OpenAPI path and `extra_env`."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CHORUS_")}
        env["CHORUS_OPENAPI_PATH"] = str(OPENAPI_PATH)
        env.update(self.extra_env)
        return env

    def command(self) -> list[str]:
        """The `chorus serve` command line this server starts with."""
        return [
            self.binary, "serve", "--db", str(self.db_path), "--dev-app",
            "--http-host", "127.0.0.1", "--http-port", str(self.http_port), "--rate-limit", "0",
            # Media on an ephemeral loopback port: tests never collide, traffic stays on lo.
            "--media-port", "0",
            # Media on loopback unless the test puts it elsewhere (`--public-ip` may be repeated:
            # a test's own addresses replace the default rather than add to it).
            *([] if "--media-host" in self.extra_args else ["--media-host", "127.0.0.1"]),
            *([] if "--public-ip" in self.extra_args else ["--public-ip", "127.0.0.1"]),
            # Recordings next to the test's log, never in the repository.
            *([] if "--recordings-dir" in self.extra_args else ["--recordings-dir", str(Path(self.log_path).parent / "recordings")]),
            *self.extra_args,
        ]

    def start(self) -> Banner:
        assert not self.running, "the server is already running"
        env = self.environment()
        command = self.command()
        self.starts += 1
        log = open(self.log_path, "a", encoding="utf-8")
        log.write(f"\n===== start #{self.starts}: {' '.join(command)}\n")
        log.flush()
        # Own session: a Ctrl-C meant for pytest does not reach the server behind the fixture's back.
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env,
            text=True, bufsize=1, start_new_session=True,
        )
        _live.add(self.process)
        log.close()
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(self.process.stdout, lines), daemon=True).start()

        seen: list[str] = []
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                pytest.fail(f"no banner within {STARTUP_TIMEOUT}s; stdout so far:\n{''.join(seen)}\n"
                            f"log:\n{self.log_tail()}")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                code = self.process.wait()
                pytest.fail(f"chorus exited with {code} before printing its banner; stdout:\n"
                            f"{''.join(seen)}\nlog:\n{self.log_tail()}")
            seen.append(line)
            if CURL_LINE.match(line):
                break
        self.banner = parse_banner(seen)
        return self.banner

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, then the exit status (fails the test unless it exits within `timeout`)."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                pytest.fail(f"chorus did not exit within {timeout}s of SIGTERM; log:\n{self.log_tail()}")
        return self.process.returncode

    def kill(self) -> None:
        """`kill -9`: no chance to flush or clean up anything."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT)

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    # -- client helpers ----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self.banner is not None
        return f"http://127.0.0.1:{self.banner.port}"

    @property
    def auth(self) -> tuple[str, str]:
        assert self.banner is not None
        return (self.banner.key, self.banner.secret)

    def url(self, path: str) -> str:
        return self.base_url + path

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """A request with the application's Basic credentials unless `auth` is given."""
        kwargs.setdefault("auth", self.auth)
        kwargs.setdefault("timeout", 10)
        return requests.request(method, self.url(path), **kwargs)


# -- which tests run in parallel -----------------------------------------------------------------

# Files whose tests take most of a core or judge timing, loss or CPU on a shaped or loaded link:
# they run one at a time (`make test`'s serial interop phase, `pytest -m serial`), after the rest
# ran three at a time (`-m "not serial" -n 3`, pytest-xdist). Every other test uses ephemeral
# ports, its own temporary folder and database, and network namespaces named by its process, so
# several can run at once; most of their time is spent waiting on the server (timeouts,
# retries, a few seconds of media), not on the two cores.
SERIAL_FILES = {
    # browsers and GStreamer: a headless browser takes most of a core for its camera and codecs
    "test_browser.py", "test_cluster_web.py", "test_gstreamer_whip.py", "test_h264_forward.py",
    "test_ice_restart_browser.py", "test_ice_tcp.py", "test_leave_browsers.py", "test_simulcast_layers.py",
    "test_simulcast_negotiation.py", "test_temporal_layers.py", "test_transport_cc.py", "test_turn.py",
    "test_web_client_restart.py", "test_downlink_estimate.py",
    # load runs: their bars judge the server's CPU and each stream's timing
    "test_load.py", "test_load_bars.py", "test_load_janus.py", "test_load_simulcast.py",
    # floods: they saturate the server on purpose
    "test_hostile_datagrams.py", "test_hostile_tcp.py", "test_tcp_half_open.py",
    # loss and quality measured on lossy links; aiortc's VP8 encoder in Python
    "test_call_quality.py", "test_audio_loss.py", "test_video_forward.py",
}


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "serial: runs alone (a browser, a load run, a flood or a measured link)")


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if item.path.name in SERIAL_FILES:
            item.add_marker(pytest.mark.serial)


_live: set[subprocess.Popen] = set()


@atexit.register
def _kill_leftovers() -> None:
    """Never leave a server behind, even when pytest itself is interrupted."""
    for process in _live:
        if process.poll() is None:
            process.kill()


def _pump(stream, lines: queue.Queue) -> None:
    """Forwards the server's stdout lines (and keeps the pipe drained); None at EOF."""
    try:
        for line in stream:
            lines.put(line)
    finally:
        stream.close()
        lines.put(None)


@pytest.fixture(scope="session")
def chorus_bin() -> str:
    path = os.environ.get("CHORUS_BIN") or str(REPO_ROOT / ".build" / "debug" / "chorus")
    if not os.access(path, os.X_OK):
        pytest.fail(f"set CHORUS_BIN to the chorus executable (tried {path})")
    return path


def started(server: ChorusServer):
    """For a fixture: starts `server`, yields it, and stops it with SIGTERM after the test
    (when it still runs), asserting exit 0 within 10 s."""
    server.start()
    yield server
    if server.running:
        code = server.stop()
        assert code == 0, f"chorus exited with {code} after SIGTERM; log:\n{server.log_tail()}"


@pytest.fixture
def chorus_server(chorus_bin: str, tmp_path: Path):
    """A started server on a fresh database; stopped with SIGTERM (exit 0 within 10 s) after the test."""
    yield from started(ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log"))


# -- browsers ------------------------------------------------------------------------------------

@pytest.fixture
def chromium(tmp_path: Path):
    """A headless Chromium on a fresh profile (chromium.py), closed after the test."""
    from chromium import Chromium
    browser = Chromium(tmp_path / "chromium-profile", tmp_path / "chromium.log")
    yield browser
    browser.close()


# -- PostgreSQL ------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server for the whole session, removed at its end."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.remove()


def postgres_chorus(chorus_bin: str, postgres: PostgresServer, tmp_path: Path) -> ChorusServer:
    """A (not yet started) server on a fresh database of `postgres`."""
    database = postgres.create_database()
    server = ChorusServer(chorus_bin, postgres.url(database), tmp_path / "chorus.log")
    server.postgres = (postgres, database)
    return server


@pytest.fixture
def chorus_pg_server(chorus_bin: str, postgres: PostgresServer, tmp_path: Path):
    """A started server on a fresh PostgreSQL database; stopped as `chorus_server` is."""
    yield from started(postgres_chorus(chorus_bin, postgres, tmp_path))


@pytest.fixture(params=["sqlite", "postgres"])
def storage_backend(request) -> str:
    return request.param


@pytest.fixture
def backend_server(storage_backend: str, chorus_bin: str, tmp_path: Path, request):
    """A started server on the `storage_backend` of this run of the test."""
    if storage_backend == "sqlite":
        server = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log")
    else:
        server = postgres_chorus(chorus_bin, request.getfixturevalue("postgres"), tmp_path)
    yield from started(server)


# -- a client on another network -----------------------------------------------------------------

@pytest.fixture
def namespace():
    """A network namespace joined to this one by a veth pair (netns.py), removed after the test
    with every process spawned in it. A test module may override it (e.g. to add a firewall)."""
    created = Namespace.create()
    try:
        yield created
    finally:
        created.remove()


@pytest.fixture
def netns_server_args() -> list[str]:
    """More `chorus serve` arguments for `netns_server` (none); a test module overrides this."""
    return []


@pytest.fixture
def netns_server(chorus_bin: str, tmp_path: Path, namespace: Namespace, netns_server_args: list[str]):
    """A started server for a client in `namespace`: media on the veth's host side and announced
    there (the ICE-TCP port defaults to the UDP port's number). Bound to that address, so that
    nothing but the namespace's link reaches the media port. Stopped as `chorus_server` is."""
    yield from started(ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                                    extra_args=["--media-host", namespace.host_ip, "--public-ip", namespace.host_ip,
                                                *netns_server_args]))


# -- calls ---------------------------------------------------------------------------------------

def grdb_datetime(value: dt.datetime) -> str:
    """GRDB's text form of a Date: 'YYYY-MM-DD HH:MM:SS.SSS' in UTC."""
    value = value.astimezone(dt.timezone.utc)
    return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"


def insert_call_row(
    db_path: Path | str,
    application_key: str,
    *,
    call_id: str | None = None,
    room_id: str = "interop-room",
    user_id: str = "interop-user",
    display_name: str | None = None,
    state: str = "progressing",
    joined_at: dt.datetime | None = None,
    established_at: dt.datetime | None = None,
    ended_at: dt.datetime | None = None,
    end_cause: str | None = None,
    server_stats: dict | None = None,
) -> str:
    """Inserts a call of the application whose key is `application_key`; returns its callId.

    Only while no server runs on `db_path` (and after one ran, so that the schema exists).
    """
    call_id = call_id or str(uuid.uuid4())
    joined_at = joined_at or dt.datetime.now(dt.timezone.utc)
    with closing(sqlite3.connect(db_path)) as conn, conn:
        row = conn.execute("SELECT id FROM application WHERE key = ?", (application_key,)).fetchone()
        assert row is not None, f"no application with key {application_key} in {db_path}"
        conn.execute(
            'INSERT INTO "call" (callId, applicationId, roomId, userId, displayName, state, joinedAt,'
            " establishedAt, endedAt, endCause, serverStats) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                call_id, row[0], room_id, user_id, display_name, state, grdb_datetime(joined_at),
                established_at and grdb_datetime(established_at), ended_at and grdb_datetime(ended_at),
                end_cause, None if server_stats is None else json.dumps(server_stats),
            ),
        )
    return call_id


def insert_call_row_postgres(postgres: PostgresServer, database: str, application_key: str, *,
                             call_id: str | None = None, room_id: str = "interop-room",
                             user_id: str = "interop-user", state: str = "progressing") -> str:
    """`insert_call_row` for a PostgreSQL database (the fields the tests on PostgreSQL use)."""
    call_id = call_id or str(uuid.uuid4())
    postgres.psql(
        'INSERT INTO "call" ("callId", "applicationId", "roomId", "userId", "state", "joinedAt") '
        """SELECT :'call', "id", :'room', :'user', :'state', now() FROM "application" WHERE "key" = :'key';""",
        database=database,
        variables={"call": call_id, "room": room_id, "user": user_id, "state": state, "key": application_key})
    return call_id


@pytest.fixture
def insert_call():
    """`insert_call(server, **fields) -> callId`: a call of the server's development application.

    The server must be stopped; see `insert_call_row` for the fields.
    """

    def insert(server: ChorusServer, **fields: Any) -> str:
        assert not server.running, "stop the server before writing to its database"
        assert server.banner is not None, "start the server once first (migrations, dev application)"
        if server.postgres is not None:
            return insert_call_row_postgres(*server.postgres, server.banner.key, **fields)
        return insert_call_row(server.db_path, server.banner.key, **fields)

    return insert

