"""One process learning an unknown limit, against servers that limit in different ways.

One contractsdk client (its own process, ``_procs.py``; 32 tasks) creates contracts for D
seconds against a server of ``_servers.py`` limiting its key to R writes/s, or nginx's
``limit_req``. The rows:

* ``RateLimits()`` (the limit unknown, learnt) for R in (25, 100, 1000) × the servers:
  token bucket with ``X-RateLimit-*`` headers (millisecond ``Retry-After``); the same
  without any header; a fixed window of one second (a whole second's quota at once, then
  ``Retry-After`` rounded up to a second), with headers and without; a sliding log (R in
  any trailing second), with headers and without; nginx's GCRA re-implemented (bare 429s,
  no headers at all); nginx itself. ``--kinds`` picks others (IETF ``RateLimit`` headers …).
* ``RateLimits(write=R, burst=B)`` (told the truth) against each server at R = 100.
* A server without a burst: a token bucket of 40/s holding one request, with headers
  (every success says ``Remaining: 0``), learnt and told R. It refuses any request that
  reaches it less than an interval after the last, and the round trips' spread makes some
  do so at any pacing near R: on loopback, paced at 0.95 R and not adapting, 8.5 % of
  requests met a 429; at 0.9 R, 1 %; at 0.8 R, none. Target: steady ≥ 0.80 R, ≤ 2 % 429s.
* Idle then busy: busy D1 s, idle 2 s, busy D2 s, told R = 100, B = 20, against a token
  bucket at 100/s, B = 20 (told right), and against one really at 50/s (told wrong).
* A bulk job (``--bulk``, 40 s): each learnt row without headers at 25 and 100/s again,
  for 40 s: 1,000 creates at 25/s, 4,000 at 100/s. Finding a limit from bare 429s costs
  a few 429s once (the slow start's overshoot, the first W measured), which in an 8 s
  row at 25/s (200 requests, of which 1 % is two) outweighs what the learning costs
  once it has found the limit; a job of thousands of contracts pays it once too.

How to read the table: ``÷R whole`` is successes ÷ seconds from the first request to the
last answer ÷ R, R being the server's real limit (slightly above 1 for short runs: the
server's bucket starts full); ``÷R steady`` the same over the last half of the run, or
for idle-then-busy over the second busy phase only; ``429 share`` the server's 429s ÷ its
requests over the whole run, and, from the client's own counts, over the last half (``2nd
half``: what the learning costs once it has found the limit) or idle-then-busy's second
phase (``2nd``); ``settle s`` the seconds until the client's own write rate
(``client.rate_limits.write.rate``, sampled every 0.1 s) enters, and stays within, 5 % of
R (``-`` when it never does by the end); ``ok ±5 % s`` the seconds until the successes
per second, over every second from then to the end of the run, stay within 5 % of R (at
25/s, 24 to 26 a second; ``-``: never, and for idle-then-busy not measured). The client's
rate is the schedule's, which a pacer on a busy event loop falls short of, and CUBIC's
probes dip it under 0.95 R on purpose: the successes are what a user sees. Targets:
learnt and bulk: steady ≥ 0.95 R and ≤ 1 % 429s over the whole run; told: ≥ 0.97 R and
≤ 0.5 % 429s; idle-then-busy, second phase: told right ≥ 0.97 R and ≤ 0.5 %, told wrong
≥ 0.90 R and ≤ 2 %; a server without a burst: steady ≥ 0.80 R and ≤ 2 %. Under the
table, each row's successes per second and the client's own write rate, every 0.5 s from
the start.

Figures are printed, never asserted: the machine is shared and noisy. ``--quick`` runs a
subset in about a minute; ``--plot PATH`` draws the rates over time and ``--chart DIR``
writes ``learning-scenarios.png`` there, each scenario's ÷R and 429 share as bars (both need
matplotlib; ``nox -s bench`` installs it and writes the charts into docs/images/);
``--turns DIR`` writes each row's limiter turns there (its DEBUG log on
``contractsdk.ratelimit``: every decrease, pause and change of phase, stamped with the
seconds from the row's start), one file per row, to see why a row came out as it did;
``--repeat N`` runs each row N times and adds a table of each row's lowest, median and
highest steady half and 429 share, and how many runs met the target: one run of a row
moves by a few per cent with the machine's load, and a change is judged on many.

Run ``python -m benchmarks learning --help`` for the options.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._charts import Bar, command_line, pyplot, run_note, scenario_bars
from benchmarks._harness import Server, environment_line, median_span, table
from benchmarks._limiters import Limits
from benchmarks._nginx import NginxServer, nginx_binary
from benchmarks._procs import (
    SAMPLE,
    STEP,
    Measured,
    WorkerSpec,
    count_line,
    measure,
    rate_line,
    settle_time,
    verdict,
)
from benchmarks._servers import LimitServer

#: The servers, by name: ``_servers.py``'s algorithm and headers (rate and burst are set
#: per row), or None for nginx.
KINDS: dict[str, tuple[str, str] | None] = {
    "token-bucket/x": ("token-bucket", "x"),
    "token-bucket/none": ("token-bucket", "none"),
    "token-bucket/ietf": ("token-bucket", "ietf"),
    "fixed-window/x": ("fixed-window", "x"),
    "fixed-window/none": ("fixed-window", "none"),
    "sliding-log/x": ("sliding-log", "x"),
    "sliding-log/none": ("sliding-log", "none"),
    "sliding-window/x": ("sliding-window", "x"),
    "sliding-window/none": ("sliding-window", "none"),
    "gcra/bare": ("gcra", "none"),
    "nginx": None,
}
DEFAULT_KINDS = (
    "token-bucket/x",
    "token-bucket/none",
    "fixed-window/x",
    "fixed-window/none",
    "sliding-log/x",
    "sliding-log/none",
    "sliding-window/x",
    "sliding-window/none",
    "gcra/bare",
    "nginx",
)
QUICK_KINDS = ("token-bucket/x", "token-bucket/none", "fixed-window/none", "gcra/bare", "nginx")
#: Least ÷R and most 429 share, by the kind of row.
TARGETS = {
    "learnt": (0.95, 0.01),
    "bulk": (0.95, 0.01),
    "told": (0.97, 0.005),
    "idle, told right": (0.97, 0.005),
    "idle, told wrong": (0.90, 0.02),
    "no burst": (0.80, 0.02),
}
#: The rate of the rows against a server without a burst.
NO_BURST_RATE = 40.0
IDLE = 2.0
#: A bulk job's rows: the learnt rows without headers at these R, run ``--bulk`` seconds.
BULK_RATES = (25.0, 100.0)
#: ``python -m benchmarks --chart DIR`` passes ``--chart`` on to this module.
CHARTS = True


@dataclass(frozen=True)
class Case:
    """One row: a server, what the client is told, and for how long."""

    kind: str
    rate: float  # the server's real limit
    burst: int
    phases: tuple[float, ...]
    told: tuple[float, int | None] | None  # RateLimits(write, burst), or None: learn
    target: str

    @property
    def name(self) -> str:
        if self.told is None:
            client = "RateLimits()"
        else:
            write, burst = self.told
            client = f"told {write:g}" + ("" if burst is None else f", B={burst}")
        idle = "idle-then-busy, " if len(self.phases) > 1 else ""
        bulk = f"bulk {self.phases[0]:g} s, " if self.target == "bulk" else ""
        return f"{idle}{bulk}{client}"


@dataclass
class Outcome:
    """A row's figures."""

    case: Case
    result: Measured
    whole: float = 0.0
    steady: float = 0.0
    share_429: float = 0.0
    second_429: float | None = None
    settle: float | None = None
    ok_settle: float | None = None
    series: list[int] = field(default_factory=list)
    rates: list[list[float]] = field(default_factory=list)


