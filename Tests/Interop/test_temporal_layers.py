"""VP8 temporal layers dropped for a thin viewer (issue 16, item 3): a headless Chromium
publishes its fake camera as one VP8 encoding with three temporal layers (scalabilityMode L1T3:
TIDs 0, 2, 1, 2; 30 fps asked, about 21 on a busy 2-core machine; libwebrtc's 40 / 20 / 40 %
rate split, ~270 kbit/s in all at 640×360 here), a free viewer on the host
watches it whole, and a thin viewer in its own namespace sits behind a token bucket sized from
the publisher's measured rate so that the server's estimate of that link leaves its slot less
than the full rate but more than the base layer's: the server must forward it the lower
temporal layers only (the slot's `temporalLayer` is 0 or 1, a quarter or half the frame rate),
and Chromium must decode that stream, whose sequence numbers and picture IDs the server
rewrote, without a freeze over 1 s and without asking for a key frame (what a decoder that
lost its references does), its frame rate well below the free viewer's. The publisher is not
asked to lower its rate for the thin viewer (the server sends no REMB to a publisher whose
stream has temporal layers), so the free viewer keeps the whole stream. Measured (the
`print`): the thin viewer settles on TID <= 0 or <= 1 about 5 s after the link is shaped, and
decodes 5-7 or ~10.5 fps against the free viewer's ~21.
"""

from __future__ import annotations

import time
from pathlib import Path

from browser_netns import GATHERED_OFFER_JS, launch, open_page, serve_page_folder
from chromium import Chromium, wait_for
from conftest import ChorusServer
from netns import Namespace

ROOM = "temporal"

PAGE_SCRIPT = r"""
window.tl = (() => {
  const pcs = {};
%GATHERED_OFFER%
  return {
    async publish(name) {
      const stream = await navigator.mediaDevices.getUserMedia(
        { audio: true, video: { width: 640, height: 360, frameRate: 30 } });
      const pc = pcs[name] = new RTCPeerConnection({ iceServers: [] });
      pc.addTransceiver(stream.getAudioTracks()[0], { direction: 'sendrecv', streams: [stream] });
      const video = pc.addTransceiver(stream.getVideoTracks()[0], { direction: 'sendonly', streams: [stream],
        sendEncodings: [{ scalabilityMode: 'L1T3', maxBitrate: 900000 }] });
      const vp8 = RTCRtpSender.getCapabilities('video').codecs.filter((c) => /vp8|rtx/i.test(c.mimeType));
      video.setCodecPreferences(vp8);
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
      const all = [...(await pcs[name].getStats()).values()];
      const video = all.find((s) => s.type === 'inbound-rtp' && s.kind === 'video') || {};
      const out = all.find((s) => s.type === 'outbound-rtp' && s.kind === 'video') || {};
      return { framesDecoded: video.framesDecoded || 0, keyFramesDecoded: video.keyFramesDecoded || 0,
               freezeCount: video.freezeCount || 0, totalFreezesDuration: video.totalFreezesDuration || 0,
               packetsReceived: video.packetsReceived || 0,
               packetsLost: video.packetsLost || 0, pliCount: video.pliCount || 0,
               scalabilityMode: out.scalabilityMode || null, framesSent: out.framesSent || 0 };
    },
    close() { for (const pc of Object.values(pcs)) pc.close(); return true; },
  };
})();
true
""".replace("%GATHERED_OFFER%", GATHERED_OFFER_JS)


