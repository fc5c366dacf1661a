"""Run the benchmarks: ``python -m benchmarks [NAME ...]`` (NAME: ``bulk`` for bench_bulk.py).

Every ``benchmarks/bench_*.py`` module exposes ``run() -> None``, which prints its table.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    names = sorted(
        info.name for info in pkgutil.iter_modules([str(here)]) if info.name.startswith("bench_")
    )
    wanted = {f"bench_{name.removeprefix('bench_')}" for name in argv}
    unknown = wanted - set(names)
    if unknown:
        print(f"no benchmark {', '.join(sorted(unknown))}; have {', '.join(names)}")
        return 2
    for name in names:
        if wanted and name not in wanted:
            continue
        print(f"== {name}")
        module = importlib.import_module(f"benchmarks.{name}")
        module.run()
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