def _cases(args: argparse.Namespace) -> list[Case]:
    d = args.duration
    cases = [
        Case(kind, rate, args.burst, (d,), None, "learnt")
        for rate in args.rates
        for kind in args.kinds
    ]
    cases += [
        Case(kind, 100.0, args.burst, (d,), (100.0, args.burst), "told") for kind in args.told_kinds
    ]
    if args.bulk:
        cases += [
            Case(kind, rate, args.burst, (args.bulk,), None, "bulk")
            for rate in args.rates
            if rate in BULK_RATES
            for kind in args.kinds
            if _bare(kind)
        ]
    busy = (args.busy, IDLE, args.busy)
    if not args.quick:
        cases += [
            Case("token-bucket/x", NO_BURST_RATE, 1, (d,), told, "no burst")
            for told in (None, (NO_BURST_RATE, None))
        ]
        cases.append(Case("token-bucket/x", 100.0, 20, busy, (100.0, 20), "idle, told right"))
    cases.append(Case("token-bucket/x", 50.0, 20, busy, (100.0, None), "idle, told wrong"))
    return cases


def _bare(kind: str) -> bool:
    """The server sends no rate header at all: the client learns from bare 429s."""
    server = KINDS[kind]
    return server is None or server[1] == "none"


def _steady(case: Case, result: Measured) -> tuple[float, float | None]:
    """÷R over the last half (or the second busy phase), and the 429 share over the same."""
    worker = result.fleet.workers[0]
    if len(worker.phases) > 1:
        phase = worker.phases[-1]
        seconds = phase.last - phase.start
        share = phase.throttled / phase.requests if phase.requests else 0.0
        return (phase.ok / seconds / case.rate if seconds > 0 else 0.0), share
    duration = case.phases[0]
    first, end = math.ceil(duration / 2 / STEP), math.floor(duration / STEP)
    seconds = (end - first) * STEP
    ok = sum(worker.series[first:end])
    # The client's own 429s over the same half (counted each time its rate is sampled):
    # what the learning costs once it has found the limit, apart from finding it.
    refused = sum(worker.throttles[first:end])
    share = refused / (ok + refused) if ok + refused else 0.0
    return (ok / seconds / case.rate if seconds > 0 else 0.0), share


