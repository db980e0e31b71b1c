"""A throwaway PostgreSQL server for the interop tests, from Debian's `postgresql` binaries.

`initdb` into a temporary folder, `pg_ctl start` on a free loopback port with its unix socket in
that folder, stopped and deleted at the end. PostgreSQL refuses to run as root, so under root
the server runs as `nobody` (`runuser`), owning its folder. The same recipe as the Swift tests'
`PostgresTestServer` (Sources/ChorusTestSupport).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

BIN = Path(os.environ.get("CHORUS_PG_BIN", "/usr/lib/postgresql/15/bin"))
USER = "chorus"
PASSWORD = "chorus-interop-password"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *command] if os.geteuid() == 0 else command


class PostgresServer:
    """One PostgreSQL cluster in a temporary folder; `stop_server`/`start_server` take it down
    and bring it back on the same port with its data (an outage), `remove` ends it."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="chorus-pg-"))
        self.data = self.directory / "data"
        self.sockets = self.directory / "socket"
        self.sockets.mkdir()
        password_file = self.directory / "password"
        password_file.write_text(PASSWORD)
        if os.geteuid() == 0:
            os.chmod(self.directory, 0o755)
            for path in (self.directory, self.sockets, password_file):
                shutil.chown(path, "nobody", "nogroup")
        self._run(_as_server_user([
            str(BIN / "initdb"), "-D", str(self.data), "-U", USER, "--pwfile", str(password_file), "-E", "UTF8",
            "--auth-host", "scram-sha-256", "--auth-local", "trust", "--no-sync"]))
        self.port = free_port()
        self.start_server()

    def _run(self, command: list[str], **kwargs) -> subprocess.CompletedProcess:
        result = subprocess.run(command, cwd="/", capture_output=True, text=True, timeout=120, **kwargs)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited with {result.returncode}: {result.stdout}{result.stderr}")
        return result

    def start_server(self) -> None:
        # fsync off: these tests kill Chorus, never the machine; PostgreSQL's commit path is unchanged.
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} -c max_connections=200 "
                   "-c fsync=off -c full_page_writes=off")
        self._run(_as_server_user([str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.directory / "log"),
                                   "-w", "-t", "60", "-o", options, "start"]))

    def stop_server(self) -> None:
        self._run(_as_server_user([str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]))

    def remove(self) -> None:
        try:
            self.stop_server()
        except RuntimeError:
            pass
        shutil.rmtree(self.directory, ignore_errors=True)

    def create_database(self) -> str:
        """A fresh database; returns its name."""
        name = "interop_" + uuid.uuid4().hex
        self.psql(f"CREATE DATABASE {name} STRATEGY FILE_COPY")
        return name

    def url(self, database: str) -> str:
        return f"postgres://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def psql(self, sql: str, database: str = "postgres", variables: dict[str, str | None] | None = None) -> str:
        """Runs `sql` (from standard input, so `:'name'` variables work) over the unix socket."""
        command = [str(BIN / "psql"), "-h", str(self.sockets), "-p", str(self.port), "-U", USER, "-d", database,
                   "-v", "ON_ERROR_STOP=1", "-qAt"]
        for name, value in (variables or {}).items():
            command += ["-v", f"{name}={'' if value is None else value}"]
        return self._run(command, input=sql).stdout
