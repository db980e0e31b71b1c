"""A real webhook receiver for the tests: an HTTP server on a loopback port that verifies each
delivery's Standard Webhooks signature with the `standardwebhooks` package (PyPI) and records it.

`mode` says how it answers: "ok" (204), "fail" (500), "gone" (410), "redirect" (302 to another
path, which is never followed by a correct sender), "hang" (holds the request without answering
until released), "huge" (200 with a 20 MB body). `stop()` closes the listening socket (the port
then refuses connections) and `start()` opens it again on the same port.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook


@dataclass
class Delivery:
    webhook_id: str
    timestamp: int
    type: str
    body: dict
    valid: bool
    arrived: float = field(default_factory=time.monotonic)


class WebhookReceiver:
    def __init__(self, secret: str | None = None):
        self.secret = secret
        self.mode = "ok"
        self.deliveries: list[Delivery] = []
        self.requests = 0
        self.redirected_hits = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if self.path != "/hooks":
                    with receiver.lock:
                        receiver.redirected_hits += 1
                    self.send_response(204)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.requests += 1
                mode = receiver.mode
                if mode == "hang":
                    receiver.release.wait(60)
                    self.send_response(503)
                    self.end_headers()
                    return
                if mode == "fail":
                    self.send_response(500)
                    self.end_headers()
                    return
                if mode == "gone":
                    self.send_response(410)
                    self.end_headers()
                    return
                if mode == "redirect":
                    self.send_response(302)
                    self.send_header("Location", f"http://127.0.0.1:{receiver.port}/elsewhere")
                    self.end_headers()
                    return
                receiver.record(raw, self.headers)
                if mode == "huge":
                    self.send_response(200)
                    self.send_header("Content-Length", str(20 * 1024 * 1024))
                    self.end_headers()
                    try:
                        chunk = b"x" * 65536
                        for _ in range(320):
                            self.wfile.write(chunk)
                    except OSError:
                        pass  # the sender stopped reading: as it should
                    return
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def record(self, raw: bytes, headers) -> None:
        header_map = {k.lower(): v for k, v in headers.items()}
        valid = False
        try:
            Webhook(self.secret).verify(raw, header_map)
            valid = True
        except Exception:  # noqa: BLE001 - any verification failure is recorded as invalid
            valid = False
        body = json.loads(raw)
        with self.lock:
            self.deliveries.append(Delivery(header_map.get("webhook-id", ""), int(header_map.get("webhook-timestamp", "0")),
                                            body.get("type", ""), body, valid))

    def received(self) -> list[Delivery]:
        with self.lock:
            return list(self.deliveries)

    def wait_for(self, predicate, timeout: float) -> list[Delivery]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.received()
            if predicate(got):
                return got
            time.sleep(0.1)
        return self.received()

    def close(self) -> None:
        self.release.set()
        self.stop()
