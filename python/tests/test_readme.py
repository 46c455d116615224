"""The README's five-line example runs as written, against a real seqvend."""

from __future__ import annotations

import contextlib
import io
import re

import seqvend
from conftest import ROOT


def test_the_readme_example_runs_against_a_real_seqvend(server):
    readme = (ROOT / "python" / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    # The sequences it names, on this test's seqvend; only the address and token differ.
    server.request("POST", "/sequences", {"name": "orders", "min": 1, "max": 10**9})
    server.request(
        "POST",
        "/sequences",
        {"name": "fedex-4471", "min": 1, "max": 10**9, "format": {"kind": "fedex_express"}},
    )
    example = example.replace("http://127.0.0.1:8080", server.url)
    example = example.replace('"vend-token"', repr(server.token))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(example, "README.md", "exec"), {})
    order_id, value, formatted = printed.getvalue().split()[:3]
    assert int(order_id) >= 1 and int(value) >= 1
    assert seqvend.tracking.validate(formatted)
