"""Network namespaces for tests that need a client on another network: a namespace joined to the
test's own namespace by a veth pair on a private /30, with an nftables table of its own (to drop
UDP, say), made and removed by the test. Needs root (CI runs as root) and iproute2 + nftables
(installed by `make deps`). Nothing leaves the machine: the only route out of the namespace is
the veth to the host side.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from dataclasses import dataclass, field

_counter = itertools.count()


def run(*command: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=20)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()}")
    return result.stdout


@dataclass
class Namespace:
    """`name`, reached from the host at `host_ip`; inside, its address is `inner_ip`."""

    name: str
    host_ip: str
    inner_ip: str
    veth: str
    host_ip6: str = ""
    inner_ip6: str = ""
    processes: list[subprocess.Popen] = field(default_factory=list)

    @classmethod
    def create(cls) -> "Namespace":
        # A name still taken (a namespace or veth left by a run that was killed) is skipped.
        index = (os.getpid() * 7 + next(_counter)) % 16000
        while os.path.exists(f"/run/netns/chorus-t{index}") or os.path.exists(f"/sys/class/net/ch{index}"):
            index = (index + 1 + next(_counter)) % 16000
        name, veth = f"chorus-t{index}", f"ch{index}"
        subnet = f"10.{200 + index // 4000}.{(index // 16) % 250}.{(index % 16) * 16}"
        base = subnet.rsplit(".", 1)
        host_ip, inner_ip = f"{base[0]}.{int(base[1]) + 1}", f"{base[0]}.{int(base[1]) + 2}"
        run("ip", "netns", "add", name)
        try:
            run("ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "i")
            run("ip", "link", "set", veth + "i", "netns", name)
            run("ip", "addr", "add", f"{host_ip}/28", "dev", veth)
            run("ip", "link", "set", veth, "up")
            inside = ("ip", "netns", "exec", name)
            run(*inside, "ip", "addr", "add", f"{inner_ip}/28", "dev", veth + "i")
            run(*inside, "ip", "link", "set", veth + "i", "up")
            run(*inside, "ip", "link", "set", "lo", "up")
            # A default route via the host side: browsers find "the" local address by routing
            # toward a public address (no packet is sent) and gather no candidate without one.
            # The firewall below lets nothing out but to the host side.
            run(*inside, "ip", "route", "add", "default", "via", host_ip)
            # IPv6 too, on a unique local prefix (no duplicate address detection: nothing else
            # is on this link).
            prefix6 = f"fd42:{index:x}::"
            run("ip", "-6", "addr", "add", f"{prefix6}1/64", "dev", veth, "nodad")
            run(*inside, "ip", "-6", "addr", "add", f"{prefix6}2/64", "dev", veth + "i", "nodad")
        except Exception:
            subprocess.run(["ip", "link", "del", veth], capture_output=True)
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            raise
        return cls(name, host_ip, inner_ip, veth, f"fd42:{index:x}::1", f"fd42:{index:x}::2")

    def prefix(self) -> list[str]:
        """The command prefix that runs a program inside."""
        return ["ip", "netns", "exec", self.name]

    def nft(self, ruleset: str) -> None:
        subprocess.run([*self.prefix(), "nft", "-f", "-"], input=ruleset, text=True, check=True,
                       capture_output=True, timeout=20)

    def drop_udp(self) -> None:
        """Every UDP datagram in or out of the namespace is dropped (a firewall that allows TCP
        only); loopback inside stays open. Counted, so a test can show the rule was hit."""
        self.nft("""
            table inet chorus_test {
                chain output { type filter hook output priority 0; policy accept;
                    oifname "lo" accept
                    meta l4proto udp counter drop
                    ip daddr != %s drop
                }
                chain input { type filter hook input priority 0; policy accept;
                    iifname "lo" accept
                    meta l4proto udp counter drop
                }
            }""" % self.host_ip)

    def allow_udp(self) -> None:
        """Removes the `drop_udp` firewall."""
        run(*self.prefix(), "nft", "delete", "table", "inet", "chorus_test")

    def dropped_udp_packets(self) -> int:
        text = run(*self.prefix(), "nft", "list", "table", "inet", "chorus_test")
        return sum(int(line.split("packets")[1].split()[0]) for line in text.splitlines() if "packets" in line)

    def link(self, up: bool) -> None:
        """Takes the namespace's side of the link down (a blackout: the host side loses carrier,
        nothing gets through either way) or back up, with its default route."""
        inside = self.prefix()
        run(*inside, "ip", "link", "set", self.veth + "i", "up" if up else "down")
        if up:
            subprocess.run([*inside, "ip", "route", "replace", "default", "via", self.host_ip],
                           capture_output=True, timeout=20)

    def shape(self, kbit: int | None) -> None:
        """Limits what reaches the namespace to `kbit` kbit/s (a token bucket on the host side's
        egress: 4 KB of burst, packets dropped past 300 ms of queue, as a thin access link
        does), or lifts the limit (None). This kernel has no netem; tbf is there."""
        if kbit is None:
            subprocess.run(["tc", "qdisc", "del", "dev", self.veth, "root"], capture_output=True, timeout=20)
            return
        run("tc", "qdisc", "replace", "dev", self.veth, "root", "tbf", "rate", f"{kbit}kbit", "burst", "4kb",
            "latency", "300ms")

    def move(self) -> str:
        """Gives the namespace a second address and kills every UDP path from the first (a
        laptop that moved to another network: the old address no longer reaches anyone over
        UDP). TCP from the old address stays, so the test keeps its DevTools handle. Returns
        the new address."""
        base, last = self.inner_ip.rsplit(".", 1)
        new_ip = f"{base}.{int(last) + 3}"
        run(*self.prefix(), "ip", "addr", "add", f"{new_ip}/28", "dev", self.veth + "i")
        self.nft("""
            table inet chorus_move {
                chain output { type filter hook output priority 0; policy accept;
                    ip saddr %s meta l4proto udp counter drop
                }
            }""" % self.inner_ip)
        return new_ip

    def spawn(self, command: list[str], **kwargs) -> subprocess.Popen:
        """Starts `command` inside; it is killed when the namespace is removed."""
        process = subprocess.Popen([*self.prefix(), *command], start_new_session=True, **kwargs)
        self.processes.append(process)
        return process

    def remove(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        subprocess.run(["ip", "link", "del", self.veth], capture_output=True, timeout=20)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=20)