def _ok_settle(series: Sequence[int], rate: float) -> float | None:
    """Seconds until every second of successes from then on is within 5 % of ``rate``.

    Seconds sliding by :data:`STEP`; the last point (the run ends part way through it) is
    left out. None when the last second is still outside.
    """
    per = round(1 / STEP)
    full = series[:-1]
    seconds = [
        (start * STEP, sum(full[start : start + per])) for start in range(len(full) - per + 1)
    ]
    return settle_time(seconds, rate)


def _run_case(case: Case, server: Server, concurrency: int, turns: Path | None = None) -> Outcome:
    spec = WorkerSpec(
        kind="sdk",
        url=server.url,
        api_key=server.api_key,
        target=server.target(),
        concurrency=concurrency,
        phases=case.phases,
        write=None if case.told is None else case.told[0],
        burst=None if case.told is None else case.told[1],
        turns=None if turns is None else str(turns),
    )
    result = measure(server, [spec])
    outcome = Outcome(case, result)
    if result.fleet.skipped:
        return outcome
    worker = result.fleet.workers[0]
    outcome.whole = result.fleet.rate / case.rate
    outcome.steady, outcome.second_429 = _steady(case, result)
    outcome.share_429 = result.share_429
    outcome.settle = settle_time(worker.rates, case.rate)
    if len(case.phases) == 1:
        outcome.ok_settle = _ok_settle(worker.series, case.rate)
    outcome.series = worker.series
    outcome.rates = worker.rates
    return outcome


