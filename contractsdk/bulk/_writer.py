"""The journal's writer thread: SQLite off the event loop, with group commit.

SQLite is blocking, so :class:`AsyncJournal` owns the connection in one thread. Callers on
the event loop queue operations and await futures; the thread takes every operation
waiting in its queue (up to ``_MAX_BATCH``), runs each inside a savepoint of one
transaction, commits once, then resolves the futures. A future resolves only after its
change is committed, so ``await journal.call(lambda j: j.mark_sending(key))`` returning
means the mark is on disk (see the invariants in ``_journal.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from contractsdk.bulk._journal import Journal
from contractsdk.bulk._lock import FileLock, held
from contractsdk.bulk._schema import JournalError, check_journal_path, lock_path

__all__ = ["AsyncJournal"]

T = TypeVar("T")
_MAX_BATCH = 256
#: What a temporary journal's directory is called, and how long one a killed run left
#: behind is kept (it holds the rows' values: names, addresses) before a later run
#: without a journal removes it.
_TEMPORARY_PREFIX = "contractsdk-bulk-"
STALE_AFTER = 24 * 3600.0


class _Stop:
    pass


_STOP = _Stop()


class AsyncJournal:
    """A :class:`Journal` run by one writer thread, awaited from the event loop.

    Operations queue up while the thread commits; the thread runs every operation waiting
    (up to 256), each in a savepoint of one transaction, commits once and then resolves
    their futures: a resolved future means the change is on disk (see the module header).

    Use :meth:`open` and :meth:`aclose`.
    """

    def __init__(self, path: Path, *, temporary_dir: Path | None = None) -> None:
        self.path = path
        self._temporary_dir = temporary_dir
        self._queue: queue.SimpleQueue[
            tuple[Callable[[Journal], Any], asyncio.Future[Any]] | _Stop
        ] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock_file: FileLock | None = None
        self.commits = 0

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str] | None, *, copy_of: Path | None = None
    ) -> AsyncJournal:
        """Open a journal file and start its writer thread.

        Args:
            path: The journal file; None makes a temporary journal, deleted on close.
            copy_of: Make the temporary journal a copy of this journal (for a dry run,
                which must not change the real one).

        Raises:
            JournalError: The directory is missing, the file is not a journal, or another
                process is running a job with it.
        """
        temporary_dir = None
        if path is None:
            await asyncio.to_thread(remove_stale_temporary_journals)
            temporary_dir = Path(tempfile.mkdtemp(prefix=_TEMPORARY_PREFIX))
            target = temporary_dir / "journal.db"
        else:
            target = check_journal_path(path)
        journal = cls(target, temporary_dir=temporary_dir)
        try:
            if copy_of is not None and await asyncio.to_thread(copy_of.exists):
                source = await asyncio.to_thread(Journal.connect, copy_of, readonly=True)
                try:
                    await asyncio.to_thread(source.copy_to, target)
                finally:
                    source.close()
            else:
                await asyncio.to_thread(journal._lock)
            await journal._start()
        except BaseException:
            journal._cleanup()
            raise
        return journal

    def _lock(self) -> None:
        """Hold an advisory lock so that two processes never run one job at once.

        The lock file is ``<journal>.lock``, beside the file a link names (``lock_path``),
        removed when the journal closes (:class:`~contractsdk.bulk._lock.FileLock`).
        """
        lock = FileLock(lock_path(self.path))
        lock.acquire(f"another process is running a job with the journal {self.path}")
        self._lock_file = lock

    async def _start(self) -> None:
        self._loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = self._loop.create_future()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="contractsdk-bulk-journal", daemon=True
        )
        self._thread.start()
        await ready

    @staticmethod
    def _resolve(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        if future.done():  # the caller gave up (cancelled); the change is committed anyway
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def _serve(self, ready: asyncio.Future[None]) -> None:
        loop = self._loop
        assert loop is not None
        try:
            journal = Journal.connect(self.path)
        except BaseException as exc:  # reported to the opener
            loop.call_soon_threadsafe(self._resolve, ready, None, exc)
            return
        loop.call_soon_threadsafe(self._resolve, ready, None, None)
        try:
            while True:
                first = self._queue.get()
                if isinstance(first, _Stop):
                    return
                batch = [first]
                stop = False
                while len(batch) < _MAX_BATCH:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if isinstance(item, _Stop):
                        stop = True
                        break
                    batch.append(item)
                self._run_batch(journal, batch, loop)
                if stop:
                    return
        finally:
            journal.close()

    def _run_batch(
        self,
        journal: Journal,
        batch: list[tuple[Callable[[Journal], Any], asyncio.Future[Any]]],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        results: list[tuple[Any, BaseException | None]] = []
        db = journal.db
        try:
            db.execute("BEGIN IMMEDIATE")
            for operation, _future in batch:
                db.execute("SAVEPOINT op")
                try:
                    result = operation(journal)
                except Exception as exc:
                    db.execute("ROLLBACK TO op")
                    db.execute("RELEASE op")
                    results.append((None, exc))
                else:
                    db.execute("RELEASE op")
                    results.append((result, None))
            db.execute("COMMIT")
            self.commits += 1
        except Exception as exc:  # the commit failed (disk full, I/O error): nothing is saved
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            failure: BaseException = JournalError(f"cannot write the journal {self.path}: {exc}")
            results = [(None, failure)] * len(batch)
        for (_operation, future), (result, error) in zip(batch, results, strict=True):
            loop.call_soon_threadsafe(self._resolve, future, result, error)

    async def call(self, operation: Callable[[Journal], T]) -> T:
        """Run ``operation(journal)`` in the writer thread; return once it is committed."""
        if self._thread is None or not self._thread.is_alive():
            raise JournalError(f"the journal {self.path} is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((operation, future))
        # Shielded: a cancelled caller does not undo a queued change; it still commits.
        return await asyncio.shield(future)

    async def aclose(self) -> None:
        """Commit what is queued, stop the thread, close the file (and delete a temporary one)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(_STOP)
            await asyncio.to_thread(thread.join)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._lock_file is not None:
            self._lock_file.release()
            self._lock_file = None
        if self._temporary_dir is not None:
            shutil.rmtree(self._temporary_dir, ignore_errors=True)
            self._temporary_dir = None


