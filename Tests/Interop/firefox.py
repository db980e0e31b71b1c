"""Headless Firefox ESR for interop tests, driven with WebDriver BiDi over a websocket, so nothing
but Firefox and `websocket-client` is needed (no geckodriver, no Selenium). The same shape as
chromium.py: `Firefox(profile, log_path)`, `.open(url) -> Page`, `page.evaluate(js)` (a JSON value,
promises awaited), `.close()`.

Protocol: WebDriver BiDi, not Marionette. Firefox (153 ESR here) starts its Remote Agent with
`--remote-debugging-port 0`, which picks a free port, writes it to `WebDriverBiDiServer.json` in
the profile and listens for BiDi at ws://127.0.0.1:<port>/session; CDP is gone from Firefox, and
Marionette would need its own length-prefixed JSON framing for no gain. The socket must not send
an Origin header (the agent refuses unlisted origins), hence `suppress_origin`. BiDi returns
"remote values" (`{"type": "number", "value": 3}`), turned into plain JSON values here.

Profile (a fresh folder, prefs in user.js):
- fake media: `media.navigator.streams.fake` (a 1 kHz tone and a test picture) and no
  permission prompt (`media.navigator.permission.disabled`);
- loopback ICE: `media.peerconnection.ice.loopback` lets 127.0.0.1 and ::1 be host candidates,
  and `media.peerconnection.ice.obfuscate_host_addresses` off keeps them plain (no mDNS names).
  That is not enough on its own: Firefox gathers only the default route's address (here eth0's,
  no loopback) unless the page holds a *persistent* camera or microphone permission, and an
  active fake capture does not count (seen in MOZ_LOG=nicer:5: "use only default local
  addresses: yes"). `permissions.default.microphone` and `.camera` = 1 (allow) grant it to
  every page, and the loopback candidates appear;
- no first-run pages, default-browser check, telemetry, updates, remote settings or safe
  browsing (the Remote Agent's recommended prefs cover most of this too; these keep it explicit);
- no background-tab timer throttling, as for Chromium.

In a network namespace (`Firefox(..., namespace=ns)`, see netns.py), the BiDi port listens on the
namespace's own loopback; socat forwards it to the namespace's address on the same port number,
as chromium.py does for DevTools. The handshake then still names 127.0.0.1:<port> as its Host:
the agent's HTTP server answers 400 to any other host:port than the ones it listens on.

WebAudio does not run in this headless Firefox on a machine without PulseAudio: the media graph
falls back to a system clock, but an AudioContext stays `suspended` and `resume()` never settles
(see test_ice_tcp.py for what a test can use instead).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import websocket

from chromium import WAIT, wait_for

PREFS: dict[str, Any] = {
    # Fake camera and microphone, no prompt; a persistent grant so ICE gathers every interface.
    "media.navigator.streams.fake": True,
    "media.navigator.permission.disabled": True,
    "permissions.default.microphone": 1,
    "permissions.default.camera": 1,
    "media.autoplay.default": 0,
    # Loopback host candidates, plain addresses.
    "media.peerconnection.ice.loopback": True,
    "media.peerconnection.ice.obfuscate_host_addresses": False,
    # Quiet: no first run, no default-browser question, no telemetry, updates or network chatter.
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "browser.aboutwelcome.enabled": False,
    "startup.homepage_welcome_url": "about:blank",
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.unified": False,
    "app.update.disabledForTesting": True,
    "app.normandy.enabled": False,
    "messaging-system.rsexperimentloader.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "extensions.update.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    # A test watches every tab: none may be throttled in the background.
    "dom.min_background_timeout_value": 4,
    "dom.timeout.enable_budget_timer_throttling": False,
}

LISTENING = re.compile(r"WebDriver BiDi listening on ws://[^:]+:(\d+)")


def plain(value: dict) -> Any:
    """A BiDi remote value as the JSON value `JSON.parse(JSON.stringify(x))` would give (near
    enough: Maps become objects, Sets lists; functions, nodes and windows become None)."""
    kind = value.get("type")
    inner = value.get("value")
    if kind in ("string", "boolean"):
        return inner
    if kind == "number":
        if isinstance(inner, str):  # NaN, -0, Infinity, -Infinity
            return {"NaN": math.nan, "-0": -0.0, "Infinity": math.inf, "-Infinity": -math.inf}[inner]
        return inner
    if kind == "bigint":
        return int(inner)
    if kind in ("array", "set"):
        return [plain(item) for item in inner or []]
    if kind in ("object", "map"):
        return {key if isinstance(key, str) else str(plain(key)): plain(item) for key, item in inner or []}
    if kind == "date":
        return inner
    if kind == "regexp":
        return f"/{inner['pattern']}/{inner.get('flags', '')}"
    return None  # undefined, null, and what JSON has no form for


class Page:
    """One browsing context (tab) of a `Firefox`: evaluate JavaScript, take screenshots."""

    def __init__(self, browser: "Firefox", context: str):
        self.browser = browser
        self.context = context
        self.console: list[str] = []

    def evaluate(self, expression: str) -> Any:
        """The JSON value of `expression` (awaited when it is a promise)."""
        result = self.browser.call("script.evaluate", expression=expression, target={"context": self.context},
                                   awaitPromise=True, resultOwnership="none")
        if result.get("type") == "exception":
            details = result.get("exceptionDetails", {})
            raise AssertionError(f"{expression}: {details.get('text')} {details.get('stackTrace', '')}")
        return plain(result["result"])

    def chorus(self) -> dict:
        """The web client's `window.chorus` state (functions left out)."""
        return self.evaluate("JSON.parse(JSON.stringify(window.chorus || null))") or {}

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.browser.call("browsingContext.captureScreenshot", context=self.context)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        if self in self.browser.pages:
            self.browser.pages.remove(self)
            try:
                self.browser.call("browsingContext.close", context=self.context)
            except (AssertionError, OSError, websocket.WebSocketException):
                pass  # the browser is going anyway


