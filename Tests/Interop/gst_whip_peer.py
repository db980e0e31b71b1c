#!/usr/bin/python3
"""A GStreamer `webrtcbin` peer that joins a Chorus room by WHIP: the client of
Tests/Interop/test_gstreamer_whip.py, run as a subprocess under Debian's system Python (which has
PyGObject and GStreamer's introspection data; the interop virtualenv has neither).

It sends Opus audio from `audiotestsrc wave=sine freq=660` and VP8 video from `videotestsrc`
(a solid colour) on two sendrecv transceivers, so it receives the room's mix on the audio one and a
video slot on the video one; ICE is webrtcbin's default (libnice, no STUN or TURN server) with
bundle-policy max-bundle, except that UPnP discovery is off and `--local-address` (libnice's
add-local-ip-address) can name the addresses to gather on: libnice gathers no loopback address
of its own, and from its interface address it pairs only ICE-TCP with a server on 127.0.0.1. It makes the offer, waits for ICE gathering to complete (WHIP without
trickle), POSTs it as `application/sdp` with HTTP Basic credentials, checks for 201 with a Location,
applies the answer and then runs until its stdin closes or it gets SIGTERM or SIGINT.

What it sees goes to stdout as JSON lines, each with `event` and `t` (time.time()):
  {"event": "started", "gstreamer"}                         the pipeline is playing
  {"event": "offer", "candidates"}                           the offer's candidate lines
  {"event": "whip", "status", "location"}                    the POST's reply
  {"event": "answer-set"} / {"event": "track", "media"}      the answer applied, an incoming stream
  {"event": "state", "what": <property>, "state"}            ice-connection-state, connection-state,
                                                             ice-gathering-state, and the DTLS
                                                             transport's `state` ("dtls")
  {"event": "pair", "local", "remote"}                       the selected candidate pair (address, port,
                                                             protocol), from webrtcbin's statistics
                                                             2 s after connecting
  {"event": "audio", "rms", "peak", "buffers", "peak_hz"}    the decoded incoming audio every 0.5 s:
                                                             level in dBFS, buffers so far, strongest
                                                             bin of a 50 Hz-resolution spectrum
  {"event": "video", "frames"}                               decoded incoming video frames so far, each s
  {"event": "bye", "session", "ssrc"}                        an RTCP BYE arrived (rtpbin on-bye-ssrc)
  {"event": "error", "message"}                              a bus error or a failed step
  {"event": "eos"} / {"event": "exit", "code"}
Diagnostics go to stderr: the offer and answer, libnice's settings, webrtcbin's statistics,
GStreamer's log.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import json
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstSdp", "1.0")
gi.require_version("GstWebRTC", "1.0")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC  # noqa: E402

GATHER_TIMEOUT = 10.0  # s for ICE gathering to complete
HTTP_TIMEOUT = 10.0


def emit(event: str, **fields) -> None:
    line = json.dumps({"event": event, "t": time.time(), **fields})
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def ice_agent(webrtc):
    """webrtcbin's GstWebRTCICE. GStreamer 1.22 hands it out without a reference of its own, so the
    first Python wrapper to be collected would free the agent under webrtcbin (criticals, then a
    segfault): take one extra reference, kept for the process's life."""
    agent = webrtc.get_property("ice-agent")
    pointer = ctypes.pythonapi.PyCapsule_GetPointer
    pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    gobject = ctypes.CDLL("libgobject-2.0.so.0")
    gobject.g_object_ref.restype, gobject.g_object_ref.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
    gobject.g_object_ref(pointer(agent.__gpointer__, None))
    return agent


