"""Carrier numbers offline agree with the server on every public test vector."""

from __future__ import annotations

import json
import urllib.parse

import pytest
import seqvend
from conftest import ROOT, http_error
from seqvend import tracking

VECTORS = json.loads((ROOT / "tests/data/carrier-vectors.json").read_text())


def test_the_file_holds_the_121_vectors():
    assert len(VECTORS) == 121


def test_every_vector_is_recognised_as_the_server_recognises_it(server):
    disagreements = []
    for vector in VECTORS:
        mine = tracking.recognise(vector["number"])
        path = "/tracking-numbers/" + urllib.parse.quote(vector["number"], safe="")
        theirs = server.request("GET", path, token=server.token)
        seen = (mine.number, mine.valid, mine.carrier, mine.kind, mine.serial)
        expected = (theirs["number"], theirs["valid"], theirs.get("carrier"), theirs.get("kind"), theirs.get("serial"))
        if seen != expected:
            disagreements.append(f"{vector['number']!r}: {seen} != {expected}")
    assert not disagreements, "\n".join(disagreements)


def test_every_vector_has_its_expected_validity():
    wrong = [
        v["number"]
        for v in VECTORS
        if tracking.validate(v["number"]) != (v["valid"] and v.get("checksum_ok") is not False)
    ]
    assert not wrong


def test_malformed_input_is_invalid_to_validate_and_refused_by_recognise_as_the_server_does(server):
    assert tracking.validate("1Z-5R8939") is False
    with pytest.raises(seqvend.InvalidRequest):
        tracking.recognise("1Z-5R8939")
    refused = http_error(lambda: server.request("GET", "/tracking-numbers/1Z-5R8939"))
    assert (refused["status"], refused["error"]) == (400, "invalid_request")


def test_render_prints_a_format_and_refuses_a_serial_it_cannot_hold():
    fmt = {"kind": "ups_1z", "account": "5R8939", "service": "03"}
    assert tracking.render(fmt, 5756712) == "1Z5R89390357567127"
    with pytest.raises(seqvend.InvalidRequest):
        tracking.render(fmt, 10**12)
    with pytest.raises(seqvend.InvalidRequest):
        tracking.render({"kind": "no_such_carrier"}, 1)
