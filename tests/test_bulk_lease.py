"""One run of a job's input at a time across hosts, through a real redis-server.

The file locks see one machine: a copy of the file (another host's, here another folder)
run with its own journal made every row twice. With the client sharing Redis, the run
holds a lease named by the job id and the file's bytes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from contractsdk._redis import SharedRedis, namespace
from contractsdk.bulk import JournalError, _lease
from contractsdk.bulk._lease import InputLease, _holder, _node
from contractsdk.bulk._readers import open_source
from contractsdk.sandbox import FaultRule, SandboxServer
from tests._bulkkit import (
    LIMIT,
    collect,
    command_emulator,
    created_in,
    emulator_client,
    journal_counts,
    keyed_job,
    listed_names,
    start_command,
    team_and_template,
    wait_until,
    weekly_rows_csv,
)
from tests._redisserver import RedisServer

pytestmark = pytest.mark.e2e

CREATE = "POST /v1/teams/*/contracts"


def slow_emulator() -> SandboxServer:
    return SandboxServer(
        port=0, write_rate=None, read_rate=None, faults=[FaultRule(CREATE, latency=0.2)]
    )


def lease_keys(redis_server: RedisServer) -> list[str]:
    names = redis_server.keys()
    return [name for name in names if ":bulk:" in name]


async def test_a_copy_of_the_file_on_another_host_is_refused(
    tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hosts, one file copied to each, two journals: the second run is refused.

    Each host's file lock sees its own path only; the lease in the shared Redis is named
    by the file's bytes. Another file of the same job runs beside it.
    """
    host_a, host_b = tmp_path / "a", tmp_path / "b"
    host_a.mkdir()
    host_b.mkdir()
    source = weekly_rows_csv(host_a / "rows.csv", 8, "Flat")
    copy = host_b / "copy.csv"
    shutil.copyfile(source, copy)
    other = weekly_rows_csv(host_b / "more.csv", 3, "House")
    async with slow_emulator() as server:
        team_id = team_and_template(server)[0]
        async with (
            emulator_client(server, redis=redis_server.url) as first,
            emulator_client(server, redis=redis_server.url) as second,
        ):
            running = asyncio.create_task(
                collect(keyed_job(first, server, source, host_a / "j.db", concurrency=2))
            )
            await asyncio.sleep(0.3)  # its first creates are on their way
            assert len(lease_keys(redis_server)) == 1
            other_machine(monkeypatch, tmp_path)  # its file locks are not the first's
            with pytest.raises(JournalError, match=r"another run of this job on .*copy\.csv") as e:
                await collect(keyed_job(second, server, copy, host_b / "j.db"))
            # The holder is named with the file it runs, not this run's copy.
            assert f"process {os.getpid()}, on 'rows.csv', since" in str(e.value)
            assert not (host_b / "j.db").exists()  # made for the refused run, removed
            beside = await collect(keyed_job(second, server, other, host_b / "k.db"))
            outcomes = await running
            assert lease_keys(redis_server) == []  # let go at the end
            again = await collect(keyed_job(second, server, copy, host_b / "j.db"))
        names = await listed_names(server, team_id)
    assert [o.state for o in outcomes] == ["created"] * 8
    assert [o.state for o in beside] == ["created"] * 3
    assert len(names) == len(set(names)) == 11  # no twins
    assert {o.state for o in again} == {"invalid"}  # free again: its rows exist already


def other_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """From now on, runs take their file locks where another host would: elsewhere."""
    elsewhere = tmp_path / "other-tmp"
    elsewhere.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(elsewhere))


async def test_a_copy_on_this_machine_is_refused_without_redis(tmp_path: Path) -> None:
    """On one machine the lock named by the file's bytes sees a copy, Redis or not.

    (Not seen, the copy's run listed the team before the first created anything, and made
    every row again.)
    """
    source = weekly_rows_csv(tmp_path / "rows.csv", 8, "Flat")
    copy = tmp_path / "copy.csv"
    shutil.copyfile(source, copy)
    async with slow_emulator() as server, emulator_client(server) as client:
        running = asyncio.create_task(
            collect(keyed_job(client, server, source, tmp_path / "a.db", concurrency=2))
        )
        await asyncio.sleep(0.3)
        with pytest.raises(
            JournalError, match=r"on this machine .*copy\.csv \(this file or a copy"
        ):
            await collect(keyed_job(client, server, copy, tmp_path / "b.db"))
        outcomes = await running
        names = await listed_names(server, team_and_template(server)[0])
    assert [o.state for o in outcomes] == ["created"] * 8
    assert len(names) == len(set(names)) == 8


async def test_a_copy_has_the_same_digest_an_edit_another(tmp_path: Path) -> None:
    """What names an input to the locks by bytes and the lease: its SHA-256."""
    source = weekly_rows_csv(tmp_path / "rows.csv", 3, "Flat")
    copy = tmp_path / "copy.csv"
    shutil.copyfile(source, copy)
    edited = tmp_path / "edited.csv"
    edited.write_bytes(source.read_bytes() + b"F3,Flat 3,week\n")
    digests = []
    for path in (source, copy, edited):
        opened = open_source(path)
        await opened.open()
        digests.append(opened.digest)
        await opened.aclose()
    assert digests[0] == digests[1] != digests[2]
    assert digests[0] is not None and len(digests[0]) == 64


