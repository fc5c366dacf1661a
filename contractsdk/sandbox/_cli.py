"""``python -m contractsdk.sandbox``: run the emulator until Ctrl-C.

:func:`main` takes an ``argv`` list and returns an exit status, so the SDK's own CLI can
reuse it as ``contractsdk sandbox ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import json
import signal
import sys
from typing import TextIO

from ._config import SandboxConfig
from ._faults import FaultRule
from ._server import SandboxServer

_UNLIMITED = ("none", "unlimited", "off", "inf")
#: The largest TCP port.
MAX_PORT = 65535


def _rate(text: str) -> float | None:
    if text.strip().lower() in _UNLIMITED:
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'none', got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("a rate must be positive (or 'none' for unlimited)")
    return value


def _port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: a free one); anything else is a usage error (exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= MAX_PORT:
        raise argparse.ArgumentTypeError(
            f"a port must be 0 to {MAX_PORT} (0 picks a free one), got {value}"
        )
    return value


def build_parser(prog: str = "python -m contractsdk.sandbox") -> argparse.ArgumentParser:
    """Build the argument parser; its help shows each option's default.

    Args:
        prog: The program name shown in the usage line.

    Returns:
        The parser.
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run a local emulator of the Contract Service API (Legislate) for "
        "tests, demos and benchmarks. Its credentials are emulator-only.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=8080,
        help="port, 0 to 65535; 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the data and credentials (default: %(default)s)",
    )
    parser.add_argument(
        "--read-rate",
        type=_rate,
        default=25.0,
        help="reads/s per credential, or 'none' for unlimited (default: %(default)g)",
    )
    parser.add_argument(
        "--write-rate",
        type=_rate,
        default=25.0,
        help="writes/s per credential, or 'none' for unlimited (default: %(default)g)",
    )
    parser.add_argument(
        "--burst",
        type=float,
        default=None,
        help="bucket size in requests (default: one second's worth of the rate)",
    )
    parser.add_argument(
        "--no-rate-headers",
        action="store_true",
        help="do not send Retry-After / X-RateLimit-* (the real service documents none; "
        "default: sent)",
    )
    parser.add_argument(
        "--token-ttl",
        type=float,
        default=3600.0,
        help="OAuth token lifetime in seconds (default: %(default)g)",
    )
    parser.add_argument(
        "--faults",
        metavar="FILE",
        help='JSON file with fault rules: [{"route": "POST /v1/teams/*/contracts", '
        '"status_503": 0.05}] (default: none)',
    )
    parser.add_argument(
        "--access-log", action="store_true", help="log every request (default: off)"
    )
    return parser


def _kind(value: object) -> str:
    """What a JSON value is, in JSON's words (for a message)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def read_faults(path: str) -> tuple[FaultRule, ...]:
    """Read a ``--faults`` file: a JSON list of rules, or an object with one under "rules".

    Args:
        path: The file, as given on the command line.

    Returns:
        The rules, in the file's order.

    Raises:
        ValueError: The file cannot be read, is not JSON, or its rules are not ones
            :meth:`FaultRule.from_json` takes; the message says which, and names the file
            (and the rule, counted from 1), not the option.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"cannot read {path}: it is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError as exc:  # JSONDecodeError: where, in its own words
        raise ValueError(f"{path} is not JSON: {exc}") from None
    rules = data.get("rules") if isinstance(data, dict) else data
    if not isinstance(rules, list):
        raise ValueError(
            f'{path} must hold a JSON list of fault rules, or an object with one under "rules" '
            '(e.g. [{"route": "POST /v1/teams/*/contracts", "status_503": 0.05}])'
        )
    faults = []
    for number, rule in enumerate(rules, 1):
        if not isinstance(rule, dict):
            raise ValueError(f"{path}: rule {number} must be a JSON object, got {_kind(rule)}")
        try:
            faults.append(FaultRule.from_json(rule))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: rule {number}: {exc}") from None
    return tuple(faults)


def _interfaces(server: SandboxServer) -> str:
    """The line saying that a server on a wildcard host is reachable from elsewhere too."""
    loopback = server.url.split("//", 1)[1].rsplit(":", 1)[0]
    family = "IPv6 " if loopback.startswith("[") else ""  # ``::`` listens on IPv6 only
    return (
        f"all {family}interfaces: from another machine, use this machine's address "
        f"instead of {loopback}"
    )


def _fault_lines(server: SandboxServer) -> list[str]:
    """The fault rules in force, one line each (none: no line): a run with faults says so."""
    lines = []
    for index, rule in enumerate(server.faults):
        shown = rule.to_json()
        what = [
            f"{name} {value:g}"
            for name, value in shown.items()
            if name not in ("route", "latency") and value
        ]
        low, high = shown["latency"]
        if high:
            what.append(f"latency {low:g}-{high:g} s" if low != high else f"latency {low:g} s")
        head = "  Faults        " if index == 0 else "                "
        lines.append(f"{head}{rule.route}: {', '.join(what) or 'none'}")
    return lines


