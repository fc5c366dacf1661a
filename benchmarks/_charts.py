"""Charts of the benchmarks' figures, drawn with matplotlib when it is installed.

matplotlib is optional (``nox -s bench`` installs it; the SDK, its tests and the docs build
never need it), so it is imported by name and used untyped. Every chart is one run on
whatever machine ran it: the caption in the docs says which command made it.

* :func:`rates_over_time`: successes per second ÷ R every :data:`~benchmarks._procs.STEP`
  seconds, one panel per server and K, one line per way of sharing the credential;
* :func:`scenario_bars`: per scenario, succ/s ÷ R (whole run and steady half) and the 429
  share, as two panels of horizontal bars.
"""

from __future__ import annotations

import datetime
import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._procs import STEP

__all__ = [
    "Bar",
    "Line",
    "Panel",
    "command_line",
    "pyplot",
    "rates_over_time",
    "run_note",
    "scenario_bars",
]

#: One colour per row, the same in every chart (matplotlib's colour-blind-safe cycle).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


def pyplot() -> Any | None:
    """matplotlib's pyplot on the file-only Agg backend, or None when it is missing."""
    try:
        importlib.import_module("matplotlib").use("Agg")
        return importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return None


def command_line(name: str, argv: Sequence[str]) -> str:
    """``python -m benchmarks NAME ARGS`` as run, without ``--chart DIR`` (where it wrote)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--chart":
            skip = True
        elif not arg.startswith("--chart="):
            kept.append(arg)
    return " ".join(["python -m benchmarks", name, *kept])


def run_note() -> str:
    """When and on how many cores a chart's run was made: its figures are that run's."""
    return f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, shared machine"


@dataclass(frozen=True)
class Line:
    """One row's successes per STEP seconds, and its label."""

    label: str
    series: Sequence[int]


@dataclass(frozen=True)
class Panel:
    """One server (and K) and its rows, R being the server's limit."""

    title: str
    rate: float
    lines: Sequence[Line]


@dataclass(frozen=True)
class Bar:
    """One scenario: its label, succ/s ÷ R over the whole run and the steady part, 429s."""

    label: str
    group: str
    whole: float
    steady: float
    share_429: float


def _save(plt: Any, figure: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # No timestamp or software version in the file, so a re-run changes only the pixels.
    figure.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(figure)
    print(f"chart written to {path}")


def rates_over_time(path: Path, panels: Sequence[Panel], caption: str) -> bool:
    """Draw each panel's rows as successes/s ÷ R over time; False without matplotlib.

    The caption goes above the panels as it is: break its lines with ``\\n``.
    """
    plt = pyplot()
    if plt is None:
        print(f"matplotlib is not installed: no chart written to {path}")
        return False
    figure, axes = plt.subplots(
        len(panels), 1, figsize=(12, 1.0 + 3.4 * len(panels)), sharex=True, squeeze=False
    )
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        for index, line in enumerate(panel.lines):
            xs = [(i + 0.5) * STEP for i in range(len(line.series))]
            ys = [count / STEP / panel.rate for count in line.series]
            colour = COLOURS[index % len(COLOURS)]
            ax.plot(xs, ys, label=line.label, color=colour, linewidth=1.6, marker=".")
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="R, the server's limit")
        ax.set_title(panel.title, fontsize="medium", loc="left")
        ax.set_ylabel("successes/s ÷ R")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        # Beside the plot, not on it: a legend inside would hide the start and the dips.
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel("seconds from the common start (points every 0.5 s)")
    figure.suptitle(caption, fontsize="small", x=0.01, ha="left")
    figure.tight_layout()
    _save(plt, figure, path)
    return True


def scenario_bars(path: Path, bars: Sequence[Bar], caption: str) -> bool:
    """Draw succ/s ÷ R and the 429 share of each scenario; False without matplotlib."""
    plt = pyplot()
    if plt is None:
        print(f"matplotlib is not installed: no chart written to {path}")
        return False
    groups = list(dict.fromkeys(bar.group for bar in bars))
    height = 2.0 + 0.34 * len(bars)
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(11, height), sharey=True, gridspec_kw={"width_ratios": (3, 2)}
    )
    ys = list(range(len(bars)))[::-1]  # the first scenario on top
    colours = [COLOURS[groups.index(bar.group) % len(COLOURS)] for bar in bars]
    half = 0.38
    left.barh([y + half / 2 for y in ys], [bar.whole for bar in bars], height=half, color=colours)
    left.barh(
        [y - half / 2 for y in ys],
        [bar.steady for bar in bars],
        height=half,
        color=colours,
        alpha=0.45,
        hatch="//",
    )
    left.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    left.set_title("successes/s ÷ R", fontsize="medium", loc="left")
    left.set_xlabel("solid: whole run · hatched: steady half", fontsize="small")
    left.set_yticks(ys, [bar.label for bar in bars], fontsize="small")
    left.set_xlim(0, max(1.15, *(max(bar.whole, bar.steady) + 0.05 for bar in bars)))
    right.barh(ys, [bar.share_429 * 100 for bar in bars], height=0.6, color=colours)
    right.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    right.set_title("429s, % of the server's requests", fontsize="medium", loc="left")
    right.set_xlabel("dotted: 1 %", fontsize="small")
    for y, bar in zip(ys, bars, strict=True):
        right.annotate(
            f"{bar.share_429:.1%}",
            (bar.share_429 * 100, y),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize="x-small",
        )
    right.set_xlim(0, max(2.0, max(bar.share_429 * 100 for bar in bars) * 1.25))
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=COLOURS[i % len(COLOURS)]) for i in range(len(groups))
    ]
    figure.legend(handles, groups, fontsize="small", loc="lower center", ncol=len(groups))
    figure.suptitle(caption, fontsize="small", x=0.01, ha="left")
    figure.tight_layout(rect=(0, 0.6 / height, 1, 1))
    _save(plt, figure, path)
    return True
