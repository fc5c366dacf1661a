"""A real ``redis-server`` on 127.0.0.1 and a free port, started and stopped by the tests.

No persistence (``--save '' --appendonly no``), its own temporary directory, and a
``kill()`` / ``start()`` pair on the same port so that tests can take Redis away mid-run
and bring it back. When ``redis-server`` is not installed the tests that need it are
skipped, except under CI (``CI=true``), where that is a failure: ``.ci/run`` installs it.
``CONTRACTSDK_TEST_REDIS_SERVER`` names another binary that speaks the same protocol and
Lua (``valkey-server``), to run the same tests against it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

#: Seconds redis-server may take to accept connections.
START_TIMEOUT = 10.0


def redis_server_binary() -> str:
    """Return the path of redis-server, or skip (fail under CI) when it is missing."""
    chosen = os.environ.get("CONTRACTSDK_TEST_REDIS_SERVER")
    if chosen:
        return chosen
    path = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None
    )
    if path is None:
        message = "redis-server is not installed (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def key_name(key: bytes | str) -> str:
    """A key name as redis-py returns it (bytes, or str with decode_responses), as str."""
    return key.decode() if isinstance(key, bytes) else key


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process; ``url`` stays the same across kill() and start()."""

    def __init__(self) -> None:
        self.binary = redis_server_binary()
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.TemporaryDirectory(prefix="contractsdk-redis-")
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._process = subprocess.Popen(
            [
                self.binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir.name,
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self._process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        self.kill()
        raise RuntimeError("redis-server did not start in time")

    def kill(self) -> None:
        """Kill the server at once (SIGKILL): its data is gone, as in a crash."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        self.kill()
        self._dir.cleanup()

    def flush(self) -> None:
        """Forget every key (between tests)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            sock.recv(16)

    def keys(self) -> list[str]:
        """Every key name (a tiny RESP reader: tests only)."""
        import redis

        client = redis.Redis.from_url(self.url)
        try:
            return sorted(key_name(key) for key in client.keys("*"))
        finally:
            client.close()

    @property
    def directory(self) -> Path:
        """The server's working directory."""
        return Path(self._dir.name)
