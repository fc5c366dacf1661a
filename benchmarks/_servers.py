"""Rate-limited servers that are not our emulator: a client must run well against them too.

``contractsdk.sandbox`` limits with one algorithm (a token bucket) and rounds its headers
to whole seconds; a client tuned against it alone may be tuned to its quirks. The servers
here limit differently and were written apart from the SDK (their modules import nothing
from ``contractsdk``; ``python -m benchmarks._servers`` checks that they did not):

* ``python -m benchmarks._servers --algorithm A --rate R --burst B [--headers none|x|ietf]
  [--window W] [--read-rate R2] [--latency MS] --port 0``: a small aiohttp server, one
  bucket per bearer token (any token is accepted), writes and reads limited apart. It
  prints ``URL http://127.0.0.1:PORT`` when it listens and exits on SIGTERM. The
  algorithms, exact and deterministic on ``time.monotonic()``:

  - ``token-bucket``: refills continuously at R, holds B, starts full. Headers (``x``):
    ``X-RateLimit-Limit: R``, ``-Remaining: floor(tokens)``, ``-Reset``: seconds until
    full (3 decimals), and on a 429 ``Retry-After``: seconds until one token, to the
    millisecond (``0.012``), where the emulator says whole seconds.
  - ``fixed-window``: at most ``R*W`` requests per window of W seconds aligned to the
    server's start (B is not used); ``Retry-After`` is the window's end, rounded up.
  - ``sliding-log``: at most ``R*W`` requests in any trailing W seconds (a log of
    timestamps); ``-Reset``/``Retry-After``: when the oldest entry leaves.
  - ``sliding-window``: a sliding-window counter (Cloudflare's rate limiting, Upstash's
    ``slidingWindow``): counts per aligned window, and refuses once this window's count
    plus the last one's, weighted by the share of it the trailing W seconds still cover,
    reaches ``R*W``; ``-Reset``/``Retry-After``: the window's end.
  - ``gcra``: nginx's ``limit_req rate=R burst=B nodelay``, to the letter (milli-request
    excess, millisecond clock: B + 1 requests pass at once, then one per 1/R), and bare
    429s whatever ``--headers`` says.

  ``--headers ietf`` sends ``RateLimit-Policy: "default";q=R*W;w=W`` and
  ``RateLimit: "default";r=REMAINING;t=RESET`` instead of ``X-RateLimit-*``; ``none``
  sends only the status (no ``Retry-After`` either).

  It serves what ``client.contracts.create`` needs (the NDA's two terms with the
  emulator's JSON shapes, see :func:`~benchmarks._limit_app.terms_json`), ``GET
  /v1/contracts/{id}``, and an admin API: ``POST /__bench/reset``, ``GET
  /__bench/counters``, ``PUT /__bench/limits``.
* :class:`~benchmarks._nginx.NginxServer`: nginx itself (``limit_req`` on the create
  location, bare 429s), where nginx is installed. nginx rates are integers per second (or
  per minute).

:class:`LimitServer` and :class:`~benchmarks._nginx.NginxServer` run them as subprocesses,
with the interface of ``_harness.Emulator`` (:class:`benchmarks._harness.Server`).

This module is the command line and :class:`LimitServer`; the server's parts are apart:
:class:`~benchmarks._limiters.Limits` and the algorithms in ``_limiters.py``, the aiohttp
app in ``_limit_app.py``, nginx in ``_nginx.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from benchmarks._harness import (
    START_TIMEOUT,
    ProcessContext,
    Target,
    http_json,
    process_cpu_seconds,
    stop_process,
)
from benchmarks._limit_app import API_KEY, TARGET, serve
from benchmarks._limiters import ALGORITHMS, HEADERS, Limits

__all__ = ["LimitServer", "main"]

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmarks._servers``: run one server until SIGTERM."""
    defaults = Limits()
    parser = argparse.ArgumentParser(prog="python -m benchmarks._servers", description=__doc__)
    parser.add_argument("--algorithm", choices=ALGORITHMS, default=defaults.algorithm)
    parser.add_argument("--rate", type=float, default=defaults.rate, help="writes/s")
    parser.add_argument("--burst", type=float, default=defaults.burst)
    parser.add_argument("--headers", choices=HEADERS, default=defaults.headers)
    parser.add_argument("--window", type=float, default=defaults.window, help="seconds")
    parser.add_argument("--read-rate", type=float, default=None, help="reads/s (default R)")
    parser.add_argument("--latency", type=float, default=0.0, help="max random delay, ms")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    limits = Limits(**{f.name: getattr(args, f.name) for f in fields(Limits)})
    # An independent stand-in for "some server": nothing of the SDK may be in it.
    assert not any(name.split(".")[0] == "contractsdk" for name in sys.modules)
    asyncio.run(serve(limits, args.host, args.port))


# --------------------------------------------------------------------------------------
# The servers as subprocesses, for the benchmarks


class LimitServer(ProcessContext):
    """``python -m benchmarks._servers`` in a subprocess, and its admin API.

    Args:
        limits: Its limits to start with (:meth:`set_limits` changes them).
    """

    api_key = API_KEY

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.url = ""
        self._process: subprocess.Popen[str] | None = None
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in stop())

    @property
    def label(self) -> str:
        """The server's limits in a few words."""
        return self.limits.label

    def start(self) -> None:
        """Start the server and read its URL from its banner."""
        argv = [sys.executable, "-m", "benchmarks._servers", *self.limits.argv(), "--port", "0"]
        self._process = process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._stderr, text=True, cwd=ROOT
        )
        assert process.stdout is not None
        watchdog = threading.Timer(START_TIMEOUT, process.kill)  # no banner: killed
        watchdog.start()
        try:
            banner = process.stdout.readline().split()
        finally:
            watchdog.cancel()
        if banner[:1] != ["URL"]:
            self._stderr.seek(0)
            raise RuntimeError(f"the server did not start: {argv}\n{self._stderr.read()}")
        self.url = banner[1]

    def stop(self) -> None:
        """Stop it (it exits on SIGTERM)."""
        process, self._process = self._process, None
        stop_process(process)
        self._stderr.close()

    def _admin(self, method: str, path: str, body: object = None) -> Any:
        return http_json(method, f"{self.url}/__bench/{path}", body)

    def reset(self) -> None:
        """Forget every bucket; counters from zero (limits kept)."""
        self._admin("POST", "reset")

    def counters(self) -> dict[str, Any]:
        """``requests``, ``rate_limited``, ``created``, ``writes``, ``by_client``."""
        result: dict[str, Any] = self._admin("GET", "counters")
        return result

    def set_limits(self, limits: Limits) -> None:
        """Change the limits (every bucket starts afresh)."""
        self._admin("PUT", "limits", asdict(limits))
        self.limits = limits

    def cpu_seconds(self) -> float | None:
        """CPU the server has used so far (Linux), or None."""
        return None if self._process is None else process_cpu_seconds(self._process.pid)

    def target(self) -> Target:
        """User 1 of team 1 creates NDAs from template 1."""
        return TARGET


if __name__ == "__main__":
    main()
