"""Rate-limit benchmark: does contractsdk run at the service's limit, and at what CPU cost?

Table 1 (limit R): N contracts are created at a concurrency of C against the emulator's
write limit of R/s with a burst of B, by contractsdk (limit configured; limit unknown with
rate headers on and off) and by what users write instead (aiohttp + ``asyncio.gather``;
aiohttp + tenacity on 429; aiolimiter + tenacity). Table 2 (no limit): the client CPU per
request of contractsdk's full stack against plain aiohttp making the same calls, over
loopback and without the network, timed and (with valgrind installed) in instructions:
the machine's load moves the timings, not the instructions, so the verdict is on those.

The emulator runs in its own process, so ``time.process_time()`` here is the client's CPU
alone. Every row starts from a reset emulator: no contracts, zero counters, full buckets.
Requests, 429s and contracts created are the emulator's counts. Figures are printed, never
asserted: the machine is shared and noisy.

Table 1 is ``_ratelimit_limit.py``, tables 2 and 3 ``_ratelimit_nolimit.py``; what they
share, ``_ratelimit_common.py``.

Run ``python -m benchmarks ratelimit --help`` for the options.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import time
from collections.abc import Sequence
from importlib.metadata import version

from benchmarks._harness import Emulator, environment_line
from benchmarks._ratelimit_common import Setup
from benchmarks._ratelimit_limit import limit_table
from benchmarks._ratelimit_nolimit import nolimit_table


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks ratelimit", description=__doc__.partition("\n")[0]
    )
    parser.add_argument("--rate", type=float, default=100.0, help="write limit R, per second")
    parser.add_argument("--burst", type=int, default=20, help="the emulator's burst B")
    parser.add_argument("-n", type=int, help="contracts per row of table 1 (1000; quick 300)")
    parser.add_argument("--concurrency", type=int, default=64, help="tasks making calls")
    parser.add_argument(
        "--cpu-n", type=int, help="calls per run of table 2 over the network (2000; quick 1000)"
    )
    parser.add_argument(
        "--repeats", type=int, help="rounds of table 2 over the network (7; quick 3)"
    )
    parser.add_argument(
        "--memory-rounds",
        type=int,
        help="rounds of table 2 without the network, of cpu-n ÷ 4 calls each (15; quick 7)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller defaults: about a third of the time"
    )
    parser.add_argument(
        "--instructions",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="table 2 also counts instructions per call with valgrind, the CPU verdict "
        "(about 2 minutes more; on by default when valgrind is installed, off with --quick)",
    )
    parser.add_argument("--table", choices=("limit", "nolimit", "both"), default="both")
    return parser


#: Defaults of the options above, in full and with --quick.
DEFAULTS = {
    "n": (1000, 300),
    "cpu_n": (2000, 1000),
    "repeats": (7, 3),
    "memory_rounds": (15, 7),
}


def run(argv: Sequence[str] = ()) -> None:
    """Run the benchmark and print its tables."""
    args = _parser().parse_args(list(argv))
    for name, (full, quick) in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if args.instructions is None:
        args.instructions = not args.quick and shutil.which("valgrind") is not None
    started = time.perf_counter()
    with Emulator(read_rate=None, write_rate=args.rate, burst=args.burst) as emulator:
        target = emulator.target()
        setup = Setup(
            url=emulator.url,
            api_key=emulator.api_key,
            target=target,
            rate=args.rate,
            burst=args.burst,
            n=args.n,
            concurrency=args.concurrency,
        )
        versions = f"tenacity {version('tenacity')}, aiolimiter {version('aiolimiter')}"
        print(f"# Rate-limit benchmark — {environment_line()}, {versions}")
        if args.table in ("limit", "both"):
            print()
            print(
                f"Limit R = {args.rate:g} writes/s, burst {args.burst}, reads unlimited; "
                f"N = {args.n} creates per row at concurrency {args.concurrency}; "
                "emulator in its own process, reset before each row"
            )
            print()
            limit_table(emulator, setup)
        if args.table in ("nolimit", "both"):
            print()
            print(
                f"No limit: client CPU per request (process_time ÷ requests), "
                f"N = {args.cpu_n} calls per run at concurrency {args.concurrency}, "
                "retries on"
            )
            print()
            nolimit_table(
                emulator,
                dataclasses.replace(setup, n=args.cpu_n),
                args.repeats,
                args.memory_rounds,
                instructions=args.instructions,
            )
    print()
    print(f"ran in {time.perf_counter() - started:.0f} s")
