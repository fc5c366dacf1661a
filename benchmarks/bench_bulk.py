"""Bulk creation: throughput against a write limit, and memory flat in the number of rows.

1. Throughput: 2,000 rows against the emulator (real loopback HTTP) limited to R writes/s
   with a burst of 20; the client is configured with that limit. Printed: successes per
   second divided by R (target >= 0.97), and the 429s the service answered.
2. Memory: the same job for 1,000 and for 100,000 rows, each in its own process, against
   an in-process fake transport that answers at once and stores nothing (so that neither
   the emulator's memory, which keeps every contract, nor HTTP time is measured), with the
   limiter off and a real journal file. Printed: the peak RSS of each process
   (``ru_maxrss``) and their ratio (target: within 1.2x plus a small constant).

Run: ``python -m benchmarks bulk`` (or ``nox -s bench -- bulk``).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RATE = 100.0
BURST = 20
THROUGHPUT_ROWS = 2_000
MEMORY_ROWS = (1_000, 100_000)


def _rows(count: int) -> Any:
    for index in range(count):
        row = {
            "ref": f"R-{index:06d}",
            "contract_name": f"Tenancy {index:06d}",
            "contract_rentFrequency": "month" if index % 2 else "week",
        }
        if index % 2:
            row["contract_breakClause"] = "breakClauseNo"
        yield row


# -- 1. throughput ------------------------------------------------------------------------


async def _throughput() -> dict[str, Any]:
    from contractsdk import ContractClient, RateLimits
    from contractsdk.bulk import BulkJob
    from contractsdk.sandbox import SandboxServer

    async with SandboxServer(port=0, write_rate=RATE, burst=BURST, read_rate=None) as server:
        team = next(t for t in server.teams if t.name == "Acme Legal")
        ast = next(c for c in server.seed.catalog.types if c.name.startswith("Assured"))
        limits = RateLimits(read=None, write=RATE, burst=BURST)
        with tempfile.TemporaryDirectory() as scratch:
            async with ContractClient(
                api_key=server.api_key, base_url=server.url, rate_limits=limits
            ) as client:
                job = BulkJob(
                    client,
                    _rows(THROUGHPUT_ROWS),
                    team_id=team.id,
                    template_id=ast.template_ids[0],
                    created_by=server.users[0].id,
                    key_column="ref",
                    journal=Path(scratch) / "job.db",
                    concurrency=16,
                )
                first: float | None = None
                async for outcome in job.run():
                    if first is None and outcome.state == "created":
                        first = time.monotonic()
                last = time.monotonic()
        summary = job.summary
        assert summary is not None
        counters = server.counters()
    created = summary.created
    return {
        "created": created,
        "elapsed": summary.elapsed,
        "rate": created / summary.elapsed,
        "steady": (created - 1) / (last - first) if first is not None and last > first else 0.0,
        "throttled": counters["rate_limited"],
        "requests": summary.requests,
    }


# -- 2. memory ----------------------------------------------------------------------------

_CHILD = """
import asyncio, json, resource, sys, time
sys.path.insert(0, {root!r})
from benchmarks.bench_bulk import _memory_child
print(json.dumps(asyncio.run(_memory_child({source!r}, {journal!r}))))
"""


async def _memory_child(source: str, journal: str) -> dict[str, Any]:
    """Run one job against a fake transport that stores nothing; report peak RSS."""
    from contractsdk import ContractClient, Request, Response
    from contractsdk.bulk import BulkJob
    from contractsdk.testing import json_response

    terms = [
        {"id": 1, "name": "contract_name", "label": "Name"},
        {
            "id": 2,
            "name": "contract_rentFrequency",
            "label": "Rent",
            "options": [
                {
                    "value": "month",
                    "nested_fields": [
                        {
                            "id": 3,
                            "name": "contract_breakClause",
                            "label": "Break",
                            "options": [{"value": "breakClauseYes"}, {"value": "breakClauseNo"}],
                        }
                    ],
                },
                {"value": "week"},
            ],
        },
    ]
    base = "https://sandbox.legislate.tech/v1"
    counter = iter(range(1, 10**9))

    class Fake:
        """Answers at once and keeps nothing (MockTransport would record every request)."""

        async def handle_async_request(self, request: Request) -> Response:
            path = request.path
            if request.method == "POST":
                href = f"{base}/contracts/{next(counter)}"
                return json_response(201, {"rel": "self", "href": href})
            if path.endswith("/terms"):
                return json_response(200, terms)
            if path.endswith("/contracts"):
                return json_response(200, [])
            return json_response(200, {"id": 70, "name": "Team", "created": None})

        async def aclose(self) -> None:
            return None

    started = time.monotonic()
    async with ContractClient(
        api_key="bench-key",
        environment="sandbox",
        transport=Fake(),
        rate_limits=None,
        retries=None,
    ) as client:
        job = BulkJob(
            client,
            source,
            team_id=70,
            template_id=149,
            created_by=7,
            key_column="ref",
            journal=journal,
            concurrency=16,
        )
        async for _outcome in job.run():
            pass
    summary = job.summary
    assert summary is not None
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "rows": summary.rows,
        "created": summary.created,
        "seconds": time.monotonic() - started,
        "peak_mib": peak_kib / 1024,
    }


def _write_csv(path: Path, count: int) -> None:
    columns = ["ref", "contract_name", "contract_rentFrequency", "contract_breakClause"]
    with path.open("w", encoding="utf-8") as handle:
        handle.write(",".join(columns) + "\n")
        for row in _rows(count):
            handle.write(",".join(row.get(column, "") for column in columns) + "\n")


def _memory(count: int, scratch: Path) -> dict[str, Any]:
    source = scratch / f"rows-{count}.csv"
    _write_csv(source, count)
    journal = scratch / f"job-{count}.db"
    code = _CHILD.format(root=str(ROOT), source=str(source), journal=str(journal))
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["journal_mib"] = journal.stat().st_size / 2**20
    return result


# -- the table ----------------------------------------------------------------------------


def run() -> None:
    """Run both measurements and print their table."""
    throughput = asyncio.run(_throughput())
    print(f"Throughput: {THROUGHPUT_ROWS:,} rows, emulator over loopback HTTP, write limit")
    print(f"R = {RATE:g}/s (burst {BURST}), client RateLimits(write={RATE:g}, burst={BURST})")
    print(f"  created               {throughput['created']:,}")
    print(f"  elapsed               {throughput['elapsed']:.2f} s (whole run, setup included)")
    print(f"  successes/s / R       {throughput['rate'] / RATE:.3f}   (target >= 0.97)")
    print(f"  steady successes/s/R  {throughput['steady'] / RATE:.3f}   (first to last create)")
    print(f"  429s from the service {throughput['throttled']}")
    print(f"  requests              {throughput['requests']:,}")
    print()
    with tempfile.TemporaryDirectory() as scratch:
        small, large = (_memory(count, Path(scratch)) for count in MEMORY_ROWS)
    print("Memory: one process per job, in-process fake transport that stores nothing")
    print("(no HTTP, limiter off), CSV input and journal on disk, peak RSS from ru_maxrss")
    print("  rows       created    seconds   rows/s    peak RSS   journal")
    for result in (small, large):
        print(
            f"  {result['rows']:>7,}  {result['created']:>9,}  {result['seconds']:>8.1f}"
            f"  {result['rows'] / result['seconds']:>7,.0f}  {result['peak_mib']:>7.1f} MiB"
            f"  {result['journal_mib']:>5.1f} MiB"
        )
    ratio = large["peak_mib"] / small["peak_mib"]
    print(
        f"  peak RSS {large['rows']:,} / {small['rows']:,} rows = {ratio:.2f}x "
        f"(+{large['peak_mib'] - small['peak_mib']:.1f} MiB; target within 1.2x + a small constant)"
    )


if __name__ == "__main__":
    run()