def remove_stale_temporary_journals(
    folder: str | None = None, *, older_than: float = STALE_AFTER, now: float | None = None
) -> list[Path]:
    """Remove the temporary journals that runs without a journal left when they were killed.

    A run without a journal keeps one in a temporary directory, removed when the run ends;
    a killed run leaves it, with the rows' values in it. One unchanged for ``older_than``
    seconds, whose lock no process holds, is removed; one in use never is.

    Args:
        folder: Where to look (the system's temporary directory by default).
        older_than: Seconds since anything in the directory last changed.
        now: The time to compare with (``time.time()`` by default).

    Returns:
        The directories removed.
    """
    import time

    base = Path(folder or tempfile.gettempdir())
    now = time.time() if now is None else now
    try:
        candidates = sorted(base.glob(f"{_TEMPORARY_PREFIX}*"))
    except OSError:
        return []
    removed: list[Path] = []
    for directory in candidates:
        try:
            if not directory.is_dir() or directory.is_symlink() or directory.owner() != _me():
                continue
            if now - _last_change(directory) < older_than:
                continue
            if held(directory / "journal.db.lock"):  # a job's, still running
                continue
            shutil.rmtree(directory)
            removed.append(directory)
        except (OSError, KeyError):  # gone meanwhile, unreadable, or an owner with no name
            continue
    return removed


def _last_change(directory: Path) -> float:
    """When anything in ``directory`` (not below it) last changed."""
    return max([directory.stat().st_mtime, *(e.stat().st_mtime for e in directory.iterdir())])


def _me() -> str:
    import getpass

    return getpass.getuser()
