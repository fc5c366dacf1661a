"""The suite's xdist scheduler (the root conftest.py) keeps a document's examples together.

A Markdown file's blocks share one namespace, so they must run on one worker, in order,
however the scheduler shares out and takes back work. Workers are simulated here: each
runs its queue front first, at its own speed, and answers a request to give tests back as
xdist's does (all of them if none has started, else none).
"""

from __future__ import annotations

import importlib.util
import random
import types
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("xdist")


def _root_conftest() -> Any:
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("_root_conftest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Config:
    def __init__(self, workers: int) -> None:
        self.workers = workers

    def getvalue(self, name: str) -> Any:
        assert name == "tx"
        return [f"{self.workers}*popen"]


class _Worker:
    def __init__(self, name: str, speed: float) -> None:
        self.name = name
        self.gateway = types.SimpleNamespace(id=name)
        self.speed = speed
        self.shutting_down = False
        self.queue: list[int] = []
        self.ran: list[int] = []
        self.asked: list[int] | None = None
        self.gave_back = 0

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)

    def send_steal(self, indices: list[int]) -> None:
        self.asked = list(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _collection(rng: random.Random) -> list[str]:
    """Tests and documents' blocks, as collected: each document's blocks one after another."""
    ids: list[str] = []
    for n in range(60):
        if rng.random() < 0.25:
            ids += [f"docs/page{n}.md::line:{line}" for line in range(rng.randint(1, 12))]
        else:
            ids += [f"tests/test_{n}.py::test_{k}" for k in range(rng.randint(1, 20))]
    return ids


def _run(seed: int, workers: int) -> tuple[list[str], list[_Worker]]:
    rng = random.Random(seed)
    collection = _collection(rng)
    scheduler = _root_conftest()._scheduling(_Config(workers), None)
    nodes = [_Worker(f"gw{i}", speed=rng.choice([0.2, 1.0, 1.0, 3.0])) for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    for _ in range(20 * len(collection)):
        busy = [node for node in nodes if node.queue or node.asked is not None]
        if not busy:
            break
        node = rng.choices(busy, weights=[n.speed for n in busy])[0]
        if node.asked is not None and rng.random() < 0.5:
            asked, node.asked = node.asked, None
            given = asked if set(asked) <= set(node.queue[1:]) else []
            node.queue = [i for i in node.queue if i not in given]
            node.gave_back += len(given)
            scheduler.remove_pending_tests_from_node(node, given)
        elif node.queue:
            index = node.queue.pop(0)
            node.ran.append(index)
            scheduler.mark_test_complete(node, index)
    return collection, nodes


@pytest.mark.parametrize("workers", [2, 3, 5])
@pytest.mark.parametrize("seed", range(8))
def test_a_documents_blocks_run_on_one_worker_in_order(seed: int, workers: int) -> None:
    collection, nodes = _run(seed, workers)
    ran = sorted(i for node in nodes for i in node.ran)
    assert ran == list(range(len(collection)))  # every test once, none left behind
    where: dict[str, set[str]] = {}
    for node in nodes:
        order: dict[str, list[int]] = {}
        for index in node.ran:
            document = collection[index].split("::")[0]
            if document.endswith(".md"):
                where.setdefault(document, set()).add(node.name)
                order.setdefault(document, []).append(index)
        assert all(indices == sorted(indices) for indices in order.values())
    assert all(len(names) == 1 for names in where.values()), where


def test_work_is_taken_back_from_a_slow_worker() -> None:
    """The simulation does exercise stealing: without it the test above proves little."""
    runs = [_run(seed, 3)[1] for seed in range(8)]
    assert sum(node.gave_back for nodes in runs for node in nodes) > 0
