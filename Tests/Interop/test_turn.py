"""TURN relays (issue 15 item 2): a browser that can reach nothing but its TURN server joins
through the relay, hears the room and is heard; one behind a symmetric NAT needs no relay; and
deploy/coturn/turnserver.conf works as shipped.

Relayed: headless Chromium runs in a network namespace whose nftables firewall lets it send to
one address and port only: coturn's, on the host side of the veth. The server's media port is
on that same address, but the firewall drops anything toward it (the test sends a UDP datagram
and opens a TCP connection to it from inside and shows both were dropped), so a direct path is
impossible. The page asks for `iceTransportPolicy: "relay"` with coturn as its only ICE server,
over UDP or over TCP (parametrized). Chromium allocates a relay address on coturn, coturn sends
its checks, DTLS and SRTP to Chorus's media port over UDP from that relay address, and Chorus
answers them there like any other source (ICE-lite: it answers valid checks from anywhere).
Shown: the browser's selected candidate pair is relay (over the parametrized transport) to the
server's host candidate; the participant is established; an aiortc talker on the host side hears
the browser's 660 Hz oscillator and the browser hears the talker's 440 Hz (FFT, as in
test_ice_tcp.py); and coturn's own per-allocation counters, logged when the browser's peer
connection closes, carried the call's packets to and from Chorus.

Symmetric NAT: the namespace sits behind an nftables NAT that gives every flow its own random
public port and lets in only replies. The browser, with no STUN or TURN server, joins directly
on a peer-reflexive pair, and both sides hear each other: the README's claim that such clients
need no TURN for a server with a reachable address.

coturn (Debian package `coturn`, `make deps`) runs as a plain child process of the test: no
systemd, no daemon mode, its log in the test's tmp_path.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac
import ipaddress
import json
import re
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import aioice.stun
import aioice.turn
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from browser_netns import CHROMIUM_RECEIVE, OSCILLATOR, BrowserCall, page_setup
from chromium import terminate, wait_for
from netns import Namespace, run

ROOM = "relayed"
REALM = "chorus.test"
USER, PASSWORD = "user", "pass"

SELECTED_PAIR = """
(async () => {
  const stats = await window.t.pc.getStats();
  let pair = null;
  stats.forEach((s) => { if (s.type === 'transport' && s.selectedCandidatePairId) pair = stats.get(s.selectedCandidatePairId); });
  if (!pair || pair.state !== 'succeeded') return null;
  const local = stats.get(pair.localCandidateId), remote = stats.get(pair.remoteCandidateId);
  return {localType: local.candidateType, localProtocol: local.protocol, relayProtocol: local.relayProtocol, localAddress: local.address,
          localPort: local.port, url: local.url, remoteType: remote.candidateType, remoteProtocol: remote.protocol,
          remoteAddress: remote.address, remotePort: remote.port,
          bytesSent: pair.bytesSent, bytesReceived: pair.bytesReceived};
})()
"""

# coturn's per-allocation report, written every 4096 packets and when the allocation ends:
# "peer usage" counts what went between the relay address and the peer (Chorus).
PEER_USAGE = re.compile(rf"peer usage: realm=<{REALM}>, username=<{USER}>, rp=(\d+), rb=(\d+), sp=(\d+), sb=(\d+)")


def free_port(host: str) -> int:
    """A port free on `host` for both TCP and UDP (coturn listens on both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind((host, 0))
            port = tcp.getsockname()[1]
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                    udp.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError("no port free for both TCP and UDP")


def allow_only(namespace: Namespace, port: int, protocol: str) -> None:
    """The namespace may send to `host_ip:port` over `protocol` and nothing else: every other
    packet out is dropped and counted. Loopback (the page's http.server, DevTools) stays open,
    as do the test's own DevTools connection in and its replies out."""
    namespace.nft(f"""
        table inet chorus_test {{
            chain output {{ type filter hook output priority 0; policy drop;
                oifname "lo" accept
                ip daddr {namespace.host_ip} {protocol} dport {port} counter accept comment "turn"
                ct state established,related accept
                ip daddr {namespace.host_ip} counter drop comment "direct"
                counter drop comment "other"
            }}
            chain input {{ type filter hook input priority 0; policy drop;
                iifname "lo" accept
                ct state established,related accept
                ip saddr {namespace.host_ip} tcp dport 9222 accept
                counter drop comment "other"
            }}
        }}""")


def rule_packets(namespace: Namespace, chain: str, comment: str) -> int:
    """Packets counted by the rule with `comment` in `chain`."""
    text = run(*namespace.prefix(), "nft", "list", "chain", "inet", "chorus_test", chain)
    for line in text.splitlines():
        if f'comment "{comment}"' in line:
            return int(line.split("packets")[1].split()[0])
    raise AssertionError(f"no rule {comment!r} in {chain}:\n{text}")


def listening(process: subprocess.Popen, host: str, port: int, log) -> bool:
    """Whether coturn (`process`) accepts TCP connections on `host:port` yet; fails the test with
    `log()` once it has exited."""
    if process.poll() is not None:
        pytest.fail(f"turnserver exited with {process.returncode}: {log()}")
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


class Coturn:
    """coturn on `host:port` (UDP and TCP), relaying from `host`, with one static long-term
    credential, logging to `log_path`."""

    def __init__(self, host: str, port: int, tmp_path: Path):
        self.host, self.port = host, port
        self.log_path = tmp_path / "turnserver.log"
        self.config = tmp_path / "turnserver.conf"
        self.config.write_text("\n".join([
            f"listening-ip={host}",
            f"listening-port={port}",
            # Relay addresses on the host side too: from there, coturn sends to Chorus's media port.
            f"relay-ip={host}",
            "min-port=49152", "max-port=65535",
            "fingerprint",
            "lt-cred-mech",
            f"user={USER}:{PASSWORD}",
            f"realm={REALM}",
            # Plain UDP and TCP only: the test is about relaying, not about TURN's own TLS.
            "no-tls", "no-dtls",
            # No CLI (it would listen on 127.0.0.1:5766, which a parallel run might hold), no
            # NAT-behaviour discovery (it would want a second listening address).
            "no-cli", "no-rfc5780",
            # Peers: coturn refuses loopback peers by default (and multicast ones here); the test
            # also denies the private range its namespaces use, as deploy/coturn/turnserver.conf
            # denies private ranges, and allows the one address Chorus's media port is on.
            # allowed-peer-ip wins over denied-peer-ip, so the relay reaches Chorus and nothing
            # else: the same shape a deployment uses, and proof the exception is enough.
            "no-multicast-peers",
            "denied-peer-ip=10.0.0.0-10.255.255.255",
            f"allowed-peer-ip={host}",
            # State and logs in the test's folder, not /var: the log is the evidence read below.
            f"userdb={tmp_path / 'turndb'}",
            f"pidfile={tmp_path / 'turnserver.pid'}",
            f"log-file={self.log_path}", "simple-log", "verbose",
        ]) + "\n")
        binary = shutil.which("turnserver")
        if binary is None:
            pytest.fail("coturn is not installed (`make deps` installs it)")
        self.stdout = open(tmp_path / "turnserver.stdout", "w")
        self.process = subprocess.Popen([binary, "-c", str(self.config)], stdout=self.stdout,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for("coturn listening", lambda: listening(self.process, self.host, self.port, self.log_tail), timeout=15,
                     detail=lambda: self.log_tail())
        except BaseException:
            self.stop()
            raise


    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, chars: int = 3000) -> str:
        """The log's end, or what coturn printed before it opened its log."""
        return self.log()[-chars:] or Path(self.stdout.name).read_text(errors="replace")[-chars:]

    def peer_usage(self) -> tuple[int, int, int, int] | None:
        """The last (rp, rb, sp, sb) coturn reported between relay and peer: packets and bytes
        received from Chorus, then sent to it. coturn's counters are totals since the allocation."""
        found = PEER_USAGE.findall(self.log())
        return tuple(int(n) for n in found[-1]) if found else None

    def stop(self) -> None:
        if self.process.poll() is None:
            terminate(self.process)
        self.stdout.close()


def page_offer(session: BrowserCall, config: dict) -> tuple[str, list[str]]:
    """The page's offer, a 660 Hz oscillator as microphone, for an RTCPeerConnection made with
    `config` (relay only through coturn, or plain), and its candidates."""
    sdp = session.page.evaluate(page_setup(OSCILLATOR, CHROMIUM_RECEIVE, json.dumps(config), gather_ms=10000))
    return sdp, [line for line in sdp.splitlines() if line.startswith("a=candidate:")]


def post_offer(session: BrowserCall, sdp: str) -> tuple[str, str, int]:
    """POSTs the offer; the call id, the answer and the answer's UDP media port."""
    call_id, answer = session.join(sdp)
    host = re.escape(session.namespace.host_ip)
    return call_id, answer, int(re.search(rf"a=candidate:\S+ 1 udp \d+ {host} (\d+) typ host", answer).group(1))


def connected_pair(session: BrowserCall, call_id: str, answer: str, detail=lambda: "") -> dict:
    """Applies the answer; once the participant is established, the browser's selected pair."""
    session.connect(call_id, answer, detail=detail)
    return wait_for("a selected pair", session.pumped(lambda: session.page.evaluate(SELECTED_PAIR)), timeout=10)


@pytest.fixture
def turn(namespace: Namespace, tmp_path: Path):
    coturn = Coturn(namespace.host_ip, free_port(namespace.host_ip), tmp_path)
    yield coturn
    coturn.stop()


def probe_direct(namespace: Namespace, host: str, port: int) -> None:
    """From inside, one UDP datagram and one TCP connection attempt to `host:port`; both must fail
    (a locally dropped packet fails its send with EPERM)."""
    script = ("import socket\n"
              "outcomes = []\n"
              "for send in (lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', (%r, %d)),\n"
              "             lambda: socket.create_connection((%r, %d), timeout=1)):\n"
              "    try:\n"
              "        send(); outcomes.append('sent')\n"
              "    except OSError as error:\n"
              "        outcomes.append(type(error).__name__)\n"
              "print(' '.join(outcomes))\n") % (host, port, host, port)
    result = subprocess.run([*namespace.prefix(), "python3", "-c", script], capture_output=True, text=True, timeout=15)
    assert result.returncode == 0 and "sent" not in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_chromium_behind_a_turn_relay_hears_and_is_heard(transport, netns_server, turn, namespace, tmp_path):
    allow_only(namespace, turn.port, transport)
    session = BrowserCall(netns_server, namespace, tmp_path, ROOM)
    try:
        ice_server = {"urls": f"turn:{turn.host}:{turn.port}?transport={transport}",
                      "username": USER, "credential": PASSWORD}
        offer, candidates = page_offer(session, {"bundlePolicy": "max-bundle", "iceTransportPolicy": "relay",
                                                 "iceServers": [ice_server]})
        assert candidates and all(" typ relay " in line for line in candidates), \
            (candidates, session.page.evaluate("window.t.errors"))
        call_id, answer, media_port = post_offer(session, offer)

        # No direct path: what the browser would send to the media port, UDP or TCP, is dropped.
        probe_direct(namespace, namespace.host_ip, media_port)
        direct = rule_packets(namespace, "output", "direct")
        assert direct >= 2, "the firewall let a direct probe through"

        pair = connected_pair(session, call_id, answer, detail=lambda: turn.log_tail(2000))
        assert pair["localType"] == "relay" and pair["relayProtocol"] == transport, pair
        assert pair["localAddress"] == turn.host, pair  # the relay address coturn allocated
        assert (pair["remoteType"], pair["remoteProtocol"], pair["remoteAddress"], pair["remotePort"]) == \
            ("host", "udp", namespace.host_ip, media_port), pair
        media, _, _ = session.exchange_audio(call_id)

        # Through the relay: the firewall passed the browser's packets to coturn only, and
        # coturn's report for the allocation (written when the browser closes its connection and
        # releases it) counts at least the call's packets each way between relay and Chorus.
        turn_packets = rule_packets(namespace, "output", "turn")
        session.page.evaluate("window.t.pc.close()")
        usage = wait_for("coturn's usage report", session.pumped(turn.peer_usage), timeout=15, detail=lambda: turn.log_tail())
        received_from_chorus, _, sent_to_chorus, _ = usage
        assert received_from_chorus >= media["packetsSent"] and sent_to_chorus >= media["packetsReceived"], (usage, media)
        assert turn_packets > media["packetsReceived"], (turn_packets, media)
        # And the browser itself never tried the host side but through coturn.
        assert rule_packets(namespace, "output", "direct") == direct, "the browser sent toward the host side directly"
        # The browser asked coturn for a permission and a channel to Chorus's address (coturn
        # logs the peer's address without its port), and coturn granted both.
        assert f"peer {namespace.host_ip} lifetime updated" in turn.log(), turn.log_tail()
        assert "CHANNEL_BIND processed, success" in turn.log(), turn.log_tail()
        print(f"TURN/{transport}: pair {pair}, server counters {media}, coturn peer usage (rp, rb, sp, sb) {usage}, "
              f"firewall passed {turn_packets} packets to coturn, dropped {direct} probes toward the media port "
              f"and {rule_packets(namespace, 'output', 'other')} packets elsewhere (DNS, IPv6 neighbour discovery)")
    finally:
        session.close()


# -- a symmetric NAT needs no TURN -----------------------------------------------------------

def symmetric_nat(namespace: Namespace) -> str:
    """Puts the namespace behind a NAT of the strictest kind and returns its public address.
    Mapping: every new flow out gets a random port of that address (`fully-random`), so one
    socket is seen at a different address:port by each destination (endpoint-dependent, i.e.
    symmetric). Filtering: only replies on a flow the inside opened come in (conntrack), so
    nothing reaches the browser's own address unasked. The outside routes the public address
    (one unused in the veth's /28) to the namespace, where conntrack translates replies back."""
    base, last = namespace.host_ip.rsplit(".", 1)
    public = f"{base}.{int(last) + 8}"
    run("ip", "route", "add", f"{public}/32", "via", namespace.inner_ip, "dev", namespace.veth)
    namespace.nft(f"""
        table ip chorus_nat {{
            chain postrouting {{ type nat hook postrouting priority srcnat; policy accept;
                oifname "{namespace.veth}i" snat to {public} fully-random
            }}
        }}
        table inet chorus_test {{
            chain output {{ type filter hook output priority 0; policy drop;
                oifname "lo" accept
                ip daddr {namespace.host_ip} accept
                counter drop comment "other"
            }}
            chain input {{ type filter hook input priority 0; policy drop;
                iifname "lo" accept
                ct state established,related accept
                ip saddr {namespace.host_ip} tcp dport 9222 accept
                counter drop comment "unsolicited"
            }}
        }}""")
    return public


def mappings(namespace: Namespace) -> tuple[int, list[tuple[str, int]]]:
    """One UDP socket inside sends to two ports on the host side: its own port, and the
    address:port each destination saw it at."""
    receivers = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    try:
        for receiver in receivers:
            receiver.bind((namespace.host_ip, 0))
            receiver.settimeout(5)
        targets = [receiver.getsockname() for receiver in receivers]
        script = ("import socket\n"
                  "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('0.0.0.0', 0))\n"
                  f"for target in {targets!r}: s.sendto(b'x', tuple(target))\n"
                  "print(s.getsockname()[1])\n")
        result = subprocess.run([*namespace.prefix(), "python3", "-c", script], capture_output=True, text=True, timeout=15)
        assert result.returncode == 0, result.stderr
        return int(result.stdout), [receiver.recvfrom(16)[1] for receiver in receivers]
    finally:
        for receiver in receivers:
            receiver.close()


def test_chromium_behind_a_symmetric_nat_joins_directly_without_turn(netns_server, namespace, tmp_path):
    """Chorus has an address the client reaches (here the host side; in production its public
    IP), and ICE-lite leaves the checks to the client: the browser's checks go out through its
    NAT, which maps them to some public port, and Chorus answers to wherever they came from,
    which is what the NAT lets back in. No STUN or TURN server: the browser offers only its
    private host address, learns its mapped one (a peer-reflexive local candidate) from
    Chorus's check responses, and media flows both ways on that pair."""
    public = symmetric_nat(namespace)
    local_port, seen_at = mappings(namespace)
    assert [address for address, _ in seen_at] == [public, public], seen_at
    assert seen_at[0][1] != seen_at[1][1], f"one socket, port {local_port}, seen at {seen_at}: not symmetric"
    session = BrowserCall(netns_server, namespace, tmp_path, ROOM)
    try:
        offer, candidates = page_offer(session, {"bundlePolicy": "max-bundle"})
        assert candidates and all(" typ host" in line and public not in line for line in candidates), candidates
        call_id, answer, media_port = post_offer(session, offer)
        pair = connected_pair(session, call_id, answer)
        assert (pair["localType"], pair["localProtocol"], pair["localAddress"]) == ("prflx", "udp", public), pair
        assert (pair["remoteType"], pair["remoteProtocol"], pair["remoteAddress"], pair["remotePort"]) == \
            ("host", "udp", namespace.host_ip, media_port), pair
        media, _, _ = session.exchange_audio(call_id)
        print(f"symmetric NAT: one socket (port {local_port}) seen at {seen_at}; pair {pair}; server counters {media}")
    finally:
        session.close()


# -- deploy/coturn/turnserver.conf ------------------------------------------------------------

DEPLOY_CONF = Path(__file__).resolve().parents[2] / "deploy" / "coturn" / "turnserver.conf"
SECRET = "test-secret-not-the-placeholder"


def rest_credentials(secret: str, user: str, valid_for: int) -> tuple[str, str]:
    """What an application hands a browser for `use-auth-secret`: "<expiry>:<user>" and
    base64(HMAC-SHA1(secret, username))."""
    username = f"{int(time.time()) + valid_for}:{user}"
    return username, base64.b64encode(hmac.new(secret.encode(), username.encode(), hashlib.sha1).digest()).decode()


def self_signed(host: str, folder: Path) -> tuple[Path, Path]:
    """A certificate for the address `host` (as an IP SAN, so a client can verify it), and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "turn.test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class Relayed(asyncio.DatagramProtocol):
    """What comes back through an allocation, and the errors of sends (a refused ChannelBind)."""

    def __init__(self):
        self.received: asyncio.Queue = asyncio.Queue()
        self.errors: list[Exception] = []

    def datagram_received(self, data, addr):
        self.received.put_nowait((data, addr))

    def error_received(self, exc):
        self.errors.append(exc)


class Echo(asyncio.DatagramProtocol):
    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.transport.sendto(data, addr)


def test_the_deploy_coturn_config_relays_to_chorus_only_with_application_issued_credentials(namespace, tmp_path):
    """deploy/coturn/turnserver.conf as shipped, with only what compose.yaml adds (the secret,
    the Chorus address) and what a test host needs (addresses, ports, certificate, state files)
    on the command line: REST-style credentials allocate over UDP, TCP and TLS, the relay
    reaches the Chorus address (a private one, in a denied range, let through by
    allowed-peer-ip) both ways, refuses other private addresses and loopback, and refuses the
    placeholder secret, a wrong one and an expired username."""
    host = namespace.host_ip  # a non-loopback address on this machine, in 10/8
    port, tls_port = free_port(host), free_port(host)
    cert, key = self_signed(host, tmp_path)
    stdout = open(tmp_path / "turnserver.stdout", "w")
    process = subprocess.Popen(
        [shutil.which("turnserver") or "turnserver", "-c", str(DEPLOY_CONF),
         f"--static-auth-secret={SECRET}", f"--allowed-peer-ip={host}",
         f"--listening-ip={host}", f"--relay-ip={host}", f"--listening-port={port}", f"--tls-listening-port={tls_port}",
         f"--cert={cert}", f"--pkey={key}", f"--userdb={tmp_path / 'turndb'}", f"--pidfile={tmp_path / 'turnserver.pid'}"],
        stdout=stdout, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    loop = asyncio.new_event_loop()
    log = lambda: (tmp_path / "turnserver.stdout").read_text(errors="replace")[-3000:]

    async def allocate(transport: str, username: str, password: str):
        context = None
        if transport == "tls":
            context = ssl.create_default_context(cafile=str(cert))
        return await asyncio.wait_for(aioice.turn.create_turn_endpoint(
            Relayed, (host, tls_port if transport == "tls" else port), username, password,
            ssl=context, transport="udp" if transport == "udp" else "tcp"), 10)

    async def scenario() -> dict:
        echo, _ = await loop.create_datagram_endpoint(Echo, local_addr=(host, 0))
        chorus = echo.get_extra_info("sockname")
        outcomes = {}
        try:
            for transport in ("udp", "tcp", "tls"):
                relay, relayed = await allocate(transport, *rest_credentials(SECRET, "alice", 600))
                try:
                    relay.sendto(b"to chorus over " + transport.encode(), chorus)
                    data, source = await asyncio.wait_for(relayed.received.get(), 5)
                    assert (data, source) == (b"to chorus over " + transport.encode(), chorus)
                    # Elsewhere in 10/8, and loopback: ChannelBind refused with 403.
                    for peer in (("10.0.0.1", 9), ("127.0.0.1", chorus[1])):
                        relay.sendto(b"x", peer)
                    for _ in range(50):
                        if len(relayed.errors) >= 2:
                            break
                        await asyncio.sleep(0.1)
                    codes = sorted(getattr(getattr(e, "response", None), "error_code", repr(e)) for e in relayed.errors)
                    assert codes == [403, 403], codes
                    outcomes[transport] = relay.get_extra_info("sockname")
                finally:
                    relay.close()
            # Credentials the server must refuse: the config's placeholder secret, a wrong
            # one, and the right secret on a username whose expiry has passed.
            for name, (username, password) in {
                    "placeholder": rest_credentials("replace-me-with-openssl-rand-hex-32", "alice", 600),
                    "wrong": rest_credentials("not-the-secret", "alice", 600),
                    "expired": rest_credentials(SECRET, "alice", -60)}.items():
                with pytest.raises(aioice.stun.TransactionFailed) as refused:
                    await allocate("udp", username, password)
                assert refused.value.response.error_code == 401, (name, refused.value)
            await asyncio.sleep(0.5)  # the deletes of the closed allocations
        finally:
            echo.close()
        return outcomes

    try:
        wait_for("coturn listening", lambda: listening(process, host, tls_port, log), timeout=15, detail=log)
        relays = loop.run_until_complete(scenario())
        print(f"deploy/coturn/turnserver.conf: relayed addresses {relays}")
    finally:
        loop.close()
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
        stdout.close()
