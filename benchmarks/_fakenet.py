"""aiohttp's client with the network taken out: a connector whose connections answer in memory.

:class:`FakeNetConnector` plugs into :class:`aiohttp.ClientSession` like ``TCPConnector``,
but each connection is a :class:`_MemoryTransport` that reads the bytes aiohttp writes and,
once a whole request is there, feeds canned response bytes back to aiohttp's own protocol
on the next loop iteration. Everything aiohttp does per request (URL and header handling,
the HTTP writer and parser, the connection pool, the response object) still runs; no socket,
system call or server process does. So ``time.process_time()`` of a loop of calls measures
the client's CPU alone, without the kernel's and the other process's noise, and a plain
aiohttp call and a contractsdk call over the same connector differ by contractsdk's own work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler

__all__ = ["Answer", "FakeNetConnector", "http_response"]

#: Returns the whole raw HTTP response to a request, given its method and target path.
Answer = Callable[[str, str], bytes]

_END_OF_HEAD = b"\r\n\r\n"


def http_response(
    status: int, reason: str, headers: Mapping[str, str] | list[tuple[str, str]], body: bytes
) -> bytes:
    """Serialise an HTTP/1.1 response (``Content-Length`` is set from ``body``)."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    kept = [(k, v) for k, v in pairs if k.lower() not in {"content-length", "transfer-encoding"}]
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in kept)]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class _MemoryTransport(asyncio.Transport):
    """One keep-alive connection: buffers each request, answers it with ``answer``'s bytes."""

    def __init__(self, protocol: ResponseHandler, answer: Answer) -> None:
        super().__init__()
        self._protocol = protocol
        self._answer = answer
        self._loop = asyncio.get_running_loop()
        self._buffer = bytearray()
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data
        while (end := self._buffer.find(_END_OF_HEAD)) >= 0:
            head = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
            length = next(
                (
                    int(line.split(":", 1)[1])
                    for line in head
                    if line.lower().startswith("content-length:")
                ),
                0,
            )
            if len(self._buffer) < end + len(_END_OF_HEAD) + length:
                return  # the body is still to come
            del self._buffer[: end + len(_END_OF_HEAD) + length]
            method, target, _ = head[0].split(" ", 2)
            self._loop.call_soon(self._protocol.data_received, self._answer(method, target))

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._loop.call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default  # no socket, no TLS, no peer


class FakeNetConnector(aiohttp.BaseConnector):
    """A connector whose connections never leave the process.

    Args:
        answer: The raw response to each request, from its method and target path.
        limit: The pool's connection limit, as ``TCPConnector``'s.
    """

    def __init__(self, answer: Answer, *, limit: int = 100) -> None:
        super().__init__(limit=limit)
        self._answer = answer

    async def _create_connection(self, req: Any, traces: Any, timeout: Any) -> ResponseHandler:
        protocol = ResponseHandler(asyncio.get_running_loop())
        protocol.connection_made(_MemoryTransport(protocol, self._answer))
        return protocol
