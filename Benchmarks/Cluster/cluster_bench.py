"""Joins and registrations per second against one node and against three, SQLite against
PostgreSQL (issue 17): the control plane's throughput through real `chorus serve` processes.

Four configurations, each on a fresh database and freshly started nodes for every cell:

- **sqlite**: one node on an SQLite file in a temporary folder (WAL, `synchronous=FULL`);
- **pg-1**: one node on PostgreSQL;
- **pg-3**: three nodes (`--node-id n0…n2`, their own `--advertise-url`) on one PostgreSQL
  database, the clients' requests spread round-robin over the three URLs as a load balancer's;
- **pg-3-owner** (joins only): the same, but a client that was redirected for a room sends its
  later joins to that room's node directly (as a room-aware load balancer or a client that
  remembers the `Location` would): the cluster without the redirects.

PostgreSQL is a throwaway server from Tests/Interop/postgres.py, but started with its durable
defaults (fsync and full-page writes on), not the tests' `fsync=off`: SQLite fsyncs every
commit, so PostgreSQL must too for the comparison to mean anything. `PG_FSYNC=off` gives the
tests' settings instead.

Per cell, CLIENTS (16) concurrent clients (CLIENT_PROCS processes of threads, each thread one
`requests.Session` with keep-alive) send requests back to back for WARMUP (6 s, not counted:
rooms are created and placed then, and the first joined participants reach their consent
timeout, so that the window sees joins and ends in balance) plus DURATION (10 s) seconds; a
request counts when it started and finished inside the measured window:

- **registrations**: `POST /v1/users/{userId}/registrations` with a valid signature
  Base64(SHA1(userId + key + sequence + secret)); each thread cycles over 64 users of its own
  with a strictly increasing sequence per user (the first pass inserts, the rest update);
  201s are counted.
- **joins**: `POST /v1/rooms/{roomId}/participants` `{"sdp", "userId"}` with Chrome's audio-only
  offer (Tests/Fixtures/sdp/chrome-audio-only.sdp), application Basic auth, round-robin over
  ROOMS (100) rooms; a `307` (the room runs on another node) is followed by hand with the
  Authorization sent again (requests drops it across ports) and counted as a hop. The joined
  participants never connect; `--consent-timeout 5` ends them, so a room holds about
  rate × 5 s / ROOMS participants (under the default maxParticipants of 100).

Every node runs with `--rate-limit 0` (limits are per node and would cap the figures) and
`--log-level warning`. Server CPU (the chorus processes, PostgreSQL's processes and the client
processes, from /proc) is read over the measured window, so each cell also gives CPU-ms per
request: less sensitive than the rate to what else the machine runs. Everything shares one
machine: three nodes here split the same cores one node had, so pg-3 against pg-1 measures the
cluster's overhead (redirects, placement look-ups), not its scaling.

Usage: python3 Benchmarks/Cluster/cluster_bench.py BIN [ROUNDS] [OUT]
Configurations are interleaved within each round (sqlite pg-1 pg-3 pg-3-owner sqlite …).
Prints a table of per-cell median and min–max and a final `RESULTS {json}` line of raw
results; node logs go to OUT (bench-output/cluster).
Environment: DURATION, WARMUP, CLIENTS, CLIENT_PROCS, ROOMS, CONFIGS (e.g. "sqlite,pg-3"),
PG_FSYNC (on).
"""

from __future__ import annotations

import base64
import hashlib
import json
import multiprocessing
import os
import queue
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "Tests" / "Interop"))
import postgres  # noqa: E402  (Tests/Interop/postgres.py: the throwaway PostgreSQL server)

KINDS = ("registrations", "joins")
DURATION = float(os.environ.get("DURATION", "10"))
WARMUP = float(os.environ.get("WARMUP", "6"))
CLIENTS = int(os.environ.get("CLIENTS", "16"))
CLIENT_PROCS = int(os.environ.get("CLIENT_PROCS", "2"))
ROOMS = int(os.environ.get("ROOMS", "100"))
USERS_PER_THREAD = 64
CONSENT_TIMEOUT = 5
# name: (backend, nodes, the kinds measured, whether join clients remember each room's node)
CONFIGS = {"sqlite": ("sqlite", 1, KINDS, False), "pg-1": ("postgres", 1, KINDS, False),
           "pg-3": ("postgres", 3, KINDS, False), "pg-3-owner": ("postgres", 3, ("joins",), True)}
