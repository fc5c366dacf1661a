"""Shared helpers of the retry tests: requests, and the error each status raises."""

from __future__ import annotations

from contractsdk import APIError, Request, ServerError
from contractsdk._exceptions import _STATUS_ERRORS

URL = "https://api.example.test/v1/users/1/contracts?page=2"
KEY = {"Idempotency-Key": "call-7f3a"}


def request(method: str = "GET", *, key: bool = False) -> Request:
    return Request(method=method, url=URL, headers=KEY if key else {})


def status_error(status: int) -> APIError:
    """The error the client raises for an answer of ``status``."""
    cls = _STATUS_ERRORS.get(status) or (ServerError if status >= 500 else APIError)
    return cls(f"{status}", status_code=status, method="GET", url="/v1/x")


def post(key: bool = False) -> Request:
    return request("POST", key=key)
