"""Recording the room's full mix (issue 19, item 3): three aiortc talkers with three tones; a
20 s recording decodes with Debian's opus-tools (`opusinfo`, `opusdec`), lasts 20 s ± 1 %, and
its FFT shows the three tones; each participant's own track (`perParticipant`) decodes too,
lasts as long, and holds its own tone 25 dB above the others'. A recording cut by `kill -9` still decodes up to its last second,
and the restarted server calls it interrupted. Starting a second recording is 409. A full disk
stops the recording with `recording.failed` while the room goes on."""

from __future__ import annotations

import subprocess
import time
import wave
from pathlib import Path

import numpy

from conftest import ChorusServer
from peers import EventStream, ThreadedPeer
from test_audio_mix import tone_db
from test_join_aiortc import participant

TONES = [440.0, 660.0, 990.0]


def talkers(server, room: str) -> tuple[list[ThreadedPeer], list[str]]:
    assert server.request("POST", "/v1/rooms", json={"roomId": room}).status_code == 201
    peers = [ThreadedPeer(frequency=f, video=False) for f in TONES]
    calls = [peer.join(server, room, user=f"t{i}") for i, peer in enumerate(peers)]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(participant(server, room, c)["state"] != "established" for c in calls):
        time.sleep(0.1)
    assert all(participant(server, room, c)["state"] == "established" for c in calls)
    return peers, calls


