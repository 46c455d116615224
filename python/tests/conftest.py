"""A real seqvend with its own PostgreSQL for the tests: `seqvend serve` with no DATABASE_URL
starts a private cluster in SEQVEND_DATA_DIR and stops it on exit (the same binary and the
same start-up the Rust tests and `scripts/serve.sh` use). The binary is $SEQVEND_BIN
(`scripts/python.sh` builds it), or target/debug/seqvend of this checkout."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def eventually(check: Callable[[], Optional[T]], seconds: float = 20.0, what: str = "") -> T:
    """Polls `check` until it returns something other than None/False, or fails at the
    deadline. Never a fixed sleep standing in for a condition."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what or check}")
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One seqvend and its PostgreSQL; `stop()` and `start()` again keep the data."""

    def __init__(self, **settings: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin = "admin-" + secrets.token_hex(12)
        self.token = "vend-" + secrets.token_hex(12)
        self.dir = Path(tempfile.mkdtemp(prefix="seqvend-py-"))
        # As root, the cluster runs as `postgres`, which must traverse the directory.
        self.dir.chmod(0o755)
        self.env = dict(
            os.environ,
            SEQVEND_LISTEN=f"127.0.0.1:{self.port}",
            SEQVEND_DATA_DIR=str(self.dir / "pg"),
            SEQVEND_ADMIN_TOKENS=self.admin,
            SEQVEND_VEND_TOKENS=self.token,
            SEQVEND_LOG_FORMAT="json",
            **settings,
        )
        self.env.pop("DATABASE_URL", None)
        self.binary = os.environ.get("SEQVEND_BIN", str(ROOT / "target/debug/seqvend"))
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.start()

    def start(self) -> None:
        log = open(self.dir / "seqvend.log", "ab")
        self.process = subprocess.Popen(
            [self.binary, "serve"], env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        eventually(self.ready, 60, "seqvend answers /readyz")

    def ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"seqvend exited; see {self.dir / 'seqvend.log'}")
        try:
            with urllib.request.urlopen(self.url + "/readyz", timeout=1) as answer:
                return answer.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def request(self, method: str, path: str, body: Any = None, token: Optional[str] = None) -> Any:
        """An HTTP call as the admin (or `token`); the JSON answer, or raises HTTPError."""
        data = json.dumps(body).encode() if body is not None else None
        call = urllib.request.Request(self.url + path, data=data, method=method)
        call.add_header("Authorization", f"Bearer {token or self.admin}")
        if data is not None:
            call.add_header("content-type", "application/json")
        with urllib.request.urlopen(call, timeout=30) as answer:
            raw = answer.read()
        return json.loads(raw) if raw else None

    def sequence(self, min: int = 1, max: int = 10**15, **extra: Any) -> str:
        """Creates a sequence with a fresh name; returns the name."""
        name = "py-" + secrets.token_hex(6)
        self.request("POST", "/sequences", {"name": name, "min": min, "max": max, **extra})
        return name


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.close()


@pytest.fixture
def client(server: Server) -> Iterator[Any]:
    import seqvend

    yield seqvend.Client(server.url, server.token)


def http_error(call: Callable[[], Any]) -> Dict[str, Any]:
    """The status and JSON body of a call that must fail."""
    try:
        call()
    except urllib.error.HTTPError as error:
        return {"status": error.code, **json.loads(error.read())}
    raise AssertionError("the call succeeded")
