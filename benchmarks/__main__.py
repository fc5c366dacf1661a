"""``python -m benchmarks [NAME ...] [OPTIONS]``: run the ``bench_*.py`` modules in name order.

Each module has ``run(argv) -> None`` (or ``run()``). The leading arguments that are not
options pick modules by name (``ratelimit`` runs ``bench_ratelimit.py``); the rest are
passed to each module's ``run``. With no name, every module runs.

``--chart DIR`` (anywhere; the last one wins) goes only to the modules that draw charts,
those that set ``CHARTS = True``: ``nox -s bench`` passes ``--chart docs/images``, and a
module without charts never sees an option it does not know.

With more than one module, each runs in a process of its own, as pyperf runs each
benchmark: what one module leaves behind (a heap of millions of objects that every full
garbage collection walks, an event-loop policy) must not move the next one's figures.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

PREFIX = "bench_"


def discover() -> list[str]:
    """Names of the benchmark modules, without the ``bench_`` prefix, in name order."""
    here = [str(Path(__file__).parent)]
    return sorted(
        info.name.removeprefix(PREFIX)
        for info in pkgutil.iter_modules(here)
        if info.name.startswith(PREFIX)
    )


def split_chart(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` without any ``--chart DIR``, and the last of them as options (or [])."""
    rest: list[str] = []
    chart: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--chart":
            chart = [arg, next(args, "")]
        elif arg.startswith("--chart="):
            chart = [arg]
        else:
            rest.append(arg)
    return rest, chart


def main(argv: list[str]) -> int:
    """Run the selected benchmarks; return the exit status."""
    argv, chart = split_chart(argv)
    if argv[:1] in (["-h"], ["--help"]):  # the list; `NAME --help` gives a module's options
        print(__doc__.split("\n\n", 1)[0].replace("``", ""))
        print(f"\nbenchmarks: {', '.join(discover())}")
        print("options of one: python -m benchmarks NAME --help")
        return 0
    names = []
    while argv and not argv[0].startswith("-"):
        names.append(argv.pop(0).removeprefix(PREFIX).removesuffix(".py"))
    available = discover()
    unknown = [name for name in names if name not in available]
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(available)}",
            file=sys.stderr,
        )
        return 2
    selected = [name for name in available if not names or name in names]
    if len(selected) > 1:
        failed = 0
        for name in selected:
            child = [sys.executable, "-m", "benchmarks", name, *argv, *chart]
            failed += subprocess.run(child, check=False).returncode != 0
        return 1 if failed else 0
    for name in selected:
        module = importlib.import_module(f"benchmarks.{PREFIX}{name}")
        run = module.run
        if inspect.signature(run).parameters:
            run(list(argv) + (chart if getattr(module, "CHARTS", False) else []))
        else:
            run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
