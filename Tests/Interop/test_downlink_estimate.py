"""The server's estimate of a viewer's downlink on a shaped link (issue 16, item 1, send side):
a headless Chromium in its own namespace publishes its fake camera and watches it back through
a video slot, and the link from the server into the namespace is a 300 kbit/s token bucket
(tc tbf on the host side of the veth). Every packet the server sends carries its own
transport-wide sequence number, Chromium's feedback reports their arrivals, and the server's
estimator (delay-based trendline + loss-based, with RTX-padding probes) must find the link:

- shaped at 300 kbit/s, the viewer's downlink estimate settles near the link's rate (over its
  last 8 s of 20, the median at least 150 kbit/s and 80 % of the samples at most 450 kbit/s;
  not the 2.7 Mbit/s it finds on an open link), and the viewer keeps decoding video;
- with the shaping lifted, the estimate climbs past 1.8 Mbit/s within 20 s (periodic probes).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from browser_netns import launch, open_page, serve_page_folder
from chromium import wait_for
from conftest import ChorusServer
from netns import Namespace
from test_transport_cc import PAGE_SCRIPT

ROOM = "shaped"


def test_the_servers_estimate_follows_a_shaped_downlink(netns_server: ChorusServer, namespace: Namespace,
                                                        tmp_path: Path):
    server = netns_server
    namespace.shape(300)
    serve_page_folder(namespace, tmp_path / "www")
    browser = launch("chromium", namespace, tmp_path)
    try:
        page = open_page(browser, namespace)
        assert page.evaluate(PAGE_SCRIPT) is True
        calls = {}
        for name, script in (("publisher", "publish"), ("viewer", "view")):
            offer = page.evaluate(f"window.twcc.{script}('{name}')")
            reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": name})
            assert reply.status_code == 201, reply.text
            calls[name] = reply.json()["callId"]
            assert page.evaluate(f"window.twcc.answer('{name}', {reply.json()['sdp']!r})") is True

        def viewer() -> dict:
            got = server.request("GET", f"/v1/rooms/{ROOM}/participants/{calls['viewer']}")
            assert got.status_code == 200, got.text
            return got.json()

        def estimate() -> int:
            downlink = viewer().get("downlink") or {}
            return downlink.get("bitrate", 0) if downlink.get("source") == "transportCC" else 0

        wait_for("the viewer established", lambda: viewer()["state"] == "established", timeout=20)
        # Let the estimator find the link: its start-up probes, the publisher's ramp, the queue.
        samples = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            samples.append(estimate())
            time.sleep(0.5)
        settled = samples[-16:]
        frames = page.evaluate("window.twcc.estimate('viewer')")["framesDecoded"]
        qdisc = subprocess.run(["tc", "-s", "qdisc", "show", "dev", namespace.veth], capture_output=True, text=True).stdout
        # A periodic probe's burst fits the bucket's 16 KB and briefly looks like headroom (as it
        # would to libwebrtc); the queue it feeds brings the estimate back within a second or two.
        ranked = sorted(settled)
        assert 150_000 <= ranked[len(ranked) // 2] and ranked[int(len(ranked) * 0.8)] <= 450_000, (
            f"shaped at 300 kbit/s: estimates {samples}\n{qdisc}\n{viewer()}")
        assert frames > 100, f"the viewer decoded {frames} frames; estimates {samples}"

        namespace.shape(None)
        lifted = []
        wait_for("the estimate above 1.8 Mbit/s once the link is open",
                 lambda: (lifted.append(estimate()), lifted[-1] > 1_800_000)[1], timeout=20,
                 detail=lambda: f"after lifting: {lifted}\nviewer {viewer()}")
        print(f"shaped: {samples}\nlifted: {lifted}\nviewer {viewer()}")
        page.evaluate("window.twcc.close()")
    finally:
        browser.close()
