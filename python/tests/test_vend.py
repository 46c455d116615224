"""Strict vends over HTTP: carrier numbers, idempotency keys and safe retries."""

from __future__ import annotations

import secrets

import pytest
import seqvend

UPS = {"kind": "ups_1z", "account": "5R8939", "service": "03"}


def test_a_formatted_sequence_vends_each_value_with_its_carrier_number(server, client):
    name = server.sequence(min=5756712, max=9999999, format=UPS)
    vended = client.vend(name, 3)
    assert vended.values == [5756712, 5756713, 5756714]
    assert vended.formatted[0] == "1Z5R89390357567127"
    assert vended.formatted == [seqvend.tracking.render(UPS, v) for v in vended.values]
    assert all(seqvend.tracking.validate(number) for number in vended.formatted)
    assert not vended.exhausted and not vended.replayed and len(vended) == 3


def test_a_plain_sequence_vends_values_without_carrier_numbers(server, client):
    name = server.sequence()
    vended = client.vend(name)
    assert vended.values == [1] and vended.formatted is None and vended.sequence == name


def test_a_retry_with_the_same_idempotency_key_replays_the_first_answer(server, client):
    name = server.sequence()
    key = "order-" + secrets.token_hex(4)
    first = client.vend(name, 2, idempotency_key=key)
    again = client.vend(name, 2, idempotency_key=key)
    assert again.values == first.values and again.replayed and not first.replayed
    assert client.vend(name).values == [3], "the replay drew nothing"


def test_the_same_key_with_another_request_raises_idempotency_key_reused(server, client):
    name = server.sequence()
    key = "order-" + secrets.token_hex(4)
    client.vend(name, 1, idempotency_key=key)
    with pytest.raises(seqvend.IdempotencyKeyReused) as caught:
        client.vend(name, 2, idempotency_key=key)
    assert (caught.value.code, caught.value.status) == ("idempotency_key_reused", 422)


def test_a_keyed_vend_survives_seqvend_restarting_under_it_and_answers_once(server):
    """The retry loop: a keyed vend sent while seqvend is down is retried until it is back;
    a second call with the key replays the same values."""
    import threading

    client = seqvend.Client(server.url, server.token, retries=40, request_timeout=5)
    name = server.sequence()
    key = "label-" + secrets.token_hex(4)
    server.stop()
    outcome = {}
    call = threading.Thread(target=lambda: outcome.update(v=client.vend(name, idempotency_key=key)))
    call.start()
    server.start()
    call.join(timeout=120)
    assert outcome["v"].values == [1]
    assert client.vend(name, idempotency_key=key).values == [1]


@pytest.mark.parametrize("key", ["", "x" * 256, "tab\tkey", "é"])
def test_a_malformed_idempotency_key_is_refused_before_sending(client, key):
    with pytest.raises(seqvend.InvalidRequest):
        client.vend("orders", idempotency_key=key)


@pytest.mark.parametrize("count", [0, 10_001])
def test_a_count_outside_1_to_10000_is_refused_before_sending(client, count):
    with pytest.raises(seqvend.InvalidRequest):
        client.vend("orders", count)
