"""How a parallel run hands tests to workers (tests.support.scheduling): xdist's own
scheduler class with the suite's policy, driven by stand-in workers that behave as xdist's do
(a worker runs a test only once it knows the next one, or is told to end)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support.scheduling import (
    E2E_LONGEST_FIRST,
    LONGEST_FIRST,
    SPARE,
    group_of,
    handed_out,
    make_scheduler,
)

pytest.importorskip("xdist")

REPO = Path(__file__).resolve().parents[2]
GROUPED = [name.removeprefix("realcli:") for name in LONGEST_FIRST if name.startswith("realcli:")]
#: The longest e2e test named, and a module named whole.
LONG_E2E = E2E_LONGEST_FIRST[0]
LONG_E2E_MODULE = E2E_LONGEST_FIRST[1]


def collection() -> list[str]:
    """Three tests in each real-CLI group, nine e2e tests (three of them named among the
    longest), two hundred quick ones."""
    ids = [f"tests/realcli/{module}::test_{n}" for module in GROUPED for n in range(3)]
    ids += [f"tests/e2e/test_e2e_{n}.py::test_it" for n in range(6)]
    ids += [LONG_E2E, f"{LONG_E2E_MODULE}test_a", f"{LONG_E2E_MODULE}test_b"]
    ids += [f"tests/unit/test_quick_{n}.py::test_it" for n in range(200)]
    return ids


@dataclass(eq=False)  # xdist keys its bookkeeping by the worker object
class Worker:
    """A stand-in for xdist's WorkerController: what it was sent, in order."""

    id: str
    ids: list[str]
    queue: list[int] = field(default_factory=list)
    ran_indices: list[int] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> Any:
        return SimpleNamespace(id=self.id)

    def send_runtest_some(self, indices: list[int]) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def runnable(self) -> bool:
        return len(self.queue) >= 2 or (self.shutting_down and bool(self.queue))

    def units(self) -> list[str]:
        """What it was sent, by group (or test) in the order it was sent."""
        seen: list[str] = []
        for index in [*self.ran_indices, *self.queue]:
            unit = group_of(self.ids[index]) or self.ids[index]
            if unit not in seen:
                seen.append(unit)
        return seen


def started(workers: int, cores: int) -> tuple[Any, list[Worker]]:
    config = SimpleNamespace(
        getvalue=lambda name: [f"{workers}*popen"] if name == "tx" else None,
        option=SimpleNamespace(loadscopereorder=False),
    )
    scheduler = make_scheduler(config, None, cores=cores)
    ids = collection()
    nodes = [Worker(f"gw{n}", ids) for n in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, ids)
    scheduler.schedule()
    return scheduler, nodes


def run_one(scheduler: Any, node: Worker) -> str:
    """The worker runs its next test, and the scheduler hears it completed."""
    index = node.queue.pop(0)
    node.ran_indices.append(index)
    scheduler.mark_test_complete(node, index)
    return node.ids[index]


def test_as_many_workers_as_cores_start_on_quick_tests_and_the_rest_on_the_longest_groups() -> None:
    """8 workers on 2 cores: gw0 and gw1 start on quick tests, gw2-gw7 on the six longest
    groups, longest first."""
    _, nodes = started(workers=8, cores=2)
    firsts = [node.units()[0] for node in nodes]
    assert all(first.startswith("tests/unit/") for first in firsts[:2]), firsts
    assert firsts[2:] == list(LONGEST_FIRST[:6])


def test_with_no_more_workers_than_cores_every_worker_starts_on_the_longest_groups() -> None:
    """2 workers on 2 cores: no worker is kept for the quick tests; the two longest groups go
    first."""
    _, nodes = started(workers=2, cores=2)
    assert [node.units()[0] for node in nodes] == list(LONGEST_FIRST[:2])