def _checks(outcome: Outcome) -> list[tuple[str, bool]]:
    """The row's targets, each named, and whether it met them."""
    case = outcome.case
    low, most = TARGETS[case.target]
    if case.target in ("learnt", "bulk", "no burst"):
        checks = [(f"steady≥{low:.2f}", outcome.steady >= low)]
        checks.append((f"≤{most:.0%}", outcome.share_429 <= most))
    elif case.target == "told":
        checks = [
            (f"≥{low:.2f}", outcome.whole >= low),
            (f"≤{most:.1%}", outcome.share_429 <= most),
        ]
    else:
        second = outcome.second_429 or 0.0
        checks = [(f"2nd≥{low:.2f}", outcome.steady >= low), (f"2nd≤{most:.1%}", second <= most)]
    checks.append(("0 fail", not outcome.result.fleet.errors))
    return checks


def _line(outcome: Outcome) -> list[str]:
    case = outcome.case
    share = f"{outcome.share_429:.1%}"
    if outcome.second_429 is not None:
        half = "" if len(case.phases) > 1 else " half"
        share += f" (2nd{half} {outcome.second_429:.1%})"
    return [
        case.name,
        _server_name(case),
        f"{outcome.whole:.3f}",
        f"{outcome.steady:.3f}",
        share,
        "-" if outcome.settle is None else f"{outcome.settle:.1f}",
        "-" if outcome.ok_settle is None else f"{outcome.ok_settle:.1f}",
        verdict(_checks(outcome)),
    ]


def _turns_name(case: Case, run: int | None = None) -> str:
    """The file a row's limiter turns go to: its server, R, whether it was told, its run."""
    told = "learnt" if case.told is None else "told"
    idle = "-idle" if len(case.phases) > 1 else ""
    bulk = "-bulk" if case.target == "bulk" else ""
    again = "" if run is None else f"-{run}"
    return f"{case.kind.replace('/', '-')}-{case.rate:g}-{told}{idle}{bulk}{again}.log"


def _spans(outcomes: Sequence[Outcome]) -> list[list[str]]:
    """One line per case over its runs: steady and 429 share, median (lowest–highest)."""
    runs: dict[Case, list[Outcome]] = {}
    for outcome in outcomes:
        runs.setdefault(outcome.case, []).append(outcome)
    lines = []
    for case, each in runs.items():
        met = sum(all(ok for _, ok in _checks(outcome)) for outcome in each)
        lines.append(
            [
                case.name,
                _server_name(case),
                median_span([outcome.steady for outcome in each], ".3f"),
                median_span([outcome.share_429 for outcome in each], ".1%"),
                f"{met} of {len(each)}",
            ]
        )
    return lines


def _server_name(case: Case) -> str:
    windowed = case.kind.startswith(("fixed-window", "sliding-log", "sliding-window"))
    burst = "" if windowed else f" B={case.burst}"
    return f"{case.kind} {case.rate:g}/s{burst}"


def _every(rates: Sequence[Sequence[float]], step: float = STEP) -> list[float]:
    """The client's rate samples thinned to one per ``step`` seconds."""
    stride = max(1, round(step / SAMPLE))
    return [rate for _, rate in rates[::stride]]


class _Servers:
    """One ``_servers.py`` process re-limited per row, and one nginx (if installed)."""

    def __init__(self, latency: float = 0.0) -> None:
        self.limit_server: LimitServer | None = None
        self.nginx: NginxServer | None = None
        self.latency = latency  # ms, our servers only

    def get(self, case: Case) -> Server | None:
        """The server of a case, limited as it says; None for nginx when missing or delayed."""
        kind = KINDS[case.kind]
        if kind is None:
            if nginx_binary() is None or self.latency:
                return None
            if self.nginx is None:
                self.nginx = NginxServer(rate=case.rate, burst=case.burst)
                self.nginx.start()
            else:
                self.nginx.set_limits(rate=case.rate, burst=case.burst)
            return self.nginx
        algorithm, headers = kind
        wanted = Limits(
            algorithm=algorithm,
            rate=case.rate,
            burst=case.burst,
            headers=headers,
            latency=self.latency,
        )
        if self.limit_server is None:
            self.limit_server = LimitServer(wanted)
            self.limit_server.start()
        else:
            self.limit_server.set_limits(wanted)
        return self.limit_server

    def stop(self) -> None:
        for server in (self.limit_server, self.nginx):
            if server is not None:
                server.stop()


