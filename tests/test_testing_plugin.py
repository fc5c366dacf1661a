"""The pytest plugin users get with the package, run as a user's project runs it.

The suite itself runs in pytest-asyncio's auto mode, which hides how the fixtures behave
in its default (strict) mode: a fresh pytest process in a bare project shows it.
"""

from __future__ import annotations

import os
import re
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


ROOT = Path(__file__).resolve().parents[1]


def _blocks(language: str, guide: Path = ROOT / "docs" / "testing.md") -> list[str]:
    """The ``language`` code blocks of a guide (docs/testing.md), in order."""
    text = guide.read_text("utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize("settings", ["none", "documented"])
def test_the_testing_guide_runs_as_written_in_a_bare_project(tmp_path: Path, settings: str) -> None:
    """Each example of docs/testing.md passes in a project of its own, strict mode.

    The first (MockTransport) failed there, "async def functions are not natively
    supported": it passed in this repository only for its ``asyncio_mode = "auto"``. With
    the ``pytest.ini`` the guide shows, pytest-asyncio has nothing to warn of either.
    """
    examples = _blocks("python")
    assert len(examples) == 3
    tests = 0
    for number, example in enumerate(examples):
        # The fixtures it overrides are a conftest.py's, as the guide says.
        name = "conftest.py" if "@pytest.fixture" in example else f"test_example_{number}.py"
        (tmp_path / name).write_text(example, encoding="utf-8")
        tests += example.count("\nasync def test_") + example.count("\ndef test_")
    options: list[str] = []
    if settings == "documented":
        (ini,) = _blocks("ini")
        (tmp_path / "pytest.ini").write_text(ini, encoding="utf-8")
        options = ["-W", "error"]

    done = _run_pytest(tmp_path, *options)

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{tests} passed" in done.stdout, done.stdout


def test_the_other_guides_test_examples_run_as_written_in_a_bare_project(
    tmp_path: Path,
) -> None:
    """A test written out in another guide (sandbox.md's) passes in a project of its own too.

    sandbox.md's ``test_something`` had no ``@pytest.mark.asyncio`` either.
    """
    examples = [
        example
        for guide in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
        if guide.name != "testing.md"
        for example in _blocks("python", guide)
        if re.search(r"^async def test_", example, re.MULTILINE)
    ]
    assert examples  # sandbox.md's, at least
    for number, example in enumerate(examples):
        (tmp_path / f"test_example_{number}.py").write_text(example, encoding="utf-8")
    (ini,) = _blocks("ini")  # the settings docs/testing.md shows
    (tmp_path / "pytest.ini").write_text(ini, encoding="utf-8")

    done = _run_pytest(tmp_path, "-W", "error")

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(examples)} passed" in done.stdout, done.stdout
