"""Server CPU per packet at the media edge, UDP against ICE-TCP (issue 15: "the CPU cost per
packet of a TCP participant against a UDP one").

A release `chorus serve` on loopback; this script sends it SRTP-sized packets (160 B, a 20 ms
Opus frame with SRTP overhead) from a socket no call is bound to, so each one costs the server
exactly its edge work: read, demultiplex (RFC 7983), route (a table lookup that finds no call),
count the drop. For ICE-TCP that adds the connection's reads and RFC 4571 deframing; what
follows the edge (SRTP, the room) is the same for both transports and is left out. CPU is the
server process's user+system time from /proc, divided by the packets it counted in
(`chorus_media_datagrams_total{direction="in"}`), so packets lost on the way do not flatter it.

Rounds interleave UDP and TCP; TCP runs twice: one frame per send (what a paced 50 packet/s
stream looks like) and 32 frames per send (a client catching up after a stall).

Usage: python3 Benchmarks/EdgeIngress/ingress.py [CHORUS_BIN] [ROUNDS]
"""

from __future__ import annotations

import os
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

PACKET = bytes([0x80, 0x6F]) + os.urandom(158)
COUNT = 100_000


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def datagrams_in(http_port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10).read().decode()
    match = re.search(r'chorus_media_datagrams_total\{direction="in"\} (\S+)', text)
    return float(match.group(1)) if match else 0.0


def start(binary: str, folder: str):
    process = subprocess.Popen(
        [binary, "serve", "--db", f"{folder}/c.sqlite", "--http-host", "127.0.0.1", "--http-port", "0",
         "--media-host", "127.0.0.1", "--media-port", "0", "--rate-limit", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    http = media = None
    deadline = time.monotonic() + 30
    while (http is None or media is None) and time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            time.sleep(0.05)
            continue
        if m := re.search(r"http=\S+:(\d+)", line):
            http = int(m.group(1))
        if m := re.search(r"media=udp/(\d+)", line):
            media = int(m.group(1))
    return process, http, media


def send_udp(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(COUNT):
        sock.sendto(PACKET, ("127.0.0.1", port))
        if i % 64 == 63:
            time.sleep(0.0002)  # keep the receive buffer from overflowing
    sock.close()


def send_tcp(port: int, per_send: int) -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    frame = struct.pack(">H", len(PACKET)) + PACKET
    chunk = frame * per_send
    for _ in range(COUNT // per_send):
        sock.sendall(chunk)
    time.sleep(0.5)
    sock.close()


def measure(pid: int, http: int, send) -> float:
    before_cpu, before_in = cpu_seconds(pid), datagrams_in(http)
    send()
    time.sleep(1.0)
    after_cpu, after_in = cpu_seconds(pid), datagrams_in(http)
    counted = after_in - before_in
    return (after_cpu - before_cpu) / counted * 1e6 if counted else float("nan")


def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/chorus"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    results: dict[str, list[float]] = {"udp": [], "tcp 1 frame/send": [], "tcp 32 frames/send": []}
    with tempfile.TemporaryDirectory() as folder:
        process, http, media = start(binary, folder)
        try:
            for _ in range(rounds):
                results["udp"].append(measure(process.pid, http, lambda: send_udp(media)))
                results["tcp 1 frame/send"].append(measure(process.pid, http, lambda: send_tcp(media, 1)))
                results["tcp 32 frames/send"].append(measure(process.pid, http, lambda: send_tcp(media, 32)))
        finally:
            process.terminate()
            process.wait(timeout=20)
    print(f"server CPU per packet received at the media edge, µs ({rounds} interleaved rounds of {COUNT:,} packets)")
    for name, values in results.items():
        print(f"  {name:20s} median {statistics.median(values):.2f}  range {min(values):.2f}–{max(values):.2f}")


if __name__ == "__main__":
    main()
