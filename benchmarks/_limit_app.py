"""The server of ``python -m benchmarks._servers``: an aiohttp app, what it serves, its state.

It accepts any bearer token and keeps one bucket per token (:mod:`benchmarks._limiters`),
writes and reads limited apart. It serves what ``client.contracts.create`` needs (the NDA's
two terms with the emulator's JSON shapes, :func:`terms_json`), ``GET /v1/contracts/{id}``,
and an admin API: ``POST /__bench/reset``, ``GET /__bench/counters``, ``GET`` and ``PUT
/__bench/limits``. :func:`serve` runs it until SIGTERM; nginx (``_nginx.py``) answers the
same JSON.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import time
from collections import Counter
from dataclasses import asdict, fields, replace
from typing import Any

from aiohttp import web

from benchmarks._harness import NDA_VALUES, Target
from benchmarks._limiters import BUCKETS, Bucket, Limits, rate_headers

__all__ = ["API_KEY", "TARGET", "contract_json", "make_app", "serve", "terms_json"]

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
            bucket = buckets[principal] = BUCKETS[limits.algorithm](limits, rate, self.origin)
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
