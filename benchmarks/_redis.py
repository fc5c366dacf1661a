"""A throwaway Redis for the benchmarks whose workers share their limiter through it.

:class:`RedisServer` runs ``redis-server`` on 127.0.0.1 (no persistence, its own
temporary folder) for the rows of ``bench_shared.py`` that pass ``redis=`` to the workers
of ``_procs.py``; :func:`redis_binary` finds it (or another, such as ``valkey-server``).
"""

from __future__ import annotations

import os
import subprocess
import tempfile

from benchmarks._harness import ProcessContext, executable, free_port, stop_process, wait_for_port

__all__ = ["RedisServer", "redis_binary"]


def redis_binary() -> str | None:
    """The ``redis-server`` executable, or None when it is not installed.

    ``CONTRACTSDK_TEST_REDIS_SERVER`` names another (``valkey-server``) to measure that.
    """
    return os.environ.get("CONTRACTSDK_TEST_REDIS_SERVER") or executable(
        "redis-server", "/usr/bin/redis-server"
    )


class RedisServer(ProcessContext):
    """A throwaway ``redis-server`` on 127.0.0.1: no persistence, in a temporary folder."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it and wait until it listens."""
        binary = redis_binary()
        if binary is None:
            raise FileNotFoundError("redis-server is not installed")
        self._dir = tempfile.TemporaryDirectory(prefix="bench-redis-")
        argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--save", "", "--appendonly", "no", "--dir", self._dir.name]
        self._process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self._process)

    def stop(self) -> None:
        """Stop it and remove its folder."""
        process, self._process = self._process, None
        stop_process(process)
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def flushall(self) -> None:
        """Forget every key (between rows)."""
        import redis

        with redis.Redis(host="127.0.0.1", port=self.port) as connection:
            connection.flushall()
