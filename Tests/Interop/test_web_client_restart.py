"""The web client restarts ICE by itself (issue 15, item 3): it runs in Chromium in a network
namespace and joins through its own form; then the namespace's firewall drops all UDP while TCP
(the page's HTTP) still works. The connection goes `disconnected`, and 2 s later the page
restarts ICE on its own with a JSON `PATCH` re-offer; once UDP is back, its media reaches the
server again, on the new ICE generation, in the same call.

Measured on the way (Chromium 1xx here): a 5 s outage, or a move to a new address, needs no
restart at all: Chromium's path comes back by itself, or it nominates a pair on its new address
in the same ICE generation, and the server follows the newest nomination; and with ICE-TCP on,
a UDP outage moves the call to its TCP pair without a restart either.
"""

from __future__ import annotations

import time

import pytest

from browser_netns import launch
from chromium import wait_for
from conftest import ChorusServer

ROOM = "outage"
CLIENT_READY = "document.readyState === 'complete' && typeof window.chorus === 'object'"


@pytest.fixture
def netns_server_args() -> list[str]:
    """HTTP on every address so the page loads from the namespace (media is on the host side). No
    ICE-TCP: with it, Chromium rides out a UDP outage on its TCP pair and needs no restart."""
    return ["--demo", "--http-host", "0.0.0.0", "--media-tcp-port", "0"]


def received(server: ChorusServer, call_id: str) -> int:
    reply = server.request("GET", f"/v1/rooms/{ROOM}/participants/{call_id}")
    return reply.json()["media"]["packetsReceived"] if reply.status_code == 200 else -1


def test_the_web_client_restarts_ice_by_itself_after_an_outage(netns_server, namespace, tmp_path):
    origin = f"http://{namespace.host_ip}:{netns_server.banner.port}"
    # The page is served over plain HTTP from the host side: a secure context only by this flag.
    browser = launch("chromium", namespace, tmp_path, extra_flags=[f"--unsafely-treat-insecure-origin-as-secure={origin}"])
    try:
        page = browser.open(f"{origin}/?room={ROOM}&user=mover", ready=CLIENT_READY)
        page.evaluate("document.getElementById('join').click()")
        call_id = wait_for("joined", lambda: page.chorus().get("callId"), detail=lambda: page.chorus())
        wait_for("established", lambda: page.chorus().get("state") == "established", detail=lambda: page.chorus())
        before = received(netns_server, call_id)
        time.sleep(1.0)
        assert received(netns_server, call_id) > before, "no media before the outage"

        namespace.drop_udp()
        wait_for("an ICE restart by the client", lambda: page.chorus().get("iceRestarts", 0) >= 1, timeout=20,
                 detail=lambda: page.chorus())
        namespace.allow_udp()
        back = time.monotonic()

        def flowing() -> bool:
            first = received(netns_server, call_id)
            time.sleep(0.3)
            return received(netns_server, call_id) > first
        wait_for("media again", flowing, timeout=15, detail=lambda: (page.chorus(), netns_server.log_tail(1500)))
        print(f"web client: {page.chorus()['iceRestarts']} ICE restart(s), media again "
              f"{time.monotonic() - back:.1f} s after UDP came back; states {page.chorus()['connectionStates']}")
        assert page.chorus()["callId"] == call_id and page.chorus()["state"] == "established"
        calls = netns_server.request("GET", "/v1/calls").json()["calls"]
        assert [c["callId"] for c in calls] == [call_id], calls
    finally:
        browser.close()
