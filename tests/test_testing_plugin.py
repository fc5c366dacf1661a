"""The pytest plugin users get with the package, run as a user's project runs it.

The suite itself runs in pytest-asyncio's auto mode, which hides how the fixtures behave
in its default (strict) mode: a fresh pytest process in a bare project shows it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_USER_TEST = """
import pytest

@pytest.mark.asyncio
async def test_against_the_emulator(sandbox_server, sandbox_client) -> None:
    ada = sandbox_server.users[0]
    user = await sandbox_client.users.get(ada.id)
    assert user.email == ada.email
"""


def _run_pytest(project: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """Run pytest in ``project`` as its own process, with no setting of this repository's."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "COV_", "CONTRACTSDK_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_fixtures_work_in_either_asyncio_mode(tmp_path: Path, mode: str) -> None:
    """The documented test passes in pytest-asyncio's default strict mode, and in auto."""
    (tmp_path / "test_user.py").write_text(_USER_TEST)
    (tmp_path / "pytest.ini").write_text(
        f"[pytest]\nasyncio_mode = {mode}\nasyncio_default_fixture_loop_scope = function\n"
    )

    done = _run_pytest(tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
