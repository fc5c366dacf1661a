"""The ``contractsdk`` command: the demo, the emulator, the resources and bulk jobs.

Configuration comes from flags or the ``CONTRACTSDK_*`` variables (as for
:class:`~contractsdk.ContractClient`). Output is a table for people, or JSON with
``--json``. An expected error is one clear line on stderr and a non-zero exit code, never a
traceback and never a secret.

Exit codes: 0 success, 1 the service or the network failed, 2 bad usage or configuration,
3 contract values failed validation, 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Sequence

from contractsdk._exceptions import ConfigurationError, ContractSDKError, TermValidationError
from contractsdk.cli import _bulk, _resources

__all__ = ["build_parser", "main"]

Command = Callable[[argparse.Namespace], Awaitable[int | None]]


def _connection_options() -> argparse.ArgumentParser:
    """Flags every command that talks to the service accepts, before or after its name."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("connection (default: the CONTRACTSDK_* variables)")
    suppress = argparse.SUPPRESS
    group.add_argument("--environment", default=suppress, help="sandbox or production")
    group.add_argument("--base-url", default=suppress, help="serve the API from this URL")
    group.add_argument(
        "--api-key",
        default=suppress,
        help="an API key (prefer CONTRACTSDK_API_KEY: a flag is visible to other users)",
    )
    group.add_argument("--client-id", default=suppress, help="OAuth client id")
    group.add_argument(
        "--client-secret", default=suppress, help="OAuth secret (prefer the variable)"
    )
    group.add_argument(
        "--redis",
        metavar="URL",
        default=suppress,
        help="share rate limits and tokens with other processes through this Redis "
        "(CONTRACTSDK_REDIS_URL)",
    )
    group.add_argument("--json", action="store_true", default=suppress, help="print JSON")
    return common


def build_parser() -> argparse.ArgumentParser:
    """Return the parser of the whole command line."""
    common = _connection_options()
    parser = argparse.ArgumentParser(
        prog="contractsdk",
        description="The Contract Service API from the command line.",
        parents=[common],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        parents=[common],
        help="walk the whole flow against the embedded emulator (or a real environment)",
    )
    demo.add_argument("--seed", type=int, default=0, help="the emulator's seed")
    demo.add_argument(
        "--pdf",
        metavar="PATH",
        help="where to write the signed contract's PDF (contract-<id>.pdf)",
    )
    demo.add_argument(
        "--user-id",
        type=int,
        help="the user to act as against a real environment (or CONTRACTSDK_USER_ID)",
    )
    demo.set_defaults(handler=_lazy("contractsdk.cli._demo", "run_demo"))

    sandbox = commands.add_parser("sandbox", help="run the emulator of the service", add_help=False)
    sandbox.add_argument("args", nargs=argparse.REMAINDER, help="see `contractsdk sandbox -h`")
    sandbox.set_defaults(handler=None)

    _resources.add_commands(commands, common)
    _bulk.add_commands(commands, common)
    return parser


def _lazy(module: str, name: str) -> Command:
    """Import a command's module only when it runs (keeps `contractsdk --help` fast)."""

    async def command(args: argparse.Namespace) -> int | None:
        import importlib

        function: Command = getattr(importlib.import_module(module), name)
        return await function(args)

    return command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["sandbox"]:  # the emulator parses its own flags, --help included
        from contractsdk.sandbox import run_main

        return run_main(arguments[1:])
    args = build_parser().parse_args(arguments)
    try:
        return asyncio.run(args.handler(args)) or 0
    except TermValidationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ContractSDKError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`contractsdk … | head`): stop quietly, as the Python docs
        # advise, pointing stdout at devnull so the interpreter's final flush cannot fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
