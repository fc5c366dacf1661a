"""The SDK's errors in the command line's words: the option given, or the variable read.

The Python API's messages name its parameters (``base_url must be …``, ``pass api_key=``),
which is right for a caller of ``ContractClient(...)``: they typed them. On the command
line the user typed ``--base-url``, or set ``CONTRACTSDK_BASE_URL``; :func:`reword` names
that instead. It runs in one place, as an error leaves a command
(:meth:`~contractsdk.cli._app.Invocation.run`), so the SDK keeps its words for Python.

Only names change. The SDK's messages quote no secret (its checks never quote an API key, a
client secret or a Redis URL, and what they do quote is scrubbed of the credentials the
client holds when the error is made); a rewording adds only the names of options and
variables.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Final

from contractsdk._config import ENV_VARS

__all__ = ["reword"]

#: Python parameters a message starts with ("base_url must be …", "client_id is empty",
#: "idempotency_key is empty", "match_term must be …"), each a setting or an option.
_LEADING: Final = re.compile(
    r"^(base_url|client_id|client_secret|idempotency_key|first_name|last_name|email|match_term)\b"
)

#: The SDK's phrases that speak Python (the pattern), and the command line's (``{setting}``
#: is the option, or the variable its value came from). Each is applied once, in order.
_REWORDINGS: Final = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        # check_base_url (_config.py), beyond the name it starts with.
        (
            r"; pass api_key= or credentials= instead$",
            "; give the credential with --api-key, or --client-id and --client-secret",
        ),
        (
            r" \(the version goes in api_version=, '(v[0-9]+)' by default\)$",
            r" (contractsdk adds /\1 itself)",
        ),
        # Environment.from_name.
        (
            r"^unknown environment (.*): use 'sandbox' or 'production', or give base_url= for "
            "anything else$",
            r"unknown environment \1 ({environment}): use 'sandbox' or 'production', or give "
            "--base-url for anything else",
        ),
        # pick_credential (_config.py) and the API key's own check (_credentials.py).
        (
            r"^give either api_key= or credentials=, not both$",
            "give either --api-key or --client-id and --client-secret, not both",
        ),
        (
            r"^the API key (?=is empty|contains a line break|holds a control character)",
            "{api_key} ",
        ),
        # What a 401 tells the user to check (_client.py).
        (r"\(api_key= or CONTRACTSDK_API_KEY\)", "({api_key})"),
        (r"\(CONTRACTSDK_CLIENT_ID, CONTRACTSDK_CLIENT_SECRET\)", "({client_id}, {client_secret})"),
        # What a token endpoint's refusal of the client id and secret tells (_auth.py).
        (
            r"\(client_id= and client_secret= of ClientCredentials, or CONTRACTSDK_CLIENT_ID "
            r"and CONTRACTSDK_CLIENT_SECRET\)",
            "({client_id} and {client_secret})",
        ),
        # SharedRedis (_redis.py): the command line takes a URL only. Neither quotes it.
        (
            r"^redis must be a redis://, rediss:// or unix:// URL, or a .*$",
            "{redis} must be a redis://, rediss:// or unix:// URL",
        ),
        (r"^redis URL not understood:", "redis URL not understood ({redis}):"),
        # contracts create: an empty --idempotency-key.
        (
            r"; give a key, or None for a new one per call$",
            "; give a key, or leave the option out for a new one per call",
        ),
        # contracts update without --template, refused by the service (resources/contracts.py).
        (
            r"; with template_id= the values are checked first",
            "; with --template ID the values are checked first",
        ),
        # bulk create: a creator, team or contract type not found (bulk/_targets.py).
        (r"^(user [0-9]+, who is to create the contracts) \(created_by\)", r"\1 ({created_by})"),
        (r"^(team [0-9]+, where the contracts are to be made) \(team_id\)", r"\1 (--team)"),
        (r"^(contract type [0-9]+) \(contract_type_id\)", r"\1 (--contract-type)"),
    )
)


class _Names(dict[str, str]):
    """The name each setting goes by on this command line (for ``str.format_map``).

    A connection setting not given as an option, whose ``CONTRACTSDK_*`` variable is set,
    came from that variable (the client reads it); anything else is its option.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args

    def __missing__(self, setting: str) -> str:
        option = "--" + setting.replace("_", "-")
        variable = ENV_VARS.get(setting)
        if variable is None or getattr(self.args, setting, None) is not None:
            return option
        return variable if os.environ.get(variable) else option


def reword(message: str, args: argparse.Namespace) -> str:
    """Say an error's message in the command line's words.

    Args:
        message: The message as the SDK wrote it.
        args: The command's arguments: which connection settings were given as options.

    Returns:
        The message naming the options (``--base-url``) or variables
        (``CONTRACTSDK_BASE_URL``) the user gave, where it named Python parameters; any
        other message as it was.
    """
    names = _Names(args)
    message = _LEADING.sub(lambda found: names[found[1]], message, count=1)
    for pattern, replacement in _REWORDINGS:
        message = pattern.sub(replacement.format_map(names), message, count=1)
    return message
