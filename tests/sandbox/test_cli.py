"""``python -m contractsdk.sandbox``: arguments, the printed banner, and a real run."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

from contractsdk.sandbox import FaultRule, SandboxServer, run_main
from contractsdk.sandbox._cli import _describe, build_parser

ROOT = Path(__file__).resolve().parents[2]


def test_parser_reads_every_option() -> None:
    """All documented options parse; 'none' means unlimited."""
    args = build_parser().parse_args(
        [
            "--host", "0.0.0.0", "--port", "9000", "--seed", "3", "--read-rate", "none",
            "--write-rate", "10", "--burst", "4", "--no-rate-headers", "--token-ttl", "2",
        ]
    )  # fmt: skip
    assert (args.host, args.port, args.seed) == ("0.0.0.0", 9000, 3)
    assert (args.read_rate, args.write_rate, args.burst) == (None, 10.0, 4.0)
    assert args.no_rate_headers
    assert args.token_ttl == 2.0


@pytest.mark.parametrize(
    "argv",
    [["--read-rate", "0"], ["--write-rate", "fast"], ["--burst", "0.5"], ["--token-ttl", "0"]],
)
def test_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Invalid rates, burst or TTL exit with status 2 and a message."""
    with pytest.raises(SystemExit) as exc:
        run_main(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


async def test_banner_lists_the_faults_in_force() -> None:
    """With --faults, the banner says which: a run with lost answers said nothing of them."""
    rules = [
        FaultRule("POST /v1/teams/*/contracts", status_503=0.1, latency=(0.01, 0.02)),
        FaultRule("*", lost=0.05),
    ]
    async with SandboxServer(faults=rules) as server:
        text = _describe(server)
    async with SandboxServer() as plain:
        assert "Faults" not in _describe(plain)
    assert (
        "  Faults        POST /v1/teams/*/contracts: status_503 0.1, latency 0.01-0.02 s\n"
        "                *: lost 0.05\n"
    ) in text


async def test_banner_lists_credentials_users_and_types() -> None:
    """The start-up text gives URL, keys, OAuth client, admin token, users, teams and types."""
    async with SandboxServer() as server:
        text = _describe(server)
        url = server.url
    assert url in text
    for secret in (*server.api_keys, server.client_id, server.client_secret, server.admin_token):
        assert secret in text
    for user in server.users:
        assert str(user.id) in text
        assert user.email in text
    assert "Acme Legal (owner)" in text
    assert f"{server.users[0].personal_team_id} Personal Team (owner)" in text
    assert str(server.seed.catalog.types[0].id) in text
    assert f'curl -H "Authorization: Bearer {server.api_key}" {url}/v1/users/' in text
    exports = dict(re.findall(r"export (CONTRACTSDK_\w+)=(\S+)", text))
    assert exports == {
        "CONTRACTSDK_BASE_URL": url,
        "CONTRACTSDK_API_KEY": server.api_key,
        "CONTRACTSDK_USER_ID": str(server.users[0].id),
    }


async def _read_until(stream: asyncio.StreamReader, pattern: re.Pattern[str]) -> tuple[str, str]:
    seen: list[str] = []
    while True:
        line = (await stream.readline()).decode()
        if not line:
            raise AssertionError("the sandbox exited before printing:\n" + "".join(seen))
        seen.append(line)
        if pattern.search(line):
            return line, "".join(seen)


async def test_module_runs_serves_and_stops(session: aiohttp.ClientSession) -> None:
    """The module starts on a free port, prints its URL and key, serves curl-style calls, stops."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "contractsdk.sandbox", "--port", "0", "--seed", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=ROOT,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        _, text = await asyncio.wait_for(
            _read_until(process.stdout, re.compile(r"Press Ctrl-C")), timeout=30
        )
        url = re.search(r"URL\s+(http://\S+)", text)
        key = re.search(r"API keys\s+(sandbox-key-\S+)", text)
        user = re.search(r"^\s+(\d+)\s+Ada Lovelace", text, re.MULTILINE)
        assert url, text
        assert key, text
        assert user, text
        headers = {"Authorization": f"Bearer {key.group(1)}"}
        async with session.get(f"{url.group(1)}/v1/users/{user.group(1)}", headers=headers) as r:
            assert r.status == 200
            assert (await r.json())["first_name"] == "Ada"
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), timeout=15) == 0
    finally:
        if process.returncode is None:
            process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), timeout=5)
        # Drain and close the pipes so that no transport is left for the GC to warn about.
        await process.communicate()