async def test_redis_away_the_run_goes_on_with_one_warning(
    tmp_path: Path, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis down is not the job failing: every row is created, one warning says so."""
    source = weekly_rows_csv(tmp_path / "rows.csv", 5, "Flat")
    redis_server.kill()
    async with (
        SandboxServer(port=0, write_rate=None, read_rate=None) as server,
        emulator_client(server, redis=redis_server.url) as client,
    ):
        with caplog.at_level(logging.WARNING, logger="contractsdk.bulk"):
            outcomes = await collect(keyed_job(client, server, source, tmp_path / "j.db"))
    assert [o.state for o in outcomes] == ["created"] * 5
    away = [
        r for r in caplog.records if r.name == "contractsdk.bulk" and "Redis is away" in r.message
    ]
    assert len(away) == 1


async def test_a_lease_taken_by_another_run_stops_this_one(
    tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found held by another run at a renewal, the run stops; its unsent rows stay pending.

    (This run was stopped longer than the lease lasts, or Redis was away while the other
    started.) The next run sends them, and no row is made twice.
    """
    monkeypatch.setattr(_lease, "LEASE_TTL", 0.6)  # kept every 0.2 s
    source = weekly_rows_csv(tmp_path / "rows.csv", 30, "Flat")
    journal = tmp_path / "j.db"
    async with slow_emulator() as server:
        team_id = team_and_template(server)[0]
        async with emulator_client(server, redis=redis_server.url) as client:
            running = asyncio.create_task(
                collect(keyed_job(client, server, source, journal, concurrency=1))
            )
            await asyncio.sleep(0.3)
            (key,) = lease_keys(redis_server)
            other = aioredis.Redis.from_url(redis_server.url)
            other_run = json.dumps({"host": "other", "pid": 1, "since": 0, "run": "x"})
            await other.set(key, other_run, px=5000)
            with pytest.raises(JournalError, match="another run of this job on the same input"):
                await running
            assert await other.get(key) == other_run.encode()  # not let go: not this run's
            await other.delete(key)
            await other.aclose()
            counts = journal_counts(journal)
            assert counts.get("pending", 0) > 0 and counts.get("created", 0) < 30
            rest = await collect(keyed_job(client, server, source, journal))
        names = await listed_names(server, team_id)
    assert {o.state for o in rest} <= {"created", "skipped"}
    assert len(names) == len(set(names)) == 30


async def test_the_lease_expires_after_a_killed_run_and_is_taken_again(
    redis_server: RedisServer,
) -> None:
    """A run killed never lets go: its lease lapses ``ttl`` later, and another takes it.

    A Redis that forgot the lease (restarted without persistence) has it taken again at
    the next renewal.
    """
    shared = SharedRedis(redis_server.url, prefix=namespace("http://127.0.0.1:1", "id"))
    other = SharedRedis(redis_server.url, prefix=namespace("http://127.0.0.1:1", "id"))
    try:
        killed = InputLease(shared, "job", "d" * 64, ttl=0.3)
        await killed.acquire("rows.csv")  # and never released
        assert killed.held
        (key,) = lease_keys(redis_server)
        later = InputLease(other, "job", "d" * 64, ttl=0.3)
        with pytest.raises(JournalError, match=r"host '.*', process \d+, since 20"):
            await later.acquire("rows.csv")
        await asyncio.sleep(0.5)
        await later.acquire("rows.csv")  # lapsed
        assert later.held
        redis_server.flush()  # forgotten
        lost: list[JournalError] = []
        later.keep(lost.append)
        await asyncio.sleep(0.3)
        assert lease_keys(redis_server) == [key] and not lost
        await later.release()
        assert lease_keys(redis_server) == []
    finally:
        await shared.aclose()
        await other.aclose()


def test_a_holder_written_by_anything_else_is_described_safely() -> None:
    """The value is read from Redis, which anyone with its password may write."""
    assert _holder(b"\xff not json") == "a holder this version cannot read"
    assert _holder(b'{"host": 5}') == "a holder this version cannot read"
    long = json.dumps({"host": "h" * 500, "pid": 7, "since": 0, "run": "r"}).encode()
    assert _holder(long) == f"host {'h' * 64!r}, process 7, since 1970-01-01 00:00:00 UTC"


async def test_killed_then_run_again_on_its_machine_resumes_at_once(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """``kill -9``, then the same command: the dead process's lease is taken over.

    It would lapse only 30 s later: until then the resume was refused, naming a process
    that no longer ran. On the machine where it ran, its process id says it is gone.
    """
    async with command_emulator([FaultRule(CREATE, latency=0.02)]) as server:
        team_id = team_and_template(server)[0]
        source = weekly_rows_csv(tmp_path / "rows.csv", 60, "Flat")
        journal = tmp_path / "job.db"
        command = start_command(server, source, journal, "--redis", redis_server.url)
        await wait_until(lambda: created_in(journal) >= 3, command)
        command.send_signal(signal.SIGKILL)
        code, output = await command.finish(LIMIT)
        assert code == -signal.SIGKILL, output
        assert len(lease_keys(redis_server)) == 1  # left behind, for 30 s
        async with emulator_client(server, redis=redis_server.url) as client:
            outcomes = await collect(keyed_job(client, server, source, journal, round_delay=0.0))
        names = await listed_names(server, team_id)
    assert {o.state for o in outcomes} <= {"created", "skipped"}
    assert len(names) == len(set(names)) == 60
    assert lease_keys(redis_server) == []


@pytest.mark.skipif(_node() is None, reason="process ids are compared on Linux only")
async def test_only_a_holder_gone_from_this_machine_is_taken_over(
    redis_server: RedisServer,
) -> None:
    """Its process not running, on this boot and process namespace: taken over at once.

    Running (another process's lease), or of another machine or namespace (whose ids mean
    other processes), or unreadable: the run is refused, as the lease may be live.
    """
    ended = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await ended.wait()  # reaped: its id names no process
    dead = ended.pid
    living = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(30)"
    )
    shared = SharedRedis(redis_server.url, prefix=namespace("http://127.0.0.1:1", "id"))
    writer = aioredis.Redis.from_url(redis_server.url)

    def value(pid: int, node: str | None) -> str:
        return json.dumps({"host": "here", "node": node, "pid": pid, "since": 0, "run": "r"})

    cases = [
        (value(dead, _node()), True),
        (value(living.pid, _node()), False),
        (value(dead, "another-boot/pid:[1]"), False),
        (value(dead, None), False),
        ('{"node": 5, "pid": "x"}', False),
        (value(10**30, _node()), False),
    ]
    try:
        for held, taken in cases:
            lease = InputLease(shared, "job", "e" * 64)
            await writer.set(lease.key, held, px=30_000)
            if taken:
                await lease.acquire("rows.csv")
                assert lease.held
                await lease.release()
                assert await writer.get(lease.key) is None
            else:
                with pytest.raises(JournalError, match="under way"):
                    await lease.acquire("rows.csv")
                assert await writer.get(lease.key) == held.encode()
    finally:
        living.kill()
        await living.wait()
        await writer.aclose()
        await shared.aclose()


async def test_the_machine_s_locks_are_let_go_even_if_the_lease_s_release_is_cancelled(
    tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run cancelled while it lets the lease go still lets its file locks go.

    (Else a long-lived process refused every later run of that file as "another process
    on this machine".) The lease itself lapses on its own.
    """

    async def cancelled(self: InputLease) -> None:
        raise asyncio.CancelledError

    other_machine(monkeypatch, tmp_path)  # a folder of its own, to list the locks in
    monkeypatch.setattr(InputLease, "release", cancelled)
    source = weekly_rows_csv(tmp_path / "rows.csv", 2, "Flat")
    async with (
        SandboxServer(port=0, write_rate=None, read_rate=None) as server,
        emulator_client(server, redis=redis_server.url) as client,
    ):
        with pytest.raises(asyncio.CancelledError):
            await collect(keyed_job(client, server, source, tmp_path / "j.db"))
    assert list((tmp_path / "other-tmp").glob("contractsdk-bulk-*.lock")) == []


async def test_a_run_begun_with_redis_away_takes_its_lease_soon_after_redis_is_back(
    redis_server: RedisServer,
) -> None:
    """Redis back, the run's lease is taken within a look for it, not at the next renewal.

    It was taken at the next renewal, ``ttl / 3`` (10 s) later: a copy started on another
    host within those seconds found the input free, and made 41 of its 200 rows twice.
    """
    redis_server.kill()
    shared = SharedRedis(redis_server.url, prefix=namespace("http://127.0.0.1:1", "id"))
    other = SharedRedis(redis_server.url, prefix=namespace("http://127.0.0.1:1", "id"))
    lease = InputLease(shared, "job", "e" * 64)  # the default ttl: renewed every 10 s
    lost: list[JournalError] = []
    try:
        await lease.acquire("rows.csv")  # Redis away: the run goes on without it
        assert not lease.held
        lease.keep(lost.append)
        redis_server.start()

        def held() -> bool:
            return lease.held

        for _ in range(200):  # bounded: a look for Redis (every 1 s), then a poll
            if held():
                break
            await asyncio.sleep(0.025)
        assert held()  # 5 s at most; a renewal would come at 10 s
        copy = InputLease(other, "job", "e" * 64)
        with pytest.raises(JournalError, match="another run of this job"):
            await copy.acquire("rows.csv")
        assert not lost
    finally:
        await lease.release()
        await shared.aclose()
        await other.aclose()
