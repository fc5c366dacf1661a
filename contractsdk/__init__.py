"""contractsdk: the async-first Python SDK for the Contract Service API (Legislate)."""

from ._client import ContractClient
from ._config import Environment
from ._credentials import ApiKey, ClientCredentials
from ._exceptions import (
    APIError,
    AuthenticationError,
    BadRequestError,
    CertificateVerificationError,
    ConfigurationError,
    ConflictError,
    ConnectError,
    ConnectTimeoutError,
    ContractSDKError,
    IdentityValidationError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RateLimiterTimeoutError,
    ReadError,
    ReadTimeoutError,
    ResponseValidationError,
    ServerError,
    TermValidationError,
    TokenRequestError,
    TransportError,
    UnprocessableEntityError,
)
from ._http import NOT_GIVEN, Headers, NotGiven, Request, Response
from ._logging import ClientStats
from ._ratelimit import BucketState, RateLimiterState, RateLimits
from ._retry import Retries, RetryEvent
from ._transport import AiohttpTransport, AsyncTransport
from .identity import IdentityFieldSet, IdentityProblem
from .models import (
    Address,
    Collaborator,
    CompanyCreated,
    Contract,
    ContractField,
    ContractType,
    ContractWithParties,
    IdentityField,
    IdentityFieldOption,
    Link,
    Party,
    Role,
    Side,
    Team,
    Template,
    Term,
    TermOption,
    User,
)
from .resources import PartiesIncompleteError
from .validation import TermProblem, TermSet

__version__ = "0.1.0"

__all__ = [
    # the client and its configuration
    "ContractClient",
    "ApiKey",
    "ClientCredentials",
    "Environment",
    "ClientStats",
    "RateLimits",
    "RateLimiterState",
    "BucketState",
    "Retries",
    "RetryEvent",
    # models
    "Contract",
    "ContractField",
    "ContractType",
    "Link",
    "Team",
    "Template",
    "Term",
    "TermOption",
    "TermProblem",
    "TermSet",
    "User",
    # parties
    "Address",
    "Collaborator",
    "CompanyCreated",
    "ContractWithParties",
    "IdentityField",
    "IdentityFieldOption",
    "IdentityFieldSet",
    "IdentityProblem",
    "Party",
    "Role",
    "Side",
    # errors
    "ContractSDKError",
    "ConfigurationError",
    "TransportError",
    "ConnectError",
    "CertificateVerificationError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ReadError",
    "APIError",
    "BadRequestError",
    "AuthenticationError",
    "TokenRequestError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "ServerError",
    "ResponseValidationError",
    "TermValidationError",
    "RateLimiterTimeoutError",
    "IdentityValidationError",
    "PartiesIncompleteError",
    # HTTP values and the transport seam
    "AiohttpTransport",
    "AsyncTransport",
    "Headers",
    "NOT_GIVEN",
    "NotGiven",
    "Request",
    "Response",
]
