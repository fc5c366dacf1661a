"""A real ``redis-server`` on 127.0.0.1 and a free port, started and stopped by the tests.

No persistence (``--save '' --appendonly no``), its own temporary directory, and a
``kill()`` / ``start()`` pair on the same port so that tests can take Redis away mid-run
and bring it back. When ``redis-server`` is not installed the tests that need it are
skipped, except under CI (``CI=true``), where that is a failure: ``.ci/run`` installs it.
``CONTRACTSDK_TEST_REDIS_SERVER`` names another binary that speaks the same protocol and
Lua (``valkey-server``), to run the same tests against it.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

#: Seconds redis-server may take to accept connections.
START_TIMEOUT = 10.0


def redis_server_binary() -> str:
    """Return the path of redis-server, or skip (fail under CI) when it is missing."""
    chosen = os.environ.get("CONTRACTSDK_TEST_REDIS_SERVER")
    if chosen:
        return chosen
    path = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if os.path.exists("/usr/bin/redis-server") else None
    )
    if path is None:
        message = "redis-server is not installed (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def make_certificates(folder: Path) -> None:
    """Write ca.crt, and server.crt and server.key for 127.0.0.1 signed by it (openssl).

    Skipped (failed under CI) without the openssl command.
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        message = "openssl is not installed"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)

    def run(command: str) -> None:
        argv = [openssl, *command.split()]
        subprocess.run(argv, cwd=folder, check=True, capture_output=True)

    # The extensions Python 3.13's strict verification (VERIFY_X509_STRICT) asks for.
    run(
        "req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout ca.key -out ca.crt"
        " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign"
        " -addext subjectKeyIdentifier=hash"
    )
    run("req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr")
    (folder / "san.cnf").write_text(
        "subjectAltName=IP:127.0.0.1\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\nauthorityKeyIdentifier=keyid\n"
    )
    run(
        "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2"
        " -extfile san.cnf -out server.crt"
    )


def key_name(key: bytes | str) -> str:
    """A key name as redis-py returns it (bytes, or str with decode_responses), as str."""
    return key.decode() if isinstance(key, bytes) else key


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _free_port_with_bus() -> int:
    """A free port whose cluster bus port (itself + 10,000) is free too, and under 65,536."""
    for _ in range(200):
        port = _free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


class RedisServer:
    """One redis-server process; ``url`` stays the same across kill() and start().

    ``cluster``: a node of a Redis Cluster (see :class:`RedisClusterNodes`). ``tls``: also
    listen with TLS on ``tls_port``, with a certificate of a CA made for it (see
    :func:`make_certificates`), for ``rediss://`` clients.
    """

    def __init__(self, *, cluster: bool = False, tls: bool = False) -> None:
        self.binary = redis_server_binary()
        self.cluster = cluster
        self.tls_port = _free_port() if tls else None
        # A cluster node's bus listens on its port + 10,000 (Redis 6 cannot be told another).
        self.port = _free_port_with_bus() if cluster else _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.TemporaryDirectory(prefix="contractsdk-redis-")
        self._process: subprocess.Popen[bytes] | None = None
        #: The same server through a unix socket in its folder.
        self.socket_url = f"unix://{self._dir.name}/redis.sock?db=0"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._process = subprocess.Popen(
            [
                self.binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir.name,
                "--loglevel",
                "warning",
                "--unixsocket",
                f"{self._dir.name}/redis.sock",
                "--unixsocketperm",
                "700",
                *(["--cluster-enabled", "yes"] if self.cluster else []),
                *(self._tls_arguments() if self.tls_port else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self._process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        self.kill()
        raise RuntimeError("redis-server did not start in time")

    def _tls_arguments(self) -> list[str]:
        folder = Path(self._dir.name)
        make_certificates(folder)
        return [
            "--tls-port",
            str(self.tls_port),
            "--tls-cert-file",
            str(folder / "server.crt"),
            "--tls-key-file",
            str(folder / "server.key"),
            "--tls-ca-cert-file",
            str(folder / "ca.crt"),
            "--tls-auth-clients",
            "no",
        ]

    @property
    def ca_file(self) -> Path:
        """The CA certificate that signed the TLS port's certificate."""
        return Path(self._dir.name) / "ca.crt"

    def kill(self) -> None:
        """Kill the server at once (SIGKILL): its data is gone, as in a crash."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)

    def pause(self, paused: bool = True) -> None:
        """Stop the server where it is (SIGSTOP), or let it go on (SIGCONT): a Redis that hangs."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        self.kill()
        self._dir.cleanup()

    def flush(self) -> None:
        """Forget every key (between tests)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(b"FLUSHALL\r\n")
            sock.recv(16)

    def keys(self) -> list[str]:
        """Every key name (a tiny RESP reader: tests only)."""
        import redis

        client = redis.Redis.from_url(self.url)
        try:
            return sorted(key_name(key) for key in client.keys("*"))
        finally:
            client.close()

    @property
    def directory(self) -> Path:
        """The server's working directory."""
        return Path(self._dir.name)


class RedisClusterNodes:
    """A Redis Cluster on 127.0.0.1: three redis-server nodes, no replicas.

    Each is master of a third of the 16,384 hash slots, joined by CLUSTER ADDSLOTS
    and MEET (no redis-cli needed).
    """

    def __init__(self, nodes: int = 3) -> None:
        self.servers = [RedisServer(cluster=True) for _ in range(nodes)]

    def start(self) -> None:
        """Start the nodes, give each its slots, introduce them, and wait for the cluster."""
        import redis

        for server in self.servers:
            server.start()
        clients = [redis.Redis(host="127.0.0.1", port=server.port) for server in self.servers]
        try:
            share = 16384 // len(clients)
            for index, client in enumerate(clients):
                last = 16383 if index == len(clients) - 1 else (index + 1) * share - 1
                client.cluster("ADDSLOTS", *range(index * share, last + 1))  # Redis 6 too
            started = time.monotonic()
            met = -math.inf
            while not all(client.cluster("INFO")["cluster_state"] == "ok" for client in clients):
                now = time.monotonic()
                if now > started + 3 * START_TIMEOUT:
                    raise RuntimeError("the Redis Cluster did not form in time")
                if now - met > 2.0:  # again, in case a handshake was lost on a loaded machine
                    met = now
                    for client in clients[1:]:
                        if int(client.cluster("INFO")["cluster_known_nodes"]) < len(clients):
                            client.cluster("MEET", "127.0.0.1", self.servers[0].port)
                time.sleep(0.05)
        finally:
            for client in clients:
                client.close()

    def stop(self) -> None:
        """Stop every node."""
        for server in self.servers:
            server.stop()

    def flush(self) -> None:
        """Forget every key on every node (between tests)."""
        for server in self.servers:
            server.flush()

    @property
    def port(self) -> int:
        """The first node's port: a cluster client finds the others from it."""
        return self.servers[0].port
