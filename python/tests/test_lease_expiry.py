"""Leases honoured: no value is handed out after its lease's deadline (a seqvend whose
client leases last 3 s)."""

from __future__ import annotations

import pytest
import seqvend
from conftest import Server, eventually


@pytest.fixture(scope="module")
def short_leases():
    s = Server(SEQVEND_CLIENT_LEASE_MS="3000")
    yield s
    s.close()


def test_values_of_an_expired_lease_are_discarded_never_handed_out(short_leases):
    server = short_leases
    name = server.sequence(cache={"size": 100, "min": 0})
    client = seqvend.Client(server.url, server.token)
    first = client.next(name)
    block_end = first + 99  # the first lease: the sequence's suggested 100 values

    eventually(lambda: client.metrics().discarded >= 99, 20, "the first block expires")
    later = [client.next(name) for _ in range(50)]

    assert all(value > block_end for value in later), (first, later[:5])
    assert later == sorted(set(later))