def test_a_thin_viewer_gets_the_lower_temporal_layers(netns_server: ChorusServer, namespace: Namespace,
                                                      tmp_path: Path):
    server = netns_server
    serve_page_folder(namespace, tmp_path / "www")
    host = Chromium(tmp_path / "host-profile", tmp_path / "host-chromium.log")
    thin = launch("chromium", namespace, tmp_path)
    try:
        pages = {"host": host.open(server.url("/healthz")), "thin": open_page(thin, namespace)}
        for page in pages.values():
            assert page.evaluate(PAGE_SCRIPT) is True
        calls = {}
        for name, page, script in (("publisher", "host", "publish"), ("free", "host", "view"), ("thin", "thin", "view")):
            offer = pages[page].evaluate(f"window.tl.{script}('{name}')")
            reply = server.request("POST", f"/v1/rooms/{ROOM}/participants", json={"sdp": offer, "userId": name})
            assert reply.status_code == 201, reply.text
            calls[name] = (reply.json()["callId"], page)
            assert pages[page].evaluate(f"window.tl.answer('{name}', {reply.json()['sdp']!r})") is True

        def participant(name: str) -> dict:
            got = server.request("GET", f"/v1/rooms/{ROOM}/participants/{calls[name][0]}")
            assert got.status_code == 200, got.text
            return got.json()

        def stats(name: str) -> dict:
            return pages[calls[name][1]].evaluate(f"window.tl.stats('{name}')")

        def slot(name: str) -> dict:
            slots = [entry for entry in participant(name)["slots"] if entry.get("publisherCallId")]
            return slots[0] if slots else {}

        # The publisher's rate once its encoder has ramped up (both viewers free so far).
        rates: list[int] = []

        def ramped_up() -> bool:
            layers = participant("publisher").get("publishedLayers") or [{}]
            rates.append(layers[0].get("bitrate", 0))
            last = rates[-10:]
            return (len(last) == 10 and min(last) > 150_000 and min(last) > 0.85 * max(last)
                    and stats("free")["framesDecoded"] > 60)

        wait_for("the publisher's rate steady and the free viewer decoding", ramped_up, timeout=40,
                 detail=lambda: f"rates {rates[-10:]} publisher {stats('publisher')}")
        full = sum(rates[-10:]) / 10
        # The slot's budget is the estimate less 56 kbit/s for the mix; aim it at 70 % of the
        # full rate (TID <= 1 is about 60 %, and going back up needs 120 %), the link's rate a
        # little above the estimate.
        link = int((0.7 * full + 56_000) / 0.9 / 1000)
        namespace.shape(link)
        history: list[tuple[float, object]] = []

        def settled_on_lower_layers() -> bool:
            thin_view = participant("thin")
            slots = [entry for entry in thin_view["slots"] if entry.get("publisherCallId")]
            layers = participant("publisher").get("publishedLayers") or [{}]
            history.append((time.monotonic(), slots[0].get("temporalLayer") if slots else None,
                            (thin_view.get("downlink") or {}).get("bitrate"), layers[0].get("temporalBitrates")))
            recent = [entry[1] for entry in history if entry[0] > history[-1][0] - 4]
            return (history[-1][0] - history[0][0] >= 4 and all(value in (0, 1) for value in recent)
                    and len(set(recent)) == 1)

        wait_for("the thin viewer's slot on the lower temporal layers", settled_on_lower_layers, timeout=40,
                 detail=lambda: f"link {link} kbit/s for a {full:.0f} bit/s stream; history {history[-20:]}\n"
                                f"thin {participant('thin')}")
        # A window of 6 s in which the slot stays on the lower layers (the estimate of a shaped
        # link, and the publisher's rate, move; a window in which the slot moved up is retried).
        for _attempt in range(3):
            before = {name: stats(name) for name in ("thin", "free", "publisher")}
            decoded, layers = [], []
            for _ in range(6):
                time.sleep(1)
                decoded.append(stats("thin")["framesDecoded"])
                layers.append(slot("thin").get("temporalLayer"))
                settled_on_lower_layers()
            after = {name: stats(name) for name in ("thin", "free", "publisher")}
            if all(value in (0, 1) for value in layers):
                break
        layer = layers[-1]
        window = (before["thin"], after["thin"], decoded, layers, history[-20:], link, full)
        assert all(value in (0, 1) for value in layers), window
        thin_fps = (after["thin"]["framesDecoded"] - before["thin"]["framesDecoded"]) / 6
        free_fps = (after["free"]["framesDecoded"] - before["free"]["framesDecoded"]) / 6
        assert slot("free").get("temporalLayer") is None, participant("free")["slots"]
        assert after["publisher"]["scalabilityMode"] == "L1T3", after["publisher"]
        # Decoded throughout, at a quarter or half of the free viewer's rate: frames in every 2 s
        # of the window. (Not every 1 s: when a busy machine's encoder brings the stream down to
        # ~12 fps, TID 0 is a frame every ~330 ms, and one frame held in the shaped link's 300 ms
        # queue, or resent after the queue dropped a packet, leaves a sampled second empty; CI
        # met that once in many runs.)
        series = [before["thin"]["framesDecoded"]] + decoded
        assert all(b > a for a, b in zip(series, series[2:])), (free_fps, window)
        assert 0.15 * free_fps < thin_fps < 0.7 * free_fps, (thin_fps, free_fps, window)
        # Chromium's own freeze count is looser than the check above: at a quarter frame rate
        # (~5 fps) it counts any gap over three frame intervals (600 ms), which a shaped link's
        # queue, filled at times by the estimator's probes, makes now and then, so their total
        # over 6 s is only bounded.
        assert after["thin"]["totalFreezesDuration"] - before["thin"]["totalFreezesDuration"] < 2.0, window
        # The decoder never lost its references: it would have asked for a key frame. (A key
        # frame may still come: the publisher's encoder makes one when it adapts its resolution
        # to its CPU, which a busy 2-core machine makes it do.)
        assert after["thin"]["pliCount"] == before["thin"]["pliCount"], window
        print(f"stream {full / 1000:.0f} kbit/s, thin link {link} kbit/s: TID <= {layer}, "
              f"{thin_fps:.1f} fps against {free_fps:.1f}; thin {after['thin']}")
        for page in pages.values():
            page.evaluate("window.tl.close()")
    finally:
        host.close()
        thin.close()
