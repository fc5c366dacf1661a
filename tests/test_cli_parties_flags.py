"""The parties commands speak of their own flags, not of the Python API's arguments.

``parties add … --value "First Name=Ada"`` without ``--template`` said "without
template_id= a field must be given by its id": the SDK's words for Python callers. The
command line names ``--template`` (and nothing is sent: the check is made before the client
is even built, so no credentials are needed to see it).
"""

from __future__ import annotations

import pytest

from contractsdk.cli import main


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CONTRACTSDK_* setting: the commands must refuse before needing any."""
    for name in ("CONTRACTSDK_BASE_URL", "CONTRACTSDK_API_KEY", "CONTRACTSDK_ENVIRONMENT"):
        monkeypatch.delenv(name, raising=False)


ADD = ["parties", "add", "3332111581032244", "--user", "7917", "--role", "party"]


def test_a_label_without_template_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """One line, exit 2, naming --template and every value given by label."""
    values = ["--value", "First Name=Ada", "--value", "12=x", "--value", "Email=ada@example.com"]
    code = main([*ADD, "--side", "first", *values])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "error: --value 'First Name', 'Email': without --template a field must be given by "
        "its id; give --template ID (the contract's template version) to name fields by "
        "label\n"
    )
    assert "template_id=" not in err


def test_ids_without_template_pass_the_check(capsys: pytest.CaptureFixture[str]) -> None:
    """Values keyed by id need no --template: the command goes on (here to want a key)."""
    code = main([*ADD, "--side", "first", "--value", "12=Ada"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: no credentials")


def test_parties_fields_takes_ids_and_says_where_to_find_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`parties fields` has no --template: it says a field is named by id, and where ids are."""
    code = main(["parties", "fields", "4332111581032244", "--value", "First Name=Ada"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "error: --value 'First Name': a field must be given by its id (`contractsdk parties "
        "identity-fields TEMPLATE_ID --party COLLABORATOR_ID` shows each field's id)\n"
    )


@pytest.mark.parametrize(
    ("role", "side"), [("landlord", "first"), ("Tenant", "second"), ("guarantor", "second")]
)
def test_a_party_s_own_word_for_its_role_is_answered_with_the_side(
    capsys: pytest.CaptureFixture[str], role: str, side: str
) -> None:
    """--role landlord: not a role, and what is meant (--role party --side first)."""
    argv = ["parties", "add", "5", "--user", "7", "--role", role, "--side", side]
    assert main(argv) == 2
    err = capsys.readouterr().err
    word = role.casefold()
    assert f"{role!r} is not a role: a {word} is a party, on the {side} side" in err
    assert f"(--role party --side {side})" in err


def test_a_role_in_capitals_is_the_role(capsys: pytest.CaptureFixture[str]) -> None:
    """--role Party is party: it gets past the option (here to the missing credential)."""
    assert main(["parties", "add", "5", "--user", "7", "--role", "Party", "--side", "first"]) == 2
    err = capsys.readouterr().err
    assert "--role" not in err and "credential" in err.casefold()


async def test_the_emulator_s_key_sent_elsewhere_is_noted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An emulator key bound for the real sandbox: a note, the key never quoted."""
    from contractsdk import ContractClient
    from contractsdk.cli._resources import _note_emulator_key

    key = "sandbox-key-0123456789abcdef"
    async with (
        ContractClient(api_key=key) as real,
        ContractClient(api_key=key, base_url="http://127.0.0.1:8080") as local,
    ):
        _note_emulator_key(key, real)
        note = capsys.readouterr().err
        assert note.startswith("note: the API key looks like one of the embedded emulator's")
        assert real.environment.base_url in note and key not in note
        _note_emulator_key(key, local)  # the emulator's own address: nothing to say
        _note_emulator_key("a-real-key", real)
        assert capsys.readouterr().err == ""