def _describe(server: SandboxServer) -> str:
    limits = server.limits

    def rate(value: float | None) -> str:
        return "unlimited" if value is None else f"{value:g}/s"

    burst = "one second's worth" if limits.burst is None else f"{limits.burst:g}"
    lines = [
        "Contract Service sandbox emulator (contractsdk) - emulator-only credentials, "
        "not real secrets",
        "",
        f"  URL           {server.url}",
        *([f"  Listening on  {_interfaces(server)}"] if server.all_interfaces else []),
        f"  API keys      {server.api_keys[0]}",
        *(f"                {key}" for key in server.api_keys[1:]),
        f"  OAuth token   POST {server.token_url}  (grant_type=client_credentials)",
        f"  client_id     {server.client_id}",
        f"  client_secret {server.client_secret}",
        f"  Admin token   {server.admin_token}  (for {server.url}/__sandbox/)",
        f"  Rate limits   read {rate(limits.read_rate)}, write {rate(limits.write_rate)}, "
        f"burst {burst}, headers {'on' if limits.rate_headers else 'off'}",
        f"  Seed          {server.seed.seed}",
        *_fault_lines(server),
        "",
        "Users (id, name, email, teams):",
    ]
    teams = {t.id: t for t in server.teams}
    for user in server.users:
        memberships = ", ".join(
            f"{tid} {teams[tid].name} ({'owner' if user.id in teams[tid].owner_ids else 'member'})"
            for tid in user.team_ids
        )
        lines.append(f"  {user.id}  {user.full_name:<18} {user.email:<30} teams: {memberships}")
    lines += ["", "Contract types (id, name, template ids newest first):"]
    for ctype in server.seed.catalog.types:
        scope = (
            "" if ctype.team_ids is None else f"  (team {', '.join(map(str, ctype.team_ids))} only)"
        )
        templates = ", ".join(map(str, ctype.template_ids))
        lines.append(f"  {ctype.id}  {ctype.name:<36} templates {templates}{scope}")
    first = server.users[0]
    lines += [
        "",
        "To use it from contractsdk (the CLI, ContractClient(), the docs' examples), paste:",
        f"  export CONTRACTSDK_BASE_URL={server.url}",
        f"  export CONTRACTSDK_API_KEY={server.api_key}",
        f"  export CONTRACTSDK_USER_ID={first.id}",
        "",
        "Try:",
        f'  curl -H "Authorization: Bearer {server.api_key}" {server.url}/v1/users/{first.id}',
        "",
        "Press Ctrl-C to stop.",
    ]
    return "\n".join(lines) + "\n"


async def _serve(server: SandboxServer, out: TextIO) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Not available on Windows or outside the main thread: Ctrl-C then arrives as
        # KeyboardInterrupt from asyncio.run, which main() catches.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    async with server:
        out.write(_describe(server))
        out.flush()
        await stop.wait()


def main(argv: list[str] | None = None, *, prog: str = "python -m contractsdk.sandbox") -> int:
    """Run the emulator until interrupted.

    Args:
        argv: The arguments (without the program name); None reads ``sys.argv``.
        prog: The program's name in usage lines and errors (``contractsdk sandbox``).

    Returns:
        The exit status: 0 after Ctrl-C or SIGTERM, 1 when the server cannot start (a
        port taken: one line suggesting ``--port 0``).

    Raises:
        SystemExit: Bad arguments (a port outside 0 to 65535 …), status 2, after argparse's
            usage and error lines; ``-h``, status 0.
    """
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    faults: tuple[FaultRule, ...] = ()
    if args.faults:
        try:
            faults = read_faults(args.faults)
        except ValueError as exc:
            parser.error(f"--faults: {exc}")
    try:
        config = SandboxConfig(
            seed=args.seed,
            read_rate=args.read_rate,
            write_rate=args.write_rate,
            burst=args.burst,
            rate_headers=not args.no_rate_headers,
            token_ttl=args.token_ttl,
            faults=faults,
        )
    except (OSError, ValueError, TypeError, KeyError) as exc:
        parser.error(str(exc))
    server = SandboxServer(args.host, args.port, config=config, access_log=args.access_log)
    try:
        asyncio.run(_serve(server, sys.stdout))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        hint = ""
        if exc.errno in (errno.EADDRINUSE, errno.EACCES) and args.port != 0:
            hint = "; try --port 0 for a free port (it is printed once the emulator starts)"
        sys.stderr.write(
            f"error: cannot start the sandbox on {args.host}:{args.port}: {exc}{hint}\n"
        )
        return 1
    return 0
