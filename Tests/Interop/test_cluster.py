"""Three Chorus nodes on one PostgreSQL database (issue 17): rooms spread over the nodes, any node
answers any request (a room's requests are redirected to the node that runs it, and a participant
redirected there hears the room), cluster-wide atomic registrations and placements, a node killed
under its participants (they rejoin elsewhere and hear each other again), a drained node, a
PostgreSQL outage that media survives, and a node ID held by one run at a time."""

from __future__ import annotations

import base64
from datetime import datetime
import hashlib
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
import pytest
import requests

from cluster import Cluster, ClusterClient
from conftest import ChorusServer
from postgres import free_port
from peers import EventStream, ThreadedPeer

FIXTURES = Path(__file__).resolve().parents[1] / "Fixtures" / "sdp"


@pytest.fixture
def cluster(chorus_bin, postgres, tmp_path):
    # A short drain so that the drain test's rooms end within the test.
    started = Cluster(chorus_bin, postgres, tmp_path, extra_args=["--drain-seconds", "3"])
    try:
        started.start()
        yield started
    finally:
        started.stop()


def tone_db(pcm: numpy.ndarray, frequency: float, half_band: float = 15.0) -> float:
    if len(pcm) < 4800:
        return -200.0
    spectrum = numpy.abs(numpy.fft.rfft(pcm * numpy.hanning(len(pcm)))) ** 2 / len(pcm)
    freqs = numpy.fft.rfftfreq(len(pcm), 1 / 48000)
    band = (freqs > frequency - half_band) & (freqs < frequency + half_band)
    return 10 * numpy.log10(spectrum[band].sum() + 1e-12)


def hears(peer: ThreadedPeer, frequency: float, since: float, seconds: float = 1.0) -> bool:
    """The last `seconds` of audio received after `since` carry `frequency` 20 dB above a tone
    nobody sends."""
    now = time.monotonic()
    heard = peer.peer.audio_between(max(since, now - seconds), now)
    return len(heard) >= 24000 * seconds and tone_db(heard, frequency) > tone_db(heard, 1230.0) + 20


def wait_until(what: str, predicate, timeout: float, interval: float = 0.25) -> float:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(interval)
    return time.monotonic()


def join(client: ClusterClient, via: int, peer: ThreadedPeer, room: str, user: str) -> tuple[str, int]:
    """Joins through node `via`, following its redirect; the callId and the node that took it."""
    return answer(peer, *post_join(client, via, offer_of(peer), room, user))


def offer_of(peer: ThreadedPeer) -> str:
    """The peer's offer, made once: a refused join is retried with the same offer."""
    if not hasattr(peer, "offer"):
        peer.offer = peer.run(peer.peer.offer())
    return peer.offer


def post_join(client: ClusterClient, via: int, offer: str, room: str, user: str) -> tuple[dict, int]:
    reply, node = client.request(via, "POST", f"/v1/rooms/{room}/participants", json={"sdp": offer, "userId": user})
    assert reply.status_code == 201, reply.text
    return reply.json(), node


def answer(peer: ThreadedPeer, joined: dict, node: int) -> tuple[str, int]:
    peer.run(peer.peer.answer(joined["sdp"]))
    return joined["callId"], node


