"""Headless Chromium for interop tests, driven with the Chrome DevTools Protocol over a websocket,
so nothing but Chromium and `websocket-client` is needed. Shared by the web client's end-to-end
test (test_browser.py) and the H.264 forwarding test (test_h264_forward.py).

Chromium and loopback: the server announces 127.0.0.1. Chrome gathers no loopback candidates by
default (`--allow-loopback-in-peer-connection` lets it), and hides host addresses behind mDNS names
(`WebRtcHideLocalIpsWithMdns` off keeps them plain): an ICE-lite server needs neither, since it
answers the browser's checks from wherever they come, but both keep the run on loopback only.
The fake camera and microphone (`--use-fake-device-for-media-stream`) stand in for real devices.
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

WAIT = 20.0  # default bound of every wait
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--remote-debugging-port=0",
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
    "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
    # Two tabs, one in the background: neither may be throttled while the test watches it.
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows", "--autoplay-policy=no-user-gesture-required",
    "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--mute-audio", "--window-size=1280,900",
]


def wait_for(what: str, probe: Callable[[], Any], timeout: float = WAIT, detail: Callable[[], Any] = lambda: "",
             interval: float = 0.2):
    """Polls `probe` every `interval` s until it returns something truthy, and returns that; fails
    naming `what` (and `detail()`) after `timeout`. Any test's wait, with or without a browser."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:g} s. {detail()}")
        time.sleep(interval)


def terminate(process: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGTERM to `process`, then SIGKILL if it has not exited within `timeout`; waits for it."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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
        """The web client's `window.chorus` state (functions left out)."""
        return self.evaluate("JSON.parse(JSON.stringify(window.chorus || null))") or {}

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        self.socket.close()


class Chromium:
    """A headless Chromium on a fresh profile, its DevTools port read from the profile folder."""

    def __init__(self, profile: Path, log_path: Path, namespace=None, extra_flags: list[str] = ()):
        """`namespace` (a netns.Namespace) runs the browser on that network instead; its
        DevTools port, which listens on the namespace's own loopback, is then forwarded to the
        namespace's address by socat so the test can drive it from outside."""
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        if binary is None:
            pytest.fail("chromium is not installed (`make deps` installs it)")
        self.log_path = log_path
        self.log = open(log_path, "w", encoding="utf-8")
        prefix = namespace.prefix() if namespace is not None else []
        self.process = subprocess.Popen(
            [*prefix, binary, *CHROMIUM_FLAGS, *extra_flags, f"--user-data-dir={profile}", "about:blank"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        active = profile / "DevToolsActivePort"
        wait_for("Chromium's DevTools port", lambda: active.exists() and len(active.read_text().split()) >= 2,
                 detail=lambda: log_path.read_text(errors="replace")[-3000:])
        self.port = int(active.read_text().split()[0])
        self.host, self.inner_port = "127.0.0.1", self.port
        if namespace is not None:
            self.host, self.port = namespace.inner_ip, 9222
            namespace.spawn(["socat", f"TCP-LISTEN:{self.port},bind={self.host},reuseaddr,fork",
                             f"TCP:127.0.0.1:{self.inner_port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for("the DevTools forwarder", lambda: self._reachable())
        self.pages: list[Page] = []

    def _reachable(self) -> bool:
        try:
            return requests.get(f"http://{self.host}:{self.port}/json/version", timeout=2).ok
        except requests.RequestException:
            return False

    def open(self, url: str, ready: str = "location.href !== 'about:blank' && document.readyState === 'complete'") -> Page:
        """A new tab at `url`, once the JavaScript `ready` is true in it. The default waits for the
        page itself: a new tab starts on about:blank, whose readyState is already complete."""
        new_tab = f"http://{self.host}:{self.port}/json/new?{quote(url, safe=':/')}"
        target = requests.put(new_tab, timeout=WAIT).json()
        socket_url = target["webSocketDebuggerUrl"].replace(f"127.0.0.1:{self.inner_port}", f"{self.host}:{self.port}")
        page = Page(socket_url)
        self.pages.append(page)
        wait_for(f"{url} loaded", lambda: page.evaluate(ready))
        return page

    def close(self) -> None:
        for page in self.pages:
            page.close()
        terminate(self.process)
        self.log.close()
