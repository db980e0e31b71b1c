"""Video fitted to each viewer's link (issue 16, items 2 and 3): a headless Chromium publishes
its fake camera in three simulcast layers (rid q at ÷4, h at ÷2, f full; 1280×720, capped at
150, 500 and 1,500 kbit/s, Chromium's own defaults for 720p), and three Chromium viewers watch it:

- two free viewers on the host, whose slots must carry the top layer (f);
- a thin viewer in its own namespace behind a 300 kbit/s token bucket (tc tbf on the host side
  of its veth), whose slot the server must keep below the top layer within 20 s from the
  server's own estimate of that link (transport-cc), with < 2 % video loss, < 1 % audio loss
  and its picture still moving, while both free viewers keep f and the publisher keeps sending
  its top layer (no REMB from the server lowers a simulcast publisher for one viewer). Which
  lower layer fits depends on what the publisher's encoder makes of the fake camera: q always
  does, h (capped at 500 kbit/s) often runs under 200 kbit/s and fits too; the test accepts
  either, and fails on f, on loss, or on a frozen picture.

Then the free viewer caps its slot at 360 rows (PATCH `slots`): it must move to h and back to f
when the cap is lifted. Then the thin viewer's link is thinned to 80 kbit/s, below the lowest layer: the thin viewer's slot must be
paused for bandwidth within 20 s and its audio then arrive with < 1 % loss over 5 s. Then the
shaping is lifted, and the thin viewer's slot must come back to f within 15 s (measured: see
the `print` of the run).
"""

from __future__ import annotations

import time
from pathlib import Path

from browser_netns import GATHERED_OFFER_JS, launch, open_page, serve_page_folder
from chromium import Chromium, wait_for
from firefox import Firefox
from conftest import ChorusServer
from netns import Namespace
from peers import ThreadedPeer

ROOM = "simulcast"

PAGE_SCRIPT = r"""
window.sim = (() => {
  const pcs = {};
%GATHERED_OFFER%
  return {
    async publish(name) {
      const stream = await navigator.mediaDevices.getUserMedia(
        { audio: true, video: { width: 1280, height: 720, frameRate: 30 } });
      const pc = pcs[name] = new RTCPeerConnection({ iceServers: [] });
      pc.addTransceiver(stream.getAudioTracks()[0], { direction: 'sendrecv', streams: [stream] });
      pc.addTransceiver(stream.getVideoTracks()[0], { direction: 'sendonly', streams: [stream], sendEncodings: [
        { rid: 'q', scaleResolutionDownBy: 4, maxBitrate: 150000 },
        { rid: 'h', scaleResolutionDownBy: 2, maxBitrate: 500000 },
        { rid: 'f', maxBitrate: 1500000 }] });
      return offer(pc);
    },
    async view(name) {
      const pc = pcs[name] = new RTCPeerConnection({ iceServers: [] });
      pc.addTransceiver('audio', { direction: 'recvonly' });
      pc.addTransceiver('video', { direction: 'recvonly' });
      pc.ontrack = (event) => {
        const element = document.createElement(event.track.kind);
        element.srcObject = new MediaStream([event.track]);
        element.muted = true;
        element.play();
      };
      return offer(pc);
    },
    async answer(name, sdp) { await pcs[name].setRemoteDescription({ type: 'answer', sdp }); return true; },
    async stats(name) {
      const report = await pcs[name].getStats();
      const all = [...report.values()];
      const inbound = (kind) => all.find((s) => s.type === 'inbound-rtp' && s.kind === kind) || {};
      const video = inbound('video'), audio = inbound('audio');
      const outbound = all.filter((s) => s.type === 'outbound-rtp' && s.kind === 'video')
        .map((s) => ({ rid: s.rid, bytesSent: s.bytesSent, frameHeight: s.frameHeight }));
      return { video: { framesDecoded: video.framesDecoded || 0, frameHeight: video.frameHeight || 0,
                        packetsReceived: video.packetsReceived || 0, packetsLost: video.packetsLost || 0,
                        freezeCount: video.freezeCount || 0, totalFreezesDuration: video.totalFreezesDuration || 0 },
               audio: { packetsReceived: audio.packetsReceived || 0, packetsLost: audio.packetsLost || 0 },
               outbound };
    },
    close() { for (const pc of Object.values(pcs)) pc.close(); return true; },
  };
})();
true
""".replace("%GATHERED_OFFER%", GATHERED_OFFER_JS)


