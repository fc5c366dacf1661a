"""nginx as a rate-limited server for the benchmarks: ``limit_req``, bare 429s.

:class:`NginxServer` runs nginx itself (where it is installed) with ``limit_req rate=R
burst=B nodelay`` per bearer token on the create location, answering the JSON that
``python -m benchmarks._servers`` answers (``_limit_app.py``), with the interface of
:class:`benchmarks._harness.Server`. nginx rates are integers per second or per minute
(:func:`nginx_rate`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks._harness import (
    ProcessContext,
    Target,
    executable,
    free_port,
    process_cpu_seconds,
    stop_process,
    wait_for_port,
)
from benchmarks._limit_app import API_KEY, TARGET, contract_json, terms_json

__all__ = ["NginxServer", "nginx_binary", "nginx_rate"]


def nginx_binary() -> str | None:
    """The nginx executable, or None when it is not installed."""
    return executable("nginx", "/usr/sbin/nginx")


def nginx_rate(rate: float) -> tuple[str, float]:
    """nginx's ``rate=`` for ``rate``/s and the rate it really is.

    nginx takes whole requests per second or per minute: 2.5/s is written ``150r/m``, and a
    rate neither can say exactly (100.5/s) is rounded to the nearest per minute.
    """
    if rate == int(rate):
        return f"{int(rate)}r/s", rate
    per_minute = max(1, round(rate * 60))
    return f"{per_minute}r/m", per_minute / 60


_NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    default_type application/json;
    access_log off;
    log_format bench '$status $request_method $http_x_bench_client';
    client_body_temp_path {root}/tmp/body;
    proxy_temp_path {root}/tmp/proxy;
    fastcgi_temp_path {root}/tmp/fastcgi;
    uwsgi_temp_path {root}/tmp/uwsgi;
    scgi_temp_path {root}/tmp/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    limit_req_zone $http_authorization zone=writes:1m rate={rate};
    limit_req_zone $http_authorization zone=reads:1m rate={read_rate};
    limit_req_status 429;
    # "return" runs before limit_req (rewrite phase, then preaccess), so the limited
    # locations proxy to a second server, over a Unix socket, that returns the JSON.
    upstream answers {{ server unix:{root}/answers.sock; keepalive 16; }}
    server {{
        listen 127.0.0.1:{port};
        access_log {root}/access.log bench;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        location ~ ^/v1/teams/[0-9]+/contracts$ {{
            limit_req zone=writes burst={burst} nodelay;
            proxy_pass http://answers;
        }}
        location /v1/ {{
            limit_req zone=reads burst={burst} nodelay;
            proxy_pass http://answers;
        }}
    }}
    server {{
        listen unix:{root}/answers.sock;
        access_log off;
        location ~ ^/v1/teams/[0-9]+/contracts$ {{ return 201 '{created}'; }}
        location ~ ^/v1/templates/[0-9]+/terms$ {{ return 200 '{terms}'; }}
        location ~ ^/v1/contracts/[0-9]+$ {{ return 200 '{contract}'; }}
        location / {{ return 404 '{{"status":404,"error":"Not Found"}}'; }}
    }}
}}
"""


class NginxServer(ProcessContext):
    """nginx with ``limit_req rate=R burst=B nodelay`` per bearer token: bare 429s.

    One process (``master_process off``) so that :meth:`cpu_seconds` is its CPU; its own
    prefix in a temporary folder; an access log of ``status method X-Bench-Client`` that
    :meth:`counters` reads. nginx cannot forget its zones, so :meth:`reset` restarts it on
    the same port. Every create answers the same href (the SDK only reads an id from it).

    Args:
        rate: Writes/s (and reads/s); nginx rounds it, see :func:`nginx_rate`.
        burst: ``limit_req``'s burst: B + 1 requests pass at once.
    """

    api_key = API_KEY

    def __init__(self, *, rate: float, burst: int) -> None:
        self.binary = nginx_binary() or ""  # checked by start()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.rate = rate
        self.burst = burst
        self._dir = tempfile.TemporaryDirectory(prefix="bench-nginx-")
        self.root = Path(self._dir.name)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def label(self) -> str:
        """The server's limits in a few words."""
        rate, _ = nginx_rate(self.rate)
        return f"nginx limit_req {rate} B={self.burst}"

    def _config(self) -> str:
        rate, _ = nginx_rate(self.rate)

        def compact(value: object) -> str:
            return json.dumps(value, separators=(",", ":"))

        return _NGINX_CONF.format(
            root=self.root,
            port=self.port,
            rate=rate,
            read_rate=rate,
            burst=self.burst,
            created=compact({"rel": "self", "href": f"{self.url}/v1/contracts/1"}),
            terms=compact(terms_json(self.url)),
            contract=compact(contract_json(self.url, 1)),
        )

    def start(self) -> None:
        """Write the configuration and start nginx in the foreground."""
        if not self.binary:
            raise FileNotFoundError("nginx is not installed (nor on PATH, nor /usr/sbin)")
        (self.root / "tmp").mkdir(exist_ok=True)
        (self.root / "access.log").write_bytes(b"")
        conf = self.root / "nginx.conf"
        conf.write_text(self._config(), encoding="utf-8")
        errors = str(self.root / "error.log")
        argv = [self.binary, "-p", str(self.root), "-c", str(conf), "-e", errors]
        self._process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_port(self.port, self._process)
        except RuntimeError as exc:
            log = Path(errors).read_text(errors="replace") if Path(errors).exists() else ""
            raise RuntimeError(f"{exc}\n{log}") from None

    def _halt(self) -> None:
        process, self._process = self._process, None
        stop_process(process, signal=signal.SIGQUIT)  # graceful: finish what is in flight

    def stop(self) -> None:
        """Stop nginx and remove its folder."""
        self._halt()
        self._dir.cleanup()

    def reset(self) -> None:
        """Restart: empty zones, empty access log."""
        self._halt()
        self.start()

    def set_limits(self, *, rate: float, burst: int) -> None:
        """Restart with other limits."""
        self.rate, self.burst = rate, burst
        self.reset()

    def counters(self) -> dict[str, Any]:
        """``requests``, ``rate_limited``, ``created``, ``writes``, ``by_client`` from the log."""
        statuses: Counter[str] = Counter()
        writes = 0
        by_client: dict[str, Counter[str]] = {}
        with open(self.root / "access.log", encoding="utf-8", errors="replace") as log:
            for line in log:
                status, method, client = [*line.split(), "-", "-"][:3]
                statuses[status] += 1
                writes += method == "POST"
                if client != "-":
                    outcome = "429" if status == "429" else "ok"
                    by_client.setdefault(client, Counter())[outcome] += 1
        return {
            "requests": sum(statuses.values()),
            "rate_limited": statuses["429"],
            "created": statuses["201"],
            "writes": writes,
            "by_client": {name: dict(counts) for name, counts in by_client.items()},
        }

    def cpu_seconds(self) -> float | None:
        """CPU nginx has used since its last (re)start (Linux), or None."""
        return None if self._process is None else process_cpu_seconds(self._process.pid)

    def target(self) -> Target:
        """User 1 of team 1 creates NDAs from template 1."""
        return TARGET
