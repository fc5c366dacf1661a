"""The CLI in a real terminal (tmux): a bulk create draws a coloured progress bar there.

Skipped when tmux is missing, unless ``CI=true`` (CI installs it). Bounded: every wait
has a deadline, and the job is 30 rows against an emulator at 40 writes/s.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._sandboxprocess import child_env, sandbox_process

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tenancies.csv"
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7](;[0-9]+)*m|\x1b\[[0-9;]*38;")

pytestmark = pytest.mark.e2e

#: The emulator's limits: no read limit, 40 writes/s.
LIMITS = ("--read-rate", "none", "--write-rate", "40")


def _env(**more: str) -> dict[str, str]:
    env = child_env(**more)
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):  # the pane decides
        if name not in more:
            env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is required in CI (apt-get install tmux)")
        pytest.skip("tmux is not installed")
    return found


@pytest.fixture
def emulator() -> Iterator[dict[str, str]]:
    """An emulator process at 40 writes/s: long enough for the bar to be drawn."""
    with sandbox_process(*LIMITS, env=_env()) as exports:
        yield {name: exports[name] for name in ("CONTRACTSDK_BASE_URL", "CONTRACTSDK_API_KEY")}


def _bulk_argv(tmp_path: Path, name: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "contractsdk",
        "bulk",
        "create",
        str(EXAMPLE),
        "--team",
        "Personal Team",
        "--contract-type",
        "Assured Shorthold Tenancy Agreement",
        "--created-by",
        "7917",
        "--key-column",
        "reference",
        "--journal",
        str(tmp_path / f"{name}.db"),
        "--match-term",
        "contract_name",
    ]


def _in_tmux(tmux: str, tmp_path: Path, env: dict[str, str], name: str) -> str:
    """Run a bulk create in a 160x30 tmux pane; return the pane, escapes kept."""
    socket = f"contractsdk-{os.getpid()}-{name}"
    done = tmp_path / f"{name}.done"
    command = " ".join(f"'{part}'" for part in _bulk_argv(tmp_path, name))
    script = f"unset COLUMNS LINES; {command}; echo $? > '{done}'; sleep 30"
    exported = [f"{key}={value}" for key, value in env.items()]
    base = [tmux, "-L", socket, "-f", "/dev/null"]
    subprocess.run(
        [*base, "new-session", "-d", "-x", "160", "-y", "30", "env", *exported, "sh", "-c", script],
        check=True,
        timeout=10,
        env=env,
    )
    try:
        deadline = time.monotonic() + 12
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert done.exists(), "the command did not finish in the pane"
        pane = subprocess.run(
            [*base, "capture-pane", "-p", "-e", "-J", "-S", "-"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout
        assert done.read_text().strip() == "3", pane  # three rows are invalid on purpose
        return pane
    finally:
        subprocess.run([*base, "kill-server"], check=False, timeout=10)


def test_progress_bar_in_a_terminal(tmux: str, emulator: dict[str, str], tmp_path: Path) -> None:
    """In a terminal: a finished bar (100%, 30/30, rows/s, ETA, 429s), with colour."""
    env = _env(TERM="xterm-256color", **emulator)
    pane = _in_tmux(tmux, tmp_path, env, "colour")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", pane)
    assert "━" in plain and "100%" in plain and "30/30" in plain, plain
    assert "rows/s" in plain and "ETA" in plain and "429s" in plain and "retries" in plain
    assert COLOUR.search(pane), pane


def test_no_color_in_a_terminal(tmux: str, emulator: dict[str, str], tmp_path: Path) -> None:
    """With NO_COLOR the bar is drawn, in no colour."""
    env = _env(TERM="xterm-256color", NO_COLOR="1", **emulator)
    pane = _in_tmux(tmux, tmp_path, env, "nocolour")
    assert "100%" in pane
    assert not COLOUR.search(pane), pane


def test_a_pipe_gets_plain_lines(emulator: dict[str, str], tmp_path: Path) -> None:
    """Into a pipe: no bar, no escape codes; a plain progress line and the summary."""
    result = subprocess.run(
        _bulk_argv(tmp_path, "pipe"),
        capture_output=True,
        text=True,
        env=_env(TERM="xterm-256color", **emulator),
        timeout=30,
        check=False,
    )
    assert result.returncode == 3, result.stderr
    assert "\x1b[" not in result.stdout + result.stderr
    assert "30/30 rows" in result.stderr and "━" not in result.stderr
