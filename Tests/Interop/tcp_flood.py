"""Half-open ICE-TCP connections for test_tcp_half_open.py, in a process of its own so that
10,000 sockets never stall the test's aiortc event loop.

    python tcp_flood.py PORT CONNECTIONS HOSTS

opens CONNECTIONS non-blocking TCP connections to 127.0.0.1:PORT from HOSTS source addresses
127.77.x.y (all of 127/8 is local on Linux), host after host (CONNECTIONS / HOSTS each, so the
first hosts meet the per-host cap and the later ones the total cap), none of which completes an
RFC 4571 frame: a third send nothing, a third a length prefix saying 4,000 and then only 10
bytes, a third a single byte. It keeps every connection the server keeps, and notes when the
server closes one (EOF or reset). Every 0.25 s, and once more when it stops, it prints one
JSON line of counts, with `t` on the system-wide monotonic clock (the test's time.monotonic()).
It stops when stdin closes or a line arrives on it, and resets whatever is still open.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import selectors
import socket
import struct
import sys
import time

IP_BIND_ADDRESS_NO_PORT = 24  # Linux: take the source port at connect, not at bind
PAYLOADS = (b"", struct.pack(">H", 4000) + os.urandom(10), b"\x00")


def source_host(index: int) -> str:
    return f"127.77.{index // 250}.{index % 250 + 1}"


def main() -> None:
    port, connections, hosts = (int(arg) for arg in sys.argv[1:4])
    per_host = -(-connections // hosts)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    assert hard >= connections + 100, f"RLIMIT_NOFILE hard limit {hard} is too low for {connections} sockets"

    selector = selectors.DefaultSelector()
    selector.register(sys.stdin, selectors.EVENT_READ, "stop")
    counts = dict(initiated=0, connected=0, connect_failed=0, server_closed=0, send_failed=0)
    first_close: float | None = None
    closed_at: list[float] = []  # when the server closed connections that had connected
    started = time.monotonic()

    def report(final: bool = False) -> None:
        open_now = counts["connected"] - counts["server_closed"]
        pending = counts["initiated"] - counts["connected"] - counts["connect_failed"]
        print(json.dumps(dict(counts, t=time.monotonic(), started=started, open=open_now, pending=pending,
                              first_close=first_close, final=final)), flush=True)

    def on_event(sock: socket.socket, state: str, index: int) -> None:
        nonlocal first_close
        if state == "connecting":
            error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                counts["connect_failed"] += 1
                selector.unregister(sock)
                sock.close()
                return
            counts["connected"] += 1
            payload = PAYLOADS[index % len(PAYLOADS)]
            try:
                if payload:
                    sock.send(payload)
            except OSError:
                counts["send_failed"] += 1  # reset already: refused over a limit
            selector.modify(sock, selectors.EVENT_READ, ("open", index))
            return
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            return  # the server never sends on an unclaimed connection; ignore
        counts["server_closed"] += 1
        now = time.monotonic()
        first_close = first_close or now
        closed_at.append(now)
        selector.unregister(sock)
        sock.close()

    def poll(timeout: float) -> bool:
        for key, _ in selector.select(timeout):
            if key.data == "stop":
                return False
            state, index = key.data
            on_event(key.fileobj, state, index)
        return True

    next_report = time.monotonic()
    for index in range(connections):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind((source_host(index // per_host), 0))
        code = sock.connect_ex(("127.0.0.1", port))
        counts["initiated"] += 1
        if code not in (0, errno.EINPROGRESS):
            counts["connect_failed"] += 1
            sock.close()
            continue
        selector.register(sock, selectors.EVENT_WRITE, ("connecting", index))
        if index % 100 == 99:
            poll(0)
        if time.monotonic() >= next_report:
            report()
            next_report += 0.25
    report()
    next_report = time.monotonic() + 0.25
    while poll(max(0.0, next_report - time.monotonic())):
        if time.monotonic() >= next_report:
            report()
            next_report += 0.25
    report(final=True)
    # Each close sends a reset over loopback, which queues it for the kernel's receive softirq
    # (at most net.core.netdev_max_backlog = 1,000 per CPU, the rest dropped and counted in
    # /proc/net/softnet_stat). Thousands of closes in a tight loop on a loaded machine overflow
    # that queue, and a connection whose reset was dropped looks, to the server, like a client
    # gone silent. Pausing every 100 closes lets the softirq drain the queue.
    for closed, key in enumerate(list(selector.get_map().values())):
        if key.data != "stop":
            key.fileobj.close()
        if closed % 100 == 99:
            time.sleep(0.002)


if __name__ == "__main__":
    main()
