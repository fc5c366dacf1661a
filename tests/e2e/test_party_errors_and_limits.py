"""Party endpoints against the emulator: typed errors, signature limits, write rate limits."""

from __future__ import annotations

import asyncio

import pytest

from contractsdk import (
    APIError,
    BadRequestError,
    Collaborator,
    ConfigurationError,
    ConflictError,
    ContractClient,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RateLimits,
    Retries,
    Role,
    Side,
)
from contractsdk.resources.collaborators import MAX_SIGNATURE_BYTES, multipart_file
from contractsdk.sandbox import SandboxServer
from contractsdk.testing import signature_png
from tests._sandboxparties import NDA, SIGNATURE, counters, route_count, template_of

pytestmark = pytest.mark.e2e


def png_of_size(size: int) -> bytes:
    """A valid PNG of exactly ``size`` bytes."""
    base = len(signature_png(padding=1)) - 1
    image = signature_png(padding=size - base)
    assert len(image) == size
    return image


# --- errors --------------------------------------------------------------------------------


async def test_errors_are_typed(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """404, 403, 409 and 400 from the emulator become the SDK's typed errors."""
    client = sandbox_client
    owner, stranger = sandbox_server.users[0], sandbox_server.users[3]
    team = owner.personal_team_id
    template = await template_of(client, team, NDA)
    contract = await client.contracts.create(
        team, template_id=template, created_by=owner.id, values={}
    )
    assert contract.id is not None

    for call in (
        client.collaborators.get(9_999_999),
        client.collaborators.list(9_999_999),
        client.collaborators.delete(9_999_999),
        client.collaborators.sign_with_saved_signature(9_999_999),
        client.identity_fields.list(9_999_999, roles=Role.PARTY, side=Side.FIRST),
        client.companies.create(
            9_999_999, company_name="X Ltd", role="party", side="first", created_by=owner.id
        ),
        client.collaborators.create(
            contract.id, user_id=9_999_999, inviter_id=owner.id, roles="party", side="first"
        ),
    ):
        with pytest.raises(NotFoundError) as not_found:
            await call
        assert not_found.value.status_code == 404 and not_found.value.service_message

    with pytest.raises(PermissionDeniedError) as denied:  # the inviter is not in the team
        await client.collaborators.create(
            contract.id, user_id=owner.id, inviter_id=stranger.id, roles="party", side="first"
        )
    assert denied.value.status_code == 403
    watcher = await client.collaborators.create(
        contract.id, user_id=stranger.id, inviter_id=owner.id, roles="collaborator", side="second"
    )
    assert watcher.id is not None
    with pytest.raises(PermissionDeniedError):  # a bare collaborator does not sign
        await client.collaborators.sign(watcher.id, signature=SIGNATURE)

    signer = await client.collaborators.create(
        contract.id, user_id=owner.id, inviter_id=owner.id, roles="party", side="first"
    )
    assert signer.id is not None
    with pytest.raises(ConflictError):  # the same user twice on a contract
        await client.collaborators.create(
            contract.id, user_id=owner.id, inviter_id=owner.id, roles="signatory", side="first"
        )
    with pytest.raises(ConflictError, match="no saved signature"):
        await client.collaborators.sign_with_saved_signature(signer.id)
    fields = await client.identity_fields.list(template, roles="party", side="first")
    email = fields.find("Email")
    assert email is not None and email.id is not None
    with pytest.raises(BadRequestError, match="not a valid email"):  # update_fields is unchecked
        await client.collaborators.update_fields(signer.id, values={email.id: "nobody"})
    await client.collaborators.sign(signer.id, signature=SIGNATURE)
    with pytest.raises(ConflictError, match="already signed"):
        await client.collaborators.sign(signer.id, signature=SIGNATURE)


async def test_signature_limits_agree(
    sandbox_server: SandboxServer, sandbox_client: ContractClient
) -> None:
    """The SDK and the emulator take the same images: PNG/JPEG of at most 512 KiB.

    What the SDK refuses it refuses before sending; sent anyway (bypassing its check), the
    emulator answers 413 or 415, an APIError with that status.
    """
    client = sandbox_client
    owner = sandbox_server.users[0]
    team = owner.personal_team_id
    template = await template_of(client, team, NDA)
    contract = await client.contracts.create(
        team, template_id=template, created_by=owner.id, values={}
    )
    assert contract.id is not None
    party = await client.collaborators.create(
        contract.id, user_id=owner.id, inviter_id=owner.id, roles="party", side="first"
    )
    assert party.id is not None
    path = f"/collaborators/{party.id}/signature"
    route = "PATCH /v1/collaborators/{collaboratorId}/signature"

    too_large = png_of_size(MAX_SIGNATURE_BYTES + 1)
    gif = b"GIF89a" + b"\x00" * 64
    for image in (too_large, gif):
        with pytest.raises(ConfigurationError):
            await client.collaborators.sign(party.id, signature=image)
    assert route_count(sandbox_server, route) == 0

    for image, status in ((too_large, 413), (gif, 415)):
        body, content_type = multipart_file("file", "signature.png", "image/png", image)
        with pytest.raises(APIError) as caught:
            await client._send_content("PATCH", path, body, content_type)
        assert caught.value.status_code == status
        assert type(caught.value) is APIError  # no narrower class for 413/415
    assert (await client.collaborators.get(party.id)).signed is False

    largest = png_of_size(MAX_SIGNATURE_BYTES)
    assert (await client.collaborators.sign(party.id, signature=largest)).signed is True
    assert sandbox_server.state.signatures[owner.id] == largest


# --- rate limits and retries ---------------------------------------------------------------


#: Users created at once, then as many collaborators at once: each burst is twice the
#: emulator's bucket.
BURST = 4


@pytest.mark.parametrize(
    ("sandbox_options", "paced"),
    [
        # No rate headers, and a limit told to the client three times too high: the
        # limiter learns the real one from 429s, which are retried away.
        ({"write_rate": 50.0, "burst": 2, "read_rate": None, "rate_headers": False}, False),
        # Headers on, the limit unknown to the client: its limiter learns it from them
        # and paces; retries are off.
        ({"write_rate": 30.0, "burst": 2, "read_rate": None, "rate_headers": True}, True),
    ],
    ids=["retried", "paced"],
)
async def test_burst_of_creates_meets_the_write_limit(
    sandbox_server: SandboxServer, paced: bool
) -> None:
    """Over a small write limit, a burst of users and collaborators all succeed.

    No 429 reaches the caller: either the SDK retries it and slows down (``retried``) or
    its limiter, learning the limit from the emulator's headers, never provokes one
    (``paced``, retries off). Each create happens once. (A limit unknown to the client and
    learnt from 429s alone: ``test_unknown_limit_is_learnt_without_failures``.)
    """
    owner = sandbox_server.users[0]
    async with ContractClient(
        api_key=sandbox_server.api_key,
        base_url=sandbox_server.url,
        rate_limits=RateLimits() if paced else RateLimits(write=150.0),
        retries=None if paced else Retries(attempts=10, wait_initial=0.05, wait_max=1.0),
    ) as client:
        template = await template_of(client, owner.personal_team_id, NDA)
        contract = await client.contracts.create(
            owner.personal_team_id, template_id=template, created_by=owner.id, values={}
        )
        assert contract.id is not None
        contract_id = contract.id
        users = await asyncio.gather(
            *(
                client.users.create(
                    email=f"burst{n}@example.org", first_name="Burst", last_name=f"No{n}"
                )
                for n in range(BURST)
            )
        )

        async def add(user_id: int | None) -> Collaborator:
            assert user_id is not None
            return await client.collaborators.create(
                contract_id, user_id=user_id, inviter_id=owner.id, roles="party", side="second"
            )

        added = await asyncio.gather(*(add(user.id) for user in users))
        listed = await client.collaborators.list(contract_id)
        stats = client.stats
    assert {c.id for c in listed} == {c.id for c in added}
    assert len(listed) == BURST and len({c.user_id for c in listed}) == BURST
    seen = counters(sandbox_server)
    assert seen["by_status"].get("201") == 1 + BURST + BURST
    assert stats.responses.get(429, 0) == seen["rate_limited"]
    if paced:
        assert seen["rate_limited"] == 0
        assert client.rate_limits is not None and client.rate_limits.write.server_limit == 30.0
    else:
        # Concurrent writes at three times the limit against a bucket of 2: the emulator
        # refused some, and every refusal was retried away by the SDK.
        assert seen["rate_limited"] >= 1
        assert stats.retries == seen["rate_limited"]


@pytest.mark.parametrize("sandbox_options", [{"write_rate": 1.0, "burst": 1, "read_rate": None}])
async def test_write_limit_without_retries_reaches_the_caller(
    sandbox_server: SandboxServer,
) -> None:
    """The same limit with retries off: the second quick create is a RateLimitError."""
    owner, other = sandbox_server.users[0], sandbox_server.users[1]
    async with ContractClient(
        api_key=sandbox_server.api_key, base_url=sandbox_server.url, rate_limits=None, retries=None
    ) as client:
        template = await template_of(client, owner.personal_team_id, NDA)  # reads: unlimited
        contract = await client.contracts.create(
            owner.personal_team_id, template_id=template, created_by=owner.id, values={}
        )
        assert contract.id is not None
        with pytest.raises(RateLimitError):
            await client.collaborators.create(
                contract.id, user_id=other.id, inviter_id=owner.id, roles="party", side="first"
            )
