"""The web client end to end in a real browser: headless Chromium (fake camera and microphone)
opens the page the server serves in two tabs, both join one room as two users, and each must hear
and see the other. Driven with the Chrome DevTools Protocol over a websocket, so nothing but
Chromium and `websocket-client` is needed.

What is checked, by the server and by the pages:
- both participants reach `established` (server state);
- audio flows both ways: the server receives each one's packets and sends each one the mix;
- each page shows the other's camera in a slot (`window.chorus.slots`: playing, videoWidth > 0),
  under the other's user ID from the `video.slots` events;
- each page publishes three simulcast layers and caps its slots at its tiles' heights;
- after Leave, each page's statistics upload (pc.getStats()) is stored for its call;
- after a kick, a page shows the call ended within 2 s, even one whose room events never arrive:
  the server's DTLS close_notify turns its DTLS transport `closed`, and the page follows that
  transport (its connection itself stays `connected` in Chromium).

A screenshot of one page in the call is saved to test-output/browser-call.png.

Chromium and loopback: the server announces 127.0.0.1. Chrome gathers no loopback candidates by
default (`--allow-loopback-in-peer-connection` lets it), and hides host addresses behind mDNS names
(`WebRtcHideLocalIpsWithMdns` off keeps them plain): an ICE-lite server needs neither, since it
answers the browser's checks from wherever they come, but both keep the run on loopback only.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chromium import Page, wait_for
from conftest import REPO_ROOT, ChorusServer

ROOM = "browser-room"
USERS = ("alice", "bob")
SCREENSHOT = REPO_ROOT / "test-output" / "browser-call.png"
# The page has loaded and run app.js.
CLIENT_READY = "document.readyState === 'complete' && typeof window.chorus === 'object'"


@pytest.fixture
def demo_server(chorus_bin: str, tmp_path: Path):
    server = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log", extra_args=["--demo"])
    server.start()
    yield server
    if server.running:
        assert server.stop() == 0, server.log_tail()


def participant(server: ChorusServer, call_id: str) -> dict:
    reply = server.request("GET", f"/v1/rooms/{ROOM}/participants/{call_id}")
    assert reply.status_code == 200, reply.text
    return reply.json()


def shows(page: Page, user: str) -> dict | None:
    """The page's slot that plays `user`'s camera, if any."""
    for slot in page.chorus().get("slots", []):
        if slot["publisherUserId"] == user and slot["playing"] and slot["videoWidth"] > 0:
            return slot
    return None


def test_two_browser_tabs_hear_and_see_each_other(demo_server, chromium):
    server = demo_server
    pages = {user: chromium.open(server.url(f"/?room={ROOM}&user={user}"), ready=CLIENT_READY) for user in USERS}
    state = lambda: {user: {**page.chorus(), "console": page.console[-5:]} for user, page in pages.items()}

    # Join through the page's own form, as a person would.
    for page in pages.values():
        page.evaluate("document.getElementById('join').click()")
    calls = {user: wait_for(f"{user} joined", lambda p=page: p.chorus().get("callId"), detail=state)
             for user, page in pages.items()}

    # Both established, as the server sees it, and so the pages say.
    for user, call in calls.items():
        wait_for(f"{user} established", lambda c=call: participant(server, c)["state"] == "established",
                 detail=lambda: (state(), server.log_tail(3000)))
        wait_for(f"{user}'s page established", lambda p=pages[user]: p.chorus()["state"] == "established",
                 detail=state)

    # Each hears the other: the server receives each one's microphone and sends each one the mix.
    def audio_both_ways(call: str) -> bool:
        audio = participant(server, call)["audio"]
        return audio["packetsReceived"] > 0 and audio["mixFramesSent"] > 0
    for user, call in calls.items():
        wait_for(f"audio both ways for {user}", lambda c=call: audio_both_ways(c),
                 detail=lambda c=call: participant(server, c)["audio"])

    # Each sees the other, named by the server's video.slots event.
    for user, other in (USERS, USERS[::-1]):
        slot = wait_for(f"{user} sees {other}", lambda u=user, o=other: shows(pages[u], o), detail=state)
        assert slot["publisherCallId"] == calls[other], slot
    # The page publishes its camera in three simulcast layers, and caps each slot at its tile's
    # height (PATCH slots): the server knows both.
    def layers_and_caps(call: str) -> bool:
        view = participant(server, call)
        return len(view["publishedLayers"]) == 3 and all(slot.get("maxHeight") for slot in view["slots"])
    for user, call in calls.items():
        wait_for(f"{user}'s three layers and capped slots", lambda c=call: layers_and_caps(c),
                 detail=lambda c=call: participant(server, c))
    pages["alice"].screenshot(SCREENSHOT)
    assert SCREENSHOT.stat().st_size > 10_000  # a real picture, not a blank page

    # Bob's Mute and Pause video buttons change his participant on the server.
    for button in ("mute", "pause"):
        pages["bob"].evaluate(f"document.getElementById('{button}').click()")
    wait_for("bob muted and paused", lambda: (lambda p: p["audioMuted"] and p["videoPaused"])(
        participant(server, calls["bob"])), detail=state)
    wait_for("bob's buttons show it", lambda: (lambda c: c["audioMuted"] and c["videoPaused"])(pages["bob"].chorus()),
             detail=state)

    # Leave from each page: the server ends the call (hungUp), the page uploads its statistics.
    for user, page in pages.items():
        page.evaluate("document.getElementById('leave').click()")
        wait_for(f"{user} uploaded statistics", lambda p=page: p.chorus().get("uploaded"), detail=state)
        assert page.chorus()["state"] == "ended"
    for user, call in calls.items():
        record = server.request("GET", f"/v1/calls/{call}").json()
        assert (record["state"], record["endCause"]) == ("ended", "hungUp"), record
        stored = server.request("GET", f"/v1/calls/{call}/statistics")
        assert stored.status_code == 200, stored.text
        uploads = stored.json()["statistics"]
        assert len(uploads) == 1 and uploads[0]["uploadedBy"] == f"user:{user}", uploads
        data = uploads[0]["data"]
        assert (data["callId"], data["userId"], data["endCause"]) == (call, user, "hungUp")
        inbound = [s for s in data["rtcStats"].values() if s["type"] == "inbound-rtp"]
        assert any(s["kind"] == "audio" and s["packetsReceived"] > 0 for s in inbound), inbound
        assert any(s["kind"] == "video" and s.get("framesDecoded", 0) > 0 for s in inbound), inbound


def test_a_kicked_page_shows_the_call_ended_within_2s(demo_server, chromium):
    """The application kicks both participants. Alice's page never gets its room events (the test
    holds its event-stream request in Chromium's network layer), so only her DTLS transport can tell
    her: the server's close_notify turns it `closed` and the page shows the call ended at once,
    then learns the cause from the call record. Bob's page hears it either way. Both within 2 s
    of the DELETE's reply, both with the cause `kicked` in their statistics upload."""
    server = demo_server
    pages = {user: chromium.open(server.url(f"/?room={ROOM}&user={user}"), ready=CLIENT_READY) for user in USERS}
    state = lambda: {user: {**page.chorus(), "console": page.console[-5:]} for user, page in pages.items()}
    # Alice's /events request is paused before it leaves and never continued.
    pages["alice"].call("Fetch.enable", patterns=[{"urlPattern": "*/events*", "requestStage": "Request"}])
    for page in pages.values():
        page.evaluate("document.getElementById('join').click()")
    calls = {user: wait_for(f"{user} joined", lambda p=page: p.chorus().get("callId"), detail=state)
             for user, page in pages.items()}
    for user, page in pages.items():
        wait_for(f"{user}'s page established", lambda p=page: p.chorus()["state"] == "established", detail=state)

    for user, page in pages.items():
        reply = server.request("DELETE", f"/v1/rooms/{ROOM}/participants/{calls[user]}")
        replied = time.monotonic()
        assert reply.status_code in (200, 204), reply.text
        while page.chorus()["state"] != "ended" and time.monotonic() - replied < 3.0:
            time.sleep(0.02)
        took = time.monotonic() - replied
        shown = page.chorus()
        print(f"\n{user}: the page showed the call ended {took * 1000:.0f} ms after the kick's reply "
              f"(told by {shown.get('endedBy')}; DTLS {shown.get('transportStates')})")
        assert shown["state"] == "ended" and took < 2.0, (took, state())
        if user == "alice":
            assert shown["endedBy"] == "transport", shown
        wait_for(f"{user} uploaded statistics", lambda p=page: p.chorus().get("uploaded"), detail=state)
        assert page.chorus()["endCause"] == "kicked", state()
        uploads = server.request("GET", f"/v1/calls/{calls[user]}/statistics").json()["statistics"]
        assert [u["data"]["endCause"] for u in uploads] == ["kicked"], uploads
    assert "Call ended (kicked)" in pages["alice"].evaluate("document.getElementById('status').textContent")
