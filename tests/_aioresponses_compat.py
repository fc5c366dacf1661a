"""Make aioresponses 0.7.9 work with aiohttp 3.14 (test-only).

aiohttp 3.14 (a security release) added a required ``stream_writer`` argument to
``ClientResponse``; aioresponses 0.7.9, its newest release, does not pass it
(pnuckowski/aioresponses#289, fix proposed in #288). Until a release has the fix, its
default response class is swapped for one that supplies a finished writer. Remove this
module when aioresponses > 0.7.9 is out.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import aioresponses.core
from aiohttp import ClientResponse

_NEEDS_WRITER = "stream_writer" in inspect.signature(ClientResponse.__init__).parameters


class _CompatResponse(ClientResponse):
    def __init__(self, method: str, url: Any, **kwargs: Any) -> None:
        kwargs.setdefault("stream_writer", SimpleNamespace(output_size=0))
        super().__init__(method, url, **kwargs)


if _NEEDS_WRITER and aioresponses.core.ClientResponse is ClientResponse:  # type: ignore[attr-defined]
    aioresponses.core.ClientResponse = _CompatResponse  # type: ignore[attr-defined]
