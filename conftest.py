"""Every Python example in README.md and docs/ runs as a test, against the emulator.

Sybil collects each Markdown file's ```` ```python ```` blocks; the blocks of one file run
in order in one namespace, as a reader would type them. Each file gets:

- the emulator (:class:`~contractsdk.sandbox.SandboxServer`) on a thread of its own, reset
  before the file, so that ``asyncio.run(main())`` in an example talks to a live server;
- the settings a user exports after ``contractsdk sandbox`` starts:
  ``CONTRACTSDK_BASE_URL``, ``CONTRACTSDK_API_KEY`` and ``CONTRACTSDK_USER_ID``;
- an event loop of its own for blocks that ``await`` at the top level (as in a notebook or
  ``python -m asyncio``).

A block that cannot run here says why in a ``<!-- skip: next "reason" -->`` comment above it.

Under pytest-xdist (``-n``, on by default in pyproject.toml) each worker process has its own
emulator, and a file's blocks stay together on one worker, in order (:func:`_scheduling`).
"""

from __future__ import annotations

import ast
import asyncio
import atexit
import gc
import inspect
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sybil import Example, Sybil
from sybil.evaluators.python import pad
from sybil.parsers.markdown import CodeBlockParser, SkipParser

if TYPE_CHECKING:
    from contractsdk.sandbox import SandboxServer

_ROOT = Path(__file__).resolve().parent
#: The settings each documentation file runs with (the others are unset).
_SETTINGS = ("CONTRACTSDK_BASE_URL", "CONTRACTSDK_API_KEY", "CONTRACTSDK_USER_ID")