def test_rooms_spread_redirected_joins_hear_and_events_flow_through_any_node(cluster):
    client = ClusterClient(cluster)
    for index in range(12):
        reply = cluster.nodes[0].request("POST", "/v1/rooms", json={"roomId": f"spread-{index}"})
        assert reply.status_code == 201, reply.text
    owners = [client.owner(f"spread-{index}") for index in range(12)]
    assert sorted(owners.count(node) for node in range(3)) == [4, 4, 4], owners

    room = "spread-0"
    owner = owners[0]
    others = [node for node in range(3) if node != owner]
    # The participant list through a node that does not run the room: a 307 to the owner.
    redirect = requests.get(cluster.nodes[others[0]].url(f"/v1/rooms/{room}/participants"), auth=cluster.auth,
                            allow_redirects=False, timeout=10)
    assert redirect.status_code == 307, redirect.text
    assert redirect.headers["Location"] == cluster.nodes[owner].url(f"/v1/rooms/{room}/participants")

    assert metric(cluster.nodes[others[0]], "chorus_cluster_redirects_total") >= 1

    talker = ThreadedPeer(frequency=440, video=False)
    listener = ThreadedPeer(frequency=660, video=False)
    try:
        _, took = join(client, owner, talker, room, "talker")
        assert took == owner
        # Through the wrong node: redirected, and the answer names the owner's media port.
        listener_call, took = join(client, others[0], listener, room, "listener")
        assert took == owner
        since = time.monotonic()
        wait_until("the redirected listener hears the talker (440 Hz)", lambda: hears(listener, 440, since), 20)

        # The room's events through the third node: redirected to the owner's stream.
        located = requests.get(cluster.nodes[others[1]].url(f"/v1/rooms/{room}/events"), auth=cluster.auth,
                               allow_redirects=False, timeout=10, stream=True)
        assert located.status_code == 307, located.text
        events = EventStream(located.headers["Location"], auth=cluster.auth)
        try:
            # The participant leaves through yet another node: the DELETE is redirected too.
            gone, _ = client.request(others[0], "DELETE", f"/v1/rooms/{room}/participants/{listener_call}")
            assert gone.status_code == 204, gone.text
            ended = events.wait_for(lambda e: e.get("type") == "participant.ended"
                                    and e.get("callId") == listener_call, timeout=10)
            assert ended["endCause"] == "kicked"
        finally:
            events.close()
    finally:
        talker.close()
        listener.close()

    # Room reads and close are served by any node from the shared store.
    for node in range(3):
        assert cluster.nodes[node].request("GET", f"/v1/rooms/{room}").status_code == 200
    assert cluster.nodes[others[1]].request("DELETE", f"/v1/rooms/{room}").status_code == 204
    assert cluster.nodes[owner].request("GET", f"/v1/rooms/{room}").status_code == 404


def metric(node, name: str) -> float:
    """The sum of a metric's samples in the node's /metrics (0 when absent)."""
    text = requests.get(node.url("/metrics"), timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and not line.startswith("#"))


def registration(cluster: Cluster, user: str, sequence: int) -> dict:
    key, secret = cluster.auth
    digest = hashlib.sha1(f"{user}{key}{sequence}{secret}".encode()).digest()
    return {"applicationKey": key, "sequence": sequence, "signature": base64.b64encode(digest).decode()}


def test_registrations_and_first_joins_race_cluster_wide(cluster):
    body = registration(cluster, "racer", 7)

    def register(index: int) -> int:
        node = cluster.nodes[index % 3]
        return requests.post(node.url("/v1/users/racer/registrations"), json=body, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=50) as pool:
        codes = list(pool.map(register, range(50)))
    assert codes.count(201) == 1 and codes.count(409) == 49, codes

    client = ClusterClient(cluster)
    offer = (FIXTURES / "chrome-audio-only.sdp").read_text()

    def first_join(index: int) -> tuple[int, int]:
        reply, node = client.request(index % 3, "POST", "/v1/rooms/raced/participants",
                                     json={"sdp": offer, "userId": f"u{index}"})
        return reply.status_code, node

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(first_join, range(20)))
    assert all(code == 201 for code, _ in results), results
    assert len({node for _, node in results}) == 1, results


