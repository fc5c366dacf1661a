"""The ``client.<area>`` objects: one module per area of the API."""

from contractsdk.resources.collaborators import Collaborators, PartiesIncompleteError
from contractsdk.resources.companies import Companies
from contractsdk.resources.contract_types import ContractTypes
from contractsdk.resources.contracts import Contracts
from contractsdk.resources.identity_fields import IdentityFields
from contractsdk.resources.teams import Teams
from contractsdk.resources.templates import Templates
from contractsdk.resources.terms import Terms
from contractsdk.resources.users import Users

__all__ = [
    "Collaborators",
    "Companies",
    "ContractTypes",
    "Contracts",
    "IdentityFields",
    "PartiesIncompleteError",
    "Teams",
    "Templates",
    "Terms",
    "Users",
]
