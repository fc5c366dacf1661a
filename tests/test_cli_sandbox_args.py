"""`contractsdk sandbox`'s arguments: a port out of range, the defaults, a wildcard host."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from contractsdk import ContractClient
from contractsdk.cli import main
from contractsdk.sandbox import SandboxServer, run_main
from contractsdk.sandbox._cli import _describe


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


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("0.0.0.0", "127.0.0.1"),
        ("", "127.0.0.1"),
        pytest.param(
            "::",
            "[::1]",
            marks=pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback"),
        ),
    ],
)
async def test_a_wildcard_host_prints_a_url_this_machine_can_use(host: str, loopback: str) -> None:
    """`--host 0.0.0.0` (or `::`, or empty): the URL printed is the loopback one, which works.

    It printed `export CONTRACTSDK_BASE_URL=http://0.0.0.0:8095`, which the SDK refuses
    ("plain http to a remote host"); the banner now says it listens on all interfaces.
    """
    async with SandboxServer(host, 0) as server:
        text = _describe(server)
        exported = dict(re.findall(r"export (CONTRACTSDK_\w+)=(\S+)", text))
        base_url = exported["CONTRACTSDK_BASE_URL"]
        assert re.fullmatch(rf"http://{re.escape(loopback)}:\d+", base_url), base_url
        assert base_url == server.url
        assert f"URL           {base_url}\n" in text
        assert f"POST {base_url}/oauth/token" in text
        listening = next(line for line in text.splitlines() if "Listening on" in line)
        assert "all " in listening and "interfaces" in listening
        assert "this machine's address" in listening
        assert "0.0.0.0" not in text
        user = server.users[0]
        async with ContractClient(api_key=exported["CONTRACTSDK_API_KEY"], base_url=base_url) as c:
            assert (await c.users.get(user.id)).id == user.id


async def test_a_loopback_host_says_nothing_of_other_interfaces() -> None:
    """The default host (127.0.0.1) prints its URL as before, without a "Listening on" line."""
    async with SandboxServer("127.0.0.1", 0) as server:
        text = _describe(server)
    assert "Listening on" not in text
    assert "all interfaces" not in text


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read {path}: No such file or directory"),
        (b"\xff\xfe", "cannot read {path}: it is not UTF-8 text"),
        (b"{", "{path} is not JSON: Expecting property name enclosed in double quotes: "),
        (
            b'{"route": "*"}',
            '{path} must hold a JSON list of fault rules, or an object with one under "rules"',
        ),
        (b"[1]", "{path}: rule 1 must be a JSON object, got a number"),
        (b'{"rules": [{}, {"route": 5}]}', "{path}: rule 2: route must be a string"),
        (
            b'[{"route": "*", "status_500": 2}]',
            "{path}: rule 1: status_500 must be a probability in [0, 1], got 2.0",
        ),
    ],
)
def test_a_faults_file_that_cannot_be_used_is_a_usage_error_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, said: str
) -> None:
    """Exit 2, one error line that names --faults and the file, and says what is wrong.

    A missing file said only "[Errno 2] No such file or directory: '/nope.json'", and an
    object without "rules" said "'rules'".
    """
    path = tmp_path / "faults.json"
    if content is not None:
        path.write_bytes(content)
    assert main(["sandbox", "--port", "0", "--faults", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith(f"contractsdk sandbox: error: --faults: {said.format(path=path)}"), err


def test_a_faults_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder given as --faults is named with the system's reason."""
    assert main(["sandbox", "--faults", str(tmp_path)]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == f"contractsdk sandbox: error: --faults: cannot read {tmp_path}: Is a directory"