def test_a_killed_nodes_participants_rejoin_elsewhere_and_hear_each_other(cluster):
    client = ClusterClient(cluster)
    room = "survivors"
    tones = {"a": 440.0, "b": 660.0, "c": 880.0}
    peers = {user: ThreadedPeer(frequency=tone, video=False) for user, tone in tones.items()}
    calls = {}
    try:
        for user, peer in peers.items():
            calls[user], owner = join(client, 0, peer, room, user)
        since = time.monotonic()
        for user, peer in peers.items():
            for other, tone in tones.items():
                if other != user:
                    wait_until(f"{user} hears {other}", lambda p=peer, t=tone: hears(p, t, since), 20)

        killed = time.monotonic()
        cluster.nodes[owner].kill()
        survivors = [node for node in range(3) if node != owner]
        for peer in peers.values():
            peer.close()
        peers = {user: ThreadedPeer(frequency=tone, video=False) for user, tone in tones.items()}

        def rejoin(user: str) -> int:
            # As a load balancer would: the nodes in order, skipping one that does not answer,
            # again every second (the web client backs off 1-8 s) until a join is taken.
            offer = offer_of(peers[user])
            while time.monotonic() - killed < 15:
                for node in range(3):
                    try:
                        joined = post_join(client, node, offer, room, user)
                    except (requests.RequestException, AssertionError):
                        continue
                    return answer(peers[user], *joined)[1]
                time.sleep(1)
            raise AssertionError(f"{user} could not rejoin within 15 s")

        landed = {user: rejoin(user) for user in peers}
        assert set(landed.values()) <= set(survivors) and len(set(landed.values())) == 1, landed
        rejoined = time.monotonic()
        for user, peer in peers.items():
            for other, tone in tones.items():
                if other != user:
                    wait_until(f"{user} hears {other} again", lambda p=peer, t=tone: hears(p, t, rejoined, 0.5),
                               killed + 20 - time.monotonic())
        heard_again = time.monotonic() - killed
        print(f"rejoined {rejoined - killed:.1f} s and heard each other again {heard_again:.1f} s after the kill")
        assert heard_again < 15, f"heard each other again {heard_again:.1f} s after the kill"

        # The dead node's calls are ended nodeLost in the store, by a survivor.
        def lost() -> bool:
            records = [cluster.nodes[survivors[0]].request("GET", f"/v1/calls/{calls[u]}").json() for u in calls]
            return all(r.get("endCause") == "nodeLost" for r in records)
        wait_until("the dead node's calls ended nodeLost", lost, 20)
        nodes = {n["nodeId"]: n for n in cluster.nodes[survivors[0]].request("GET", "/v1/nodes").json()["nodes"]}
        assert nodes[f"n{owner}"]["state"] == "lost" and not nodes[f"n{owner}"]["live"]
        # Exactly one survivor claimed the loss, and says so in /metrics.
        assert sum(metric(cluster.nodes[n], "chorus_cluster_nodes_lost_total") for n in survivors) == 1
        # A listener that comes back (through any survivor: it is sent to the room's new node)
        # is told who left with the dead node: participant.ended, nodeLost, for each old call.
        located = requests.get(cluster.nodes[survivors[-1]].url(f"/v1/rooms/{room}/events"), auth=cluster.auth,
                               allow_redirects=False, stream=True, timeout=5)
        url = located.headers["Location"] if located.status_code == 307 else located.url
        located.close()
        events = EventStream(url, auth=cluster.auth)
        try:
            for user, call in calls.items():
                told = events.wait_for(lambda e, c=call: e.get("type") == "participant.ended" and e.get("callId") == c)
                assert told["endCause"] == "nodeLost" and told["nodeId"] == f"n{owner}" and told["userId"] == user, told
        finally:
            events.close()

        # Restarted with the same ID, the node does not take its old room back.
        cluster.nodes[owner].start()
        assert client.owner(room, via=owner) == landed["a"]
    finally:
        for peer in peers.values():
            peer.close()


def test_a_drained_node_takes_no_rooms_and_its_calls_end_for_rejoining(cluster):
    client = ClusterClient(cluster)
    peer = ThreadedPeer(frequency=440, video=False)
    try:
        call, owner = join(client, 0, peer, "drained-room", "stayer")
        reply, _ = client.request((owner + 1) % 3, "POST", f"/v1/nodes/n{owner}/drain")
        assert reply.status_code == 202 and reply.json()["state"] == "draining", reply.text
        wait_until("the drained node is not ready",
                   lambda: requests.get(cluster.nodes[owner].url("/readyz"), timeout=5).status_code == 503, 10)
        # New rooms created through the drained node run elsewhere.
        for index in range(3):
            assert cluster.nodes[owner].request("POST", "/v1/rooms", json={"roomId": f"after-{index}"}).status_code == 201
            assert client.owner(f"after-{index}") != owner
        # Its room ran on until the drain period (3 s) ended; then the call ended serverShutdown.
        def ended() -> bool:
            return cluster.nodes[0].request("GET", f"/v1/calls/{call}").json().get("endCause") == "serverShutdown"
        wait_until("the drained node's call ended serverShutdown", ended, 15)
        rejoin = ThreadedPeer(frequency=440, video=False)
        try:
            _, landed = join(client, owner, rejoin, "drained-room", "stayer")
            assert landed != owner
        finally:
            rejoin.close()
        # SIGTERM: the node stops cleanly and stays "stopped" (no late heartbeat says "up").
        assert cluster.nodes[owner].stop() == 0
        time.sleep(3)
        states = {n["nodeId"]: n for n in cluster.nodes[landed].request("GET", "/v1/nodes").json()["nodes"]}
        assert states[f"n{owner}"]["state"] == "stopped" and not states[f"n{owner}"]["live"], states
    finally:
        peer.close()


