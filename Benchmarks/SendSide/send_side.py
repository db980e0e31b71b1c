"""ICE-TCP against UDP past the media edge (issue 15's leftovers): the server's CPU per packet it
sends, and mouth-to-ear latency under random packet loss.

Everything runs in a network namespace this script creates (root: `ip netns`), so the loss
rules touch nothing else on the machine: a release `chorus serve --dev-app` on the namespace's
loopback, and `chorus load` beside it, once with UDP and once with `--tcp` (ICE-TCP to the
server's passive candidate, RFC 4571 framing), interleaved.

- **send**: one room of 60, one talker, DTX as negotiated: the server sends the mix to 59
  listeners (~2,950 packets a second) and receives ~200 (the talker, DTX updates of the others).
  Per steady second of the run, server CPU (cores, from /proc) divided by the packets the
  listeners received: µs of server CPU per packet sent (receive work is ~7 % of the packets and
  included; the generator shares the 2 cores).
- **loss**: two rooms of five, one talker each, two probe listeners per room timing the talker's
  tone-burst onsets: mouth-to-ear p50/p95 with nftables dropping N % of the packets to and from
  the media port, each way (`numgen random mod 100 < N drop` on the namespace's lo). TCP
  retransmits what is dropped, so its cost is delay (head-of-line blocking); UDP's is loss.

Usage: python3 Benchmarks/SendSide/send_side.py [CHORUS_BIN] [ROUNDS] [OUT]
Prints two tables; each run's results.json is kept under OUT (bench-output/send-side).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

MEDIA_PORT = 41_000
LOSSES = (0, 2, 5)


def run(*command: str, check: bool = True) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()}")
    return result.stdout


class Bench:
    def __init__(self, binary: str, out: Path):
        self.binary, self.out = binary, out
        self.ns = f"chorus-ss{os.getpid() % 10000}"
        run("ip", "netns", "add", self.ns)
        self.inside("ip", "link", "set", "lo", "up")
        self.server = None

    def inside(self, *command: str, check: bool = True) -> str:
        return run("ip", "netns", "exec", self.ns, *command, check=check)

    def start_server(self) -> None:
        db = self.out / "server.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        self.server = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, self.binary, "serve", "--dev-app", "--db", str(db),
             "--http-host", "127.0.0.1", "--http-port", "0", "--media-host", "127.0.0.1",
             "--media-port", str(MEDIA_PORT), "--public-ip", "127.0.0.1", "--rate-limit", "0",
             "--log-level", "warning"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        key = secret = port = None
        deadline = time.monotonic() + 60
        while not (key and secret and port) and time.monotonic() < deadline:
            line = self.server.stdout.readline()
            if not line:
                time.sleep(0.05)
                continue
            stripped = line.strip()
            if stripped.startswith("key:"):
                key = stripped.removeprefix("key:").strip()
            elif stripped.startswith("secret:"):
                secret = stripped.removeprefix("secret:").strip()
            elif m := re.search(r"http://127\.0\.0\.1:(\d+)/v1/rooms", line):
                port = int(m.group(1))
        if not (key and secret and port):
            raise RuntimeError("the server did not print its banner")
        self.key, self.secret, self.http = key, secret, port

    def stop_server(self) -> None:
        if self.server:
            self.server.terminate()
            self.server.wait(timeout=30)
            self.server = None

    def set_loss(self, percent: int) -> None:
        self.inside("nft", "delete", "table", "inet", "lossy", check=False)
        if percent == 0:
            return
        self.inside("nft", "add", "table", "inet", "lossy")
        self.inside("nft", "add", "chain", "inet", "lossy", "input",
                    "{ type filter hook input priority 0; policy accept; }")
        for direction in ("dport", "sport"):
            self.inside("nft", "add", "rule", "inet", "lossy", "input", "meta", "l4proto", "{ udp, tcp }", "th", direction,
                        str(MEDIA_PORT), "numgen", "random", "mod", "100", "lt", str(percent), "drop")

    def load(self, name: str, tcp: bool, *scenario: str) -> dict:
        output = self.out / name
        command = ["ip", "netns", "exec", self.ns, self.binary, "load", "--url", f"http://127.0.0.1:{self.http}",
                   "--app-key", self.key, "--app-secret", self.secret, "--server-pid", str(self.server_pid()),
                   "--output", str(output), "--quiet", *scenario] + (["--tcp"] if tcp else [])
        subprocess.run(command, capture_output=True, text=True, timeout=600)
        return json.loads((output / "results.json").read_text())

    def server_pid(self) -> int:
        # `ip netns exec` execs the server, so the child's pid is the server's.
        return self.server.pid

    def remove(self) -> None:
        self.stop_server()
        run("ip", "netns", "delete", self.ns, check=False)


def send_cost(results: dict) -> float:
    """µs of server CPU per packet the listeners received, over the steady seconds."""
    steady = [s for s in results["samples"] if s["established"] == results["participants"] and s.get("serverCPUCores")]
    steady = steady[2:]  # the first seconds after the last join still settle
    cores = sum(s["serverCPUCores"] for s in steady)
    packets = sum(s["audioPacketsReceived"] for s in steady)
    return cores / packets * 1e6 if packets else float("nan")


def spread(values: list[float], digits: int = 1) -> str:
    values = [v for v in values if v == v]
    if not values:
        return "n/a"
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main() -> None:
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/release/chorus")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    out = Path(sys.argv[3] if len(sys.argv) > 3 else "bench-output/send-side").resolve()
    out.mkdir(parents=True, exist_ok=True)
    bench = Bench(binary, out)
    send: dict[str, list[float]] = {"udp": [], "tcp": []}
    loss: dict[tuple[str, int], list[dict]] = {}
    try:
        for round_index in range(rounds):
            for transport in ("udp", "tcp"):
                bench.set_loss(0)
                bench.start_server()
                try:
                    results = bench.load(f"send-{transport}-{round_index}", transport == "tcp", "--rooms", "1",
                                         "--participants", "60", "--talkers", "1", "--duration", "20",
                                         "--ramp-up", "30")
                finally:
                    bench.stop_server()
                send[transport].append(send_cost(results))
                print(f"send {transport} round {round_index}: {send[transport][-1]:.2f} µs/packet, "
                      f"established {results['established']}, loss {results['audioLossPercent']:.2f} %", flush=True)
            for percent in LOSSES:
                for transport in ("udp", "tcp"):
                    bench.set_loss(percent)
                    bench.start_server()
                    try:
                        results = bench.load(f"loss{percent}-{transport}-{round_index}", transport == "tcp", "--rooms",
                                             "2", "--participants", "5", "--talkers", "1", "--duration", "20",
                                             "--ramp-up", "10")
                    finally:
                        bench.stop_server()
                        bench.set_loss(0)
                    loss.setdefault((transport, percent), []).append(results)
                    m2e = results["mouthToEar"]
                    print(f"loss {percent} % {transport} round {round_index}: p50 {m2e['p50']:.0f} ms, "
                          f"p95 {m2e['p95']:.0f} ms, onsets {m2e['count']}, audio loss "
                          f"{results['audioLossPercent']:.2f} %, established {results['established']}", flush=True)
    finally:
        bench.remove()
    print(f"\nserver CPU per packet sent, µs, median (range) of {rounds} interleaved runs")
    for transport, values in send.items():
        print(f"  {transport}: {spread(values, 2)}")
    print("\nmouth-to-ear under random loss each way, median (range) over runs")
    print("| loss | transport | p50 ms | p95 ms | max ms | onsets | audio loss % |")
    for percent in LOSSES:
        for transport in ("udp", "tcp"):
            runs = loss[(transport, percent)]
            print(f"| {percent} % | {transport} | {spread([r['mouthToEar']['p50'] for r in runs], 0)} | "
                  f"{spread([r['mouthToEar']['p95'] for r in runs], 0)} | "
                  f"{spread([r['mouthToEar']['max'] for r in runs], 0)} | "
                  f"{sum(r['mouthToEar']['count'] for r in runs)} | "
                  f"{spread([r['audioLossPercent'] for r in runs], 2)} |")


if __name__ == "__main__":
    main()
