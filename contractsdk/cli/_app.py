"""The command tree on click: the root group, its connection options, and how commands run.

Parsing and running are apart. :func:`parse` reads the command line and returns an
:class:`Invocation` (the command's coroutine function and its arguments), or the exit code
when there is nothing to run (help, ``--version``, a usage error, the sandbox). ``main``
runs the invocation in a new event loop; tests ``await invocation.run()`` in theirs.

The connection options (``--environment`` … ``--redis``, ``--json``, ``-v``) are defined
once, on the root group, and shown once in ``contractsdk --help``. Every command that
talks to the service also accepts them after its name, as hidden options, so that
``contractsdk users get 7 --json`` works as well as ``contractsdk --json users get 7``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
import click

from contractsdk._exceptions import ConfigurationError, ContractSDKError
from contractsdk._ids import INT64_MAX, parse_id
from contractsdk._logging import logger
from contractsdk._redact import scrub
from contractsdk.cli._errors import reword
from contractsdk.cli._output import console

__all__ = [
    "CONNECTION",
    "Invocation",
    "argument",
    "cli",
    "numeric_id",
    "parse",
    "runs",
]

#: What a command's coroutine function takes and returns (its exit code, None for 0).
Handler = Callable[[argparse.Namespace], Awaitable[int | None]]

#: The connection options' names, as the handlers read them from their arguments.
CONNECTION = (
    "environment",
    "base_url",
    "api_key",
    "client_id",
    "client_secret",
    "redis",
    "json",
    "verbose",
)

CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
#: The variable click reads to print a shell's completion script (``bash_source`` …).
COMPLETE_VAR = "_CONTRACTSDK_COMPLETE"


class Group(click.Group):
    """A group whose commands list in the order they were added."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands in the order they were added (the order they are explained)."""
        return list(self.commands)


Group.group_class = Group


def argument(*decls: str, help: str, **kwargs: Any) -> Callable[[Any], Any]:
    """Declare a positional argument; its help is listed under "Positional arguments"."""
    return click.argument(*decls, help=help, **kwargs)


class _NumericId(click.ParamType):  # type: ignore[type-arg]  # generic in newer click only
    name = "ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            return parse_id(value, "the id")
        except ConfigurationError:
            if not (isinstance(value, str) and value.isascii() and value.isdigit()):
                self.fail(f"expected a numeric id, got {value!r}", param, ctx)
            shown = repr(value) if len(value) <= 40 else f"a number of {len(value)} digits"
            self.fail(f"expected an id of at most {INT64_MAX} (an int64), got {shown}", param, ctx)


#: A numeric id, as :func:`~contractsdk._ids.parse_id` reads one (ASCII digits, an int64):
#: ``../admin`` and a 30-digit number are usage errors (exit 2), before anything is sent.
numeric_id = _NumericId()


@attrs.frozen
class Invocation:
    """A parsed command, ready to run.

    Attributes:
        handler: The command's coroutine function.
        args: Its arguments, the connection options merged in (not in the repr: they hold
            ``--api-key``, ``--client-secret`` and a ``--redis`` URL's password).
    """

    handler: Handler
    args: argparse.Namespace = attrs.field(repr=False)

    async def run(self) -> int:
        """Run the command in the current event loop and return its exit code.

        Raises:
            ContractSDKError: What the command raised, naming the options or variables the
                user gave rather than the Python API's parameters (:func:`reword`).
        """
        with _request_log(self.args.verbose):
            try:
                return await self.handler(self.args) or 0
            except ContractSDKError as error:
                # Only its words change: its class (the exit code), its attributes and its
                # traceback stay, as _send does with a 401's hint.
                reworded = reword(error.message, self.args)
                if reworded != error.message:
                    error.args = (reworded, *error.args[1:])
                raise

    def run_sync(self) -> int:
        """Run the command in a new event loop and return its exit code."""
        return asyncio.run(self.run())


class _RequestLog(logging.Handler):
    """Shows the client's own DEBUG lines (method, path, status, time; never a secret)."""

    def __init__(self, verbose: int) -> None:
        super().__init__(logging.DEBUG)
        self.verbose = verbose

    def emit(self, record: logging.LogRecord) -> None:
        message = scrub(record.getMessage())  # as all that a command prints (see _output)
        if self.verbose < 2 and message.startswith("→"):  # -v: answers and retries only
            return
        console(stderr=True).print(message, style="dim", markup=False)