OFFER = (REPO / "Tests" / "Fixtures" / "sdp" / "chrome-audio-only.sdp").read_text()
CURL_LINE = re.compile(r"http://127\.0\.0\.1:(\d+)/v1/rooms")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class DurablePostgres(postgres.PostgresServer):
    """The tests' throwaway server with PostgreSQL's durable defaults (PG_FSYNC=off: the tests'
    `fsync=off`, `full_page_writes=off`)."""

    def start_server(self) -> None:
        if os.environ.get("PG_FSYNC", "on") == "off":
            return super().start_server()
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} -c max_connections=200")
        self._run(postgres._as_server_user([
            str(postgres.BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.directory / "log"),
            "-w", "-t", "60", "-o", options, "start"]))

    def pids(self) -> list[int]:
        """The postmaster and its children (the backends serving the nodes)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        return [postmaster, *children(postmaster)]


class Database:
    """What a cell reads of its database around the measured window: PostgreSQL's processes and
    committed transactions, and the call records' ends (to see whether they keep up)."""

    OVERDUE = CONSENT_TIMEOUT + 2  # seconds after its join by which a call should have ended

    def __init__(self, sqlite_path: str | None = None, pg: DurablePostgres | None = None, name: str = ""):
        self.sqlite_path, self.pg, self.name = sqlite_path, pg, name

    def pids(self) -> list[int]:
        return self.pg.pids() if self.pg else []

    def commits(self) -> int | None:
        if not self.pg:
            return None
        return int(self.pg.psql("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
                                database=self.name))

    def calls(self) -> tuple[int, int]:
        """(calls ended, calls not ended although joined more than OVERDUE seconds ago)."""
        if self.pg:
            row = self.pg.psql(f"""SELECT count(*) FILTER (WHERE "endedAt" IS NOT NULL),
                count(*) FILTER (WHERE "endedAt" IS NULL AND "joinedAt" < now() - interval '{self.OVERDUE} seconds')
                FROM "call" """, database=self.name)
            ended, overdue = row.strip().split("|")
            return int(ended), int(overdue)
        with closing(sqlite3.connect(f"file:{self.sqlite_path}?mode=ro", uri=True, timeout=10)) as db:
            # GRDB stores dates as UTC text "YYYY-MM-DD HH:MM:SS.SSS".
            return db.execute(f"""SELECT count(*) FILTER (WHERE "endedAt" IS NOT NULL),
                count(*) FILTER (WHERE "endedAt" IS NULL
                                 AND "joinedAt" < strftime('%Y-%m-%d %H:%M:%f', 'now', '-{self.OVERDUE} seconds'))
                FROM "call" """).fetchone()


def children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry))
    return found


def machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / CLOCK_TICKS, sum(fields) / CLOCK_TICKS


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of `pids` (children that already exited are not counted)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


class Node:
    """One `chorus serve` process; `start` returns once its banner (the curl line) is printed."""

    def __init__(self, binary: str, db: str, log: Path, index: int, cluster: bool):
        self.port = postgres.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [
            binary, "serve", "--db", db, "--dev-app", "--http-host", "127.0.0.1", "--http-port", str(self.port),
            "--media-host", "127.0.0.1", "--media-port", "0", "--public-ip", "127.0.0.1", "--rate-limit", "0",
            "--log-level", "warning", "--consent-timeout", str(CONSENT_TIMEOUT),
            *(["--node-id", f"n{index}", "--advertise-url", self.url] if cluster else [])]
        self.log = log
        self.process: subprocess.Popen[str] | None = None
        self.key = self.secret = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CHORUS_")}
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"===== {' '.join(self.command)}\n")
            log.flush()
            self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                                            env=env, text=True, bufsize=1, start_new_session=True)
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            for line in self.process.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                raise RuntimeError(f"chorus exited with {self.process.wait()} before its banner; see {self.log}")
            stripped = line.strip()
            if stripped.startswith("key:"):
                self.key = stripped.removeprefix("key:").strip()
            elif stripped.startswith("secret:"):
                self.secret = stripped.removeprefix("secret:").strip()
            elif CURL_LINE.search(line):
                return
        raise RuntimeError(f"no banner within 60 s; see {self.log}")

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 30 s; the exit status (None if it had to be killed)."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


# -- the load: runs in CLIENT_PROCS spawned processes, CLIENTS threads in all ------------------------

def signature(user: str, key: str, sequence: int, secret: str) -> str:
    return base64.b64encode(hashlib.sha1(f"{user}{key}{sequence}{secret}".encode()).digest()).decode()