class _ThreadedSandbox:
    """The emulator on a thread and event loop of its own, started once for the session."""

    def __init__(self) -> None:
        # Imported here, not at the top: xdist's controller runs no test and so never
        # needs the SDK (importing it there delayed the workers' start by 0.3 s).
        from contractsdk.sandbox import SandboxServer

        self.loop = asyncio.new_event_loop()
        # Limits far above what the examples send, stated in rate headers: a client learns
        # them from its first answer instead of starting slowly (as with no headers at all).
        self.server: SandboxServer = SandboxServer(read_rate=1000.0, write_rate=1000.0, burst=100.0)
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._call(self.server.start())

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=30)

    def reset(self) -> None:
        """Forget everything the examples made: the seed data again."""

        async def reset() -> None:
            self.server.reset()

        self._call(reset())

    def close(self) -> None:
        """Stop the server and its thread."""
        self._call(self.server.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


_sandbox: _ThreadedSandbox | None = None


def _setup(namespace: dict[str, Any]) -> None:
    global _sandbox
    if _sandbox is None:
        _sandbox = _ThreadedSandbox()
    _sandbox.reset()
    server = _sandbox.server
    namespace["__saved_environ__"] = dict(os.environ)
    for name in list(os.environ):
        if name.startswith("CONTRACTSDK_"):
            del os.environ[name]
    os.environ.update(
        {
            "CONTRACTSDK_BASE_URL": server.url,
            "CONTRACTSDK_API_KEY": server.api_key,
            "CONTRACTSDK_USER_ID": str(server.users[0].id),
        }
    )
    namespace["__loop__"] = asyncio.new_event_loop()
    # In a folder of its own, with the repository's examples/ (files an example writes,
    # such as a bulk journal, are gone afterwards).
    folder = tempfile.mkdtemp(prefix="contractsdk-docs-")
    os.symlink(_ROOT / "examples", os.path.join(folder, "examples"))
    namespace["__saved_cwd__"] = os.getcwd()
    namespace["__folder__"] = folder
    os.chdir(folder)


def _teardown(namespace: dict[str, Any]) -> None:
    loop: asyncio.AbstractEventLoop = namespace["__loop__"]
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
    os.environ.clear()
    os.environ.update(namespace["__saved_environ__"])
    os.chdir(namespace["__saved_cwd__"])
    shutil.rmtree(namespace["__folder__"], ignore_errors=True)


def _evaluate(example: Example) -> None:
    """Run a block; one that awaits at the top level runs on the file's event loop."""
    __tracebackhide__ = True
    source = pad(example.parsed, example.line + example.parsed.line_offset)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile(source, example.path, "exec", flags=flags, dont_inherit=True)
    result = eval(code, example.namespace)
    if inspect.iscoroutine(result):
        example.namespace["__loop__"].run_until_complete(result)
    example.namespace.pop("__builtins__", None)


pytest_collect_file = Sybil(
    parsers=[CodeBlockParser(language="python", evaluator=_evaluate), SkipParser()],
    patterns=["*.md"],
    excludes=["CHANGELOG.md"],
    setup=_setup,
    teardown=_teardown,
).pytest()


def pytest_configure(config: pytest.Config) -> None:
    """Write bytecode as Python does; under xdist, schedule each document as one unit.

    Some images set ``PYTHONDONTWRITEBYTECODE`` (this machine's does). Then every Python
    the tests start (the xdist workers, the CLI in a terminal, the sandbox module, the
    forkservers of the bulk and Redis tests) compiled contractsdk from source again, about
    0.3 s each, and pytest rewrote every test module on every run. Bytecode goes where
    Python puts it by default, under ``__pycache__/``, which git ignores.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistDocuments(), "contractsdk-xdist-documents")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Exempt what collection built (modules, fixtures, test items) from garbage collection.

    It lives until the end and holds no cycle that needs freeing, but every full collection
    walked it again: about 0.4 s of each worker's run, measured with ``gc.callbacks``.
    """
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Once everything is reported, the process leaves without tearing its heap down.

    An xdist worker has sent all its reports and the controller only waits for it to exit;
    freeing every object and module first took 0.4 to 0.8 s of that wait. The controller
    (or a serial run) has printed its summary, and the 0.2 s its interpreter took to shut
    down were the suite's last. It leaves with the session's exit status. Coverage, if it
    measures the process, writes its data at exit: then it exits as usual.
    """
    if "coverage" in sys.modules:
        return
    if hasattr(config, "workerinput"):
        status = 0
    elif _session is None:
        return  # no session ran (--help, a usage error): pytest exits as usual
    else:
        status = int(_session.exitstatus)

    def leave() -> None:  # registered last, run first of the exit handlers
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

    atexit.register(leave)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # a hook of xdist's, asked early
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker more than there are CPUs (one on a single CPU).

    Some tests wait on other processes (the CLI in a terminal, a killed bulk run,
    redis-server): a third worker on two CPUs runs while they wait. On two CPUs, eight
    runs of each in turn: 11.7 s median with three workers, 12.9 s with two, 13.0 s
    with two under xdist's ``load`` (as before).
    """
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cpus + 1 if cpus and cpus > 1 else 1


class _XdistDocuments:
    """Makes the scheduler for ``--dist load`` (the default with ``-n``): :func:`_scheduling`."""

    @pytest.hookimpl(tryfirst=True)  # before xdist's own, which would make a LoadScheduling
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "load":
            return None  # another --dist was asked for: xdist's own
        return _scheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, the tests marked e2e come first (the same on every worker).

    A long test handed out last would keep one worker busy while the others idle.
    """
    if not hasattr(config, "workerinput"):
        return  # a serial run keeps the files' order
    items.sort(key=lambda item: item.get_closest_marker("e2e") is None)


def _scheduling(config: pytest.Config, log: Any) -> Any:
    """Like xdist's ``worksteal``, but a documentation file's examples go to one worker.

    A file's blocks share one namespace (a later block uses what an earlier one made). The
    ``xdist_group`` mark with ``--dist loadgroup`` would say this, but xdist 3.8 groups by
    ``item._nodeid``, which pytest 9.2 no longer reads: every test would be on its own.

    Work stealing hands each worker a share of the tests at once, and moves half of a busy
    worker's queue to one that ran dry, instead of sending the tests one at a time as
    ``load`` does (the figures: :func:`pytest_xdist_auto_num_workers`). Here a share, or
    what is taken back, never ends inside a documentation file.
    """
    # xdist ships no type information (no py.typed): its classes are Any to mypy.
    from xdist.scheduler import WorkStealingScheduling  # type: ignore[import-untyped]
    from xdist.scheduler.worksteal import MIN_PENDING  # type: ignore[import-untyped]

    def document(nodeid: str) -> str | None:
        path = nodeid.split("::", 1)[0]
        return path if path.endswith(".md") else None

    class DocumentScheduling(WorkStealingScheduling):  # type: ignore[misc]  # Any: see above
        collection: list[str]
        pending: list[int]
        node2pending: dict[Any, list[int]]
        steal_requested_from_node: Any

        def _whole(self, indices: list[int], cut: int) -> int:
            """Move ``cut`` forward past the rest of the document ``indices[cut - 1]`` is in."""
            while 0 < cut < len(indices) and self._same(indices[cut - 1], indices[cut]):
                cut += 1
            return cut

        def _same(self, a: int, b: int) -> bool:
            this = document(self.collection[a])
            return this is not None and this == document(self.collection[b])

        def _send_tests(self, node: Any, num: int) -> None:
            super()._send_tests(node, self._whole(self.pending, num))

        def check_schedule(self) -> None:
            # xdist's, but the last half of a busy worker's queue is asked for from a cut
            # moved to the end of a document.
            up = [(n, p) for n, p in self.node2pending.items() if not n.shutting_down]
            idle = [n for n, p in up if len(p) < MIN_PENDING]
            for i, node in enumerate(idle):
                self._send_tests(node, len(self.pending) // (len(idle) - i))
            idle = [n for n, p in up if len(p) < MIN_PENDING]
            if not idle or self.steal_requested_from_node is not None:
                return
            for node, pending in sorted(up, key=lambda np: -len(np[1])):
                keep = self._whole(pending, max(len(pending) - len(pending) // 2, MIN_PENDING))
                if keep < len(pending):
                    node.send_steal(pending[keep:])
                    self.steal_requested_from_node = node
                    return
            for node in idle:  # nothing left to take: each runs its last test now
                node.shutdown()

    return DocumentScheduling(config, log)


_session: pytest.Session | None = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the documentation's emulator at the end of the session."""
    global _session
    _session = session
    if _sandbox is not None:
        _sandbox.close()