class Firefox:
    """A headless Firefox ESR on a fresh profile, its WebDriver BiDi port read from the profile."""

    def __init__(self, profile: Path, log_path: Path, prefs: dict[str, Any] | None = None, namespace=None):
        """`namespace` (a netns.Namespace) runs the browser on that network instead; its BiDi
        port, which listens on the namespace's own loopback, is then forwarded to the
        namespace's address by socat (as chromium.py does) so the test can drive it from outside."""
        binary = shutil.which("firefox-esr") or shutil.which("firefox")
        if binary is None:
            pytest.fail("firefox-esr is not installed (`make deps` installs it)")
        profile.mkdir(parents=True, exist_ok=True)
        lines = [f"user_pref({json.dumps(name)}, {json.dumps(value)});" for name, value in {**PREFS, **(prefs or {})}.items()]
        (profile / "user.js").write_text("\n".join(lines) + "\n")
        self.log_path = log_path
        self.log = open(log_path, "w", encoding="utf-8")
        env = {**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1", "MOZ_HEADLESS": "1"}
        # Its own process group: Firefox's content processes go with it at close().
        prefix = namespace.prefix() if namespace is not None else []
        self.process = subprocess.Popen(
            [*prefix, binary, "--headless", "--no-remote", "--profile", str(profile), "--remote-debugging-port", "0",
             "about:blank"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.pages: list[Page] = []
        self.next_id = 0
        self.socket = None
        try:
            self.port = wait_for("Firefox's WebDriver BiDi port", lambda: self._port(profile),
                                 detail=lambda: log_path.read_text(errors="replace")[-3000:])
            self.host = "127.0.0.1"
            if namespace is not None:  # the same port number on the namespace's address
                self.host = namespace.inner_ip
                namespace.spawn(["socat", f"TCP-LISTEN:{self.port},bind={self.host},reuseaddr,fork",
                                 f"TCP:127.0.0.1:{self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                wait_for("the BiDi forwarder", self._reachable)
            # The Host header names the agent's own address, forwarded or not.
            self.socket = websocket.create_connection(f"ws://{self.host}:{self.port}/session", timeout=WAIT,
                                                      suppress_origin=True, host=f"127.0.0.1:{self.port}")
            capabilities = self.call("session.new", capabilities={})["capabilities"]
            self.version = capabilities.get("browserVersion", "?")
            self.call("session.subscribe", events=["log.entryAdded"])
        except BaseException:
            self._stop(grace=0)
            raise

    def _port(self, profile: Path) -> int | None:
        if self.process.poll() is not None:
            pytest.fail(f"firefox exited with {self.process.returncode}: "
                        f"{self.log_path.read_text(errors='replace')[-3000:]}")
        try:
            return int(json.loads((profile / "WebDriverBiDiServer.json").read_text())["ws_port"])
        except (OSError, ValueError, KeyError):
            match = LISTENING.search(self.log_path.read_text(errors="replace"))
            return int(match.group(1)) if match else None

    def _reachable(self) -> bool:
        try:
            socket.create_connection((self.host, self.port), timeout=2).close()
            return True
        except OSError:
            return False

    def call(self, method: str, **params: Any) -> dict:
        """Sends one command and returns its result; events read meanwhile keep console lines."""
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        deadline = time.monotonic() + WAIT
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"{method}: no reply within {WAIT:.0f} s")
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if message.get("type") == "error":
                    raise AssertionError(f"{method}: {message.get('error')}: {message.get('message')}")
                return message["result"]
            if message.get("method") == "log.entryAdded":
                entry = message["params"]
                context = entry.get("source", {}).get("context")
                for page in self.pages:
                    if page.context == context:
                        page.console.append(f"{entry.get('level')}: {entry.get('text')}")

    def open(self, url: str, ready: str = "location.href !== 'about:blank' && document.readyState === 'complete'") -> Page:
        """A new tab at `url`, once the JavaScript `ready` is true in it."""
        page = Page(self, self.call("browsingContext.create", type="tab")["context"])
        self.pages.append(page)
        self.call("browsingContext.navigate", context=page.context, url=url, wait="complete")
        wait_for(f"{url} loaded", lambda: page.evaluate(ready))
        return page

    def close(self) -> None:
        if self.socket is not None:
            try:
                self.call("browser.close")  # ends the session and quits, flushing the profile
            except (AssertionError, OSError, websocket.WebSocketException):
                pass
            self.socket.close()
        self._stop(grace=10)

    def _stop(self, grace: float) -> None:
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # content processes left behind, if any
        except ProcessLookupError:
            pass
        self.process.wait()
        self.log.close()
