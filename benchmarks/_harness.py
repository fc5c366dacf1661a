"""What every benchmark needs: the emulator in its own process, a driver, clocks, tables.

The emulator runs in a separate process (``python -m contractsdk.sandbox``) so that
``time.process_time()`` in the benchmark process measures the client alone. Its admin API
(``/__sandbox/``) resets it between rows, changes its limits and reads its counters; those
calls are synchronous and made between measurements, never inside one.

Servers that are not the emulator (``_servers.py``, ``_nginx.py``) and the Redis of
``_redis.py`` share the process plumbing here: :class:`ProcessContext`, :func:`stop_process`,
:func:`process_cpu_seconds`, :func:`free_port`, :func:`http_json`, and the
:class:`Server` protocol every benchmark server follows.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, TypeVar

import aiohttp

from benchmarks._fakenet import http_response

__all__ = [
    "Drive",
    "Emulator",
    "NDA_VALUES",
    "ProcessContext",
    "Server",
    "Target",
    "drive",
    "environment_line",
    "executable",
    "free_port",
    "http_json",
    "median",
    "process_cpu_seconds",
    "stop_process",
    "table",
    "wait_for_port",
    "wakeup_cpu",
]

#: A minimal valid contract of the seeded Non-Disclosure Agreement (``_seed_terms.py``): a
#: name, and one option of the one options term, which has no nested terms under "mutual".
NDA_VALUES = {"contract_name": "Benchmark NDA", "contract_ndaType": "mutual"}

#: Seconds the emulator may take to print its banner.
START_TIMEOUT = 30.0


@dataclass(frozen=True)
class Target:
    """What the benchmark creates contracts with: one user, their team, one template.

    ``fields`` is the ``fields`` payload of :data:`NDA_VALUES` exactly as the SDK builds it
    (template order, ``id`` and ``name``), so hand-written clients send the same JSON body.
    """

    user_id: int
    team_id: int
    contract_type_id: int
    template_id: int
    fields: tuple[tuple[int, str, str], ...]

    def body(self, i: int) -> dict[str, Any]:
        """The JSON body of ``POST /v1/teams/{team}/contracts`` for contract ``i``."""
        values = self.values(i)
        return {
            "created_by_user_id": self.user_id,
            "template_id": self.template_id,
            "fields": [
                {"id": id_, "name": name, "value": values[name]} for id_, name, _ in self.fields
            ],
        }

    def values(self, i: int) -> dict[str, str]:
        """The flat values the SDK is given for contract ``i``."""
        return {**NDA_VALUES, "contract_name": f"{NDA_VALUES['contract_name']} {i}"}


# --------------------------------------------------------------------------------------
# Processes: servers, Redis and client workers, always stopped


def executable(name: str, *elsewhere: str) -> str | None:
    """The path of a program on PATH, or of the first of ``elsewhere`` that exists, or None."""
    return shutil.which(name) or next((path for path in elsewhere if os.path.exists(path)), None)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (for servers that cannot be told port 0)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(
    port: int, process: subprocess.Popen[Any], timeout: float = START_TIMEOUT
) -> None:
    """Wait until something listens on 127.0.0.1:``port``; raise if the process exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"{process.args!r} did not listen on port {port} in {timeout:g} s")


def stop_process(
    process: subprocess.Popen[Any] | None, *, signal: int | None = None, timeout: float = 10.0
) -> None:
    """Stop a process (SIGTERM or ``signal``, then SIGKILL after ``timeout``) and reap it."""
    if process is None:
        return
    if process.poll() is None:
        if signal is None:
            process.terminate()
        else:
            process.send_signal(signal)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time a live process has used so far (Linux ``/proc``), or None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # Fields 14 and 15 of proc(5), utime and stime; the split above starts at field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def http_json(method: str, url: str, body: object = None, *, token: str | None = None) -> Any:
    """A synchronous JSON call (between measurements only); return the decoded answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


_Context = TypeVar("_Context", bound="ProcessContext")


class ProcessContext:
    """A context manager around ``start()`` and ``stop()``: stopped however the block ends."""

    def start(self) -> None:
        """Start the process(es)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop them; safe to call twice."""
        raise NotImplementedError

    def __enter__(self: _Context) -> _Context:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class Server(Protocol):
    """What a benchmark needs of a rate-limited server: the emulator, ``_servers.py``'s, nginx.

    ``counters()`` has at least ``requests`` (every API request), ``rate_limited`` (those
    answered 429) and a count of contracts created (``created``, or the emulator's
    ``contracts_created``).
    """

    url: str

    @property
    def api_key(self) -> str:
        """A credential: the rate-limit principal."""
        ...

    def reset(self) -> None:
        """Forget every bucket and counter."""
        ...

    def counters(self) -> dict[str, Any]:
        """The server's counters since the last reset."""
        ...

    def cpu_seconds(self) -> float | None:
        """CPU the server has used so far, or None when unknown."""
        ...

    def target(self) -> Target:
        """The user, team and template contracts are created with."""
        ...


