"""`contractsdk demo` runs against the embedded emulator unless its command line says otherwise.

The demo creates a team, a contract, a user, parties and signatures. It used to go wherever
``CONTRACTSDK_BASE_URL`` / ``CONTRACTSDK_ENVIRONMENT`` pointed, the very variables the
README has users export for the other commands: with ``CONTRACTSDK_ENVIRONMENT=production``
it would have created all that in production without asking. Now only ``--base-url`` or
``--environment`` on the command line name another service, and the demo then goes ahead
only with ``--yes`` or a "y" typed at a terminal.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from contractsdk.cli import main
from contractsdk.sandbox import SandboxServer
from tests._sandboxprocess import sandbox_thread


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[SandboxServer]:
    """Another service the demo may be pointed at: an emulator on a thread, limits off."""
    with sandbox_thread(read_rate=None, write_rate=None) as server:
        yield server


@pytest.fixture
def quick_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded emulator's limits raised, so that the flow is not paced at 25/s."""
    import contractsdk.sandbox

    monkeypatch.setattr(
        contractsdk.sandbox,
        "SandboxServer",
        functools.partial(contractsdk.sandbox.SandboxServer, read_rate=1000, write_rate=1000),
    )


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CONTRACTSDK_* setting but those a test sets."""
    for name in (
        "CONTRACTSDK_BASE_URL",
        "CONTRACTSDK_ENVIRONMENT",
        "CONTRACTSDK_API_KEY",
        "CONTRACTSDK_CLIENT_ID",
        "CONTRACTSDK_CLIENT_SECRET",
        "CONTRACTSDK_USER_ID",
        "CONTRACTSDK_REDIS_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def demo_against(server: SandboxServer, tmp_path: Path) -> list[str]:
    """`contractsdk demo` naming ``server`` on its command line, as its first user."""
    return [
        "demo",
        "--base-url",
        server.url,
        "--api-key",
        server.api_key,
        "--user-id",
        str(server.users[0].id),
        "--pdf",
        str(tmp_path / "signed.pdf"),
    ]


def requests_to(server: SandboxServer) -> int:
    """How many requests the server has answered."""
    count = server.counters()["requests"]
    assert isinstance(count, int)
    return count


@pytest.mark.usefixtures("quick_embedded", "clean_env")
@pytest.mark.parametrize("environment", [None, "production"])
def test_the_variables_alone_never_send_the_demo_elsewhere(
    environment: str | None,
    elsewhere: SandboxServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With CONTRACTSDK_BASE_URL (and CONTRACTSDK_ENVIRONMENT) exported: still the emulator.

    A note on stderr says the variables were ignored and how to name a service instead.
    """
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", elsewhere.url)
    monkeypatch.setenv("CONTRACTSDK_API_KEY", elsewhere.api_key)
    monkeypatch.setenv("CONTRACTSDK_USER_ID", str(elsewhere.users[0].id))
    if environment is not None:
        monkeypatch.setenv("CONTRACTSDK_ENVIRONMENT", environment)
    before = requests_to(elsewhere)
    code = main(["demo", "--pdf", str(tmp_path / "signed.pdf")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "the whole flow against the embedded emulator" in out
    assert requests_to(elsewhere) == before  # not one request to the exported service
    assert "note: the demo ignores CONTRACTSDK_BASE_URL" in err
    assert "--base-url or --environment" in err


@pytest.mark.usefixtures("clean_env")
def test_a_named_service_without_yes_is_refused_before_anything_is_sent(
    elsewhere: SandboxServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """--base-url on the command line, stdin not a terminal, no --yes: exit 2, nothing sent."""
    before = requests_to(elsewhere)
    code = main(
        ["demo", "--base-url", elsewhere.url, "--api-key", elsewhere.api_key, "--user-id", "7917"]
    )
    out, err = capsys.readouterr()
    assert code == 2
    assert err.startswith(f"error: the demo creates real objects on {elsewhere.url}")
    assert "Give --yes to go ahead (nothing was sent)" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert elsewhere.api_key not in out + err
    assert requests_to(elsewhere) == before


@pytest.mark.usefixtures("clean_env")
def test_environment_on_the_command_line_is_that_environment_not_the_variable(
    elsewhere: SandboxServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--environment production names production's URL, not an exported CONTRACTSDK_BASE_URL.

    Refused here (no --yes), naming the URL it would have used; no request is made.
    """
    monkeypatch.setenv("CONTRACTSDK_BASE_URL", elsewhere.url)
    code = main(["demo", "--environment", "production", "--api-key", "k", "--user-id", "7"])
    err = capsys.readouterr().err
    assert code == 2
    assert "the demo creates real objects on https://api.legislate.tech" in err
    assert elsewhere.url not in err


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize("answer", ["\n", "n\n", "no\n", ""])
def test_a_terminal_is_asked_and_anything_but_yes_sends_nothing(
    answer: str,
    elsewhere: SandboxServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On a terminal the demo asks first (default no); declined, it exits 2 having sent nothing."""
    from contractsdk.cli import _demo

    monkeypatch.setattr(_demo, "_is_terminal", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    before = requests_to(elsewhere)
    code = main(
        ["demo", "--base-url", elsewhere.url, "--api-key", elsewhere.api_key, "--user-id", "7917"]
    )
    out, err = capsys.readouterr()
    assert code == 2
    assert f"Warning: the demo creates real objects on {elsewhere.url}" in out
    assert "Go ahead? [y/N]" in out
    assert err == "error: the demo was not confirmed: nothing was sent\n"
    assert requests_to(elsewhere) == before


@pytest.mark.usefixtures("clean_env")
def test_a_named_service_with_yes_runs_the_flow_there(
    elsewhere: SandboxServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--base-url URL --yes: the flow runs against that service, as --user-id."""
    before = requests_to(elsewhere)
    code = main([*demo_against(elsewhere, tmp_path), "--yes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"the whole flow against {elsewhere.url}" in out
    assert "tenant signed" in out
    assert requests_to(elsewhere) > before


@pytest.mark.usefixtures("clean_env")
def test_a_terminal_that_says_yes_runs_the_flow(
    elsewhere: SandboxServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A "y" typed at the prompt goes ahead."""
    from contractsdk.cli import _demo

    monkeypatch.setattr(_demo, "_is_terminal", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code = main(demo_against(elsewhere, tmp_path))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Go ahead? [y/N]" in out and f"the whole flow against {elsewhere.url}" in out


def test_demo_help_says_where_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """`demo --help` says the variables are ignored, and how to name a service (--yes)."""
    assert main(["demo", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "never reads CONTRACTSDK_BASE_URL or CONTRACTSDK_ENVIRONMENT" in out
    assert "--base-url or --environment" in out
    assert "--yes" in out