def loss(before: dict, after: dict) -> float:
    received = after["packetsReceived"] - before["packetsReceived"]
    lost = after["packetsLost"] - before["packetsLost"]
    return lost / max(received + lost, 1)


class Session:
    """Four calls in one room: `publisher` (Chromium or Firefox on the host, simulcast), `free`
    and `free2` (Chromium on the host) and `thin` (Chromium in the namespace, behind its shaped
    link)."""

    def __init__(self, server: ChorusServer, namespace: Namespace, tmp_path: Path, publisher_kind: str):
        self.server = server
        self.browsers = []
        serve_page_folder(namespace, tmp_path / "www")
        host = Chromium(tmp_path / "host-profile", tmp_path / "host-chromium.log")
        self.browsers.append(host)
        thin = launch("chromium", namespace, tmp_path)
        self.browsers.append(thin)
        self.pages = {"host": host.open(server.url("/healthz")), "thin": open_page(thin, namespace)}
        if publisher_kind == "firefox":
            firefox = Firefox(tmp_path / "firefox-profile", tmp_path / "firefox.log")
            self.browsers.append(firefox)
            self.pages["publisher"] = firefox.open(server.url("/healthz"))
        else:
            self.pages["publisher"] = self.pages["host"]
        for page in self.pages.values():
            assert page.evaluate(PAGE_SCRIPT) is True
        self.calls: dict[str, tuple[str, str]] = {}
        self.trace: list[dict] = []
        for name, page, script in (("publisher", "publisher", "publish"), ("free", "host", "view"),
                                   ("free2", "host", "view"), ("thin", "thin", "view")):
            offer = self.pages[page].evaluate(f"window.sim.{script}('{name}')")
            reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": name})
            assert reply.status_code == 201, reply.text
            self.calls[name] = (reply.json()["callId"], page)
            assert self.pages[page].evaluate(f"window.sim.answer('{name}', {reply.json()['sdp']!r})") is True

    def moment(self) -> dict:
        """What the server shows now: the viewers' slots and estimates, the publisher's layers."""
        views = {name: self.participant(name) for name in ("thin", "free", "free2", "publisher")}
        return {**{name: (views[name]["slots"], (views[name].get("downlink") or {}).get("bitrate"))
                   for name in ("thin", "free", "free2")},
                "layers": [(layer.get("rid"), layer["bitrate"], layer.get("height"))
                           for layer in views["publisher"]["publishedLayers"]]}

    def close(self) -> None:
        for browser in self.browsers:
            browser.close()

    def participant(self, name: str) -> dict:
        got = self.server.request("GET", f"/v1/rooms/{ROOM}/participants/{self.calls[name][0]}")
        assert got.status_code == 200, got.text
        return got.json()

    def stats(self, name: str) -> dict:
        return self.pages[self.calls[name][1]].evaluate(f"window.sim.stats('{name}')")

    def rid(self, name: str) -> str | None:
        slots = [slot for slot in self.participant(name)["slots"] if slot.get("publisherCallId")]
        return slots[0].get("rid") if slots and not slots[0].get("paused") else None

    def top_rid(self) -> str:
        """The publisher's tallest layer, by the heights the server measured."""
        layers = [layer for layer in self.participant("publisher")["publishedLayers"] if layer.get("height")]
        return max(layers, key=lambda layer: layer["height"])["rid"] if layers else "f"

    def settle_below_top(self) -> float:
        """Waits until the thin viewer is below the top layer and the free viewers on it, with no
        move of the thin viewer's slot for 3 s (the start is turbulent: the publisher's encoders
        ramp up while the server's estimate of the thin link finds its level). Seconds taken."""
        started = time.monotonic()
        history: list[tuple[float, str | None, int]] = []

        def settled() -> bool:
            # All three layers arriving, each with a keyframe seen (an encoder short of CPU,
            # Firefox's on this 2-core machine at times, stops its top layer for a while).
            layers = self.participant("publisher")["publishedLayers"]
            if sum(1 for layer in layers if layer.get("height") and layer["bitrate"] > 0) < 3:
                return False
            top = self.top_rid()
            thin_view = self.participant("thin")
            history.append((time.monotonic(), self.rid("thin"), thin_view["video"]["layerSwitches"]))
            recent = [entry for entry in history if entry[0] > history[-1][0] - 3]
            return (history[-1][0] - history[0][0] >= 3 and self.rid("free") == top == self.rid("free2")
                    and all(entry[1] not in (None, top) and entry[2] == recent[0][2] for entry in recent))

        wait_for("the thin viewer settled below the top layer, the free viewers on it", settled, timeout=30,
                 detail=lambda: f"thin history {history[-20:]}\nthin {self.participant('thin')}\n"
                                f"free {self.participant('free')['slots']}\n"
                                f"free2 {self.participant('free2')['slots']}\n"
                                f"publisher {self.participant('publisher')['publishedLayers']}")
        return time.monotonic() - started

    def check_window(self, minimum_top_rate: int) -> tuple[str, dict, float]:
        """Five seconds on those layers: the thin link carries its layer, and nobody paid for it.
        Returns the thin viewer's RID, its stats and the publisher's top-layer bit/s.

        The five seconds are ones in which the thin viewer's slot did not move (at most three
        tries). A move up on the thin link (the estimate found room, held 2 s, 8 s after the last
        move down) starts with the new layer's keyframe, tens of kilobytes at once, more than the
        link's 300 ms of queue (11 KB): a fresh clone's run on 2026-12-07 lost 2.3 % of the thin
        viewer's video in the five seconds in which it moved from 180p to 360p, against the 2 %
        bound, which is about the layer the link carries, not about the switch. (Pacing the
        burst in the server was tried: at 1.25x the thin viewer's budget it froze its picture in
        5 of 6 runs, and was dropped.) The switch's losses are repaired by NACK."""
        top = self.top_rid()
        viewers = ("thin", "free", "free2", "publisher")
        for _ in range(3):
            switches = self.participant("thin")["video"]["layerSwitches"]
            before = {name: self.stats(name) for name in viewers}
            frames, free_rids = [], {"free": [], "free2": []}
            for _ in range(5):
                time.sleep(1)
                frames.append(self.stats("thin")["video"]["framesDecoded"])
                for name, rids in free_rids.items():
                    rids.append(self.rid(name))
                self.trace.append(self.moment())
            after = {name: self.stats(name) for name in viewers}
            if self.participant("thin")["video"]["layerSwitches"] == switches:
                break
        thin_rid = self.rid("thin")
        assert thin_rid not in (None, top), self.trace
        # The free viewers keep the top layer. Their links are loopback, but on this 2-core
        # machine the browsers and the server share the CPU, and a late-scheduled receiver looks
        # like a queue to a delay-based estimator: a second below the top is tolerated, not more.
        for name, rids in free_rids.items():
            assert rids.count(top) >= 4, (name, rids, self.trace)
        assert loss(before["thin"]["video"], after["thin"]["video"]) < 0.02, (before["thin"], after["thin"])
        assert loss(before["thin"]["audio"], after["thin"]["audio"]) < 0.01, (before["thin"], after["thin"])
        assert all(b > a for a, b in zip([before["thin"]["video"]["framesDecoded"]] + frames, frames)), frames
        assert after["free"]["video"]["frameHeight"] > after["thin"]["video"]["frameHeight"] > 0, after
        assert after["free2"]["video"]["frameHeight"] > after["thin"]["video"]["frameHeight"], after
        sent = {o["rid"]: o["bytesSent"] for o in after["publisher"]["outbound"]}
        sent_before = {o["rid"]: o["bytesSent"] for o in before["publisher"]["outbound"]}
        top_rate = (sent.get(top, 0) - sent_before.get(top, 0)) * 8 / 5
        assert top_rate > minimum_top_rate, f"the publisher's top layer sent {top_rate:.0f} bit/s"
        return thin_rid, after["thin"], top_rate

    def back_on_top(self, namespace: Namespace) -> float:
        """Lifts the shaping; the thin viewer must be back on the top layer within 15 s."""
        namespace.shape(None)
        lifted = time.monotonic()
        wait_for("the thin viewer back on the top layer", lambda: self.rid("thin") == self.top_rid(), timeout=15,
                 detail=lambda: f"thin {self.participant('thin')}")
        return time.monotonic() - lifted


