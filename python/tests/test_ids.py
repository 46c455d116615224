"""Snowflake ids under a leased worker id, UUIDv7s, and decoding against the server."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timezone

import pytest
import seqvend


def test_snowflakes_increase_carry_the_leased_worker_id_and_decode_as_the_server_does(server, client):
    first = client.snowflake()
    batch = client.snowflake_n(1000)
    assert first < batch[0] and batch == sorted(set(batch))
    worker = client.worker_id
    assert worker is not None
    parts = seqvend.decode_snowflake(batch[-1])
    assert parts.worker_id == worker
    answer = server.request("GET", f"/ids/snowflake/{batch[-1]}")
    assert (parts.timestamp_ms, parts.worker_id, parts.sequence) == (
        answer["timestamp_ms"],
        answer["worker_id"],
        answer["sequence"],
    )
    assert abs(parts.timestamp - datetime.now(timezone.utc)).total_seconds() < 60


def test_snowflakes_from_threads_never_repeat(client):
    out = [[] for _ in range(4)]

    def take(ids):
        for _ in range(20_000):
            ids.append(client.snowflake())

    threads = [threading.Thread(target=take, args=(ids,)) for ids in out]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [i for ids in out for i in ids]
    assert len(set(everything)) == len(everything)


def test_two_clients_lease_two_worker_ids(server):
    a = seqvend.Client(server.url, server.token)
    b = seqvend.Client(server.url, server.token)
    a.snowflake(), b.snowflake()
    assert a.worker_id != b.worker_id


def test_decode_refuses_an_id_outside_the_layout_and_takes_another_layout():
    with pytest.raises(seqvend.InvalidRequest):
        seqvend.decode_snowflake(-1)
    parts = seqvend.decode_snowflake((5 << 22) | (3 << 12) | 7, bits="41/10/12", epoch_ms=0)
    assert parts == (5, 3, 7)


def test_uuid7s_increase_and_are_version_7():
    made = [seqvend.uuid7() for _ in range(10_000)]
    assert all(isinstance(u, uuid.UUID) and u.version == 7 for u in made)
    assert made == sorted(made) and len(set(made)) == len(made)
