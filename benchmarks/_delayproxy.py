"""A TCP proxy that delays what it forwards: a Redis a network away, on one machine.

``python -m benchmarks._delayproxy LISTEN TARGET MS`` forwards 127.0.0.1:LISTEN to
127.0.0.1:TARGET and holds each chunk MS milliseconds in each direction, in order (no
kernel support such as netem needed). Its own asyncio scheduling adds a little on top:
:func:`ping_ms` measures the round trip that results, which is what the tables report.
:class:`DelayProxy` runs it in its own process, so that it never shares the measured
client's event loop.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time

from benchmarks._harness import ProcessContext, free_port, stop_process, wait_for_port

__all__ = ["DelayProxy", "ping_ms"]


async def _forward(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float
) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it arrived."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def read() -> None:
        while True:
            data = await reader.read(65536)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                return

    async def write() -> None:
        while True:
            due, data = await queue.get()
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
            if not data:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    try:
        await asyncio.gather(read(), write())
    except (ConnectionError, OSError):
        writer.close()


async def _serve(listen: int, target: int, delay: float) -> None:
    async def handle(client_reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        server_reader, server = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(
            _forward(client_reader, server, delay), _forward(server_reader, client, delay)
        )

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


class DelayProxy(ProcessContext):
    """The proxy in its own process: 127.0.0.1:``port`` reaches ``target`` ``ms`` later."""

    def __init__(self, target: int, ms: float) -> None:
        self.target = target
        self.ms = ms
        self.port = free_port()
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it and wait until it listens."""
        argv = [sys.executable, "-m", "benchmarks._delayproxy", str(self.port)]
        self._process = subprocess.Popen([*argv, str(self.target), str(self.ms)])
        wait_for_port(self.port, self._process)

    def stop(self) -> None:
        """Stop it."""
        process, self._process = self._process, None
        stop_process(process)


async def ping_ms(url: str, count: int = 50) -> float:
    """The median round trip of a Redis PING through ``url``, in milliseconds."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        await client.ping()
        times = []
        for _ in range(count):
            started = time.perf_counter()
            await client.ping()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await client.aclose()
    return statistics.median(times)


if __name__ == "__main__":
    listen, target, ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    asyncio.run(_serve(listen, target, ms / 1000))
