"""Call quality, live (issue 19, item 2): an aiortc talker in a network namespace whose UDP
toward the server loses 15 % (an nftables `numgen random` rule: this kernel has no netem).
The room raises `call.quality.warning` highPacketLoss within 6 s of the loss starting and
`call.quality.recovered` within 10 s of it ending; the call record keeps the summary (MOS,
the warning's count and seconds)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from netns import Namespace
from peers import EventStream
from webhook_receiver import WebhookReceiver

HERE = Path(__file__).resolve().parent


@pytest.fixture
def netns_server_args() -> list[str]:
    # The peer in the namespace reaches the API at the veth's host side.
    return ["--http-host", "0.0.0.0", "--webhooks-allow-private"]


def test_fifteen_percent_uplink_loss_raises_and_recovers_high_packet_loss(netns_server, namespace: Namespace):
    server = netns_server
    assert server.request("POST", "/v1/rooms", json={"roomId": "quality"}).status_code == 201
    events = EventStream(server.url("/v1/rooms/quality/events"), auth=server.auth)
    receiver = WebhookReceiver()
    hook = server.request("POST", "/v1/webhooks", json={"url": receiver.url,
                                                       "events": ["call.quality.warning", "call.quality.recovered"]})
    assert hook.status_code == 201, hook.text
    receiver.secret = hook.json()["secret"]
    key, secret = server.auth
    url = f"http://{namespace.host_ip}:{server.banner.port}"
    peer = namespace.spawn([sys.executable, str(HERE / "netns_aiortc_peer.py"), url, key, secret, "quality", "talker",
                            "60", namespace.inner_ip], stdout=subprocess.PIPE, text=True, cwd=str(HERE))
    try:
        call_id = peer.stdout.readline().strip()
        assert call_id, "the peer did not join"
        events.wait_for(lambda e: e["type"] == "participant.established" and e["callId"] == call_id, timeout=10)
        time.sleep(3)  # a clean baseline: nothing to warn about

        namespace.nft("""
            table inet chorus_quality {
                chain output { type filter hook output priority 0; policy accept;
                    oifname != "lo" meta l4proto udp numgen random mod 100 < 15 counter drop
                }
            }""")
        lossy = time.monotonic()
        warning = events.wait_for(lambda e: e["type"] == "call.quality.warning" and e.get("callId") == call_id
                                  and e["warning"] == "highPacketLoss", timeout=6)
        raised_after = time.monotonic() - lossy
        assert 5 <= warning["value"] <= 25, warning  # raised as soon as the 2 s window crosses 5 %

        subprocess.run([*namespace.prefix(), "nft", "delete", "table", "inet", "chorus_quality"], check=True)
        clean = time.monotonic()
        recovered = events.wait_for(lambda e: e["type"] == "call.quality.recovered" and e.get("callId") == call_id
                                    and e["warning"] == "highPacketLoss", timeout=10)
        recovered_after = time.monotonic() - clean
        print(f"raised after {raised_after:.1f} s, recovered after {recovered_after:.1f} s")

        assert server.request("DELETE", f"/v1/rooms/quality/participants/{call_id}").status_code == 204
        # Polled plainly: test_join_aiortc.wait_until runs on the thread's asyncio loop, which an
        # earlier test of the session may have closed.
        deadline = time.monotonic() + 5
        call = server.request("GET", f"/v1/calls/{call_id}").json()
        while call.get("state") != "ended" and time.monotonic() < deadline:
            time.sleep(0.1)
            call = server.request("GET", f"/v1/calls/{call_id}").json()
        assert call.get("state") == "ended", call
        quality = call["serverStatistics"]["quality"]
        assert quality["warnings"]["highPacketLoss"]["count"] == 1, quality
        assert quality["warnings"]["highPacketLoss"]["seconds"] >= 3, quality
        assert 1.0 <= float(quality["mosMin"]) < float(quality["mosMean"]) <= 4.5, quality

        # The same two events as webhooks, signed.
        hooks = receiver.wait_for(lambda d: len(d) >= 2, timeout=10)
        assert [(d.type, d.body["data"]["warning"], d.body["data"]["callId"]) for d in hooks] == [
            ("call.quality.warning", "highPacketLoss", call_id), ("call.quality.recovered", "highPacketLoss", call_id)]
        assert all(d.valid for d in hooks) and hooks[0].body["data"]["roomId"] == "quality"
    finally:
        peer.kill()
        events.close()
        receiver.close()
