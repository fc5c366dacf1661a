"""The learning policy against simulated servers, on a fake clock: worst case over seeds.

The loopback benchmarks run each row once, on a shared machine whose noise moves them by
a few per cent; a change to the learning is judged here first. ``tests/_simserver.py``
models a token bucket (burst B), nginx's GCRA (bare 429s), a fixed window and a sliding
log, all without rate headers (the hard case: the client learns from bare 429s alone),
and drives one ``RateLimits()`` client with 32 tasks against each, for R in (25, 100,
1000) and round trips of L to 2L drawn per request (L = 2, 5, 10 ms), for a few seeds
each (a seed draws the round trips). Fake
time is exact and deterministic: a run gives the same figures on any machine, in a
fraction of its simulated time.

How to read the table: one row per server, R and latency, over the seeds; ``÷R whole``
is successes ÷ seconds of the run ÷ R (the slow start included), ``÷R steady`` the same
over the run's second half, ``429 share`` the server's 429s ÷ its requests; each is the
lowest and highest over the seeds. Target (issue 8): steady ≥ 0.95 R for the worst seed.
``tests/test_ratelimit_sim.py`` asserts it for the cases that once failed.

Run ``python -m benchmarks simulated --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence

from benchmarks._harness import table
from contractsdk._ratelimit import RateLimits
from tests._simserver import Run, learn

#: The servers without rate headers, by their name in ``tests/_simserver.py``.
KINDS = ("token-bucket", "gcra", "fixed-window", "sliding-log")
#: The least steady-half rate (÷ R) the worst seed must reach.
STEADY_TARGET = 0.95


def _floats(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks simulated", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"servers: {KINDS}")
    parser.add_argument("--rates", default="25,100,1000", help="R, per second")
    parser.add_argument(
        "--latencies", default="0.002,0.005,0.01", help="L: round trips of L to 2L, seconds"
    )
    parser.add_argument("--seeds", type=int, default=4, help="seeds per row")
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per run")
    return parser


def _span(values: Sequence[float], fmt: str) -> str:
    return f"{min(values):{fmt}}–{max(values):{fmt}}"


def run(argv: Sequence[str] = ()) -> None:
    """Run every server, rate and latency over the seeds; print the table."""
    args = _parser().parse_args(list(argv))
    kinds = [kind for kind in args.kinds.split(",") if kind]
    started = time.perf_counter()
    print("# The learning policy against simulated servers, no rate headers (fake clock)")
    print()
    print(
        f"One RateLimits() client, 32 tasks; {args.seconds:g} simulated s per run; "
        f"{args.seeds} seeds per row; the server's burst B = 20 (windows: none)."
    )
    print()
    rows = []
    for kind in kinds:
        for rate in _floats(args.rates):
            for latency in _floats(args.latencies):
                runs: list[Run] = [
                    asyncio.run(
                        learn(
                            kind,
                            RateLimits(),
                            rate=rate,
                            seconds=args.seconds,
                            latency=latency,
                            seed=seed,
                        )
                    )
                    for seed in range(1, args.seeds + 1)
                ]
                whole = [run.per_second / rate for run in runs]
                steady = [run.steady_per_second / rate for run in runs]
                shares = [run.share_429 for run in runs]
                verdict = "met" if min(steady) >= STEADY_TARGET else f"MISSED ≥{STEADY_TARGET}"
                rows.append(
                    [
                        kind,
                        f"{rate:g}/s",
                        f"{latency * 1000:g} ms",
                        _span(whole, ".3f"),
                        _span(steady, ".3f"),
                        _span(shares, ".1%"),
                        verdict,
                    ]
                )
    headers = ["server", "R", "L", "÷R whole", "÷R steady", "429 share", "steady target"]
    print(table(headers, rows, left=3))
    print()
    print(f"ran in {time.perf_counter() - started:.0f} s")
