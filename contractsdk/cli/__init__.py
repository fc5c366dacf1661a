"""The ``contractsdk`` command: the demo, the emulator, the resources, parties and bulk jobs.

The command needs the ``cli`` extra (``pip install 'contractsdk[cli]'``: click and rich);
the SDK itself never imports them. Configuration comes from flags or the ``CONTRACTSDK_*``
variables (as for :class:`~contractsdk.ContractClient`). Output is a table for people, or
JSON with ``--json``. An expected error is one clear line on stderr and a non-zero exit
code, never a traceback and never a secret.

Exit codes: 0 success, 1 the service or the network failed, 2 bad usage or configuration,
3 values failed validation (contract terms or identity fields), 130 interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO, cast

from contractsdk._exceptions import (
    ConfigurationError,
    ContractSDKError,
    IdentityValidationError,
    TermValidationError,
)

__all__ = ["INSTALL_HINT", "is_utf8", "main"]

#: The one line printed when the command runs without its extra.
INSTALL_HINT = (
    "contractsdk: the command line needs its extra; install it with: pip install 'contractsdk[cli]'"
)


def _has_extra() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("click", "rich"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code.

    Args:
        argv: The arguments without the program name; None reads ``sys.argv``.

    Returns:
        0 success, 1 the service failed, 2 bad usage or configuration, 3 values failed
        validation, 130 interrupted.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    _tolerant_output()
    sys.stdout, sys.stderr = _Unbroken.wrap(sys.stdout), _Unbroken.wrap(sys.stderr)
    if not _has_extra():
        print(INSTALL_HINT, file=sys.stderr)
        return 1
    from contractsdk.cli._app import parse

    try:
        invocation = parse(arguments)
        if isinstance(invocation, int):  # help, --version, a usage error: already printed
            return invocation
        return invocation.run_sync()
    except (TermValidationError, IdentityValidationError) as exc:
        return _fail(exc, 3)
    except ConfigurationError as exc:
        return _fail(exc, 2)
    except ContractSDKError as exc:
        return _fail(exc, 1)
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`contractsdk … | head`): stop quietly, as the Python docs
        # advise, pointing stdout at devnull so the interpreter's final flush cannot fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def is_utf8(stream: object) -> bool:
    """Whether a text stream writes UTF-8 (one without an encoding is taken for UTF-8)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return bool(encoding.lower().replace("-", "") == "utf8")


class _Unbroken:
    """A text stream whose reader may go away: it then writes to devnull, and says nothing.

    ``bulk create … | tee log`` and Ctrl-C: the signal reached tee too, the job's next
    line of progress met a closed pipe, and the BrokenPipeError ended the command mid-run,
    its requests in flight left ``sending`` and the run ``cancelled`` instead of drained
    and ``stopped``. Whatever the CLI writes goes through this; everything else is the
    stream's own.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @classmethod
    def wrap(cls, stream: TextIO) -> TextIO:
        """Wrap a stream once (a stream of another kind, or wrapped already, is left)."""
        if isinstance(stream, cls) or not hasattr(stream, "fileno"):
            return stream
        return cast(TextIO, cls(stream))

    def write(self, text: str) -> int:
        """Write, or drop the text if the reader is gone."""
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        """Flush, or drop what is left if the reader is gone."""
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        # Pointed at devnull, what the stream still holds is written there when it is
        # next flushed (the interpreter's last flush too: no "Exception ignored").
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _tolerant_output() -> None:
    """Let a terminal that cannot show a character print ``?`` for it, not a traceback.

    The output uses "→", "…" and "÷": a Windows console in cp1252, a latin-1 locale or
    ``PYTHONIOENCODING=ascii`` cannot encode them, and ``contractsdk demo`` stopped at its
    first step with a UnicodeEncodeError. A UTF-8 stream is left as it is.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if not is_utf8(stream) and reconfigure is not None:
            with contextlib.suppress(Exception):  # a stream that cannot change: left alone
                reconfigure(errors="replace")


def _fail(exc: Exception, code: int) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return code
