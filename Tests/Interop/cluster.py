"""Three `chorus serve` nodes on loopback sharing one throwaway PostgreSQL database, and a client
that follows the cluster's redirects the way a real one must.

A `307` from one node to another changes the port, so python-requests (like browsers' fetch)
drops the Authorization header when it follows it; `ClusterClient.request` follows redirects
itself and sends the credentials again, as the README tells clients to.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlparse

import requests

from conftest import ChorusServer
from postgres import PostgresServer, free_port

NODE_COUNT = 3


class Cluster:
    """Nodes `n0`…`n2` on one database; `nodes[i]` is a `ChorusServer` with its own HTTP and
    media ports, its node ID and its advertise URL. The first start creates the development
    application; the others find it."""

    def __init__(self, binary: str, postgres: PostgresServer, tmp_path: Path, extra_args: list[str] | None = None):
        self.postgres = postgres
        self.database = postgres.create_database()
        self.nodes: list[ChorusServer] = []
        for index in range(NODE_COUNT):
            port = free_port()
            node = ChorusServer(
                binary, postgres.url(self.database), tmp_path / f"n{index}.log", http_port=port,
                extra_args=["--node-id", f"n{index}", "--advertise-url", f"http://127.0.0.1:{port}",
                            *(extra_args or [])])
            self.nodes.append(node)

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        self.wait_live(NODE_COUNT)

    def stop(self) -> None:
        for node in self.nodes:
            if node.running:
                node.stop()

    @property
    def auth(self) -> tuple[str, str]:
        return self.nodes[0].auth

    def node_at(self, url: str) -> int:
        """The index of the node whose HTTP port `url` names."""
        port = urlparse(url).port
        return next(i for i, node in enumerate(self.nodes) if node.http_port == port)

    def live_nodes(self, via: int = 0) -> list[dict]:
        reply = self.nodes[via].request("GET", "/v1/nodes")
        assert reply.status_code == 200, reply.text
        return [n for n in reply.json()["nodes"] if n["live"]]

    def wait_live(self, count: int, via: int = 0, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while len(self.live_nodes(via)) != count:
            assert time.monotonic() < deadline, f"not {count} live nodes: {self.live_nodes(via)}"
            time.sleep(0.2)


class ClusterClient:
    """Requests to a chosen node that follow `307`s with the credentials, recording where the
    request was finally answered."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster

    def request(self, via: int, method: str, path: str, auth=None, headers=None, **kwargs
                ) -> tuple[requests.Response, int]:
        """The final response and the index of the node that gave it."""
        url = self.cluster.nodes[via].url(path)
        auth = auth if auth is not None else (None if headers and "Authorization" in headers else self.cluster.auth)
        for _ in range(3):
            reply = requests.request(method, url, auth=auth, headers=headers, timeout=15, allow_redirects=False,
                                     **kwargs)
            if reply.status_code != 307:
                return reply, self.cluster.node_at(url)
            assert reply.json()["error"]["code"] == "roomElsewhere", reply.text
            url = reply.headers["Location"]
        raise AssertionError(f"more than two redirects for {method} {path}")

    def owner(self, room: str, via: int = 0) -> int:
        """The node that runs `room` (where its participant list is answered)."""
        reply, node = self.request(via, "GET", f"/v1/rooms/{room}/participants")
        assert reply.status_code == 200, reply.text
        return node
