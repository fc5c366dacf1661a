"""The emulator for tests that run the CLI as users do, and the environment of their processes.

The emulator serves from a thread of this process, on its own event loop: a CLI run
in-process (``main()`` starts an event loop of its own) or in a child process reaches it
over loopback as it would reach any service, without the half second a Python process
of its own costs to start. ``python -m contractsdk.sandbox`` itself, serving and
stopping, is tested in ``tests/sandbox/test_cli.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contractsdk.sandbox import SandboxServer

ROOT = Path(__file__).resolve().parents[1]
#: Seconds the emulator may take to start, and to stop.
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


def child_env(**more: str) -> dict[str, str]:
    """This process's environment without CONTRACTSDK_* settings, the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTRACTSDK_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, **more}


@contextmanager
def sandbox_thread(**options: Any) -> Iterator[SandboxServer]:
    """Serve a ``SandboxServer(port=0, **options)`` from a thread; stop it on exit."""
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def serve() -> None:
        stop = asyncio.Event()
        state["stop"] = (asyncio.get_running_loop(), stop)
        async with SandboxServer(port=0, **options) as server:
            state["server"] = server
            ready.set()
            await stop.wait()

    def run() -> None:
        try:
            asyncio.run(serve())
        except BaseException as error:  # reported by the test that waits for the server
            state["error"] = error
        finally:
            ready.set()

    thread = threading.Thread(target=run, name="sandbox", daemon=True)
    thread.start()
    try:
        assert ready.wait(START_TIMEOUT), "the emulator did not start"
        assert "server" in state, state.get("error")
        yield state["server"]
    finally:
        if "stop" in state and thread.is_alive():
            loop, stop = state["stop"]
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(stop.set)
        thread.join(STOP_TIMEOUT)
        assert not thread.is_alive(), "the emulator did not stop"
        if "server" in state:  # else the failure to start is the one reported
            assert "error" not in state, f"the emulator failed: {state['error']!r}"
