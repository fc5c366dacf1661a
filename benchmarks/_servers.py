"""Rate-limited servers that are not our emulator: a client must run well against them too.

``contractsdk.sandbox`` limits with one algorithm (a token bucket) and rounds its headers
to whole seconds; a client tuned against it alone may be tuned to its quirks. The servers
here limit differently and were written apart from the SDK (this module imports nothing
from ``contractsdk``; ``python -m benchmarks._servers`` checks that it did not):

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
  - ``gcra``: nginx's ``limit_req rate=R burst=B nodelay``, to the letter (milli-request
    excess, millisecond clock: B + 1 requests pass at once, then one per 1/R), and bare
    429s whatever ``--headers`` says.

  ``--headers ietf`` sends ``RateLimit-Policy: "default";q=R*W;w=W`` and
  ``RateLimit: "default";r=REMAINING;t=RESET`` instead of ``X-RateLimit-*``; ``none``
  sends only the status (no ``Retry-After`` either).

  It serves what ``client.contracts.create`` needs (the NDA's two terms with the
  emulator's JSON shapes, see :func:`terms_json`), ``GET /v1/contracts/{id}``, and an
  admin API: ``POST /__bench/reset``, ``GET /__bench/counters``, ``PUT /__bench/limits``.
* :class:`NginxServer`: nginx itself (``limit_req`` on the create location, bare 429s),
  where nginx is installed. nginx rates are integers per second (or per minute).

:class:`LimitServer` and :class:`NginxServer` run them as subprocesses, with the interface
of ``_harness.Emulator`` (:class:`benchmarks._harness.Server`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from aiohttp import web

from benchmarks._harness import (
    NDA_VALUES,
    START_TIMEOUT,
    ProcessContext,
    Target,
    executable,
    free_port,
    http_json,
    process_cpu_seconds,
    stop_process,
    wait_for_port,
)

__all__ = [
    "ALGORITHMS",
    "API_KEY",
    "HEADERS",
    "TARGET",
    "LimitServer",
    "Limits",
    "NginxServer",
    "nginx_binary",
    "terms_json",
]

ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = ("token-bucket", "fixed-window", "sliding-log", "gcra")
HEADERS = ("none", "x", "ietf")
#: Any bearer token is accepted; this is the one the benchmarks use.
API_KEY = "bench-key"
#: The ids the servers serve: user 1 in team 1 creates from template 1 (type 1).
TEAM_ID = USER_ID = TEMPLATE_ID = CONTRACT_TYPE_ID = 1
NAME_ID, NDA_TYPE_ID, PARTY_ID = 11, 13, 14
TARGET = Target(
    user_id=USER_ID,
    team_id=TEAM_ID,
    contract_type_id=CONTRACT_TYPE_ID,
    template_id=TEMPLATE_ID,
    fields=(
        (NAME_ID, "contract_name", NDA_VALUES["contract_name"]),
        (NDA_TYPE_ID, "contract_ndaType", NDA_VALUES["contract_ndaType"]),
    ),
)


def terms_json(base: str) -> list[dict[str, Any]]:
    """The NDA template's terms ``contract_name`` and ``contract_ndaType``, as the emulator
    serves them (``GET /v1/templates/{id}/terms``): same keys, nesting and links."""

    def links(term_id: int) -> list[dict[str, str]]:
        return [{"rel": "self", "href": f"{base}/v1/terms/{term_id}"}]

    return [
        {
            "id": NAME_ID,
            "label": "Name of this agreement",
            "name": "contract_name",
            "links": links(NAME_ID),
        },
        {
            "id": NDA_TYPE_ID,
            "label": "Is the agreement mutual or one-way?",
            "name": "contract_ndaType",
            "options": [
                {"value": "mutual"},
                {
                    "value": "oneWay",
                    "nested_fields": [
                        {
                            "id": PARTY_ID,
                            "label": "Which party discloses information?",
                            "name": "contract_disclosingParty",
                            "options": [{"value": "firstParty"}, {"value": "secondParty"}],
                            "links": links(PARTY_ID),
                        }
                    ],
                },
            ],
            "links": links(NDA_TYPE_ID),
        },
    ]


def contract_json(base: str, contract_id: int) -> dict[str, Any]:
    """A contract as the emulator answers ``GET /v1/contracts/{id}`` (no ``id`` key)."""
    stamp = "2026-01-01T00:00:00.000+00:00"
    name = f"{NDA_VALUES['contract_name']} {contract_id}"
    return {
        "contract_name": name,
        "created_date": stamp,
        "purchased_date": stamp,
        "completedDate": None,
        "fields": [
            {"id": NAME_ID, "name": "contract_name", "value": name},
            {"id": NDA_TYPE_ID, "name": "contract_ndaType", "value": "mutual"},
        ],
        "_links": {"self": {"href": f"{base}/v1/contracts/{contract_id}"}},
    }


@dataclass(frozen=True)
class Limits:
    """A server's limits: the ``--algorithm``, ``--rate`` … options, and ``PUT /__bench/limits``.

    ``read_rate`` None reads at ``rate`` too; ``latency`` is the most milliseconds of
    uniform random delay before each answer.
    """

    algorithm: str = "token-bucket"
    rate: float = 100.0
    burst: float = 20.0
    headers: str = "x"
    window: float = 1.0
    read_rate: float | None = None
    latency: float = 0.0

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, not {self.algorithm!r}")
        if self.headers not in HEADERS:
            raise ValueError(f"headers must be one of {HEADERS}, not {self.headers!r}")
        rates = (self.rate, self.read_rate or self.rate, self.window)
        if not all(math.isfinite(v) and v > 0 for v in rates) or self.burst < 1:
            raise ValueError(f"rates and the window must be positive, burst >= 1: {self}")
        if not 0 <= self.latency < math.inf:
            raise ValueError(f"latency must be >= 0 ms, not {self.latency!r}")

    @property
    def label(self) -> str:
        """What a reader needs to know, e.g. ``token-bucket/x 100/s B=20``."""
        headers = "bare" if self.algorithm == "gcra" else self.headers
        burst = f" B={self.burst:g}" if self.algorithm in ("token-bucket", "gcra") else ""
        window = "" if self.window == 1 else f" W={self.window:g}s"
        return f"{self.algorithm}/{headers} {self.rate:g}/s{burst}{window}"

    def argv(self) -> list[str]:
        """The command-line options that give these limits."""
        out = []
        for name, value in asdict(self).items():
            if value is not None:
                out += [f"--{name.replace('_', '-')}", str(value)]
        return out


# --------------------------------------------------------------------------------------
# The algorithms: one object per principal and class (reads, writes)


def _number(value: float) -> str:
    """``100`` for 100.0, ``2.5`` for 2.5: header numbers without a useless ``.0``."""
    return str(int(value)) if value == int(value) else f"{value:.3f}".rstrip("0")


class Bucket:
    """One principal's limit. ``take(now)`` admits a request or not; the rest feeds headers.

    Subclasses keep their state in slots and decide in a few float operations: the server
    must sustain ~1,500 requests/s on one core.
    """

    __slots__ = ("burst", "quota", "rate", "window")
    quota: float

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        self.rate = rate
        self.burst = limits.burst
        self.window = limits.window
        self.quota = max(1, math.floor(rate * limits.window))

    def take(self, now: float) -> bool:
        """Admit one request arriving at ``now`` (taking its share), or refuse it."""
        raise NotImplementedError

    def remaining(self) -> int:
        """Requests that would pass right now."""
        raise NotImplementedError

    def reset(self, now: float) -> float:
        """Seconds until the limit is wholly available again."""
        raise NotImplementedError

    def retry_after(self, now: float) -> str:
        """``Retry-After`` for a refused request."""
        return str(math.ceil(self.reset(now)))


class TokenBucket(Bucket):
    """Continuous refill at ``rate``, capacity ``burst``, starts full."""

    __slots__ = ("stamp", "tokens")

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.quota = rate * limits.window
        self.tokens = self.burst
        self.stamp = time.monotonic()

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False

    def remaining(self) -> int:
        return math.floor(self.tokens)

    def reset(self, now: float) -> float:
        return (self.burst - self.tokens) / self.rate

    def retry_after(self, now: float) -> str:
        # Up to the millisecond: a client that waits this long finds a whole token.
        return f"{math.ceil((1 - self.tokens) / self.rate * 1000) / 1000:.3f}"


class FixedWindow(Bucket):
    """At most ``quota`` requests per window, windows aligned to the server's start."""

    __slots__ = ("count", "index", "origin")

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.origin = origin
        self.index = -1
        self.count = 0

    def take(self, now: float) -> bool:
        index = math.floor((now - self.origin) / self.window)
        if index != self.index:
            self.index, self.count = index, 0
        if self.count < self.quota:
            self.count += 1
            return True
        return False

    def remaining(self) -> int:
        return int(self.quota - self.count)

    def reset(self, now: float) -> float:
        return max(0.0, self.origin + (self.index + 1) * self.window - now)