def client_thread(kind: str, index: int, urls: list[str], sticky: bool, key: str, secret: str, tag: str,
                  start: float, window: tuple[float, float], out: list[dict]) -> None:
    import requests

    session = requests.Session()
    auth = "Basic " + base64.b64encode(f"{key}:{secret}".encode()).decode()
    result = {"ok": 0, "hops": 0, "errors": {}, "latencies": [], "samples": [], "perSecond": [0] * int(DURATION + 1)}
    sequences = [0] * USERS_PER_THREAD
    owners: dict[str, str] = {}  # sticky: room → the URL a 307 named for it
    n = 0
    time.sleep(max(0.0, start - time.monotonic()))
    while True:
        began = time.monotonic()
        if began >= window[1]:
            break
        url = urls[(index + n) % len(urls)]
        hops = 0
        try:
            if kind == "registrations":
                slot = n % USERS_PER_THREAD
                user = f"{tag}-c{index}-u{slot}"
                sequences[slot] += 1
                body = {"applicationKey": key, "sequence": sequences[slot],
                        "signature": signature(user, key, sequences[slot], secret)}
                reply = session.post(f"{url}/v1/users/{user}/registrations", json=body, timeout=15)
                expected = 201
            else:
                room = f"bench-{(index + n * CLIENTS) % ROOMS}"
                target = owners.get(room) or f"{url}/v1/rooms/{room}/participants"
                body = {"sdp": OFFER, "userId": f"{tag}-c{index}-j{n}"}
                for _ in range(3):
                    reply = session.post(target, json=body, headers={"Authorization": auth}, timeout=15,
                                         allow_redirects=False)
                    if reply.status_code != 307:
                        break
                    hops += 1
                    target = reply.headers["Location"]
                    if sticky:
                        owners[room] = target
                expected = 201
            outcome = str(reply.status_code)
            if reply.status_code != expected:
                try:
                    outcome += " " + reply.json()["error"]["code"]
                except Exception:  # noqa: BLE001 — any non-JSON body
                    pass
        except requests.RequestException as error:
            outcome = type(error).__name__
        ended = time.monotonic()
        n += 1
        if began < window[0] or ended > window[1]:
            continue
        if outcome == str(expected):
            result["ok"] += 1
            result["hops"] += hops
            result["latencies"].append(ended - began)
            result["perSecond"][int(ended - window[0])] += 1
        else:
            result["errors"][outcome] = result["errors"].get(outcome, 0) + 1
            if len(result["samples"]) < 3:
                result["samples"].append(f"{outcome}: {reply.text[:200] if outcome[0].isdigit() else ''}")
    out.append(result)


