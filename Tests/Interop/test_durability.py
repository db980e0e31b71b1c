"""Acknowledged statistics uploads survive `kill -9`, and the database stays sound: on SQLite (the
file passes its integrity check) and on PostgreSQL (`--db postgres://…`, a throwaway server)."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from contextlib import closing

import requests

KILL_CYCLES = 3
UPLOAD_SECONDS = 2.0  # uploads run this long before the kill
MIN_ACKS_PER_CYCLE = 5


class Uploader(threading.Thread):
    """Uploads statistics in a loop, recording each upload the server acknowledged with 201."""

    def __init__(self, server, call_id: str, cycle: int):
        super().__init__(daemon=True)
        self.url = server.url(f"/v1/calls/{call_id}/statistics")
        self.auth = server.auth
        self.cycle = cycle
        self.acked: dict[str, dict] = {}  # statisticsId -> body sent
        self.refused: list[tuple[int, str]] = []
        self.stop = threading.Event()
        self.deadline = time.monotonic() + 60  # never loops forever, whatever happens

    def run(self) -> None:
        session = requests.Session()
        sequence = 0
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            sequence += 1
            body = {
                "cycle": self.cycle,
                "sequence": sequence,
                "nested": {"jitterMs": [sequence % 7, 1.5, -3], "codec": "opus", "ok": True, "none": None},
                "padding": "x" * (sequence % 200),
            }
            try:
                response = session.post(
                    self.url, json=body, auth=self.auth, timeout=5,
                    headers={"Idempotency-Key": f"durability-{self.cycle}-{sequence}-{uuid.uuid4()}"})
            except requests.RequestException:
                # The server is gone (killed): nothing in flight was acknowledged.
                if self.stop.wait(0.01):
                    break
                continue
            if response.status_code == 201:
                self.acked[response.json()["statisticsId"]] = body
            else:
                self.refused.append((response.status_code, response.text[:200]))


def test_acknowledged_uploads_survive_kill_9(backend_server, insert_call):
    chorus_server = backend_server
    # The first start created the schema and the development application; add a call offline.
    assert chorus_server.stop() == 0
    call_id = insert_call(chorus_server, room_id="durability", user_id="durability-user", state="established")

    acknowledged: dict[str, dict] = {}
    for cycle in range(KILL_CYCLES):
        chorus_server.start()
        assert not chorus_server.banner.created
        uploader = Uploader(chorus_server, call_id, cycle)
        uploader.start()
        # Let it upload for a while (and at least a few times), then kill mid-loop.
        started = time.monotonic()
        while time.monotonic() - started < UPLOAD_SECONDS or (
                len(uploader.acked) < MIN_ACKS_PER_CYCLE and time.monotonic() - started < 20):
            assert uploader.is_alive(), "the uploader stopped before the kill"
            time.sleep(0.05)
        assert uploader.is_alive(), "the uploader must still be running when the server is killed"
        chorus_server.kill()
        uploader.stop.set()
        uploader.join(timeout=15)
        assert not uploader.is_alive()
        assert len(uploader.acked) >= MIN_ACKS_PER_CYCLE, uploader.refused[:5]
        assert not uploader.refused, f"uploads refused while the server ran: {uploader.refused[:5]}"
        acknowledged.update(uploader.acked)

        # Restart on the same file: every acknowledged upload is there, byte for byte.
        chorus_server.start()
        response = chorus_server.request("GET", f"/v1/calls/{call_id}/statistics")
        assert response.status_code == 200, response.text
        stored = {item["statisticsId"]: item for item in response.json()["statistics"]}
        missing = [sid for sid in acknowledged if sid not in stored]
        assert not missing, f"cycle {cycle}: {len(missing)} of {len(acknowledged)} acknowledged uploads lost"
        for statistics_id, body in acknowledged.items():
            assert stored[statistics_id]["data"] == body
            assert stored[statistics_id]["uploadedBy"] == "application"

        if chorus_server.postgres is None:
            with closing(sqlite3.connect(chorus_server.db_path)) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        else:
            # Nothing half-written: the table holds exactly the rows the API lists.
            postgres, database = chorus_server.postgres
            rows = postgres.psql("""SELECT count(*) FROM "callStatistics" WHERE "callId" = :'call';""",
                                 database=database, variables={"call": call_id})
            assert int(rows.strip()) == len(stored)
        if cycle < KILL_CYCLES - 1:
            assert chorus_server.stop() == 0
