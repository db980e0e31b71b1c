"""ICE restart through the API (issue 15, item 3), with a real aiortc participant in the call:
the WHIP form (`PATCH` with `application/trickle-ice-sdpfrag`, RFC 9725 §4.3) and the JSON
re-offer, and what each refuses. aiortc cannot restart ICE itself, so here the restart is asked
for and answered while the call goes on; the whole restart, new checks included, runs in the
room-level suite (RoomCoreRestartTests) and with Chromium in test_ice_restart_browser.py.
"""

from __future__ import annotations

import asyncio
import re

from peers import EventStream, Peer
from test_hostile_system import join_peer
from test_join_aiortc import participant, wait_until

FRAGMENT = "application/trickle-ice-sdpfrag"


def test_ice_restart_requests_are_answered_and_the_call_goes_on(chorus_server):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    peer = Peer(frequency=440.0, video=False)
    events = None
    try:
        call_id, answer = join_peer(chorus_server, loop, peer, "restart", "mover")
        wait_until(lambda: participant(chorus_server, "restart", call_id)["state"] == "established", 10)
        events = EventStream(chorus_server.url("/v1/rooms/restart/events"), auth=chorus_server.auth)
        path = f"/v1/rooms/restart/participants/{call_id}"
        old_ufrag = re.search(r"a=ice-ufrag:(\S+)", answer).group(1)

        # WHIP: new credentials restart ICE; the reply carries ours and our candidates.
        restart = "a=ice-ufrag:n3wU\r\na=ice-pwd:aNewPasswordOf24Chars+/\r\n"
        reply = chorus_server.request("PATCH", path, data=restart, headers={"Content-Type": FRAGMENT})
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-type"] == FRAGMENT
        new_ufrag = re.search(r"a=ice-ufrag:(\S+)", reply.text).group(1)
        assert new_ufrag != old_ufrag and "a=ice-pwd:" in reply.text
        assert re.search(r"a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 \d+ typ host", reply.text), reply.text
        restarted = events.wait_for(lambda e: e["type"] == "participant.iceRestarted")
        assert restarted["callId"] == call_id

        # The same credentials again only trickle: 204, nothing restarted.
        same = chorus_server.request("PATCH", path, data=restart + "a=candidate:1 1 udp 1 192.0.2.9 9 typ host\r\n",
                                     headers={"Content-Type": FRAGMENT})
        assert same.status_code == 204, same.text

        # Malformed fragments and mismatched re-offers are refused, naming the problem.
        bad = chorus_server.request("PATCH", path, data="v=0\r\n", headers={"Content-Type": FRAGMENT})
        assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalidFragment"), bad.text
        other = Peer(frequency=300.0, video=False)
        foreign_offer = loop.run_until_complete(other.offer())
        loop.run_until_complete(other.close())
        refused = chorus_server.request("PATCH", path, json={"sdp": foreign_offer})
        assert (refused.status_code, refused.json()["error"]["code"]) == (422, "fingerprintChanged"), refused.text

        # A JSON re-offer (aiortc's own offer: credentials other than the fragment's) restarts
        # again; sent twice, the second changes nothing and returns the same answer.
        first = chorus_server.request("PATCH", path, json={"sdp": peer.pc.localDescription.sdp})
        assert first.status_code == 200, first.text
        third_ufrag = re.search(r"a=ice-ufrag:(\S+)", first.json()["sdp"]).group(1)
        assert third_ufrag not in (old_ufrag, new_ufrag)
        again = chorus_server.request("PATCH", path, json={"sdp": peer.pc.localDescription.sdp})
        assert again.status_code == 200 and again.json()["sdp"] == first.json()["sdp"], again.text

        # The call is the same call throughout.
        loop.run_until_complete(asyncio.sleep(0.5))
        assert participant(chorus_server, "restart", call_id)["state"] == "established"
        assert chorus_server.request("GET", f"/v1/calls/{call_id}").json()["state"] != "ended"
    finally:
        if events is not None:
            events.close()
        loop.run_until_complete(peer.close())
        loop.close()