def _plot(path: str, outcomes: Sequence[Outcome]) -> None:
    plt = pyplot()
    if plt is None:
        print(f"matplotlib is not installed: no chart written to {path}")
        return
    figure, axes = plt.subplots(figsize=(11, 6))
    for outcome in outcomes:
        xs = [(i + 0.5) * STEP for i in range(len(outcome.series))]
        ys = [count / STEP / outcome.case.rate for count in outcome.series]
        label = f"{outcome.case.name} vs {_server_name(outcome.case)}"
        axes.plot(xs, ys, label=label, linewidth=1)
    axes.set_xlabel("seconds from the start")
    axes.set_ylabel("successes/s ÷ R")
    axes.legend(fontsize="x-small", ncol=2)
    figure.savefig(path, dpi=120)
    print(f"chart written to {path}")


def _bar(outcome: Outcome) -> Bar:
    case = outcome.case
    if len(case.phases) > 1:
        group, label = "idle, then busy (told)", f"{case.name} · {_server_name(case)}"
    else:
        told = "told: RateLimits(write=R, burst=B)"
        group = "learnt: RateLimits()" if case.told is None else told
        label = _server_name(case)
        if case.target == "bulk":
            group = f"a bulk job, {case.phases[0]:g} s: RateLimits()"
        elif case.target == "no burst":
            group, label = f"no burst: {label}", case.name
    share = outcome.share_429
    if len(case.phases) > 1 and outcome.second_429 is not None:
        share = outcome.second_429  # idle-then-busy: the second busy phase's
    return Bar(label, group, outcome.whole, outcome.steady, share)


def _chart(folder: Path, outcomes: Sequence[Outcome], argv: Sequence[str]) -> None:
    caption = (
        f"One run of `{command_line('learning', argv)}` ({run_note()}).\n"
        "Idle-then-busy: the hatched bar and the 429 share are the second busy phase's."
    )
    scenario_bars(folder / "learning-scenarios.png", [_bar(o) for o in outcomes], caption)


def _kinds(text: str) -> list[str]:
    kinds = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown server(s) {unknown}; known: {list(KINDS)}")
    return kinds


def _rates(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def _runs(text: str) -> int:
    runs = int(text)
    if runs < 1:
        raise argparse.ArgumentTypeError(f"at least one run, not {runs}")
    return runs


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks learning", description=__doc__.partition("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="a subset, about a minute")
    parser.add_argument("--rates", type=_rates, help="R of the learnt rows (25,100,1000)")
    parser.add_argument("--kinds", type=_kinds, help=f"servers of the learnt rows: {list(KINDS)}")
    parser.add_argument("--told-kinds", type=_kinds, help="servers of the told rows")
    parser.add_argument("--burst", type=int, default=20, help="the servers' burst B")
    parser.add_argument("--duration", type=float, help="seconds per row (8; quick 5)")
    parser.add_argument("--busy", type=float, help="seconds per busy phase of idle-then-busy")
    parser.add_argument(
        "--bulk",
        type=float,
        help="seconds per bulk row: the learnt rows without headers at 25 and 100/s run "
        "again this long (40; quick 0: none)",
    )
    parser.add_argument("--concurrency", type=int, default=32, help="the client's tasks")
    parser.add_argument(
        "--repeat",
        type=_runs,
        default=1,
        help="runs of each row (more than 1: a table of each row's lowest, median, highest)",
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="our servers delay each answer by up to this many ms (nginx rows: skipped)",
    )
    parser.add_argument(
        "--turns",
        metavar="DIR",
        type=Path,
        help="write each row's limiter turns (its DEBUG log, contractsdk.ratelimit) into DIR",
    )
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of the rates over time")
    parser.add_argument(
        "--chart",
        metavar="DIR",
        type=Path,
        help="write learning-scenarios.png (÷R and 429 share per scenario) into DIR",
    )
    return parser