def test_each_viewer_gets_the_layer_its_link_carries(netns_server: ChorusServer, namespace: Namespace, tmp_path: Path):
    server = netns_server
    namespace.shape(300)
    session = Session(server, namespace, tmp_path, "chromium")
    try:
        participant, stats, rid, calls = session.participant, session.stats, session.rid, session.calls
        settled = session.settle_below_top()
        thin_rid, thin_stats, top_rate = session.check_window(minimum_top_rate=300_000)
        # The free viewer shrinks its tile: capped at 360 rows, its slot moves to h (640×360),
        # and back to f when the cap is lifted. Bad caps are refused, naming the problem.
        free_mid = next(slot["mid"] for slot in participant("free")["slots"] if slot.get("publisherCallId"))
        path = f"/v1/rooms/{ROOM}/participants/{calls['free'][0]}"
        for body, code in (({"slots": [{"mid": "nope", "maxHeight": 360}]}, "unknownSlot"),
                           ({"slots": [{"mid": free_mid, "maxHeight": 0}]}, "invalidMaxHeight"),
                           ({"slots": [{"mid": free_mid, "maxHeight": 360}, {"mid": free_mid}]}, "duplicateSlot")):
            refused = server.request("PATCH", path, json=body)
            assert refused.status_code == 422 and refused.json()["error"]["code"] == code, refused.text
        capped = server.request("PATCH", path, json={"slots": [{"mid": free_mid, "maxHeight": 360}]})
        assert capped.status_code == 200, capped.text
        assert [slot.get("maxHeight") for slot in capped.json()["slots"] if slot["mid"] == free_mid] == [360]
        wait_for("the free viewer on h under its 360-row cap", lambda: rid("free") == "h", timeout=10,
                 detail=lambda: f"free {participant('free')['slots']}")
        wait_for("the free viewer's picture 360 rows tall", lambda: stats("free")["video"]["frameHeight"] == 360,
                 timeout=10, detail=lambda: f"free {stats('free')}")
        assert rid("free2") == session.top_rid(), participant("free2")["slots"]  # one viewer's cap is its own
        lifted_cap = server.request("PATCH", path, json={"slots": [{"mid": free_mid, "maxHeight": None}]})
        assert lifted_cap.status_code == 200, lifted_cap.text
        wait_for("the free viewer back on f once its cap is lifted", lambda: rid("free") == "f", timeout=10,
                 detail=lambda: f"free {participant('free')['slots']}")

        # A link thinner than the lowest layer: the thin viewer's slot is paused for bandwidth,
        # and the mix still reaches it whole.
        namespace.shape(80)
        thinned = time.monotonic()

        def paused() -> bool:
            slots = [slot for slot in participant("thin")["slots"] if slot.get("publisherCallId")]
            return bool(slots) and slots[0].get("paused") == "bandwidth"

        wait_for("the thin viewer's slot paused for bandwidth", paused, timeout=20,
                 detail=lambda: f"thin {participant('thin')}")
        pause_took = time.monotonic() - thinned
        time.sleep(1)
        before_pause, sent_before = stats("thin"), participant("thin")["audio"]["mixFramesSent"]
        # 10 s: the two counts are taken at either end of a queueing link, and over 5 s the
        # packets in flight between them once came to 10.2 % of those sent.
        time.sleep(10)
        after_pause, sent_after = stats("thin"), participant("thin")["audio"]["mixFramesSent"]
        assert paused(), participant("thin")
        assert loss(before_pause["audio"], after_pause["audio"]) < 0.01, (before_pause, after_pause)
        # What the server sent reaches it: the publisher's fake microphone beeps, and the ticks
        # between beeps are silence, which is not sent (measured: 40-55 % of the ticks
        # sent). The two counts are read a few hundred ms apart, on a link that queues.
        received = after_pause["audio"]["packetsReceived"] - before_pause["audio"]["packetsReceived"]
        sent = sent_after - sent_before
        assert sent > 50 and received >= 0.9 * sent, (sent, received, after_pause)

        back = session.back_on_top(namespace)
        print(f"thin viewer on {thin_rid}, settled in {settled:.1f} s; paused {pause_took:.1f} s after 80 kbit/s; back on the top layer {back:.1f} s after the link "
              f"opened; thin {thin_stats}; publisher top layer {top_rate / 1000:.0f} kbit/s")
        # The call record keeps the downlink over the call, the slots' last layers and the
        # switches (the leave is by DELETE, so the record is written at once).
        assert server.request("DELETE", f"/v1/rooms/{ROOM}/participants/{calls['thin'][0]}").status_code == 204

        def thin_record() -> dict | None:
            record = server.request("GET", f"/v1/calls/{calls['thin'][0]}").json()
            return record if record.get("state") == "ended" else None

        wait_for("the thin viewer's call record", thin_record, timeout=10)
        stats_record = thin_record()["serverStatistics"]
        assert stats_record["downlink"]["source"] == "transportCC", stats_record
        downlink = stats_record["downlink"]
        assert downlink["minimumBitrate"] < 300_000 < downlink["maximumBitrate"], downlink
        assert stats_record["video"]["layerSwitches"] >= 3, stats_record["video"]
        assert [slot.get("rid") for slot in stats_record["slots"] if slot.get("publisherCallId")] == ["f"], stats_record
    finally:
        session.close()