def decode(path: Path, tmp: Path, complete: bool = True) -> numpy.ndarray:
    """opusinfo's check (a cut file only lacks its end-of-stream flag), then opusdec to 48 kHz."""
    info = subprocess.run(["opusinfo", str(path)], capture_output=True, text=True, timeout=60)
    if complete:
        assert info.returncode == 0, info.stdout + info.stderr
    else:
        assert "Playback length" in info.stdout and "EOS not set" in info.stdout, info.stdout + info.stderr
        assert "error" not in (info.stdout + info.stderr).lower(), info.stdout + info.stderr
    out = tmp / (path.stem + ".wav")
    run = subprocess.run(["opusdec", "--rate", "48000", str(path), str(out)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    with wave.open(str(out)) as w:
        assert w.getframerate() == 48000
        frames = w.readframes(w.getnframes())
        channels = w.getnchannels()
    pcm = numpy.frombuffer(frames, dtype=numpy.int16).astype(numpy.float64)
    return pcm[::channels] / 32768


def test_a_20_s_recording_decodes_with_the_three_tones(chorus_server, tmp_path):
    peers, calls = talkers(chorus_server, "rec")
    try:
        time.sleep(1)
        started = chorus_server.request("POST", "/v1/rooms/rec/recordings", json={"perParticipant": True})
        assert started.status_code == 201, started.text
        recording = started.json()
        assert recording["state"] == "recording" and recording["perParticipant"] is True
        again = chorus_server.request("POST", "/v1/rooms/rec/recordings")
        assert again.status_code == 409 and again.json()["error"]["code"] == "recordingInProgress"
        time.sleep(20)
        stopped = chorus_server.request("DELETE", f"/v1/rooms/rec/recordings/{recording['recordingId']}")
        assert stopped.status_code == 200, stopped.text
        assert stopped.json()["state"] == "ready" and abs(stopped.json()["durationSeconds"] - 20) < 0.2, stopped.json()
    finally:
        for peer in peers:
            peer.close()
    listed = chorus_server.request("GET", "/v1/rooms/rec/recordings").json()["recordings"]
    assert [r["recordingId"] for r in listed] == [recording["recordingId"]]
    file = chorus_server.request("GET", recording["fileUrl"])
    assert file.status_code == 200 and file.headers["content-type"] == "audio/ogg"
    path = tmp_path / "rec.opus"
    path.write_bytes(file.content)
    pcm = decode(path, tmp_path)
    seconds = len(pcm) / 48000
    assert abs(seconds - 20) <= 0.2, f"{seconds:.3f} s"
    middle = pcm[48000 * 2:48000 * 18]
    levels = {f: tone_db(middle, f, half_band=5) for f in TONES}
    floor = tone_db(middle, 1500, half_band=5)
    assert all(level > floor + 30 for level in levels.values()), (levels, floor)
    check_tracks(chorus_server, stopped.json(), calls, tmp_path)


def check_tracks(server, recording: dict, calls: list[str], tmp: Path) -> None:
    """Each talker's own track: opus-tools accept it, it lasts the recording (its talker was
    there from the start), and it holds that talker's tone, not the others'."""
    tracks = {t["callId"]: t for t in recording["tracks"]}
    assert set(tracks) == set(calls), recording
    for call, own in zip(calls, TONES):
        track = tracks[call]
        assert track["offsetSeconds"] == 0 and abs(track["durationSeconds"] - 20) < 0.2, track
        file = server.request("GET", track["fileUrl"])
        assert file.status_code == 200 and file.headers["content-type"] == "audio/ogg"
        assert len(file.content) == track["bytes"]
        path = tmp / f"{call}.opus"
        path.write_bytes(file.content)
        pcm = decode(path, tmp)
        assert abs(len(pcm) / 48000 - 20) <= 0.2, f"{call}: {len(pcm) / 48000:.3f} s"
        middle = pcm[48000 * 2:48000 * 18]
        others = [tone_db(middle, f, half_band=5) for f in TONES if f != own]
        assert tone_db(middle, own, half_band=5) > max(others) + 25, (call, own, others)
    missing = server.request("GET", recording["fileUrl"].replace("/file", "/tracks/00000000-0000-0000-0000-000000000000/file"))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "trackNotFound"


def test_a_recording_cut_by_kill_9_still_decodes(chorus_bin, tmp_path):
    server = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                          extra_args=["--recordings-dir", str(tmp_path / "recordings")])
    server.start()
    peers: list[ThreadedPeer] = []
    try:
        peers, _ = talkers(server, "cut")
        recording = server.request("POST", "/v1/rooms/cut/recordings").json()
        time.sleep(5.5)
        server.kill()
        files = list((tmp_path / "recordings").rglob("*.opus"))
        assert len(files) == 1
        pcm = decode(files[0], tmp_path, complete=False)
        assert 4 <= len(pcm) / 48000 <= 6, len(pcm) / 48000
        assert tone_db(pcm[48000:48000 * 4], TONES[0], half_band=5) > tone_db(pcm[48000:48000 * 4], 1500, half_band=5) + 30
        server.start()
        listed = server.request("GET", "/v1/rooms/cut/recordings").json()["recordings"]
        assert [(r["recordingId"], r["state"]) for r in listed] == [(recording["recordingId"], "interrupted")]
    finally:
        for peer in peers:
            peer.close()
        if server.running:
            assert server.stop() == 0


def test_a_full_disk_stops_the_recording_and_the_room_goes_on(chorus_bin, tmp_path):
    """The recordings folder on a 24 KB tmpfs: the file fills it within seconds, the recording
    stops with `recording.failed` (event stream and record), and the room keeps its calls."""
    disk = tmp_path / "tiny"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24k", "tmpfs", str(disk)], check=True, timeout=20)
    server = ChorusServer(chorus_bin, tmp_path / "chorus.sqlite", tmp_path / "chorus.log",
                          extra_args=["--recordings-dir", str(disk)])
    peers: list[ThreadedPeer] = []
    events = None
    try:
        server.start()
        peers, calls = talkers(server, "full")
        events = EventStream(server.url("/v1/rooms/full/events"), auth=server.auth)
        recording = server.request("POST", "/v1/rooms/full/recordings").json()
        failed = events.wait_for(lambda e: e["type"] == "recording.failed", timeout=30)
        assert failed["recordingId"] == recording["recordingId"] and failed["error"], failed
        deadline = time.monotonic() + 5
        state = None
        while time.monotonic() < deadline:
            state = server.request("GET", "/v1/rooms/full/recordings").json()["recordings"][0]
            if state["state"] == "failed":
                break
            time.sleep(0.2)
        assert state and state["state"] == "failed" and state["error"], state
        # The room goes on: every call still established, media still flowing.
        time.sleep(1)
        assert all(participant(server, "full", c)["state"] == "established" for c in calls)
    finally:
        if events is not None:
            events.close()
        for peer in peers:
            peer.close()
        if server.running:
            assert server.stop() == 0
        subprocess.run(["umount", str(disk)], timeout=20)