def _defaults(args: argparse.Namespace) -> argparse.Namespace:
    quick = args.quick
    if args.rates is None:
        args.rates = [100.0] if quick else [25.0, 100.0, 1000.0]
    if args.kinds is None:
        args.kinds = list(QUICK_KINDS if quick else DEFAULT_KINDS)
    if args.told_kinds is None:
        args.told_kinds = ["token-bucket/x", "gcra/bare"] if quick else list(DEFAULT_KINDS)
    if args.duration is None:
        args.duration = 5.0 if quick else 8.0
    if args.busy is None:
        args.busy = 3.0 if quick else 5.0
    if args.bulk is None:
        args.bulk = 0.0 if quick else 40.0
    return args


def run(argv: Sequence[str] = ()) -> None:
    """Run the benchmark and print its table."""
    args = _defaults(_parser().parse_args(list(argv)))
    started = time.perf_counter()
    print(f"# One process learning an unknown limit — {environment_line()}")
    print()
    print(
        f"One contractsdk client, {args.concurrency} tasks, in its own process; "
        f"{args.duration:g} s per row; idle-then-busy {args.busy:g} s, {IDLE:g} s idle, "
        f"{args.busy:g} s. The servers' burst B = {args.burst} (fixed window and sliding "
        "log: none, R per second)." + (f" Bulk rows: {args.bulk:g} s each." if args.bulk else "")
    )
    if args.latency:
        print(
            f"Each answer of our servers is delayed by up to {args.latency:g} ms; nginx is skipped."
        )
    elif nginx_binary() is None:
        print("nginx is not installed: its rows are skipped.")
    outcomes: list[Outcome] = []
    lines: list[list[str]] = []
    servers = _Servers(args.latency)
    try:
        if args.turns is not None:
            args.turns.mkdir(parents=True, exist_ok=True)
        for case in _cases(args):
            for run in range(1, args.repeat + 1):
                server = servers.get(case)
                if server is None:
                    break
                name = _turns_name(case, run if args.repeat > 1 else None)
                turns = None if args.turns is None else args.turns / name
                outcome = _run_case(case, server, args.concurrency, turns)
                if outcome.result.fleet.skipped:
                    skipped = f"skipped: {outcome.result.fleet.skipped}"
                    lines.append([case.name, _server_name(case), skipped])
                    break
                outcomes.append(outcome)
                lines.append(_line(outcome))
    finally:
        servers.stop()
    print()
    print(
        table(
            [
                "client",
                "server",
                "÷R whole",
                "÷R steady",
                "429 share",
                "settle s",
                "ok ±5 % s",
                "target",
            ],
            lines,
            left=2,
        )
    )
    if args.repeat > 1:
        print()
        print(f"Over {args.repeat} runs of each row: median (lowest–highest)")
        print(
            table(["client", "server", "÷R steady", "429 share", "met"], _spans(outcomes), left=2)
        )
    print()
    print("Per row: successes/s every 0.5 s | the client's write rate every 0.5 s")
    for number, outcome in enumerate(outcomes, 1):
        rates = " ".join(f"{rate:.0f}" for rate in _every(outcome.rates))
        print(f"{number:2}. {outcome.case.name} vs {_server_name(outcome.case)}")
        print(f"    ok/s: {rate_line(outcome.series)}")
        print(f"    429s: {count_line(outcome.result.fleet.throttles())}")
        print(f"    rate: {rates}")
        errors = outcome.result.fleet.errors
        failed = ", ".join(f"{n} ×{c}" for n, c in errors.most_common())
        print(f"    {outcome.result.cpu_note()}" + (f"; errors: {failed}" if failed else ""))
    firsts: dict[Case, Outcome] = {}  # the plot and the chart show each row's first run
    for outcome in outcomes:
        firsts.setdefault(outcome.case, outcome)
    if args.plot:
        _plot(args.plot, list(firsts.values()))
    if args.chart is not None and firsts:
        _chart(args.chart, list(firsts.values()), argv)
    print()
    print(f"ran in {time.perf_counter() - started:.0f} s")
