"""Captures a simulcast offer from the headless Firefox ESR or Chromium installed here, for the SDP
fixtures (`Tests/Fixtures/sdp/*-simulcast-qhf.sdp`). Not a test: run it by hand and review the diff.

    .venv/bin/python Tests/Interop/capture_simulcast_offer.py firefox > Tests/Fixtures/sdp/firefox-simulcast-qhf.sdp
    .venv/bin/python Tests/Interop/capture_simulcast_offer.py chromium > Tests/Fixtures/sdp/chrome-simulcast-qhf.sdp

The page (served from 127.0.0.1, a secure context, so getUserMedia works) takes the fake microphone
and camera, adds the microphone `sendrecv` and the camera `sendonly` with three encodings listed
low to high, as a publishing client would:

    sendEncodings: [{rid: 'q', scaleResolutionDownBy: 4}, {rid: 'h', scaleResolutionDownBy: 2}, {rid: 'f'}]

and prints the offer once ICE gathering is complete (CRLF line endings). Host addresses are replaced
as in the other fixtures: IPv4 by 192.0.2.10, .11, …, IPv6 by 2001:db8::a, ::b, …, mDNS names by
host-N.invalid. The encodings' RIDs as `getParameters()` reports them go to stderr, next to the
browser's version.
"""

from __future__ import annotations

import http.server
import ipaddress
import sys
import tempfile
import threading
from functools import partial
from pathlib import Path

from chromium import Chromium
from firefox import Firefox

OFFER = """(async () => {
  const stream = await navigator.mediaDevices.getUserMedia({audio: true, video: {width: 1280, height: 720}});
  const pc = new RTCPeerConnection();
  pc.addTransceiver(stream.getAudioTracks()[0], {direction: 'sendrecv', streams: [stream]});
  pc.addTransceiver(stream.getVideoTracks()[0], {direction: 'sendonly', streams: [stream], sendEncodings: [
    {rid: 'q', scaleResolutionDownBy: 4}, {rid: 'h', scaleResolutionDownBy: 2}, {rid: 'f'}]});
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise(resolve => {
    const done = () => { if (pc.iceGatheringState === 'complete') resolve(); };
    pc.addEventListener('icegatheringstatechange', done);
    done();
    setTimeout(resolve, 10000);
  });
  const encodings = pc.getSenders()[1].getParameters().encodings.map(e => e.rid);
  const sdp = pc.localDescription.sdp;
  pc.close();
  stream.getTracks().forEach(t => t.stop());
  return {sdp, encodings};
})()"""

def anonymised(sdp: str) -> str:
    """Host addresses and mDNS names replaced by documentation ones, consistently; the wildcard
    and loopback addresses are kept."""
    names: dict[str, str] = {}
    counts = {4: 0, 6: 0, "mdns": 0}

    def replace(token: str) -> str:
        if token in names:
            return names[token]
        if token.endswith(".local"):
            counts["mdns"] += 1
            names[token] = f"host-{counts['mdns']}.invalid"
            return names[token]
        try:
            address = ipaddress.ip_address(token)
        except ValueError:
            return token
        if address.is_unspecified or address.is_loopback:
            return token
        number = counts[address.version]
        counts[address.version] += 1
        names[token] = f"192.0.2.{10 + number}" if address.version == 4 else f"2001:db8::{0xa + number:x}"
        return names[token]

    lines = []
    for line in sdp.replace("\r\n", "\n").split("\n"):
        if line.startswith(("a=candidate:", "c=", "a=rtcp:")):
            line = " ".join(replace(token) for token in line.split(" "))
        lines.append(line)
    return "\r\n".join(lines)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the empty page without logging each request to stderr."""

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
        pass


def main() -> None:
    browser_name = sys.argv[1] if len(sys.argv) > 1 else "firefox"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "www").mkdir()
        (root / "www" / "index.html").write_text("<!doctype html><title>simulcast offer</title>\n")
        handler = partial(QuietHandler, directory=str(root / "www"))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        if browser_name == "firefox":
            browser = Firefox(root / "profile", root / "browser.log")
            version = f"Firefox {browser.version}"
        else:
            browser = Chromium(root / "profile", root / "browser.log")
            version = "Chromium"
        try:
            page = browser.open(url)
            if browser_name != "firefox":
                version = page.evaluate("navigator.userAgent")
            result = page.evaluate(OFFER)
        finally:
            browser.close()
            server.shutdown()
    print(f"{version}; getParameters().encodings RIDs: {result['encodings']}", file=sys.stderr)
    sys.stdout.write(anonymised(result["sdp"]))


if __name__ == "__main__":
    main()
