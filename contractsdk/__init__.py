"""contractsdk: the async-first Python SDK for the Contract Service API (Legislate)."""

from ._exceptions import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    ConnectError,
    ConnectTimeoutError,
    ContractSDKError,
    NotFoundError,
    PermissionDeniedError,
    RateLimiterTimeoutError,
    RateLimitError,
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

__version__ = "0.1.0"

__all__ = [
    # errors
    "ContractSDKError",
    "ConfigurationError",
    "TransportError",
    "ConnectError",
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
    # HTTP values
    "Headers",
    "NOT_GIVEN",
    "NotGiven",
    "Request",
    "Response",
]