def log(message: str) -> None:
    sys.stderr.write(f"[gst-peer {time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


class WhipPeer:
    def __init__(self, args):
        self.args = args
        self.loop = GLib.MainLoop()
        self.code = 0
        self.audio_buffers = 0
        self.video_frames = 0
        self.last_spectrum_hz: float | None = None
        self.dtls_watched: list = []
        # Sine at 660 Hz (and a solid colour) on two sendrecv transceivers (webrtcbin's default for
        # a linked sink pad). Live sources so they are paced by the clock.
        self.pipeline = Gst.parse_launch(
            "webrtcbin name=webrtc bundle-policy=max-bundle "
            f"audiotestsrc is-live=true wave=sine freq={args.frequency} volume=0.25 "
            "! audio/x-raw,rate=48000,channels=1 ! audioconvert ! audioresample "
            "! opusenc bitrate=32000 ! rtpopuspay pt=111 "
            "! application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111 ! webrtc. "
            f"videotestsrc is-live=true pattern=solid-color foreground-color={args.colour} "
            "! video/x-raw,width=320,height=240,framerate=15/1 ! videoconvert "
            "! vp8enc deadline=1 cpu-used=8 target-bitrate=200000 keyframe-max-dist=30 "
            "! rtpvp8pay pt=96 picture-id-mode=15-bit "
            "! application/x-rtp,media=video,encoding-name=VP8,clock-rate=90000,payload=96 ! webrtc. "
        )
        self.webrtc = self.pipeline.get_by_name("webrtc")
        self.webrtc.connect("on-negotiation-needed", self.on_negotiation_needed)
        self.webrtc.connect("pad-added", self.on_pad_added)
        for prop in ("ice-connection-state", "connection-state", "ice-gathering-state"):
            self.webrtc.connect(f"notify::{prop}", self.on_state)
        self.agent = agent = ice_agent(self.webrtc)
        nice = agent.get_property("agent")
        # No UPnP port mapping (libnice tries it by default, by multicast on every interface):
        # test traffic stays on loopback, and the path is host candidates only, as with no
        # STUN or TURN server.
        nice.set_property("upnp", False)
        log("libnice: " + ", ".join(f"{name}={nice.get_property(name)}" for name in (
            "compatibility", "nomination-mode", "keepalive-conncheck", "consent-freshness", "ice-tcp")))
        for address in args.local_address:
            agent.emit("add-local-ip-address", address)
        # webrtcbin's own rtpbin: RTCP BYE from the server (what it sends before close_notify).
        rtpbin = self.webrtc.get_by_name("rtpbin")
        if rtpbin is not None:
            rtpbin.connect("on-bye-ssrc", lambda _bin, session, ssrc: GLib.idle_add(
                lambda: emit("bye", session=session, ssrc=ssrc) and False))
        bus = self.pipeline.get_bus()
        bus.add_signal_watch()
        bus.connect("message", self.on_message)
        self.negotiated = False

    # -- signalling ---------------------------------------------------------------------------

    def on_negotiation_needed(self, element) -> None:
        if self.negotiated:
            return
        self.negotiated = True
        promise = Gst.Promise.new_with_change_func(self.on_offer_created, None)
        element.emit("create-offer", None, promise)

    def on_offer_created(self, promise, _data) -> None:
        promise.wait()
        reply = promise.get_reply()
        offer = reply.get_value("offer") if reply is not None else None
        if offer is None:
            return self.fail(f"create-offer failed: {reply.to_string() if reply else None}")
        done = Gst.Promise.new()
        self.webrtc.emit("set-local-description", offer, done)
        done.interrupt()
        # WHIP without trickle: the offer goes once gathering is complete. Polled from the main
        # loop, bounded.
        started = time.monotonic()

        def check() -> bool:
            state = self.webrtc.get_property("ice-gathering-state")
            if state == GstWebRTC.WebRTCICEGatheringState.COMPLETE:
                self.post_offer()
                return False
            if time.monotonic() - started > GATHER_TIMEOUT:
                self.fail(f"ICE gathering not complete within {GATHER_TIMEOUT} s ({state.value_nick})")
                return False
            return True

        GLib.timeout_add(50, check)

    def post_offer(self) -> None:
        sdp = self.webrtc.get_property("local-description").sdp.as_text()
        log("offer:\n" + sdp)
        emit("offer", candidates=[line for line in sdp.splitlines() if line.startswith("a=candidate")])
        credentials = base64.b64encode(f"{self.args.user}:{self.args.password}".encode()).decode()
        request = urllib.request.Request(self.args.url, data=sdp.encode(), method="POST", headers={
            "Content-Type": "application/sdp", "Authorization": f"Basic {credentials}"})
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
                status, location, answer = response.status, response.headers.get("Location"), response.read().decode()
        except urllib.error.HTTPError as error:
            return self.fail(f"WHIP POST: {error.code} {error.read().decode(errors='replace')}")
        except Exception as error:  # noqa: BLE001 - reported, then we stop
            return self.fail(f"WHIP POST: {error!r}")
        emit("whip", status=status, location=location)
        if status != 201 or not location:
            return self.fail(f"WHIP POST: status {status}, Location {location!r}")
        log("answer:\n" + answer)
        result, message = GstSdp.SDPMessage.new_from_text(answer)
        if result != GstSdp.SDPResult.OK:
            return self.fail("the answer does not parse as SDP")
        description = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, message)
        promise = Gst.Promise.new_with_change_func(self.on_answer_set, None)
        self.webrtc.emit("set-remote-description", description, promise)

    def on_answer_set(self, promise, _data) -> None:
        reply = promise.get_reply()
        if reply is not None and reply.has_field("error"):
            return self.fail(f"set-remote-description: {reply.to_string()}")
        emit("answer-set")
        GLib.idle_add(self.watch_dtls)

    def watch_dtls(self) -> bool:
        """Follows each transceiver's DTLS transport `state` (what close_notify should change)."""
        for index, pad in enumerate(self.webrtc.sinkpads):  # one transceiver per sink pad
            transceiver = pad.get_property("transceiver")
            sender = transceiver.get_property("sender") if transceiver is not None else None
            transport = sender.get_property("transport") if sender is not None else None
            # Kept alive here, so PyGObject hands out this same wrapper for the same transport.
            if transport is None or any(transport is known for known in self.dtls_watched):
                continue
            self.dtls_watched.append(transport)
            emit("state", what="dtls", state=transport.get_property("state").value_nick, mline=index)
            transport.connect("notify::state", lambda t, _p, i=index: GLib.idle_add(
                lambda: emit("state", what="dtls", state=t.get_property("state").value_nick, mline=i) and False))
        return False

    # -- media --------------------------------------------------------------------------------

    def on_pad_added(self, _element, pad) -> None:
        if pad.get_direction() != Gst.PadDirection.SRC:
            return
        caps = pad.get_current_caps() or pad.query_caps(None)
        media = caps.get_structure(0).get_string("media") if caps and caps.get_size() else None
        log(f"incoming pad {pad.get_name()}: {caps.to_string() if caps else None}")
        if media == "audio":
            description = (
                "queue ! rtpopusdepay ! opusdec plc=true ! audioconvert ! audioresample "
                "! audio/x-raw,format=S16LE,rate=48000,channels=1 "
                "! level name=level interval=500000000 post-messages=true "
                "! spectrum name=spectrum bands=480 interval=500000000 threshold=-100 post-messages=true "
                "! fakesink name=audiosink sync=false async=false")
        elif media == "video":
            description = ("queue ! rtpvp8depay ! vp8dec ! fakesink name=videosink sync=false async=false")
        else:
            description = "fakesink sync=false async=false"
        branch = Gst.parse_bin_from_description(description, True)
        self.pipeline.add(branch)
        branch.sync_state_with_parent()
        if pad.link(branch.get_static_pad("sink")) != Gst.PadLinkReturn.OK:
            return self.fail(f"could not link the incoming {media} pad")
        sink = branch.get_by_name("audiosink") or branch.get_by_name("videosink")
        if sink is not None:
            sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, self.count, media)
        emit("track", media=media)
        if media == "video":
            GLib.timeout_add_seconds(1, self.report_video)

    def count(self, _pad, _info, media):
        if media == "audio":
            self.audio_buffers += 1
        else:
            self.video_frames += 1
        return Gst.PadProbeReturn.OK

    def report_video(self) -> bool:
        emit("video", frames=self.video_frames)
        return True

    # -- states and messages ------------------------------------------------------------------

    def on_state(self, element, spec) -> None:
        state = element.get_property(spec.name)
        if spec.name == "connection-state" and state == GstWebRTC.WebRTCPeerConnectionState.CONNECTED:
            GLib.timeout_add(2000, self.report_stats)
        GLib.idle_add(lambda: emit("state", what=spec.name, state=state.value_nick) and False)

    def report_stats(self) -> bool:
        promise = Gst.Promise.new_with_change_func(self.on_stats, None)
        self.webrtc.emit("get-stats", None, promise)
        return False

    def on_stats(self, promise, _data) -> None:
        reply = promise.get_reply()
        if reply is None:
            return
        log("stats: " + reply.to_string())
        stats = {}
        for index in range(reply.n_fields()):
            value = reply.get_value(reply.nth_field_name(index))
            if isinstance(value, Gst.Structure):
                stats[value.get_value("id")] = value

        def candidate(identifier):
            found = stats.get(identifier)
            if found is None:
                return None
            return {name: found.get_value(name) for name in ("address", "port", "protocol", "candidate-type")
                    if found.has_field(name)}
        for value in stats.values():
            if value.has_field("selected-candidate-pair-id"):
                pair = stats.get(value.get_value("selected-candidate-pair-id"))
                if pair is not None:
                    emit("pair", local=candidate(pair.get_value("local-candidate-id")),
                         remote=candidate(pair.get_value("remote-candidate-id")))

    def on_message(self, _bus, message) -> None:
        kind = message.type
        if kind == Gst.MessageType.ELEMENT:
            structure = message.get_structure()
            name = structure.get_name() if structure else ""
            if name == "spectrum":
                # magnitude is a GstValueList, which PyGObject cannot convert: read it from the text.
                found = re.search(r"magnitude=\(float\)\{([^}]*)\}", structure.to_string())
                if found:
                    bands = [float(v) for v in found.group(1).split(",")]
                    peak = max(range(len(bands)), key=bands.__getitem__)
                    # The element's FFT has 2 * (bands - 1) points: band i is i * rate / nfft Hz.
                    self.last_spectrum_hz = round(peak * 24000.0 / (len(bands) - 1), 1)
            elif name == "level":
                rms, peak = structure.get_value("rms"), structure.get_value("peak")
                emit("audio", rms=max(rms), peak=max(peak), buffers=self.audio_buffers,
                     peak_hz=self.last_spectrum_hz)
        elif kind == Gst.MessageType.ERROR:
            error, debug = message.parse_error()
            emit("error", message=f"{message.src.get_name()}: {error.message}", debug=debug)
        elif kind == Gst.MessageType.WARNING:
            warning, debug = message.parse_warning()
            log(f"warning from {message.src.get_name()}: {warning.message} ({debug})")
        elif kind == Gst.MessageType.EOS:
            emit("eos")

    def fail(self, message: str) -> None:
        emit("error", message=message)
        log(message)
        self.code = 1

    # -- lifecycle ----------------------------------------------------------------------------

    def run(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT):
            GLib.unix_signal_add(GLib.PRIORITY_HIGH, signum, self.stop, signum)
        threading.Thread(target=self.wait_for_stdin, daemon=True).start()
        if self.pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            self.fail("the pipeline does not start")
            return 1
        emit("started", gstreamer=Gst.version_string())
        self.loop.run()
        self.pipeline.set_state(Gst.State.NULL)
        emit("exit", code=self.code)
        return self.code

    def wait_for_stdin(self) -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except Exception:  # noqa: BLE001
            pass
        GLib.idle_add(self.stop, "stdin closed")

    def stop(self, why) -> bool:
        log(f"stopping: {why}")
        self.loop.quit()
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the WHIP endpoint, e.g. http://127.0.0.1:8080/v1/rooms/r/participants?userId=gst")
    parser.add_argument("--user", required=True, help="HTTP Basic user (the application key)")
    parser.add_argument("--password", required=True, help="HTTP Basic password (the application secret)")
    parser.add_argument("--frequency", type=float, default=660.0, help="the sine sent, Hz")
    parser.add_argument("--colour", default="0xff0000ff", help="videotestsrc foreground-color (ARGB)")
    parser.add_argument("--local-address", action="append", default=[],
                        help="gather only on this address (libnice add-local-ip-address); default: libnice's choice")
    args = parser.parse_args()
    Gst.init(None)
    return WhipPeer(args).run()


if __name__ == "__main__":
    sys.exit(main())