class SlidingLog(Bucket):
    """At most ``quota`` requests in any trailing window: a log of admitted timestamps."""

    __slots__ = ("log",)

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.log: deque[float] = deque()

    def take(self, now: float) -> bool:
        log, cutoff = self.log, now - self.window
        while log and log[0] <= cutoff:
            log.popleft()
        if len(log) < self.quota:
            log.append(now)
            return True
        return False

    def remaining(self) -> int:
        return int(self.quota - len(self.log))

    def reset(self, now: float) -> float:
        return max(0.0, self.log[0] + self.window - now) if self.log else 0.0


class Gcra(Bucket):
    """nginx ``limit_req`` (``ngx_http_limit_req_lookup``): excess in milli-requests.

    ``excess = max(0, excess - rate_milli * elapsed_ms / 1000 + 1000)``; refused when
    above ``burst * 1000`` (state untouched), else stored. A GCRA with emission interval
    1/R and tolerance B/R, on a millisecond clock like nginx's cached time.
    """

    __slots__ = ("burst_milli", "excess", "last", "rate_milli")

    def __init__(self, limits: Limits, rate: float, origin: float) -> None:
        super().__init__(limits, rate, origin)
        self.rate_milli = int(rate * 1000)
        self.burst_milli = int(self.burst * 1000)
        self.excess = 0
        self.last: int | None = None

    def take(self, now: float) -> bool:
        ms = int(now * 1000)
        if self.last is None:  # a new node: admitted with no excess
            self.last = ms
            return True
        excess = max(0, self.excess - self.rate_milli * abs(ms - self.last) // 1000 + 1000)
        if excess > self.burst_milli:
            return False
        self.excess, self.last = excess, ms
        return True


_BUCKETS: dict[str, type[Bucket]] = {
    "token-bucket": TokenBucket,
    "fixed-window": FixedWindow,
    "sliding-log": SlidingLog,
    "gcra": Gcra,
}


def rate_headers(style: str, bucket: Bucket, ok: bool, now: float) -> dict[str, str] | None:
    """The rate-limit headers of one answer (None: none at all)."""
    if style == "none" or isinstance(bucket, Gcra):
        return None
    reset = bucket.reset(now)
    remaining = bucket.remaining()
    if style == "x":
        headers = {
            "X-RateLimit-Limit": _number(bucket.quota),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": f"{reset:.3f}",
        }
    else:
        headers = {
            "RateLimit-Policy": f'"default";q={_number(bucket.quota)};w={_number(bucket.window)}',
            "RateLimit": f'"default";r={remaining};t={math.ceil(reset)}',
        }
    if not ok:
        headers["Retry-After"] = bucket.retry_after(now)
    return headers


# --------------------------------------------------------------------------------------
# The server


class _State:
    """The server's limits, buckets and counters."""

    def __init__(self, limits: Limits) -> None:
        self.origin = time.monotonic()
        self.base = ""
        self.terms = b""
        self.limits = limits
        self.writes: dict[str, Bucket] = {}
        self.reads: dict[str, Bucket] = {}
        self.issued = 0  # contract ids ever given (not reset, so that GETs keep working)
        self.reset()

    def reset(self) -> None:
        self.writes.clear()
        self.reads.clear()
        self.requests = 0
        self.rate_limited = 0
        self.created = 0
        self.writes_sent = 0
        self.by_client: dict[str, Counter[str]] = {}

    def admit(self, request: web.Request, write: bool) -> tuple[bool, dict[str, str] | None]:
        """Count the request and decide it against its principal's bucket."""
        self.requests += 1
        self.writes_sent += write
        limits = self.limits
        principal = request.headers.get("Authorization", "")
        buckets = self.writes if write else self.reads
        bucket = buckets.get(principal)
        if bucket is None:
            rate = limits.rate if write else (limits.read_rate or limits.rate)
            bucket = buckets[principal] = _BUCKETS[limits.algorithm](limits, rate, self.origin)
        now = time.monotonic()
        ok = bucket.take(now)
        self.rate_limited += not ok
        client = request.headers.get("X-Bench-Client")
        if client is not None:
            self.by_client.setdefault(client, Counter())["ok" if ok else "429"] += 1
        return ok, rate_headers(limits.headers, bucket, ok, now)

    def counters(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "rate_limited": self.rate_limited,
            "created": self.created,
            "writes": self.writes_sent,
            "by_client": {name: dict(counts) for name, counts in self.by_client.items()},
        }


def _error(status: int, reason: str, message: str, path: str, headers: Any = None) -> web.Response:
    body = {"status": status, "error": reason, "message": message, "path": path}
    return web.json_response(body, status=status, headers=headers)


def make_app(limits: Limits) -> tuple[web.Application, _State]:
    """The aiohttp application and its state (``state.base`` is set once it listens)."""
    state = _State(limits)

    async def answer(request: web.Request, write: bool) -> web.Response | None:
        """None to go on, or the 401/429 answer; waits out the latency either way."""
        if not request.headers.get("Authorization", "").startswith("Bearer "):
            return _error(401, "Unauthorized", "a bearer token is required", request.path)
        ok, headers = state.admit(request, write)
        if state.limits.latency:
            await asyncio.sleep(random.uniform(0, state.limits.latency) / 1000)
        if not ok:
            message = "Too Many Requests: over the rate limit"
            return _error(429, "Too Many Requests", message, request.path, headers)
        request["rate_headers"] = headers
        return None

    async def terms(request: web.Request) -> web.Response:
        refused = await answer(request, write=False)
        if refused is not None:
            return refused
        return web.Response(
            body=state.terms, content_type="application/json", headers=request["rate_headers"]
        )

    async def create(request: web.Request) -> web.Response:
        await request.read()
        refused = await answer(request, write=True)
        if refused is not None:
            return refused
        state.created += 1
        state.issued += 1
        href = f"{state.base}/v1/contracts/{state.issued}"
        return web.json_response(
            {"rel": "self", "href": href}, status=201, headers=request["rate_headers"]
        )

    async def contract(request: web.Request) -> web.Response:
        refused = await answer(request, write=False)
        if refused is not None:
            return refused
        contract_id = int(request.match_info["id"])
        if not 1 <= contract_id <= state.issued:
            message = f"Contract with id {contract_id} not found"
            return _error(404, "Not Found", message, request.path)
        body = contract_json(state.base, contract_id)
        return web.json_response(body, headers=request["rate_headers"])

    async def reset(request: web.Request) -> web.Response:
        state.reset()
        return web.json_response(state.counters())

    async def counters(request: web.Request) -> web.Response:
        return web.json_response(state.counters())

    async def get_limits(request: web.Request) -> web.Response:
        return web.json_response(asdict(state.limits))

    async def put_limits(request: web.Request) -> web.Response:
        changes = await request.json()
        known = {f.name for f in fields(Limits)}
        try:
            if not isinstance(changes, dict) or set(changes) - known:
                raise ValueError(f"a JSON object with keys among {sorted(known)}")
            state.limits = replace(state.limits, **changes)
        except (TypeError, ValueError) as exc:
            return _error(400, "Bad Request", str(exc), request.path)
        state.writes.clear()  # new limits: every principal starts afresh
        state.reads.clear()
        return web.json_response(asdict(state.limits))

    app = web.Application()
    app.router.add_get("/v1/templates/{id:[0-9]+}/terms", terms)
    app.router.add_post("/v1/teams/{id:[0-9]+}/contracts", create)
    app.router.add_get("/v1/contracts/{id:[0-9]+}", contract)
    app.router.add_post("/__bench/reset", reset)
    app.router.add_get("/__bench/counters", counters)
    app.router.add_get("/__bench/limits", get_limits)
    app.router.add_put("/__bench/limits", put_limits)
    return app, state


async def serve(limits: Limits, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT; print the banner once listening."""
    app, state = make_app(limits)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        port = runner.addresses[0][1]
        state.base = f"http://{host}:{port}"
        state.terms = json.dumps(terms_json(state.base)).encode()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        print(f"URL {state.base}", flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()


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


# --------------------------------------------------------------------------------------
# nginx


def nginx_binary() -> str | None:
    """The nginx executable, or None when it is not installed."""
    return executable("nginx", "/usr/sbin/nginx")


def nginx_rate(rate: float) -> tuple[str, float]:
    """nginx's ``rate=`` for ``rate``/s and the rate it really is.

    nginx takes whole requests per second or per minute: 2.5/s is written ``150r/m``, and a
    rate neither can say exactly (100.5/s) is rounded to the nearest per minute.
    """
    if rate == int(rate):
        return f"{int(rate)}r/s", rate
    per_minute = max(1, round(rate * 60))
    return f"{per_minute}r/m", per_minute / 60


_NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    default_type application/json;
    access_log off;
    log_format bench '$status $request_method $http_x_bench_client';
    client_body_temp_path {root}/tmp/body;
    proxy_temp_path {root}/tmp/proxy;
    fastcgi_temp_path {root}/tmp/fastcgi;
    uwsgi_temp_path {root}/tmp/uwsgi;
    scgi_temp_path {root}/tmp/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    limit_req_zone $http_authorization zone=writes:1m rate={rate};
    limit_req_zone $http_authorization zone=reads:1m rate={read_rate};
    limit_req_status 429;
    # "return" runs before limit_req (rewrite phase, then preaccess), so the limited
    # locations proxy to a second server, over a Unix socket, that returns the JSON.
    upstream answers {{ server unix:{root}/answers.sock; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        access_log {root}/access.log bench;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        location ~ ^/v1/teams/[0-9]+/contracts$ {{
            limit_req zone=writes burst={burst} nodelay;
            proxy_pass http://answers;
        }}
        location /v1/ {{
            limit_req zone=reads burst={burst} nodelay;
            proxy_pass http://answers;
        }}
    }}
    server {{
        listen unix:{root}/answers.sock;
        access_log off;
        location ~ ^/v1/teams/[0-9]+/contracts$ {{ return 201 '{created}'; }}
        location ~ ^/v1/templates/[0-9]+/terms$ {{ return 200 '{terms}'; }}
        location ~ ^/v1/contracts/[0-9]+$ {{ return 200 '{contract}'; }}
        location / {{ return 404 '{{"status":404,"error":"Not Found"}}'; }}
    }}
}}
"""


class NginxServer(ProcessContext):
    """nginx with ``limit_req rate=R burst=B nodelay`` per bearer token: bare 429s.

    One process (``master_process off``) so that :meth:`cpu_seconds` is its CPU; its own
    prefix in a temporary folder; an access log of ``status method X-Bench-Client`` that
    :meth:`counters` reads. nginx cannot forget its zones, so :meth:`reset` restarts it on
    the same port. Every create answers the same href (the SDK only reads an id from it).

    Args:
        rate: Writes/s (and reads/s); nginx rounds it, see :func:`nginx_rate`.
        burst: ``limit_req``'s burst: B + 1 requests pass at once.
    """

    api_key = API_KEY

    def __init__(self, *, rate: float, burst: int) -> None:
        self.binary = nginx_binary() or ""  # checked by start()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.rate = rate
        self.burst = burst
        self._dir = tempfile.TemporaryDirectory(prefix="bench-nginx-")
        self.root = Path(self._dir.name)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def label(self) -> str:
        """The server's limits in a few words."""
        rate, _ = nginx_rate(self.rate)
        return f"nginx limit_req {rate} B={self.burst}"

    def _config(self) -> str:
        rate, _ = nginx_rate(self.rate)

        def compact(value: object) -> str:
            return json.dumps(value, separators=(",", ":"))

        return _NGINX_CONF.format(
            root=self.root,
            port=self.port,
            rate=rate,
            read_rate=rate,
            burst=self.burst,
            created=compact({"rel": "self", "href": f"{self.url}/v1/contracts/1"}),
            terms=compact(terms_json(self.url)),
            contract=compact(contract_json(self.url, 1)),
        )

    def start(self) -> None:
        """Write the configuration and start nginx in the foreground."""
        if not self.binary:
            raise FileNotFoundError("nginx is not installed (nor on PATH, nor /usr/sbin)")
        (self.root / "tmp").mkdir(exist_ok=True)
        (self.root / "access.log").write_bytes(b"")
        conf = self.root / "nginx.conf"
        conf.write_text(self._config(), encoding="utf-8")
        errors = str(self.root / "error.log")
        argv = [self.binary, "-p", str(self.root), "-c", str(conf), "-e", errors]
        self._process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_port(self.port, self._process)
        except RuntimeError as exc:
            log = Path(errors).read_text(errors="replace") if Path(errors).exists() else ""
            raise RuntimeError(f"{exc}\n{log}") from None

    def _halt(self) -> None:
        process, self._process = self._process, None
        stop_process(process, signal=signal.SIGQUIT)  # graceful: finish what is in flight

    def stop(self) -> None:
        """Stop nginx and remove its folder."""
        self._halt()
        self._dir.cleanup()

    def reset(self) -> None:
        """Restart: empty zones, empty access log."""
        self._halt()
        self.start()

    def set_limits(self, *, rate: float, burst: int) -> None:
        """Restart with other limits."""
        self.rate, self.burst = rate, burst
        self.reset()

    def counters(self) -> dict[str, Any]:
        """``requests``, ``rate_limited``, ``created``, ``writes``, ``by_client`` from the log."""
        statuses: Counter[str] = Counter()
        writes = 0
        by_client: dict[str, Counter[str]] = {}
        with open(self.root / "access.log", encoding="utf-8", errors="replace") as log:
            for line in log:
                status, method, client = [*line.split(), "-", "-"][:3]
                statuses[status] += 1
                writes += method == "POST"
                if client != "-":
                    outcome = "429" if status == "429" else "ok"
                    by_client.setdefault(client, Counter())[outcome] += 1
        return {
            "requests": sum(statuses.values()),
            "rate_limited": statuses["429"],
            "created": statuses["201"],
            "writes": writes,
            "by_client": {name: dict(counts) for name, counts in by_client.items()},
        }

    def cpu_seconds(self) -> float | None:
        """CPU nginx has used since its last (re)start (Linux), or None."""
        return None if self._process is None else process_cpu_seconds(self._process.pid)

    def target(self) -> Target:
        """User 1 of team 1 creates NDAs from template 1."""
        return TARGET


if __name__ == "__main__":
    main()
