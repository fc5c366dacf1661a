"""``client.companies``: a company as a party of a contract."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from contractsdk._config import check_idempotency_key
from contractsdk._exceptions import ConfigurationError
from contractsdk._ids import parse_id
from contractsdk.identity import check_roles, check_side
from contractsdk.models import Address, CompanyCreated, Role, Side
from contractsdk.resources._base import Id, Resource, path_id

__all__ = ["Companies"]

_ADDRESS_KEYS = frozenset(field.name for field in attrs.fields(Address))
#: ``CompanyFieldsDTO``'s role enum has no ``party_with_signatory`` (endpoints.md §2).
_COMPANY_ROLES = tuple(role for role in Role if role is not Role.PARTY_WITH_SIGNATORY)


def _address(value: object, name: str) -> dict[str, str]:
    if isinstance(value, Address):
        return value.to_wire()
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{name} must be an Address or a mapping, got {value!r}")
    unknown = sorted(set(value) - _ADDRESS_KEYS)
    if unknown:
        raise ConfigurationError(
            f"{name} has unknown keys {unknown}; the keys are: {', '.join(sorted(_ADDRESS_KEYS))}"
        )
    wire: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, str):
            wire[str(key)] = item
        elif item is not None:
            raise ConfigurationError(f"{name}: {key} must be a string, got {item!r}")
    return wire


class Companies(Resource):
    """Add companies to contracts (reference/endpoints.md §1 #33)."""

    async def create(
        self,
        contract_id: Id,
        /,
        *,
        company_name: str,
        role: Role | str,
        side: Side | str,
        created_by: Id,
        company_number: str | None = None,
        registered_office_address: Address | Mapping[str, str] | None = None,
        address: Address | Mapping[str, str] | None = None,
        contract_configuration_id: int | None = None,
        signatory_related_company: int | None = None,
        idempotency_key: str | None = None,
    ) -> CompanyCreated:
        """Add a company as a party of a contract.

        Sent as ``CompanyFieldsDTO`` (snake_case keys). The spec marks every key optional
        and describes none; the company's name, role, side and creator are required here
        because a company party without them means nothing.

        Args:
            contract_id: The contract's id.
            company_name: The company's name.
            role: Its role (``party_with_signatory`` is not one the DTO lists).
            side: Its side.
            created_by: The user adding it.
            company_number: Its registration number.
            registered_office_address: Its registered office (an :class:`Address`, or a
                mapping of its keys).
            address: Another address (trading), as for ``registered_office_address``.
            contract_configuration_id: Sent as is; the spec does not describe it.
            signatory_related_company: Sent as is (an id); the spec does not describe it.
            idempotency_key: Your own key, to make a retried create safe across restarts.

        Returns:
            The company's name, its new collaborator's id and the contract's id.

        Raises:
            ConfigurationError: A blank name, a bad role, side, id or address (nothing
                is sent).
        """
        name: object = company_name  # anything, at run time
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError("a company needs a name (a non-blank string)")
        if isinstance(role, str):  # a Role is a str
            (checked_role,) = check_roles(role, allowed=_COMPANY_ROLES)
        else:
            raise ConfigurationError(f"a company has one role, got {role!r}")
        body: dict[str, Any] = {
            "company_name": company_name,
            "role": checked_role.value,
            "side": check_side(side, party=True).value,
            "created_by": parse_id(created_by, "created_by"),
        }
        if company_number is not None:
            if not isinstance(company_number, str):
                raise ConfigurationError(f"company_number must be a string, got {company_number!r}")
            body["company_number"] = company_number
        if registered_office_address is not None:
            body["registered_office_address"] = _address(
                registered_office_address, "registered_office_address"
            )
        if address is not None:
            body["address"] = _address(address, "address")
        if contract_configuration_id is not None:
            body["contract_configuration_id"] = parse_id(
                contract_configuration_id, "contract_configuration_id"
            )
        if signatory_related_company is not None:
            body["signatory_related_company"] = parse_id(
                signatory_related_company, "signatory_related_company"
            )
        if idempotency_key is not None:
            check_idempotency_key(idempotency_key)
        path = f"/contracts/{path_id(contract_id, 'contract_id')}/company"
        return await self._client._post(path, CompanyCreated, body, idempotency_key=idempotency_key)