def client_process(kind: str, first: int, threads: int, urls: list[str], sticky: bool, key: str, secret: str,
                   tag: str, start: float, window: tuple[float, float], results: multiprocessing.Queue) -> None:
    out: list[dict] = []
    workers = [threading.Thread(target=client_thread,
                                args=(kind, first + i, urls, sticky, key, secret, tag, start, window, out))
               for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    results.put(out)


def measure(kind: str, urls: list[str], sticky: bool, key: str, secret: str, tag: str, server_pids: list[int],
            database: Database) -> dict:
    """One cell: the load for WARMUP + DURATION seconds; the rate and CPU over the DURATION."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    start = time.monotonic() + 3  # the spawned processes import requests first
    window = (start + WARMUP, start + WARMUP + DURATION)
    per_proc = [CLIENTS // CLIENT_PROCS + (1 if i < CLIENTS % CLIENT_PROCS else 0) for i in range(CLIENT_PROCS)]
    procs = []
    for i, threads in enumerate(per_proc):
        procs.append(context.Process(target=client_process, args=(
            kind, sum(per_proc[:i]), threads, urls, sticky, key, secret, tag, start, window, results)))
        procs[-1].start()
    client_pids = [p.pid for p in procs]
    time.sleep(max(0.0, window[0] - time.monotonic()))
    commits_before, calls_before = database.commits(), database.calls()
    pg_before = {pid: cpu_seconds([pid]) for pid in database.pids()}
    before = (cpu_seconds(server_pids), sum(pg_before.values()), cpu_seconds(client_pids))
    nodes_before, machine_before = [cpu_seconds([pid]) for pid in server_pids], machine_busy()
    time.sleep(max(0.0, window[1] - time.monotonic()))
    # PostgreSQL backends started inside the window (a pool growing) count from zero.
    after = (cpu_seconds(server_pids), cpu_seconds(list(pg_before)) + cpu_seconds(
        [pid for pid in database.pids() if pid not in pg_before]), cpu_seconds(client_pids))
    nodes_after, machine_after = [cpu_seconds([pid]) for pid in server_pids], machine_busy()
    commits_after, calls_after = database.commits(), database.calls()
    threads = [r for _ in procs for r in results.get(timeout=60)]
    for proc in procs:
        proc.join(timeout=30)
    ok = sum(t["ok"] for t in threads)
    errors: dict[str, int] = {}
    for t in threads:
        for outcome, count in t["errors"].items():
            errors[outcome] = errors.get(outcome, 0) + count
    latencies = sorted(x for t in threads for x in t["latencies"])
    cpu = [(a - b) for a, b in zip(after, before)]
    per_request = (lambda seconds: round(seconds / ok * 1000, 3) if ok else None)
    return {
        "rate": round(ok / DURATION, 1), "ok": ok, "errors": errors,
        "errorSamples": [s for t in threads for s in t["samples"]][:5],
        # PostgreSQL's committed transactions (each autocommit statement is one) per request, from
        # pg_stat_database: approximate (backends report about once a second), and including the
        # calls' ends (consent timeouts) and the nodes' heartbeats in the window.
        "pgCommitsPerOk": (round((commits_after - commits_before) / ok, 2)
                           if ok and commits_before is not None else None),
        "perSecond": [sum(t["perSecond"][i] for t in threads) for i in range(int(DURATION))],
        # Calls' ends (consent timeouts) written per second in the window, and the calls overdue
        # (joined more than OVERDUE s ago, not ended in the database) at its end: whether the
        # call records keep up with the joins.
        "endsWrittenPerSecond": round((calls_after[0] - calls_before[0]) / DURATION, 1),
        "overdueEnds": calls_after[1],
        "hopsPerOk": round(sum(t["hops"] for t in threads) / ok, 3) if ok else None,
        "p50ms": round(latencies[len(latencies) // 2] * 1000, 2) if latencies else None,
        "p99ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2) if latencies else None,
        "cpuMsPerOk": {"chorus": per_request(cpu[0]), "postgres": per_request(cpu[1]), "client": per_request(cpu[2])},
        "cpuCores": {"chorus": round(cpu[0] / DURATION, 2), "postgres": round(cpu[1] / DURATION, 2),
                     "client": round(cpu[2] / DURATION, 2),
                     "perNode": [round((a - b) / DURATION, 2) for a, b in zip(nodes_after, nodes_before)],
                     # everything that ran, ours and not: how close the machine was to saturation
                     "machineBusy": round((machine_after[0] - machine_before[0]) / DURATION, 2),
                     "machineBusyFraction": round((machine_after[0] - machine_before[0])
                                                  / (machine_after[1] - machine_before[1]), 2)},
    }


# -- the cells ---------------------------------------------------------------------------------------

def wait_live(node: Node, count: int, auth: tuple[str, str]) -> None:
    import requests

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        reply = requests.get(f"{node.url}/v1/nodes", auth=auth, timeout=5)
        if reply.status_code == 200 and sum(1 for n in reply.json()["nodes"] if n["live"]) == count:
            return
        time.sleep(0.2)
    raise RuntimeError(f"not {count} live nodes")


def run_cell(binary: str, config: str, round_index: int, pg: DurablePostgres | None, scratch: Path,
             out: Path) -> dict:
    backend, count, kinds, sticky = CONFIGS[config]
    tag = f"r{round_index}"
    if backend == "sqlite":
        db = str(scratch / f"{config}-{round_index}.sqlite")
        database = Database(sqlite_path=db)
    else:
        name = pg.create_database()
        db = pg.url(name)
        database = Database(pg=pg, name=name)
    nodes = [Node(binary, db, out / f"{config}-r{round_index}-n{i}.log", i, count > 1) for i in range(count)]
    cell: dict = {"config": config, "round": round_index}
    try:
        for node in nodes:
            node.start()
        auth = (nodes[0].key, nodes[0].secret)
        if count > 1:
            wait_live(nodes[0], count, auth)
        urls = [node.url for node in nodes]
        pids = [node.process.pid for node in nodes]
        for kind in kinds:
            cell[kind] = measure(kind, urls, sticky, auth[0], auth[1], tag, pids, database)
            print(f"  {config} round {round_index + 1} {kind}: {cell[kind]['rate']}/s "
                  f"(p50 {cell[kind]['p50ms']} ms, errors {cell[kind]['errors'] or 'none'}, "
                  f"hops/ok {cell[kind]['hopsPerOk']}, PostgreSQL commits/ok {cell[kind]['pgCommitsPerOk']}, "
                  f"ends written/s {cell[kind]['endsWrittenPerSecond']}, overdue ends {cell[kind]['overdueEnds']}, "
                  f"CPU-ms/ok {cell[kind]['cpuMsPerOk']}, "
                  f"cores {cell[kind]['cpuCores']})", flush=True)
        dead = [i for i, node in enumerate(nodes) if node.process.poll() is not None]
        if dead:
            cell["crashed"] = dead
    finally:
        cell["exit"] = [node.stop() for node in nodes]
        for suffix in ("", "-wal", "-shm"):
            if backend == "sqlite":
                Path(db + suffix).unlink(missing_ok=True)
    if any(code != 0 for code in cell["exit"]):
        print(f"  {config} round {round_index + 1}: node exit statuses {cell['exit']}", flush=True)
    return cell


def spread(values: list[float], digits: int = 0) -> str:
    if not values:
        return "n/a"
    f = f"{{:,.{digits}f}}"
    return f"{f.format(statistics.median(values))} ({f.format(min(values))}–{f.format(max(values))})"


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    out = Path(sys.argv[3] if len(sys.argv) > 3 else "bench-output/cluster").resolve()
    out.mkdir(parents=True, exist_ok=True)
    configs = os.environ.get("CONFIGS", ",".join(CONFIGS)).split(",")
    # SIGTERM (a timeout, Ctrl-C's cousin) still stops the nodes and PostgreSQL.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"{sys.argv[0]}: terminated"))
    scratch = Path(tempfile.mkdtemp(prefix="chorus-cluster-bench-"))
    pg = DurablePostgres() if any(CONFIGS[c][0] == "postgres" for c in configs) else None
    cells = []
    try:
        for round_index in range(rounds):
            for config in configs:
                cells.append(run_cell(binary, config, round_index, pg, scratch, out))
    finally:
        if pg:
            pg.remove()
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n{CLIENTS} clients, {DURATION:g} s per cell after {WARMUP:g} s of warm-up, {rounds} round(s), "
          f"{ROOMS} rooms, PostgreSQL fsync {os.environ.get('PG_FSYNC', 'on')}; median (min–max)")
    print("| configuration | registrations/s | joins/s | registration CPU-ms (chorus + PostgreSQL) "
          "| join CPU-ms (chorus + PostgreSQL) | join p50 | machine busy (of 2 cores) | errors |")
    print("|---|---|---|---|---|---|---|---|")
    for config in configs:
        mine = [c for c in cells if c["config"] == config]

        def values(kind: str, pick) -> list[float]:
            return [pick(c[kind]) for c in mine if kind in c and pick(c[kind]) is not None]

        cpu = lambda kind: spread(values(kind, lambda m: m["cpuMsPerOk"]["chorus"]), 2) + " + " + spread(  # noqa: E731
            values(kind, lambda m: m["cpuMsPerOk"]["postgres"]), 2)
        errors = sum(sum(c[k]["errors"].values()) for c in mine for k in KINDS if k in c)
        print(f"| {config} | {spread(values('registrations', lambda m: m['rate']))} "
              f"| {spread(values('joins', lambda m: m['rate']))} | {cpu('registrations')} | {cpu('joins')} "
              f"| {spread(values('joins', lambda m: m['p50ms']), 1)} ms "
              f"| {spread([c[k]['cpuCores']['machineBusy'] for c in mine for k in KINDS if k in c], 2)} | {errors} |")
    print("\n| configuration, request | p99 | redirects per 201 | PostgreSQL commits per 201 (≈) | client CPU-ms per 201 "
          "| call ends written/s | overdue ends at the window's end |")
    print("|---|---|---|---|---|---|---|")
    for config in configs:
        for kind in KINDS:
            measured = [c[kind] for c in cells if c["config"] == config and kind in c]
            if not measured:
                continue
            pick = lambda field: [m[field] for m in measured if m[field] is not None]  # noqa: E731
            print(f"| {config}, {kind} | {spread(pick('p99ms'), 1)} ms | {spread(pick('hopsPerOk'), 2)} "
                  f"| {spread(pick('pgCommitsPerOk'), 2)} "
                  f"| {spread([m['cpuMsPerOk']['client'] for m in measured if m['cpuMsPerOk']['client']], 2)} "
                  f"| {spread(pick('endsWrittenPerSecond'))} | {spread(pick('overdueEnds'))} |")
    print("RESULTS " + json.dumps({"clients": CLIENTS, "duration": DURATION, "warmup": WARMUP, "rooms": ROOMS,
                                   "pgFsync": os.environ.get("PG_FSYNC", "on"), "cells": cells}))


if __name__ == "__main__":
    main()
