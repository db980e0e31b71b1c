"""The web client end to end in a real browser: headless Chromium (fake camera and microphone)
opens the page the server serves in two tabs, both join one room as two users, and each must hear
and see the other. Driven with the Chrome DevTools Protocol over a websocket, so nothing but
Chromium and `websocket-client` is needed.

What is checked, by the server and by the pages:
- both participants reach `established` (server state);
- audio flows both ways: the server receives each one's packets and sends each one the mix;
- each page shows the other's camera in a slot (`window.chorus.slots`: playing, videoWidth > 0),
  under the other's user ID from the `video.slots` events;
- after Leave, each page's statistics upload (pc.getStats()) is stored for its call.

A screenshot of one page in the call is saved to test-output/browser-call.png.

Chromium and loopback: the server announces 127.0.0.1. Chrome gathers no loopback candidates by
default (`--allow-loopback-in-peer-connection` lets it), and hides host addresses behind mDNS names
(`WebRtcHideLocalIpsWithMdns` off keeps them plain): an ICE-lite server needs neither, since it
answers the browser's checks from wherever they come, but both keep the run on loopback only.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

import pytest
import requests
import websocket

from conftest import REPO_ROOT, ChorusServer

WAIT = 20.0  # bound of every wait
ROOM = "browser-room"
USERS = ("alice", "bob")
SCREENSHOT = REPO_ROOT / "test-output" / "browser-call.png"
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--remote-debugging-port=0",
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
    "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
    # Two tabs, one in the background: neither may be throttled while the test watches it.
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows", "--autoplay-policy=no-user-gesture-required",
    "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--mute-audio", "--window-size=1280,900",
]


def wait_for(what: str, probe: Callable[[], Any], timeout: float = WAIT, detail: Callable[[], Any] = lambda: ""):
    """Polls `probe` until it returns something truthy; fails naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f} s. {detail()}")
        time.sleep(0.2)


class Page:
    """One browser tab over its own DevTools websocket: evaluate JavaScript, take screenshots."""

    def __init__(self, url: str):
        self.socket = websocket.create_connection(url, timeout=WAIT, suppress_origin=True)
        self.next_id = 0
        self.console: list[str] = []
        self.call("Runtime.enable")
        self.call("Page.enable")

    def call(self, method: str, **params: Any) -> dict:
        """Sends one command and returns its result; events read meanwhile keep console lines."""
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message["result"]
            if message.get("method") == "Runtime.consoleAPICalled":
                args = message["params"]["args"]
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in args))

    def evaluate(self, expression: str) -> Any:
        """The JSON value of `expression` (awaited when it is a promise)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def chorus(self) -> dict:
        """The page's `window.chorus` state (functions left out)."""
        return self.evaluate("JSON.parse(JSON.stringify(window.chorus || null))") or {}

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        self.socket.close()


class Chromium:
    """A headless Chromium on a fresh profile, its DevTools port read from the profile folder."""

    def __init__(self, profile: Path, log_path: Path):
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        if binary is None:
            pytest.fail("chromium is not installed (`make deps` installs it)")
        self.log = open(log_path, "w", encoding="utf-8")
        self.process = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        active = profile / "DevToolsActivePort"
        wait_for("Chromium's DevTools port", lambda: active.exists() and len(active.read_text().split()) >= 2,
                 detail=lambda: log_path.read_text(errors="replace")[-3000:])
        self.port = int(active.read_text().split()[0])
        self.pages: list[Page] = []

    def open(self, url: str) -> Page:
        """A new tab at `url`, once its page has loaded and run app.js."""
        new_tab = f"http://127.0.0.1:{self.port}/json/new?{quote(url, safe=':/')}"
        target = requests.put(new_tab, timeout=WAIT).json()
        page = Page(target["webSocketDebuggerUrl"])
        self.pages.append(page)
        wait_for(f"{url} loaded", lambda: page.evaluate(
            "document.readyState === 'complete' && typeof window.chorus === 'object'"))
        return page

    def close(self) -> None:
        for page in self.pages:
            page.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture
def demo_server(chorus_bin: str, tmp_path: Path):
    server = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log", extra_args=["--demo"])
    server.start()
    yield server
    if server.running:
        assert server.stop() == 0, server.log_tail()


@pytest.fixture
def chromium(tmp_path: Path):
    browser = Chromium(tmp_path / "chromium-profile", tmp_path / "chromium.log")
    yield browser
    browser.close()


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
    pages = {user: chromium.open(server.url(f"/?room={ROOM}&user={user}")) for user in USERS}
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