def test_a_postgres_outage_keeps_media_and_answers_503_until_it_heals(cluster):
    client = ClusterClient(cluster)
    talker = ThreadedPeer(frequency=440, video=False)
    listener = ThreadedPeer(frequency=660, video=False)
    leaver = ThreadedPeer(frequency=990, video=False)
    try:
        _, owner = join(client, 0, talker, "outage", "talker")
        join(client, owner, listener, "outage", "listener")
        leaver_call, _ = join(client, owner, leaver, "outage", "leaver")
        since = time.monotonic()
        wait_until("the listener hears the talker", lambda: hears(listener, 440, since), 20)

        cluster.postgres.stop_server()
        stopped = time.monotonic()
        try:
            # A participant removed during the outage: the room needs no database for that.
            kicked = cluster.nodes[owner].request("DELETE", f"/v1/rooms/outage/participants/{leaver_call}")
            assert kicked.status_code == 204, kicked.text
            late = ThreadedPeer(frequency=880, video=False)
            try:
                offer = late.run(late.peer.offer())
                refused = cluster.nodes[owner].request("POST", "/v1/rooms/outage/participants",
                                                       json={"sdp": offer, "userId": "late"}, timeout=15)
            finally:
                late.close()
            assert refused.status_code == 503, refused.text
            assert int(refused.headers["Retry-After"]) >= 1
            time.sleep(max(0.0, stopped + 10 - time.monotonic()))
            # Ten seconds without the database: the room still mixes.
            assert hears(listener, 440, stopped + 8, seconds=2.0), "media stopped during the outage"
        finally:
            cluster.postgres.start_server()

        # Back without restarting a node: joins work again, and the call never stopped.
        newcomer = ThreadedPeer(frequency=880, video=False)
        try:
            taken: list[tuple[dict, int]] = []

            def joined() -> bool:
                try:
                    taken.append(post_join(client, owner, offer_of(newcomer), "outage", "newcomer"))
                    return True
                except AssertionError:
                    return False
            wait_until("a join succeeds after the outage", joined, 30, interval=1)
            answer(newcomer, *taken[0])
            healed = time.monotonic()
            wait_until("the listener hears the newcomer", lambda: hears(listener, 880, healed), 20)
            assert hears(listener, 440, healed)
        finally:
            newcomer.close()
        # The call that ended during the outage has its record written now that it is back.
        wait_until("the record of the call ended during the outage",
                   lambda: cluster.nodes[0].request("GET", f"/v1/calls/{leaver_call}").json().get("endCause")
                   == "kicked", 20)
    finally:
        talker.close()
        listener.close()
        leaver.close()


def node_row(cluster: Cluster, node_id: str, via: int) -> dict:
    reply = cluster.nodes[via].request("GET", "/v1/nodes")
    assert reply.status_code == 200, reply.text
    return next(n for n in reply.json()["nodes"] if n["nodeId"] == node_id)


def test_a_second_node_under_a_live_nodes_id_refuses_to_start_and_a_killed_one_restarts(cluster, tmp_path):
    before = node_row(cluster, "n0", via=1)
    assert before["live"] and before["instanceId"], before
    # Same ID, same database, its own ports (as two nodes on one host that both default to the
    # host name): it must exit non-zero naming the live node's address, having written nothing.
    twin = ChorusServer(cluster.nodes[0].binary, cluster.nodes[0].db_path, tmp_path / "twin.log", http_port=free_port(),
                        extra_args=["--node-id", "n0", "--advertise-url", "http://127.0.0.1:1", "--drain-seconds", "3"])
    refused = subprocess.run(twin.command(), env=twin.environment(), capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0, said
    assert "node ID \"n0\" is held by a live node at " + cluster.nodes[0].base_url in said, said
    assert "--node-id" in said, said
    # The first carries on: the same run, still beating, still taking rooms.
    time.sleep(2.5)
    after = node_row(cluster, "n0", via=1)
    assert after["instanceId"] == before["instanceId"] and after["advertiseUrl"] == cluster.nodes[0].base_url, after
    beat = datetime.fromisoformat(after["heartbeatAt"]) - datetime.fromisoformat(before["heartbeatAt"])
    assert after["live"] and beat.total_seconds() > 0, (before, after)
    assert cluster.nodes[0].request("POST", "/v1/rooms", json={"roomId": "still-n0"}).status_code == 201
    # kill -9, then the same ID again at once: its old heartbeat is its own (the process is
    # gone), so it starts without waiting for the heartbeat to go stale.
    cluster.nodes[0].kill()
    restarted_at = time.monotonic()
    cluster.nodes[0].start()
    took = time.monotonic() - restarted_at
    again = node_row(cluster, "n0", via=1)
    assert again["live"] and again["instanceId"] != before["instanceId"], again
    print(f"restarted under its own ID {took:.1f} s after kill -9")
    assert "taking it over" in cluster.nodes[0].log_tail(20000)
