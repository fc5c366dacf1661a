"""`contractsdk sandbox`'s arguments: a port out of range, the help's defaults, a port taken."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from contractsdk.cli import main
from contractsdk.sandbox import run_main


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_a_port_out_of_range_is_a_usage_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 with one error line, as for any bad argument; it was an OverflowError traceback."""
    assert main(["sandbox", "--port", port]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "OverflowError" not in err
    assert err.splitlines()[-1] == (
        "contractsdk sandbox: error: argument --port: a port must be 0 to 65535 "
        f"(0 picks a free one), got {port}"
    )


def test_a_port_that_is_no_number_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """``--port http`` is refused by the parser too (exit 2)."""
    with pytest.raises(SystemExit) as exit:
        run_main(["--port", "http"])
    assert exit.value.code == 2
    assert "expected a port number, got 'http'" in capsys.readouterr().err


def test_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    """`contractsdk sandbox --help` names each default: port 8080, 25/s, token TTL 3600 …."""
    assert main(["sandbox", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for shown in (
        "interface to listen on (default: 127.0.0.1)",
        "0 picks a free one (default: 8080)",
        "(default: 0)",
        "reads/s per credential, or 'none' for unlimited (default: 25)",
        "writes/s per credential, or 'none' for unlimited (default: 25)",
        "(default: one second's worth of the rate)",
        "OAuth token lifetime in seconds (default: 3600)",
    ):
        assert shown in out


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port some other socket listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def test_a_port_taken_suggests_port_0(taken_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    """One error line, exit 1, and the way out: --port 0 (a free port)."""
    assert main(["sandbox", "--port", str(taken_port)]) == 1
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"error: cannot start the sandbox on 127.0.0.1:{taken_port}: ")
    assert lines[0].endswith(
        "; try --port 0 for a free port (it is printed once the emulator starts)"
    )
    assert "Traceback" not in captured.err
