"""``client.contracts``: create, read, change and delete contracts."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from contractsdk._config import check_idempotency_key
from contractsdk._exceptions import (
    BadRequestError,
    ConfigurationError,
    ContractSDKError,
    ResponseValidationError,
)
from contractsdk._http import Response
from contractsdk._ids import parse_id
from contractsdk._logging import logger
from contractsdk._values import iter_fields
from contractsdk.models import Contract, ContractField, Link
from contractsdk.models._base import id_from_href
from contractsdk.resources._base import Id, Resource, path_id
from contractsdk.validation import TermSet, TermValues, unchecked_fields
from contractsdk.validation._payload import CheckedValues

__all__ = ["Contracts", "flatten_fields"]


def flatten_fields(fields: Iterable[Mapping[str, Any]]) -> tuple[ContractField, ...]:
    """Flatten a nested ``fields`` payload into stored fields, parents before children."""
    return tuple(
        [
            ContractField._make(field.get("id"), field.get("name"), field["value"])
            for field in iter_fields(fields)
        ]
    )


def _created_link(response: Response) -> tuple[Link, int]:
    """Read the new contract's URL and id from the create call's Link body or ``Location``.

    service-api.md §5: create endpoints answer with a bare ``Link``; clients read the id from
    its href.
    """
    href: object = None
    try:
        body = response.json() if response.content else None
    except ValueError:
        body = None
    if type(body) is dict or isinstance(body, Mapping):
        href = body.get("href")
        if href is None:  # a HAL-shaped answer: {"_links": {"self": {"href": ...}}}
            links = body.get("_links")
            self_link = links.get("self") if isinstance(links, Mapping) else None
            href = self_link.get("href") if isinstance(self_link, Mapping) else None
    if not isinstance(href, str):
        href = response.headers.get("location")
    contract_id = id_from_href(href) if isinstance(href, str) else None
    if not isinstance(href, str) or contract_id is None:
        request = response.request
        raise ResponseValidationError(
            "the create-contract answer names no contract: no Link href or Location header "
            "ending in an id",
            model="Link",
            errors=["$.href: missing"],
            method=request.method if request else "",
            url=request.path if request else "",
        )
    return Link._make("self", href), contract_id


class Contracts(Resource):
    """Contracts in teams (reference/service-api.md §7, Contracts)."""

    async def create(
        self,
        team_id: Id,
        /,
        *,
        template_id: Id,
        created_by: Id,
        values: TermValues | None = None,
        require_all: bool = False,
        source_contract: int | None = None,
        idempotency_key: str | None = None,
    ) -> Contract:
        """Create a contract from a template version, after validating its values.

        The values are checked against the template's terms (fetched once per template and
        kept by the client) with the exclusive-option rule; nothing is sent when they fail.
        The answer is a Link, so the returned contract holds the id and the values sent;
        call :meth:`get` for the service's dates. A copy (``source_contract``) is read
        back: it also holds the source's values, which were not sent. Its values are
        checked with the source's where they must be (as :meth:`update` checks with the
        contract's): a nested term given without all of its ancestors, or ``require_all``;
        the source is read for that.

        Args:
            team_id: The team that will hold the contract; ``created_by`` must be its owner
                or a member.
            template_id: The template version's id.
            created_by: The id of the user creating it.
            values: ``{term name or id: value}``; values may be str, int, float, Decimal,
                date or datetime and are sent as strings.
            require_all: Also refuse values that leave an applicable term unanswered.
            source_contract: Make the new contract a copy of this contract (sent as
                ``source_contract``, endpoints.md M1); the values given still apply.
            idempotency_key: Your own key (e.g. derived from your record's id), sent as
                ``Idempotency-Key``: 1 to 255 visible ASCII characters. One is generated
                per call otherwise. A service that honours keys makes a repeated call once;
                the Contract Service does not document that it does, so after a failure
                it may have processed (``error.outcome_unknown``) the client sends the call
                again only under ``Retries(trust_idempotency_keys=True)``.

        Raises:
            TermValidationError: The values break the terms (nothing was sent).
            ConfigurationError: A bad ``idempotency_key`` (nothing was sent).
            PermissionDeniedError: ``created_by`` may not create contracts in the team.
        """
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        made = await self._create(
            team_id,
            template_id=template_id,
            created_by=created_by,
            values=values,
            require_all=require_all,
            source_contract=source_contract,
            idempotency_key=idempotency_key,
        )
        if source_contract is None:
            return made
        # Its values were those sent only: the source's (the rest of the copy) were missing.
        assert made.id is not None
        try:
            return await self.get(made.id)
        except ContractSDKError as exc:  # created all the same: its id is not lost
            logger.warning(
                "contract %s was created as a copy of %s, but reading it back failed (%s): "
                "the contract returned holds only the values sent",
                made.id,
                source_contract,
                exc,
            )
            return made

    async def _create(
        self,
        team_id: Id,
        /,
        *,
        template_id: Id,
        created_by: Id,
        values: TermValues | None,
        require_all: bool,
        idempotency_key: str | None,
        trust_key: bool = True,
        source_contract: int | None = None,
        checked: CheckedValues | None = None,
    ) -> Contract:
        """Create a contract as :meth:`create` does.

        With ``trust_key`` False an ambiguous failure is never replayed under the key, for
        callers that reconcile unknown outcomes themselves (the bulk job). With ``checked``
        (what :meth:`TermSet.check` returned for this template) the values are sent as they
        are and ``values`` is ignored: a caller that validated its rows already (the bulk
        job) does not pay for a second check.
        """
        team = parse_id(team_id, "team_id")
        template = parse_id(template_id, "template_id")
        creator = parse_id(created_by, "created_by")
        if checked is None:
            terms = await self._client._term_set(template)
            values = {} if values is None else values
            # A copy holds its source's values too: checked with them, as an update is.
            stored = (
                ()
                if source_contract is None
                else await self._held(
                    parse_id(source_contract, "source_contract"), terms, values, require_all
                )
            )
            # One check gives both forms: the nested fields to send, the flat ones to keep.
            checked = terms.check(values, require_all=require_all, stored=stored)
        body: dict[str, Any] = {
            "created_by_user_id": creator,
            "template_id": template,
            "fields": checked.fields,
        }
        if source_contract is not None:
            body["source_contract"] = parse_id(source_contract, "source_contract")
        response = await self._client._send_json(
            "POST",
            f"/teams/{team}/contracts",
            body,
            idempotency_key=idempotency_key,
            trust_key=trust_key,
        )
        link, contract_id = _created_link(response)
        return Contract._make(
            id=contract_id,
            name=checked.by_name.get("contract_name"),
            created_date=None,  # the answer is a Link: the dates are the service's to tell
            purchased_date=None,
            completed_date=None,
            fields=checked.flat,
            links=(link,),
            raw={"href": link.href, "rel": "self"},
        )

    async def _held(
        self, contract_id: int, terms: TermSet, values: TermValues, require_all: bool
    ) -> tuple[ContractField, ...]:
        """What a contract holds, where checking ``values`` against it needs it, else ().

        Read only for a nested term given without all of its ancestors, or to count what
        is stored for ``require_all``.
        """
        if not (require_all or terms._needs_stored(values)):
            return ()
        return (await self.get(contract_id)).fields

    async def list(self, team_id: Id, /) -> builtins.list[Contract]:
        """Return the contracts held by a team."""
        path = f"/teams/{path_id(team_id, 'team_id')}/contracts"
        return await self._client._get_list(path, Contract)

    async def get(self, contract_id: Id, /) -> Contract:
        """Return one contract."""
        number = parse_id(contract_id, "contract_id")
        contract = await self._client._get(f"/contracts/{number}", Contract)
        return contract if contract.id is not None else attrs.evolve(contract, id=number)

    async def update(
        self,
        contract_id: Id,
        /,
        *,
        values: TermValues,
        template_id: int | None = None,
        require_all: bool = False,
    ) -> Contract:
        """Change a contract's values and return the contract.

        The service merges the values into those the contract holds (inferred: its
        documentation does not say; the emulator does). Its contract JSON
        does not name its template, so the values are checked against the terms only when
        you give ``template_id``; then each nested answer is sent under its chosen option,
        as on create. A nested term may be changed alone: where ``values`` leave out an
        option it goes under, the contract is read first and the stored option is used
        (and checked) instead. Without ``template_id``, each value is sent as a flat
        ``{name, value}`` field, unchecked.

        Args:
            contract_id: The contract's id.
            values: ``{term name or id: value}``.
            template_id: The contract's template version, to validate the values first.
            require_all: With ``template_id``: also refuse applicable terms that neither
                ``values`` nor the contract answer (the contract is read to know).

        Raises:
            ConfigurationError: ``require_all`` without ``template_id`` (no terms to check
                against); nothing is sent.
            TermValidationError: With ``template_id``: the values break the terms.
        """
        number = parse_id(contract_id, "contract_id")
        if require_all and template_id is None:
            raise ConfigurationError(
                "require_all needs template_id: the terms to check the values against"
            )
        fields: builtins.list[dict[str, Any]]
        if template_id is not None:
            terms = await self._client._term_set(parse_id(template_id, "template_id"))
            stored = await self._held(number, terms, values, require_all)
            fields = terms.build_fields(values, require_all=require_all, stored=stored)
        else:
            fields = unchecked_fields(values)
        try:
            contract = await self._client._patch(
                f"/contracts/{number}", Contract, {"fields": fields}
            )
        except BadRequestError as exc:
            if template_id is None:  # sent flat and unchecked: a nested term is refused so
                exc.args = (
                    f"{exc.message}; with template_id= the values are checked first, and a "
                    "nested term is sent under its options (those the contract holds, if "
                    "not given)",
                )
            raise
        return contract if contract.id is not None else attrs.evolve(contract, id=number)

    async def delete(self, contract_id: Id, /) -> None:
        """Delete a contract."""
        await self._client._send_json("DELETE", f"/contracts/{path_id(contract_id, 'contract_id')}")

    async def download_pdf(self, contract_id: Id, /) -> bytes:
        """Return the contract rendered as a PDF document."""
        path = f"/contracts/{path_id(contract_id, 'contract_id')}/pdf"
        response = await self._client._send_json("GET", path, accept="application/pdf")
        return response.content

    async def download_html(self, contract_id: Id, /) -> str:
        """Return the contract rendered as HTML."""
        path = f"/contracts/{path_id(contract_id, 'contract_id')}/html"
        response = await self._client._send_json("GET", path, accept="text/html")
        return response.text
