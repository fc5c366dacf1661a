"""The typed models of the Contract Service's resources.

All are frozen attrs classes read from the wire by the client's private converter.
"""

from ._base import Link
from ._models import (
    Contract,
    ContractField,
    ContractType,
    Team,
    Template,
    Term,
    TermOption,
    User,
)
from ._parties import (
    Address,
    Collaborator,
    CompanyCreated,
    ContractWithParties,
    IdentityField,
    IdentityFieldOption,
    Party,
    Role,
    Side,
)

__all__ = [
    "Address",
    "Collaborator",
    "CompanyCreated",
    "ContractWithParties",
    "IdentityField",
    "IdentityFieldOption",
    "Party",
    "Role",
    "Side",
    "Contract",
    "ContractField",
    "ContractType",
    "Link",
    "Team",
    "Template",
    "Term",
    "TermOption",
    "User",
]
