"""The Django example runs: orders numbered by seqvend at save, a label vended once."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT
from seqvend import tracking

EXAMPLE = ROOT / "python/examples/django_orders"


def test_the_django_example_numbers_orders_at_save_and_labels_one_once(server):
    numbers = server.sequence()
    # Its own carrier account: formatted sequences of one account share a number space.
    ups = {"kind": "ups_1z", "account": "DJ4471", "service": "03"}
    labels = server.sequence(min=1000, max=9999999, format=ups)
    env = dict(
        os.environ,
        SEQVEND_URL=server.url,
        SEQVEND_TOKEN=server.token,
        SEQVEND_SEQUENCE=numbers,
        SEQVEND_LABELS=labels,
    )
    run = subprocess.run(
        [sys.executable, "run.py"], cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    rows = [line.split(" ") for line in run.stdout.splitlines()]
    assert [int(row[0]) for row in rows] == [1, 2, 3]
    assert rows[0][-1] == tracking.render(ups, 1000) and tracking.validate(rows[0][-1])
    assert [row[-1] for row in rows[1:]] == ["-", "-"]