class Emulator(ProcessContext):
    """``python -m contractsdk.sandbox`` in a subprocess, and its admin API.

    Use it as a context manager; it is stopped (SIGTERM, then SIGKILL) on exit.

    Args:
        read_rate: Reads/s per credential, or None for unlimited.
        write_rate: Writes/s per credential, or None for unlimited.
        burst: The buckets' size, or None for one second's worth.
        rate_headers: Send ``Retry-After`` and ``X-RateLimit-*``.
        args: More command-line options (``--faults FILE``, ``--seed N`` …).
    """

    def __init__(
        self,
        *,
        read_rate: float | None = None,
        write_rate: float | None = None,
        burst: float | None = None,
        rate_headers: bool = True,
        args: Sequence[str] = (),
    ) -> None:
        def rate(value: float | None) -> str:
            return "none" if value is None else repr(value)

        self.argv = [
            sys.executable,
            "-m",
            "contractsdk.sandbox",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--read-rate",
            rate(read_rate),
            "--write-rate",
            rate(write_rate),
            *(["--burst", repr(burst)] if burst is not None else []),
            *([] if rate_headers else ["--no-rate-headers"]),
            *args,
        ]
        self.url = ""
        self.api_keys: list[str] = []
        self.admin_token = ""
        self._process: subprocess.Popen[str] | None = None
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in stop())

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the process and read its URL and credentials from its banner."""
        self._process = process = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=self._stderr, text=True
        )
        assert process.stdout is not None
        # A process that never prints its banner is killed, which ends the loop below.
        watchdog = threading.Timer(START_TIMEOUT, process.kill)
        watchdog.start()
        # The banner (contractsdk/sandbox/_cli.py): "  URL  http://…", "  API keys  k1" then
        # one more key per line, "  Admin token  t  (for …)", and "Press Ctrl-C to stop."
        key_lines = False
        for line in process.stdout:
            words = line.split()
            if line.startswith("Press Ctrl-C"):
                break
            if line.startswith("  URL "):
                self.url = words[1]
            elif line.startswith("  API keys "):
                self.api_keys.append(words[2])
                key_lines = True
                continue
            elif line.startswith("  Admin token "):
                self.admin_token = words[2]
            elif key_lines and line.startswith("    ") and len(words) == 1:
                self.api_keys.append(words[0])
                continue
            key_lines = False
        watchdog.cancel()
        if not (self.url and self.api_keys and self.admin_token):
            errors = self._stderr_text()
            self.stop()
            raise RuntimeError(f"the emulator did not start: {' '.join(self.argv)}\n{errors}")

    def stop(self) -> None:
        """Stop the process (it exits on SIGTERM)."""
        process, self._process = self._process, None
        stop_process(process)
        self._stderr.close()

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()

    @property
    def pid(self) -> int:
        """The emulator's process id."""
        assert self._process is not None
        return self._process.pid

    @property
    def api_key(self) -> str:
        """The first API key (each key is a separate rate-limit principal)."""
        return self.api_keys[0]

    # -- HTTP, synchronous: only between measurements ----------------------------------

    def _call(self, method: str, path: str, body: object = None, *, token: str) -> Any:
        return http_json(method, self.url + path, body, token=token)

    def admin(self, method: str, path: str, body: object = None) -> Any:
        """Call ``/__sandbox/{path}`` with the admin token and return its JSON answer."""
        return self._call(method, f"/__sandbox/{path}", body, token=self.admin_token)

    def get_json(self, path: str) -> Any:
        """``GET {url}{path}`` with the first API key; return the decoded JSON."""
        return self._call("GET", path, token=self.api_key)

    def reset(self) -> None:
        """Back to the seed: no contracts, zero counters, every bucket full (limits kept)."""
        self.admin("POST", "reset")

    def set_limits(
        self,
        *,
        read_rate: float | None,
        write_rate: float | None,
        burst: float | None = None,
        rate_headers: bool = True,
    ) -> None:
        """Change the emulator's rate limits (None: unlimited, or for burst one second's worth)."""
        self.admin(
            "PUT",
            "limits",
            {
                "read_rate": read_rate,
                "write_rate": write_rate,
                "burst": burst,
                "rate_headers": rate_headers,
            },
        )

    def counters(self) -> dict[str, Any]:
        """The emulator's request counters (``GET /__sandbox/counters``)."""
        result: dict[str, Any] = self.admin("GET", "counters")
        return result

    def target(self, contract_type: str = "Non-Disclosure Agreement") -> Target:
        """Return seeded user 0, their personal team and the newest template of a type."""
        info = self.admin("GET", "info")
        user = info["users"][0]
        ctype = next(t for t in info["contract_types"] if t["name"] == contract_type)
        template_id = ctype["template_ids"][0]
        terms = self.get_json(f"/v1/templates/{template_id}/terms")
        ids = {term["name"]: term["id"] for term in terms}
        order = [term["name"] for term in terms if term["name"] in NDA_VALUES]
        return Target(
            user_id=user["id"],
            team_id=user["personal_team_id"],
            contract_type_id=ctype["id"],
            template_id=template_id,
            fields=tuple((ids[name], name, NDA_VALUES[name]) for name in order),
        )

    def raw_exchange(self, method: str, path: str, body: object = None) -> bytes:
        """Make one call with the first API key; return the whole HTTP response, as sent.

        For :mod:`benchmarks._fakenet`, which answers aiohttp in memory with these bytes.
        """
        parts = urllib.parse.urlsplit(self.url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        headers = {"Authorization": f"Bearer {self.api_key}"}
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            content = response.read()
        finally:
            connection.close()
        return http_response(response.status, response.reason, response.getheaders(), content)

    def create_contract(self, target: Target) -> int:
        """Create one contract of ``target`` (to read it back) and return its id."""
        path = f"/v1/teams/{target.team_id}/contracts"
        link = self._call("POST", path, target.body(0), token=self.api_key)
        return int(link["href"].rstrip("/").rsplit("/", 1)[1])

    def cpu_seconds(self) -> float | None:
        """CPU time the emulator has used so far (Linux ``/proc``), or None elsewhere."""
        return process_cpu_seconds(self.pid)


# --------------------------------------------------------------------------------------
# Driving N calls at a fixed concurrency


@dataclass
class Drive:
    """The outcome of :func:`drive`.

    Attributes:
        calls: Calls made.
        ok: Calls that returned.
        wall: Seconds from the first call to the last completion.
        cpu: ``time.process_time()`` spent by this process meanwhile (every thread).
        errors: Failed calls, by exception type name.
    """

    calls: int
    ok: int
    wall: float
    cpu: float
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def failed(self) -> int:
        """Calls that raised."""
        return self.calls - self.ok


async def drive(n: int, concurrency: int, call: Callable[[int], Awaitable[object]]) -> Drive:
    """Make ``call(0)`` … ``call(n - 1)`` from ``concurrency`` tasks pulling from one counter.

    A call that raises counts as failed (by exception type) and its task goes on.
    """
    todo = iter(range(n))
    ok = 0
    errors: Counter[str] = Counter()
    last = 0.0

    async def worker() -> None:
        nonlocal ok, last
        for i in todo:  # shared: each index is taken by exactly one task
            try:
                await call(i)
            except Exception as exc:
                errors[type(exc).__name__] += 1
            else:
                ok += 1
            last = time.perf_counter()

    cpu = time.process_time()
    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu = time.process_time() - cpu
    return Drive(calls=n, ok=ok, wall=max(last, start) - start, cpu=cpu, errors=errors)


# --------------------------------------------------------------------------------------
# Reporting


def environment_line() -> str:
    """Python, aiohttp and the machine: what a reader needs to compare two runs."""
    return (
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"aiohttp {aiohttp.__version__}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores"
    )


def wakeup_cpu(wakeups: int = 100, interval: float = 0.01) -> float:
    """CPU µs one idle event-loop wakeup costs here: the floor of a paced request's cost.

    A client paced at R/s wakes up for nearly every request, so on a virtual machine whose
    wakeups are dear this, not the client's own work, dominates its CPU per request.
    """

    async def sleeper() -> float:
        cpu = time.process_time()
        for _ in range(wakeups):
            await asyncio.sleep(interval)
        return (time.process_time() - cpu) / wakeups * 1e6

    return asyncio.run(sleeper())


def median(values: Iterable[float]) -> float:
    """The median (of a few repeated measurements)."""
    return statistics.median(values)


def span(values: Sequence[float], fmt: str) -> str:
    """The lowest and highest of ``values``, each formatted by ``fmt``: ``low–high``."""
    return f"{min(values):{fmt}}–{max(values):{fmt}}"


def median_span(values: Sequence[float], fmt: str) -> str:
    """The median of ``values`` and, in brackets, their span: ``median (low–high)``."""
    return f"{statistics.median(values):{fmt}} ({span(values, fmt)})"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, left: int = 1) -> str:
    """Lay out a text table: the first ``left`` columns left-aligned, the rest right-aligned."""
    rows = [list(map(str, row)) for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=False)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if i < left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])
