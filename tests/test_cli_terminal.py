"""The CLI in a real terminal (tmux): a bulk create draws a coloured progress bar there.

Skipped when tmux is missing, unless ``CI=true`` (CI installs it). The two runs in a
terminal (with colour, with NO_COLOR) are ``python -m contractsdk`` processes in tmux panes,
each as its own user in its own team of one emulator (see :class:`Panes`); the run that
is not in a terminal is in-process, its output captured. Bounded: every wait has a
deadline, and each job is the example's 30 rows.
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
from typing import ClassVar

import pytest

from contractsdk.cli import main
from contractsdk.sandbox import SandboxServer
from tests._sandboxprocess import child_env, sandbox_thread

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tenancies.csv"
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-7](;[0-9]+)*m|\x1b\[[0-9;]*38;")

pytestmark = pytest.mark.e2e

#: Seconds a run may take, started together on a loaded machine; only a hang reaches it.
DEADLINE = 60
#: Seconds between looks at whether a run in a pane has finished.
POLL = 0.02


def _env(**more: str) -> dict[str, str]:
    env = child_env(**more)
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):  # the pane decides
        if name not in more:
            env.pop(name, None)
    return env


def _bulk_argv(directory: Path, name: str, user: int) -> list[str]:
    """A bulk create of the example into ``user``'s Personal Team (its own: runs overlap)."""
    return [
        "bulk",
        "create",
        str(EXAMPLE),
        "--team",
        "Personal Team",
        "--contract-type",
        "Assured Shorthold Tenancy Agreement",
        "--created-by",
        str(user),
        "--key-column",
        "reference",
        "--journal",
        str(directory / f"{name}.db"),
        "--match-term",
        "contract_name",
    ]


class Pane:
    """A bulk create running in a 160x30 tmux pane of a tmux server of its own."""

    def __init__(self, tmux: str, directory: Path, name: str, user: int, env: dict[str, str]):
        self.base = [tmux, "-L", f"contractsdk-{os.getpid()}-{name}", "-f", "/dev/null"]
        self.done = directory / f"{name}.done"
        argv = [sys.executable, "-m", "contractsdk", *_bulk_argv(directory, name, user)]
        command = " ".join(f"'{part}'" for part in argv)
        script = f"unset COLUMNS LINES; {command}; echo $? > '{self.done}'; sleep {DEADLINE}"
        exported = [f"{key}={value}" for key, value in env.items()]
        new = ["new-session", "-d", "-x", "160", "-y", "30", "env", *exported, "sh", "-c", script]
        subprocess.run([*self.base, *new], check=True, timeout=10, env=env)

    def finish(self) -> tuple[str, str]:
        """Wait for the command; return its exit code and the pane, escapes kept."""
        deadline = time.monotonic() + DEADLINE
        code = ""
        while not code.endswith("\n") and time.monotonic() < deadline:  # written, not begun
            code = self.done.read_text() if self.done.exists() else ""
            if not code.endswith("\n"):
                time.sleep(POLL)
        assert code.endswith("\n"), "the command did not finish in the pane"
        pane = subprocess.run(
            [*self.base, "capture-pane", "-p", "-e", "-J", "-S", "-"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout
        return code.strip(), pane

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], check=False, timeout=10)


class Panes:
    """The two runs in a terminal, against one emulator, each started once.

    In a serial run both start together, the first time either is asked for. Under
    pytest-xdist this module's tests may go to different workers: each starts only the
    pane its test asks for.
    """

    ENV: ClassVar[dict[str, dict[str, str]]] = {
        "colour": {"TERM": "xterm-256color"},
        "nocolour": {"TERM": "xterm-256color", "NO_COLOR": "1"},
    }

    def __init__(self, tmux: str, server: SandboxServer, directory: Path) -> None:
        self.tmux = tmux
        self.directory = directory
        self.connection = {
            "CONTRACTSDK_BASE_URL": server.url,
            "CONTRACTSDK_API_KEY": server.api_key,
        }
        # Each run is its own user, in that user's Personal Team: the runs overlap.
        self.users = {name: user.id for name, user in zip(self.ENV, server.users, strict=False)}
        self.started: dict[str, Pane] = {}

    def start(self, *names: str) -> None:
        for name in names:
            if name not in self.started:
                env = _env(**self.ENV[name], **self.connection)
                user = self.users[name]
                self.started[name] = Pane(self.tmux, self.directory, name, user, env)

    def finished(self, name: str) -> str:
        """The pane of a finished run; its exit code checked."""
        self.start(name)
        code, pane = self.started[name].finish()
        assert code == "3", pane  # three rows are invalid on purpose
        return pane

    def close(self) -> None:
        for pane in self.started.values():
            pane.close()


@pytest.fixture(scope="module")
def tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is required in CI (apt-get install tmux)")
        pytest.skip("tmux is not installed")
    return found


@pytest.fixture(scope="module")
def emulator() -> Iterator[SandboxServer]:
    """An emulator whose limits are far above what the runs send.

    Its rate headers let each client pace at the limit at once, not from a slow start.
    """
    with sandbox_thread(read_rate=1000, write_rate=1000) as server:
        yield server


@pytest.fixture(scope="module")
def panes(
    tmux: str, emulator: SandboxServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Panes]:
    started = Panes(tmux, emulator, tmp_path_factory.mktemp("terminal"))
    try:
        if "PYTEST_XDIST_WORKER" not in os.environ:
            started.start(*Panes.ENV)
        yield started
    finally:
        started.close()


def test_progress_bar_in_a_terminal(panes: Panes) -> None:
    """In a terminal: a finished bar (100%, 30/30, rows/s, ETA, 429s), with colour."""
    pane = panes.finished("colour")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", pane)
    assert "━" in plain and "100%" in plain and "30/30" in plain, plain
    assert "rows/s" in plain and "ETA" in plain and "429s" in plain and "retries" in plain
    assert COLOUR.search(pane), pane


def test_no_color_in_a_terminal(panes: Panes) -> None:
    """With NO_COLOR the bar is drawn, in no colour."""
    pane = panes.finished("nocolour")
    assert "100%" in pane
    assert not COLOUR.search(pane), pane


def test_not_a_terminal_gets_plain_lines(
    emulator: SandboxServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not a terminal (a pipe, a file): no bar, no escape codes; a plain line and the summary.

    Though TERM names a colour terminal. In-process, the output captured: a stream that is
    no terminal, as a pipe is.
    """
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", emulator.url)
    monkeypatch.setenv("CONTRACTSDK_API_KEY", emulator.api_key)
    user = emulator.users[2].id  # not the panes' users: their runs may still be going
    code = main(_bulk_argv(tmp_path, "captured", user))
    stdout, stderr = capsys.readouterr()
    assert code == 3, stderr
    assert "\x1b[" not in stdout + stderr
    assert "30/30 rows" in stderr and "━" not in stderr
