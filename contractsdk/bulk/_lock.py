"""Advisory file locks: one job per journal, and one run of a job's input per machine.

A lock is a file that exists while it is held: taken with ``flock`` (POSIX; on Windows
there are no advisory locks, and nothing is locked), removed when let go, while still
held. A process that opened the file just before it was removed would lock a file nobody
else can see; so after locking, the file must still be the one at the path, else it is
opened again (a few times at most).

Pure of the journal: :class:`FileLock` knows a path and a message, nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import IO

from contractsdk.bulk._schema import JournalError

__all__ = ["FileLock", "held", "input_lock_paths"]

_ATTEMPTS = 5


class FileLock:
    """An exclusive advisory lock held through a file at ``path`` (see the module header).

    Args:
        path: The lock file.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._handle: IO[str] | None = None

    def acquire(self, busy: str) -> None:
        """Take the lock, or raise ``JournalError(busy)`` if another process holds it.

        Raises:
            JournalError: Another process holds it, the lock file cannot be opened, or it
                keeps changing.
        """
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks; documented in docs/bulk.md
            return
        for _attempt in range(_ATTEMPTS):
            try:
                handle = open(self.path, "a")  # noqa: SIM115  # held until release
            except OSError as exc:
                message = f"cannot open the lock file {self.path}: {exc.strerror}"
                raise JournalError(message) from None
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                raise JournalError(busy) from None
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            opened = os.fstat(handle.fileno())
            if current is not None and (current.st_dev, current.st_ino) == (
                opened.st_dev,
                opened.st_ino,
            ):
                self._handle = handle
                return
            handle.close()  # removed by the process that held it: lock the new one
        raise JournalError(f"cannot take the lock {self.path}: its file keeps changing")

    def release(self) -> None:
        """Remove the lock file (while still holding it), then let the lock go."""
        if self._handle is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self._handle.close()
        self._handle = None


def held(path: str | os.PathLike[str]) -> bool | None:
    """Whether a process holds the lock of the lock file at ``path``.

    The lock is tried, shared and without waiting, and let go at once; the file is not
    created when missing (False: nobody holds it). None when it cannot be told: no
    advisory locks (Windows), or a file that cannot be opened.
    """
    try:
        import fcntl
    except ImportError:  # Windows: jobs take no lock, so nothing tells
        return None
    try:
        handle = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True  # held (exclusively) by the process that took it
    else:
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False  # left by a process that was killed: nobody holds it
    finally:
        os.close(handle)


def input_lock_paths(
    job_id: str, source: Path, digest: str | None, folder: str | None = None
) -> list[Path]:
    """The locks of one job run on one input file, on this machine: by path, and by bytes.

    A job's journal lock covers that journal only: the same file run at once with two
    journals (a second terminal, ``--journal other.db``) made every row twice, each run
    listing the team before the other had created anything. The job id and the input's
    real path name one lock, in the machine's temporary folder, so any two runs of a job
    on one file meet there, whatever their journals (and whatever the file holds by the
    time the second starts); the job id and a hash of its bytes (``digest``) name the
    other, where a copy of the file meets it. The user's id is part of the name:
    another user's lock file is not one this process could open.
    """
    user = os.getuid() if hasattr(os, "getuid") else 0
    base = Path(folder or tempfile.gettempdir())
    names = [hashlib.sha256(os.fsencode(os.path.realpath(source))).hexdigest()[:16]]
    if digest is not None:
        names.append(f"bytes-{digest[:16]}")
    return [base / f"contractsdk-bulk-{user}-{job_id}-{name}.lock" for name in names]
