"""ICE restart after a network outage, with Chromium (issue 15, item 3): the browser's link goes
down for 5 s (its network namespace's side of the veth), comes back, and the page calls
`restartIce()`; its re-offer goes to the server as a JSON `PATCH`, the answer comes back with
new credentials, and media flows again within 3 s of the link's return, in the same call.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from pathlib import Path

import pytest

from chromium import Chromium, wait_for
from conftest import ChorusServer
from netns import Namespace
from peers import Peer
from test_audio_mix import tone_db
from test_hostile_system import join_peer
from test_ice_tcp import CHROMIUM_PAGE_SETUP, open_page
from test_join_aiortc import participant, wait_until

ROOM = "restarting"

SELECTED_UFRAG = """
(async () => {
  const stats = await window.t.pc.getStats();
  let ufrag = null;
  stats.forEach((s) => {
    if (s.type === 'transport' && s.selectedCandidatePairId) {
      const pair = stats.get(s.selectedCandidatePairId);
      ufrag = stats.get(pair.remoteCandidateId).usernameFragment;
    }
  });
  return ufrag;
})()
"""

RESTART = """
(async () => {
  window.t.pc.restartIce();
  await window.t.pc.setLocalDescription(await window.t.pc.createOffer());
  return window.t.pc.localDescription.sdp;
})()
"""


@pytest.fixture
def network():
    namespace = Namespace.create()
    try:
        yield namespace
    finally:
        namespace.remove()


@pytest.fixture
def server(chorus_bin: str, tmp_path: Path, network: Namespace):
    chorus = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                          extra_args=["--media-host", network.host_ip, "--public-ip", network.host_ip])
    chorus.start()
    yield chorus
    if chorus.running:
        assert chorus.stop() == 0, chorus.log_tail()


def tone_heard(peer: Peer, start: float, end: float, frequency: float = 660.0) -> bool:
    heard = peer.audio_between(start, end)
    return len(heard) >= 9600 and tone_db(heard, frequency) > tone_db(heard, 1000.0) + 20


def test_chromium_restarts_ice_after_an_outage_and_media_resumes_in_the_same_call(server, network, tmp_path):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    talker = Peer(frequency=440.0, video=False)
    (tmp_path / "www").mkdir()
    network.spawn(["python3", "-m", "http.server", "8765", "--bind", "127.0.0.1", "--directory", str(tmp_path / "www")],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    browser = Chromium(tmp_path / "chromium-profile", tmp_path / "chromium.log", namespace=network)
    pump = lambda seconds: loop.run_until_complete(asyncio.sleep(seconds))
    pumped = lambda probe: lambda: (pump(0.05), probe())[1]
    try:
        page = open_page(browser, network)
        talker_call, _ = join_peer(server, loop, talker, ROOM, "talker")
        wait_until(lambda: participant(server, ROOM, talker_call)["state"] == "established", 10)
        offer = page.evaluate(CHROMIUM_PAGE_SETUP)
        reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "browser"})
        assert reply.status_code == 201, reply.text
        call_id = reply.json()["callId"]
        page.evaluate(f"window.t.pc.setRemoteDescription({{type: 'answer', sdp: {reply.json()['sdp']!r}}})")
        wait_for("the browser connected", pumped(lambda: participant(server, ROOM, call_id)["state"] == "established"),
                 timeout=20)
        pump(2.0)
        assert tone_heard(talker, time.monotonic() - 1.0, time.monotonic()), "no media before the outage"

        # A 5 s outage: nothing gets through either way.
        network.link(up=False)
        pump(5.0)
        network.link(up=True)
        back = time.monotonic()
        offer = page.evaluate(RESTART)
        patched = server.request("PATCH", f"/v1/rooms/{ROOM}/participants/{call_id}", json={"sdp": offer})
        assert patched.status_code == 200, patched.text
        page.evaluate(f"window.t.pc.setRemoteDescription({{type: 'answer', sdp: {patched.json()['sdp']!r}}})")

        # Media within 3 s of the link's return: the talker hears the browser's tone again.
        def resumed():
            now = time.monotonic()
            return now - back > 0.5 and tone_heard(talker, now - 0.3, now)
        wait_for("media after the restart", pumped(resumed), timeout=6,
                 detail=lambda: (page.evaluate("window.t.states"), participant(server, ROOM, call_id)))
        took = time.monotonic() - back
        print(f"ICE restart: media resumed {took:.2f} s after the link came back")
        assert took < 3.0, took
        # And it runs on the new ICE generation: the selected pair's remote candidate carries the
        # server's new ufrag, and the server counted the restart.
        new_ufrag = re.search(r"a=ice-ufrag:(\S+)", patched.json()["sdp"]).group(1)
        assert new_ufrag != re.search(r"a=ice-ufrag:(\S+)", reply.json()["sdp"]).group(1)
        wait_for("the new generation selected", pumped(lambda: page.evaluate(SELECTED_UFRAG) == new_ufrag), timeout=5,
                 detail=lambda: page.evaluate(SELECTED_UFRAG))
        assert participant(server, ROOM, call_id)["state"] == "established"
        calls = server.request("GET", "/v1/calls").json()["calls"]
        assert [c["callId"] for c in calls if c["userId"] == "browser"] == [call_id], calls
    finally:
        browser.close()
        loop.run_until_complete(talker.close())
        loop.close()
