"""A headless browser on another network and an aiortc talker in its room: what the namespaced
browser tests share (test_ice_tcp.py, test_turn.py, test_ice_restart_browser.py; the namespace
and the server on its host side are the fixtures `namespace` and `netns_server` of conftest.py,
which test_web_client_restart.py uses too).

The browser (Chromium, or Firefox ESR for test_ice_tcp.py) runs inside the namespace, on an
empty page served by python3's http.server on the namespace's own loopback: a secure context, so
getUserMedia is there. The page's JavaScript is the test's: `page_setup` builds the usual one, a
660 Hz tone as microphone and the decoded audio of what the server sends kept in `window.t`, from
the parts below. The talker, an aiortc peer on the host side sending 440 Hz, runs on the test's
own asyncio loop, so every wait on the browser lets that loop run (`BrowserCall.pumped`).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import numpy

from chromium import Chromium, wait_for
from conftest import ChorusServer
from firefox import Firefox
from netns import Namespace
from peers import Peer
from test_audio_mix import tone_db
from test_hostile_system import join_peer
from test_join_aiortc import participant, wait_until

PAGE_PORT = 8765

# -- the page's JavaScript ---------------------------------------------------------------------

# The page: `__SEND__` makes the microphone (`stream` and its `track`), `__RECEIVE__` handles the
# remote track (`event`), the connection is made with `__CONFIG__`, and the offer is returned once
# gathering is complete (or after `__GATHER_MS__`).
PAGE_TEMPLATE = """
(async () => {
  window.t = {states: [], heard: [], errors: []};
__SEND__
  const pc = new RTCPeerConnection(__CONFIG__);
  window.t.pc = pc;
  pc.addTrack(track, stream);
  pc.onconnectionstatechange = () => window.t.states.push([Date.now(), pc.connectionState]);
  pc.onicecandidateerror = (e) => window.t.errors.push([e.url, e.errorCode, e.errorText]);
  pc.ontrack = (event) => {
__RECEIVE__
  };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((resolve) => {
    if (pc.iceGatheringState === 'complete') return resolve();
    pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && resolve();
    setTimeout(resolve, __GATHER_MS__);
  });
  return pc.localDescription.sdp;
})()
"""

# A 660 Hz WebAudio oscillator as microphone (Chromium; Firefox's WebAudio does not run here).
OSCILLATOR = """
  const ctx = new AudioContext({sampleRate: 48000});
  const osc = ctx.createOscillator();
  osc.frequency.value = 660;
  const gain = ctx.createGain(); gain.gain.value = 0.3;
  const dest = ctx.createMediaStreamDestination();
  osc.connect(gain).connect(dest); osc.start();
  const stream = dest.stream, track = stream.getAudioTracks()[0];
  window.t.ctx = ctx;"""

# Media permission first: without it Chromium gathers only the default route's UDP candidate and
# no TCP candidate at all. The fake microphone is then set aside for the oscillator.
MEDIA_PERMISSION = """
  (await navigator.mediaDevices.getUserMedia({audio: true})).getTracks().forEach((track) => track.stop());"""

# Chromium: the remote track's decoded PCM frames, read with MediaStreamTrackProcessor.
CHROMIUM_RECEIVE = """
    // Chromium decodes remote audio only while something plays it out.
    const element = new Audio();
    element.srcObject = new MediaStream([event.track]);
    element.play();
    window.t.element = element;
    const reader = new MediaStreamTrackProcessor({track: event.track}).readable.getReader();
    (async () => {
      for (;;) {
        const {value, done} = await reader.read();
        if (done) return;
        const samples = new Float32Array(value.numberOfFrames);
        value.copyTo(samples, {planeIndex: 0, format: 'f32-planar'});
        window.t.heard.push([performance.now(), Array.from(samples)]);
        if (window.t.heard.length > 400) window.t.heard.shift();
        value.close();
      }
    })();"""

# The last second of decoded audio (CHROMIUM_RECEIVE's), concatenated.
LAST_SECOND = """
(() => {
  const now = performance.now();
  return window.t.heard.filter(([at]) => at > now - 1000).flatMap(([, s]) => s);
})()
"""


# `offer(pc)` for a page's script: the local offer once ICE gathering completes (at most 3 s),
# since Chorus takes no trickled candidates.
GATHERED_OFFER_JS = r"""  async function offer(pc) {
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise((resolve) => {
      if (pc.iceGatheringState === 'complete') return resolve();
      pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
      setTimeout(resolve, 3000);
    });
    return pc.localDescription.sdp;
  }"""

def page_setup(send: str, receive: str, config: str = "{bundlePolicy: 'max-bundle'}", gather_ms: int = 5000) -> str:
    """PAGE_TEMPLATE with its parts: the page's setup, whose value is the browser's offer."""
    return (PAGE_TEMPLATE.replace("__SEND__", send).replace("__RECEIVE__", receive)
            .replace("__CONFIG__", config).replace("__GATHER_MS__", str(gather_ms)))


# Chromium's usual page: a 660 Hz oscillator (with the media permission asked first), max-bundle.
CHROMIUM_PAGE_SETUP = page_setup(MEDIA_PERMISSION + OSCILLATOR, CHROMIUM_RECEIVE)


# -- the page's server and the browser ---------------------------------------------------------

def serve_page_folder(namespace: Namespace, folder: Path) -> None:
    """Makes `folder` (empty) and serves it with python3's http.server on the namespace's own
    loopback, port PAGE_PORT; the server is killed when the namespace is removed."""
    folder.mkdir()
    namespace.spawn(["python3", "-m", "http.server", str(PAGE_PORT), "--bind", "127.0.0.1", "--directory", str(folder)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def serving(namespace: Namespace) -> bool:
    """Whether the page's http.server listens yet on the namespace's loopback."""
    probe = f"import socket; socket.create_connection(('127.0.0.1', {PAGE_PORT}), 1)"
    return subprocess.run([*namespace.prefix(), "python3", "-c", probe], capture_output=True, timeout=10).returncode == 0


def open_page(browser, namespace: Namespace):
    """The page on the namespace's loopback (its folder's listing, not an error page), once its
    http.server listens."""
    wait_for("the page's server", lambda: serving(namespace), timeout=10)
    return browser.open(f"http://127.0.0.1:{PAGE_PORT}/", ready="document.readyState === 'complete' && "
                                                               "document.title.startsWith('Directory listing')")


def launch(kind: str, namespace: Namespace, tmp_path: Path, firefox_prefs: dict[str, Any] | None = None,
           extra_flags: list[str] = ()):
    """A headless `kind` ("chromium" or "firefox") inside `namespace`, its profile and log in
    `tmp_path`; `firefox_prefs` go to Firefox's profile, `extra_flags` to Chromium's command line."""
    if kind == "chromium":
        return Chromium(tmp_path / "chromium-profile", tmp_path / "chromium.log", namespace=namespace,
                        extra_flags=extra_flags)
    return Firefox(tmp_path / "firefox-profile", tmp_path / "firefox.log", prefs=firefox_prefs, namespace=namespace)


# -- the call ------------------------------------------------------------------------------------

class BrowserCall:
    """An aiortc talker (440 Hz, audio only) in `room` from the host side, established, and a
    headless browser in `namespace` on the empty page of `serve_page_folder` (`page`). The test
    evaluates its page setup, then `join`s the offer and `connect`s the answer; `close` at the end."""

    def __init__(self, server: ChorusServer, namespace: Namespace, tmp_path: Path, room: str,
                 kind: str = "chromium", firefox_prefs: dict[str, Any] | None = None):
        self.server, self.namespace, self.room, self.kind = server, namespace, room, kind
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.talker = Peer(frequency=440.0, video=False)
        self.browser = None
        try:
            serve_page_folder(namespace, tmp_path / "www")
            self.browser = launch(kind, namespace, tmp_path, firefox_prefs)
            self.page = open_page(self.browser, namespace)
            talker_call, _ = join_peer(server, self.loop, self.talker, room, "talker")
            wait_until(lambda: participant(server, room, talker_call)["state"] == "established", 10)
        except BaseException:
            self.close()
            raise

    def pump(self, seconds: float) -> None:
        """Lets the talker run (it runs only while the loop does) for `seconds`."""
        self.loop.run_until_complete(asyncio.sleep(seconds))

    def pumped(self, probe: Callable[[], Any]) -> Callable[[], Any]:
        """`probe`, letting the talker run for 50 ms before each call: for `wait_for`."""
        return lambda: (self.pump(0.05), probe())[1]

    def state(self, call_id: str) -> str:
        """The server's state of the participant `call_id` in the room."""
        return participant(self.server, self.room, call_id)["state"]

    def join(self, offer: str, user: str = "browser") -> tuple[str, str]:
        """POSTs the browser's offer as `user` (asserting 201); its callId and the server's answer."""
        reply = self.server.request("POST", f"/v1/rooms/{self.room}/participants", json={"sdp": offer, "userId": user})
        assert reply.status_code == 201, reply.text
        return reply.json()["callId"], reply.json()["sdp"]

    def answer(self, sdp: str) -> None:
        """Applies the server's answer (to an offer or a re-offer) in the page."""
        self.page.evaluate(f"window.t.pc.setRemoteDescription({{type: 'answer', sdp: {sdp!r}}})")

    def connect(self, call_id: str, answer: str, timeout: float = 30.0, detail: Callable[[], Any] = lambda: "") -> None:
        """Applies the answer; returns once the server has the browser's participant established
        (fails after `timeout` with the page's states and errors, the server's log and `detail`)."""
        self.answer(answer)
        states = lambda: (self.page.evaluate("[window.t.states, window.t.errors]"), self.state(call_id))
        wait_for("the browser connected", self.pumped(lambda: self.state(call_id) == "established"),
                 timeout=timeout, detail=lambda: (states(), self.server.log_tail(2000), detail()))

    def exchange_audio(self, call_id: str, heard_by_browser: Callable[[], numpy.ndarray] | None = None,
                       detail: Callable[[], Any] = lambda: "") -> tuple[dict, dict, dict]:
        """Three seconds of media both ways; asserts that the talker heard the browser's 660 Hz in
        the last two (48,000 samples or more, 20 dB over a silent 1 kHz band), that the browser
        decoded 24,000 samples or more of the talker's 440 Hz in the last second (likewise), and
        that the server counted over 100 packets each way. `heard_by_browser` reads what the
        browser decoded (default: LAST_SECOND); `detail`, read before it, goes into the message
        when it is too short. Returns the server's counters of the call and the dB levels heard
        by the talker and by the browser, by frequency."""
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            self.pump(0.1)
        end = time.monotonic()
        heard_by_talker = self.talker.audio_between(end - 2.0, end)
        assert len(heard_by_talker) >= 48000, f"the aiortc talker got {len(heard_by_talker)} samples"
        talker_db = {hz: float(tone_db(heard_by_talker, hz)) for hz in (660.0, 1000.0)}
        assert talker_db[660.0] > talker_db[1000.0] + 20, f"the talker did not hear the browser: dB {talker_db}"
        context = detail()
        heard = (heard_by_browser or (lambda: numpy.array(self.page.evaluate(LAST_SECOND), dtype=numpy.float64)))()
        assert len(heard) >= 24000, f"the browser decoded {len(heard)} samples in the last second; {context}"
        browser_db = {hz: float(tone_db(heard, hz)) for hz in (440.0, 1000.0)}
        assert browser_db[440.0] > browser_db[1000.0] + 20, f"the browser did not hear the room: dB {browser_db}"
        media = participant(self.server, self.room, call_id)["media"]
        assert media["packetsReceived"] > 100 and media["packetsSent"] > 100, media
        rounded = lambda levels: {hz: round(db, 1) for hz, db in levels.items()}
        return media, rounded(talker_db), rounded(browser_db)

    def close(self) -> None:
        """Closes the browser, then the talker and the loop."""
        try:
            if self.browser is not None:
                self.browser.close()
        finally:
            self.loop.run_until_complete(self.talker.close())
            self.loop.close()