class _request_log:  # noqa: N801  # used as a context manager, named like one
    """Installs :class:`_RequestLog` on the ``contractsdk`` logger for one command."""

    def __init__(self, verbose: int) -> None:
        self.verbose = verbose
        self.handler: _RequestLog | None = None
        self.level = logger.level

    def __enter__(self) -> None:
        if self.verbose:
            self.handler = _RequestLog(self.verbose)
            logger.addHandler(self.handler)
            logger.setLevel(logging.DEBUG)

    def __exit__(self, *exc: object) -> None:
        if self.handler is not None:
            logger.removeHandler(self.handler)
            logger.setLevel(self.level)


def _connection_options(*, hidden: bool, json_output: bool = True) -> list[click.Option]:
    """The connection options: shown on the root group, hidden on each command."""

    def option(*decls: str, **kwargs: Any) -> click.Option:
        return click.Option(list(decls), hidden=hidden, **kwargs)

    options = [
        option(
            "--environment",
            metavar="NAME",
            help="sandbox or production (CONTRACTSDK_ENVIRONMENT; default sandbox). A base "
            "URL (--base-url, or CONTRACTSDK_BASE_URL if exported) still decides where "
            "requests go, with this environment's rules; a note says when the variable does.",
        ),
        option(
            "--base-url", metavar="URL", help="Serve the API from this URL (CONTRACTSDK_BASE_URL)."
        ),
        option(
            "--api-key",
            metavar="KEY",
            help="An API key. Prefer CONTRACTSDK_API_KEY: a flag is visible to other users.",
        ),
        option("--client-id", metavar="ID", help="OAuth client id (CONTRACTSDK_CLIENT_ID)."),
        option(
            "--client-secret",
            metavar="SECRET",
            help="OAuth client secret. Prefer CONTRACTSDK_CLIENT_SECRET.",
        ),
        option(
            "--redis",
            metavar="URL",
            help="Share rate limits and tokens with other processes through this Redis "
            '(--redis "": share nothing, whatever CONTRACTSDK_REDIS_URL says). Prefer '
            "CONTRACTSDK_REDIS_URL if it holds a password: a flag is visible to other users.",
        ),
        option(
            "-v",
            "--verbose",
            count=True,
            help="Show each request's answer: method, path, status, time (-vv: requests too).",
        ),
    ]
    if json_output:
        options.append(option("--json", is_flag=True, help="Print JSON instead of tables."))
    return options


def _connection_epilog(options: list[click.Option]) -> str:
    """Under each command's help: the connection options it takes but does not list."""
    flags = ", ".join(min(option.opts, key=len) for option in options)
    return f"Also the connection options of contractsdk -h: {flags}."


def runs(
    group: click.Group, name: str, *, json_output: bool = True
) -> Callable[[Handler], click.Command]:
    """Register a coroutine function as the command ``name`` of ``group``.

    Its help is the function's docstring; its parameters come from the click decorators
    under this one. It also takes the connection options after its name (hidden).

    Args:
        group: The group the command belongs to.
        name: The command's name.
        json_output: Whether the command prints JSON with ``--json``.
    """

    def decorate(handler: Handler) -> click.Command:
        params: list[click.Parameter] = list(reversed(getattr(handler, "__click_params__", [])))

        def callback(**values: Any) -> Invocation:
            return _invocation(handler, values, json_output=json_output)

        connection = _connection_options(hidden=True, json_output=json_output)
        # Taken even where there is no JSON output (and not listed): `demo --json` is told
        # so, as `--json demo` is, not "no such option".
        refused = [] if json_output else [click.Option(["--json"], is_flag=True, hidden=True)]
        command = click.Command(
            name,
            callback=callback,
            params=[*params, *connection, *refused],
            help=handler.__doc__,
            epilog=_connection_epilog(connection),
            context_settings=CONTEXT,
        )
        group.add_command(command)
        return command

    return decorate


def _invocation(handler: Handler, values: dict[str, Any], *, json_output: bool) -> Invocation:
    """Merge the root group's connection options with those given after the command."""
    root = click.get_current_context().find_root().params
    settings = {name: root.get(name) for name in CONNECTION}
    for name in CONNECTION:
        value = values.pop(name, None)
        if name == "verbose":
            settings[name] = (settings[name] or 0) + (value or 0)
        elif value:
            settings[name] = value
    if settings["json"] and not json_output:
        raise click.UsageError("this command has no JSON output; leave out --json")
    settings["json"] = bool(settings["json"])
    return Invocation(handler, argparse.Namespace(**settings, **values))