def test_a_worker_ending_a_group_is_given_a_quick_test_not_the_next_group() -> None:
    """The group's last test may take minutes: what is handed to its worker before it runs is
    a quick test, and the next group only once the group's last test has run."""
    scheduler, nodes = started(workers=8, cores=2)
    worker = nodes[2]
    first = [i for i, test in enumerate(worker.ids) if group_of(test) == LONGEST_FIRST[0]]
    run_one(scheduler, worker)  # two of its group's three tests are left: xdist hands more now
    assert worker.units()[1].startswith("tests/unit/"), worker.units()
    while worker.runnable() and len(worker.units()) < 10:
        run_one(scheduler, worker)
        later = [u for u in worker.units()[1:] if u in LONGEST_FIRST]
        if later:
            assert set(first) <= set(worker.ran_indices), worker.units()
            assert later == [LONGEST_FIRST[6]], worker.units()  # the longest left
            return
    raise AssertionError(f"no second group was handed out: {worker.units()}")


def test_every_test_runs_once_and_only_spare_workers_join_the_tests_after_their_groups() -> None:
    """Run to the end: each test ran once; of the group workers, no more than SPARE went on to
    the tests once the groups were gone (beyond the quick tests handed as a group ended), and
    the others ended."""
    scheduler, nodes = started(workers=8, cores=2)
    for _ in range(10_000):
        busy = [node for node in nodes if node.runnable()]
        if not busy:
            break
        # The group workers run slowly (a test each round of the quick workers' three).
        for node in busy:
            for _ in range(3 if node.id in ("gw0", "gw1") else 1):
                if node.runnable():
                    node.ran.append(run_one(scheduler, node))
    ran = [test for node in nodes for test in node.ran]
    assert sorted(ran) == sorted(collection())
    assert scheduler.tests_finished
    joined = []
    for node in nodes[2:]:
        groups = {group_of(test) for test in node.ran} - {None}
        tests = [test for test in node.ran if group_of(test) is None]
        if len(tests) > 3 * len(groups):  # more than those handed as its groups ended
            joined.append(node.id)
        assert node.shutting_down
    assert 0 < len(joined) <= SPARE, [node.units() for node in nodes[2:]]


def test_the_units_a_crashed_worker_left_are_handed_out_again() -> None:
    """A worker that dies with tests pending: xdist puts its units back in the queue, and the
    other workers run them; every test runs."""
    scheduler, nodes = started(workers=8, cores=2)
    for _ in range(5):
        nodes[0].ran.append(run_one(scheduler, nodes[0]))
    crashed = nodes.pop(0)
    assert crashed.queue, "the worker had tests pending"
    scheduler.remove_node(crashed)
    for _ in range(10_000):
        busy = [node for node in nodes if node.runnable()]
        if not busy:
            break
        for node in busy:
            node.ran.append(run_one(scheduler, node))
    ran = {test for node in [crashed, *nodes] for test in node.ran}
    assert ran == set(collection())
    assert scheduler.tests_finished


def test_the_longest_e2e_tests_are_handed_out_before_the_other_e2e_tests() -> None:
    """The e2e tests E2E_LONGEST_FIRST names go first among the e2e tests, in its order (a
    module's name takes each of its tests), the others after them in collection order."""
    assert handed_out(LONG_E2E) < handed_out(f"{LONG_E2E_MODULE}test_b")
    assert handed_out(f"{LONG_E2E_MODULE}test_b") < handed_out("tests/e2e/test_e2e_0.py::test_it")
    scheduler, _ = started(workers=8, cores=2)
    e2e_order = [unit for unit in scheduler.workqueue if unit.startswith("tests/e2e/")]
    assert e2e_order[:3] == [LONG_E2E, f"{LONG_E2E_MODULE}test_a", f"{LONG_E2E_MODULE}test_b"]
    assert e2e_order[3:] == [f"tests/e2e/test_e2e_{n}.py::test_it" for n in range(6)]


@pytest.mark.parametrize("name", E2E_LONGEST_FIRST)
def test_each_e2e_test_named_longest_exists(name: str) -> None:
    """A name in E2E_LONGEST_FIRST is a module of tests/e2e, and the test it names (if any)
    is defined there: a renamed test would silently lose its place."""
    module, _, test = name.partition("::")
    path = REPO / module
    assert path.is_file(), name
    assert not test or f"def {test}(" in path.read_text(encoding="utf-8"), name
