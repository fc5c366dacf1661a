"""Shared helpers of the retry tests: requests, and the error each status raises."""

from __future__ import annotations

from contractsdk import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    Request,
    ServerError,
    UnprocessableEntityError,
)

URL = "https://api.example.test/v1/users/1/contracts?page=2"
KEY = {"Idempotency-Key": "call-7f3a"}


def request(method: str = "GET", *, key: bool = False) -> Request:
    return Request(method=method, url=URL, headers=KEY if key else {})


def status_error(status: int) -> APIError:
    classes: dict[int, type[APIError]] = {
        400: BadRequestError,
        401: AuthenticationError,
        403: PermissionDeniedError,
        404: NotFoundError,
        409: ConflictError,
        422: UnprocessableEntityError,
        429: RateLimitError,
    }
    cls = classes.get(status) or (ServerError if status >= 500 else APIError)
    return cls(f"{status}", status_code=status, method="GET", url="/v1/x")


def post(key: bool = False) -> Request:
    return request("POST", key=key)