@click.group(
    cls=Group,
    context_settings=CONTEXT,
    epilog="Connection options may also follow the command's name. Shell completion: "
    'eval "$(_CONTRACTSDK_COMPLETE=bash_source contractsdk)" (zsh_source, fish_source).',
)
@click.version_option(
    package_name="contractsdk", prog_name="contractsdk", message="%(prog)s %(version)s"
)
def cli(**_options: Any) -> None:
    """The Contract Service API (Legislate) from the command line.

    Settings not given as options come from the CONTRACTSDK_* variables, as for
    ContractClient(). Exit codes: 0 done, 1 the service or network failed, 2 bad usage or
    configuration, 3 values failed validation (contract terms, identity fields, bulk
    rows), 130 interrupted (Ctrl-C), 143 a bulk job stopped by SIGTERM.
    """


cli.params.extend(_connection_options(hidden=False))


@runs(cli, "demo", json_output=False)
@click.option("--seed", type=int, default=0, show_default=True, help="The emulator's data seed.")
@click.option(
    "--pdf",
    metavar="PATH",
    help="Where to write the signed contract's PDF (default contract-<id>.pdf).",
)
@click.option(
    "--user-id",
    type=numeric_id,
    help="The user to act as against a real service (or CONTRACTSDK_USER_ID).",
)
@click.option(
    "--yes",
    is_flag=True,
    help="With --base-url or --environment: create the demo's objects on that service "
    "without asking (otherwise asked on a terminal, refused elsewhere).",
)
async def demo(args: argparse.Namespace) -> int:
    """Walk the whole flow against the embedded emulator.

    From the user to a contract, its parties, their signatures and the signed PDF. No
    credentials needed: the emulator runs in-process on a free loopback port, whatever the
    CONTRACTSDK_* variables say (the demo never reads CONTRACTSDK_BASE_URL or
    CONTRACTSDK_ENVIRONMENT).

    To run it against a real service instead, name it on this command line with --base-url
    or --environment, as --user-id, and confirm: the demo creates a team (if the user has
    none), a contract, a new user, two parties and their signatures there, and they stay.
    It asks first on a terminal; elsewhere it needs --yes.
    """
    from contractsdk.cli._demo import run_demo

    return await run_demo(args)


@cli.command(
    "sandbox",
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@argument(
    "args",
    nargs=-1,
    type=click.UNPROCESSED,
    help="The emulator's options (contractsdk sandbox -h).",
)
def sandbox(args: Sequence[str]) -> int:
    """Run the emulator of the service (see contractsdk sandbox -h)."""
    return run_sandbox(list(args))


def run_sandbox(args: list[str]) -> int:
    """Run the emulator with its own options; its help is shown as ``contractsdk sandbox``."""
    from contractsdk.sandbox import _cli as sandbox_cli  # its parser, to name it right

    try:
        return sandbox_cli.main(args, prog="contractsdk sandbox")
    except SystemExit as exit:  # argparse's help (0) and usage errors (2)
        return exit.code if isinstance(exit.code, int) else 1


def parse(argv: Sequence[str]) -> Invocation | int:
    """Read a command line: the command to run, or the exit code when nothing is left to run.

    Help, ``--version`` and usage errors are printed here (usage errors exit 2); the
    sandbox runs here (it has its own event loop and exit codes).

    Raises:
        ConfigurationError: A setting is wrong in a way only a command can tell.
    """
    # Register the commands (importing them is what adds them to the tree).
    from contractsdk.cli import _bulk, _parties, _resources  # noqa: F401

    arguments = list(argv)
    # No arguments: the help, as `contractsdk -h` shows it; unless the shell asks for its
    # completion script (`_CONTRACTSDK_COMPLETE=bash_source contractsdk`), which click
    # answers from the environment.
    if not arguments and COMPLETE_VAR not in os.environ:
        click.echo(cli.get_help(click.Context(cli, info_name="contractsdk", **CONTEXT)))
        return 0
    if arguments[:1] == ["sandbox"]:  # its options are the emulator's, --help included
        return run_sandbox(arguments[1:])
    try:
        result = cli.main(arguments, prog_name="contractsdk", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:  # pragma: no cover - standalone_mode=False returns it
        return exc.exit_code
    except click.Abort:
        raise KeyboardInterrupt from None
    except SystemExit as exc:  # shell completion ends with sys.exit
        return exc.code if isinstance(exc.code, int) else 0
    if isinstance(result, Invocation | int):
        return result
    return 0


def require(condition: bool, message: str) -> None:
    """Raise a :class:`ConfigurationError` (exit 2) when ``condition`` is false."""
    if not condition:
        raise ConfigurationError(message)
