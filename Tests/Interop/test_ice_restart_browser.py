"""ICE restart after a network outage, with Chromium (issue 15, item 3): the browser's link goes
down for 5 s (its network namespace's side of the veth), comes back, and the page calls
`restartIce()`; its re-offer goes to the server as a JSON `PATCH`, the answer comes back with
new credentials, and media flows again within 3 s of the link's return, in the same call.
"""

from __future__ import annotations

import re
import time

from browser_netns import CHROMIUM_PAGE_SETUP, BrowserCall
from chromium import wait_for
from peers import Peer
from test_audio_mix import tone_db
from test_join_aiortc import participant

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


def tone_heard(peer: Peer, start: float, end: float, frequency: float = 660.0) -> bool:
    heard = peer.audio_between(start, end)
    return len(heard) >= 9600 and tone_db(heard, frequency) > tone_db(heard, 1000.0) + 20


def test_chromium_restarts_ice_after_an_outage_and_media_resumes_in_the_same_call(netns_server, namespace, tmp_path):
    session = BrowserCall(netns_server, namespace, tmp_path, ROOM)
    page, talker, pump, pumped = session.page, session.talker, session.pump, session.pumped
    try:
        offer = page.evaluate(CHROMIUM_PAGE_SETUP)
        call_id, answer = session.join(offer)
        session.connect(call_id, answer, timeout=20)
        pump(2.0)
        assert tone_heard(talker, time.monotonic() - 1.0, time.monotonic()), "no media before the outage"

        # A 5 s outage: nothing gets through either way.
        namespace.link(up=False)
        pump(5.0)
        namespace.link(up=True)
        back = time.monotonic()
        offer = page.evaluate(RESTART)
        patched = netns_server.request("PATCH", f"/v1/rooms/{ROOM}/participants/{call_id}", json={"sdp": offer})
        assert patched.status_code == 200, patched.text
        session.answer(patched.json()["sdp"])

        # Media within 3 s of the link's return: the talker hears the browser's tone again.
        def resumed():
            now = time.monotonic()
            return now - back > 0.5 and tone_heard(talker, now - 0.3, now)
        wait_for("media after the restart", pumped(resumed), timeout=6,
                 detail=lambda: (page.evaluate("window.t.states"), participant(netns_server, ROOM, call_id)))
        took = time.monotonic() - back
        print(f"ICE restart: media resumed {took:.2f} s after the link came back")
        assert took < 3.0, took
        # And it runs on the new ICE generation: the selected pair's remote candidate carries the
        # server's new ufrag, and the server counted the restart.
        new_ufrag = re.search(r"a=ice-ufrag:(\S+)", patched.json()["sdp"]).group(1)
        assert new_ufrag != re.search(r"a=ice-ufrag:(\S+)", answer).group(1)
        wait_for("the new generation selected", pumped(lambda: page.evaluate(SELECTED_UFRAG) == new_ufrag), timeout=5,
                 detail=lambda: page.evaluate(SELECTED_UFRAG))
        assert participant(netns_server, ROOM, call_id)["state"] == "established"
        calls = netns_server.request("GET", "/v1/calls").json()["calls"]
        assert [c["callId"] for c in calls if c["userId"] == "browser"] == [call_id], calls
    finally:
        session.close()
