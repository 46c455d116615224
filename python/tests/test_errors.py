"""Refusals become exceptions carrying the API's stable code and status."""

from __future__ import annotations

import pytest
import seqvend


def test_an_unknown_sequence_raises_not_found(server, client):
    with pytest.raises(seqvend.NotFound) as caught:
        client.next("py-never-made")
    assert (caught.value.code, caught.value.status) == ("not_found", 404)
    with pytest.raises(seqvend.NotFound):
        client.vend("py-never-made")


def test_a_used_up_range_raises_sequence_exhausted_after_every_value_was_handed_out(server, client):
    name = server.sequence(min=1, max=300)
    values = []
    with pytest.raises(seqvend.SequenceExhausted) as caught:
        while True:
            values.append(client.next(name))
    assert sorted(values) == list(range(1, 301)), "every value once, none outside the range"
    assert (caught.value.code, caught.value.status) == ("sequence_exhausted", 409)
    assert not caught.value.transient


def test_a_strict_vend_past_the_end_returns_what_was_left_then_raises(server, client):
    name = server.sequence(min=1, max=5)
    last = client.vend(name, 10)
    assert last.values == [1, 2, 3, 4, 5] and last.exhausted
    with pytest.raises(seqvend.SequenceExhausted):
        client.vend(name)


def test_a_retired_sequence_raises_sequence_retired_on_next_and_vend(server, client):
    name = server.sequence()
    server.request("DELETE", f"/sequences/{name}")
    with pytest.raises(seqvend.SequenceRetired) as caught:
        client.next(name)
    assert (caught.value.code, caught.value.status) == ("sequence_retired", 410)
    with pytest.raises(seqvend.SequenceRetired):
        client.vend(name)


def test_a_token_without_the_scope_raises_forbidden_naming_it(server):
    name = server.sequence()
    made = server.request(
        "POST", "/tokens", {"name": "py-ro-" + name[3:], "scopes": [f"read:{name}"]}
    )
    reader = seqvend.Client(server.url, made["token"])
    with pytest.raises(seqvend.Forbidden) as caught:
        reader.vend(name)
    assert (caught.value.code, caught.value.status) == ("forbidden", 403)
    with pytest.raises(seqvend.Forbidden):
        reader.next(name)


def test_a_refused_token_raises_unauthorized(server):
    stranger = seqvend.Client(server.url, "not-a-token")
    with pytest.raises(seqvend.Unauthorized) as caught:
        stranger.vend(server.sequence())
    assert caught.value.status == 401


def test_no_server_raises_unavailable_with_the_transport_code_within_the_timeout():
    from conftest import free_port

    nowhere = seqvend.Client(f"http://127.0.0.1:{free_port()}", "t", timeout=0.5)
    with pytest.raises(seqvend.Unavailable) as caught:
        nowhere.next("orders")
    assert caught.value.transient
    assert caught.value.code in ("transport", "timeout")
    with pytest.raises(seqvend.Unavailable) as caught:
        nowhere.vend("orders")
    assert caught.value.code == "transport" and caught.value.status is None


def test_bad_options_raise_configuration_error():
    with pytest.raises(seqvend.ConfigurationError):
        seqvend.Client("ftp://127.0.0.1", "t")
    with pytest.raises(seqvend.ConfigurationError):
        seqvend.Client("http://127.0.0.1:1", "t", timeout=-1)
