"""``contractsdk sandbox`` in a process of its own, for tests that run the CLI as users do."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Seconds the emulator may take to print its banner.
START_TIMEOUT = 30.0


def child_env(**more: str) -> dict[str, str]:
    """This process's environment without CONTRACTSDK_* settings, the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTRACTSDK_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return {**env, **more}


@contextmanager
def sandbox_process(
    *options: str, env: Mapping[str, str] | None = None
) -> Iterator[dict[str, str]]:
    """Start the emulator on a free port; yield the ``export`` settings its banner prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "contractsdk.sandbox", "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(env) if env is not None else child_env(),
    )
    assert process.stdout is not None
    exports: dict[str, str] = {}
    deadline = time.monotonic() + START_TIMEOUT
    try:
        for line in process.stdout:  # bounded by the banner's end or the deadline
            if match := re.search(r"export (CONTRACTSDK_\w+)=(\S+)", line):
                exports[match[1]] = match[2]
            if "Ctrl-C" in line or time.monotonic() > deadline:
                break
        assert {"CONTRACTSDK_BASE_URL", "CONTRACTSDK_API_KEY"} <= set(exports), exports
        yield exports
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()
