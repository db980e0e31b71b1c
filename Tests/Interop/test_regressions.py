"""Server bugs found while contract-testing the API, kept as executable reproductions.

Each reproduced a real bug when it was written; they now guard the fixes.
"""

from __future__ import annotations

import json
import threading
import uuid

import pytest
import requests


def test_statistics_listing_stays_json_whatever_upload_was_accepted(chorus_server, insert_call):
    assert chorus_server.stop() == 0
    call_id = insert_call(chorus_server)
    chorus_server.start()
    path = f"/v1/calls/{call_id}/statistics"
    headers = {"Content-Type": "application/json"}
    for body in (b'{"a":[1,]}', b'{"a":1,}', b'\xef\xbb\xbf{"bom":1}'):
        upload = chorus_server.request("POST", path, data=body, headers=headers)
        assert upload.status_code in (201, 400), upload.text
        listing = chorus_server.request("GET", path)
        assert listing.status_code == 200
        json.loads(listing.content.decode("utf-8"))  # strict JSON, as the content type promises


def test_percent_encoded_path_parameters_are_decoded(chorus_server):
    for room_id, encoded in (("mb=", "mb%3D"), ("A", "%41")):
        created = chorus_server.request("POST", "/v1/rooms", json={"roomId": room_id})
        assert created.status_code == 201, created.text
        found = chorus_server.request("GET", f"/v1/rooms/{encoded}")
        assert found.status_code == 200, found.text
        assert found.json()["roomId"] == room_id


def test_delete_wins_over_a_concurrent_patch(chorus_server):
    key, secret = chorus_server.auth
    resurrected = []
    for _ in range(100):
        room_id = "race-" + uuid.uuid4().hex[:12]
        assert chorus_server.request("POST", "/v1/rooms", json={"roomId": room_id}).status_code == 201
        url = chorus_server.url(f"/v1/rooms/{room_id}")
        answers: dict[str, int] = {}

        def patch():
            answers["patch"] = requests.patch(url, json={"videoSlots": 3}, auth=(key, secret), timeout=10).status_code

        def delete():
            answers["delete"] = requests.delete(url, auth=(key, secret), timeout=10).status_code

        threads = [threading.Thread(target=patch), threading.Thread(target=delete)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert answers["delete"] == 204 and answers["patch"] in (200, 404), answers
        if chorus_server.request("GET", f"/v1/rooms/{room_id}").status_code != 404:
            resurrected.append(room_id)
    assert not resurrected, f"{len(resurrected)} of 100 deleted rooms are open again: {resurrected[:3]}"
