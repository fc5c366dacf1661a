"""Bulk work in a process of its own, for the tests that kill it, interrupt it or crash it.

A SIGKILL, a SIGINT or an ``os._exit`` mid-transaction needs a real process, but not a
fresh interpreter each time: ``python -m contractsdk`` spends half a second importing
click, rich and aiohttp before it reads a row. So the processes are forked from a
multiprocessing *forkserver* that imported the package once (one per test process,
started on first use; it exits with the test process). Each child is a new process, with
Python's default signal handlers (the forkserver restores them), that runs one of the
functions below: :func:`command` is ``python -m contractsdk ARGS`` without the imports.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Child", "Command", "command", "crash_mid_transaction"]

_CONTEXT = multiprocessing.get_context("forkserver")
#: Imported once, in the forkserver: the command line, its commands, the journal, and the
#: main script if pytest was started as one (else each child would import it again).
_PRELOAD = [
    "__main__",
    "contractsdk.cli",
    "contractsdk.cli._app",
    "contractsdk.cli._bulk",
    "contractsdk.cli._parties",
    "contractsdk.cli._resources",
    "contractsdk.cli._progress",
    "contractsdk.bulk._journal",
    "tests._bulkprocess",
]


def command(argv: Sequence[str], env: Mapping[str, str], output: str) -> None:
    """In the child: ``contractsdk ARGV``, its stdout and stderr written to ``output``."""
    os.environ.update(env)
    handle = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(handle, 1)
    os.dup2(handle, 2)
    os.close(handle)
    from contractsdk.cli import main

    sys.exit(main(list(argv)))


def crash_mid_transaction(path: str) -> None:
    """In the child: commit a row as ``sending``, then die before ``created`` is committed."""
    from contractsdk.bulk._journal import Journal
    from contractsdk.bulk._records import PreparedRow

    journal = Journal.connect(path)
    journal.claim("job-a", {}, "0.1.0")
    run = journal.begin_run("create", None)
    row = PreparedRow(
        number=1,
        line=2,
        key="ref:A",
        key_label="key 'A'",
        digest="d",
        name="A",
        team_id=70,
        template_id=149,
        values={"contract_name": "A"},
    )
    journal.db.execute("BEGIN IMMEDIATE")
    journal.register(run, [row])
    journal.mark_sending("ref:A")
    journal.db.execute("COMMIT")
    journal.db.execute("BEGIN IMMEDIATE")
    journal.mark_created("ref:A", 900, run)  # the answer arrived, but the process dies
    os._exit(9)  # before this transaction commits


class Child:
    """One of this module's functions, run in a process of its own.

    Args:
        target: :func:`command` or :func:`crash_mid_transaction` (a function the
            forkserver can import).
        args: Its arguments.
    """

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        _CONTEXT.set_forkserver_preload(_PRELOAD)  # no effect once the forkserver runs
        self._process = _CONTEXT.Process(target=target, args=args, daemon=True)
        self._process.start()

    @property
    def returncode(self) -> int | None:
        """The exit code (minus the signal number if a signal ended it); None while it runs."""
        return self._process.exitcode

    def send_signal(self, number: signal.Signals) -> None:
        """Send a signal to the process."""
        assert self._process.pid is not None
        os.kill(self._process.pid, number)

    def wait(self, timeout: float) -> int:
        """Wait for the process to end (killing it after ``timeout``); its exit code."""
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            self._process.kill()
            self._process.join(timeout)
            raise AssertionError(f"the process did not end within {timeout} s")
        return code


class Command(Child):
    """``contractsdk ARGV`` in a process of its own.

    Args:
        argv: The arguments (without the program name).
        env: Variables set in the child's environment (on top of the test process's).
        output: The file its stdout and stderr go to.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], output: Path) -> None:
        self.output = output
        super().__init__(command, list(argv), dict(env), str(output))

    def output_so_far(self) -> str:
        """What the command has written so far (its notes are flushed as written)."""
        return self.output.read_text(encoding="utf-8", errors="replace")

    async def finish(self, timeout: float) -> tuple[int, str]:
        """Wait for the command to end (killing it after ``timeout``); code and output."""
        code = await asyncio.to_thread(self.wait, timeout)
        return code, self.output_so_far()
