"""The ``client.<area>`` objects: one module per area of the API."""

from contractsdk.resources.contract_types import ContractTypes
from contractsdk.resources.contracts import Contracts
from contractsdk.resources.teams import Teams
from contractsdk.resources.templates import Templates
from contractsdk.resources.terms import Terms
from contractsdk.resources.users import Users

__all__ = ["ContractTypes", "Contracts", "Teams", "Templates", "Terms", "Users"]