def test_firefox_simulcast_is_forwarded_the_same_way(netns_server: ChorusServer, namespace: Namespace,
                                                     tmp_path: Path):
    """Firefox ESR publishes the same three encodings (its offer lists them in another order,
    and it sends the RID extension on every packet): the thin viewer gets a lower layer, the
    free viewers the top one, and the thin viewer is back on top once its link opens."""
    namespace.shape(300)
    session = Session(netns_server, namespace, tmp_path, "firefox")
    try:
        settled = session.settle_below_top()
        thin_rid, thin_stats, top_rate = session.check_window(minimum_top_rate=100_000)
        back = session.back_on_top(namespace)
        print(f"Firefox publisher: thin viewer on {thin_rid}, settled in {settled:.1f} s; back on the top layer "
              f"{back:.1f} s after the link opened; thin {thin_stats}; publisher top layer {top_rate / 1000:.0f} kbit/s; "
              f"layers {session.participant('publisher')['publishedLayers']}")
    finally:
        session.close()


def test_a_remb_only_viewer_gets_its_layer_from_its_remb(chorus_server: ChorusServer, tmp_path: Path):
    """aiortc answers no transport-cc: it sends REMB from its own receive-side estimator, timed
    by the abs-send-time the server stamps on its slot's packets. Its slot's layer is chosen
    from that REMB (its `downlink` says `remb`), never paused, and it decodes the layer it is
    sent. (Its estimator only grows to ~1.5× what it receives, 126–230 kbit/s on the 150 kbit/s
    layer, so on loopback it stays on q, often at a lower temporal layer (6–7 fps): the server
    does not probe REMB-only clients.)"""
    server = chorus_server
    host = Chromium(tmp_path / "host-profile", tmp_path / "host-chromium.log")
    viewer = ThreadedPeer(camera=False, slots=1)
    try:
        page = host.open(server.url("/healthz"))
        assert page.evaluate(PAGE_SCRIPT) is True
        offer = page.evaluate("window.sim.publish('publisher')")
        reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": "publisher"})
        assert reply.status_code == 201, reply.text
        assert page.evaluate(f"window.sim.answer('publisher', {reply.json()['sdp']!r})") is True
        call_id = viewer.join(server, ROOM, "aiortc")

        def view() -> dict:
            return server.request("GET", f"/v1/rooms/{ROOM}/participants/{call_id}").json()

        def fitted() -> dict | None:
            current = view()
            slots = [slot for slot in current["slots"] if slot.get("publisherCallId")]
            downlink = current.get("downlink") or {}
            return current if (downlink.get("source") == "remb" and slots and slots[0].get("rid")
                               and not slots[0].get("paused")) else None

        fitted_view = wait_for("the aiortc viewer's slot on a layer chosen from its REMB", fitted, timeout=20,
                               detail=lambda: view())
        mid = viewer.peer.slot_mids()[0]
        # Five seconds: the slot keeps a layer (never paused: a REMB cannot grow past what the
        # client is sent, so a paused REMB client would never see video again) and aiortc
        # decodes it.
        started = time.monotonic()
        paused = []
        for _ in range(5):
            time.sleep(1)
            paused += [slot.get("paused") for slot in view()["slots"] if slot.get("publisherCallId")]
        frames = viewer.peer.frames_on(mid, start=started)
        assert not any(paused), (paused, view())
        assert frames > 10, f"{frames} frames decoded in 5 s; {view()}"
        print(f"aiortc viewer: REMB {fitted_view['downlink']['bitrate']} bit/s, slot {fitted_view['slots']}, "
              f"{frames} frames in 5 s")
    finally:
        viewer.close()
        host.close()
