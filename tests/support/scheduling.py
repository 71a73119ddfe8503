"""How a parallel run (`pytest -n 8`, as .ci/run does) hands its tests to workers: which tests
share a worker (groups), and which worker takes what first. tests/conftest.py plugs it in."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest

#: Tests that share something costly or must not overlap one another run on one worker of a
#: parallel run (`pytest -n 8`, as .ci/run does), one after another in their usual order:
#: - each real-CLI module (tests/realcli): its cases run together in module fixtures, three
#:   CLIs at a time; the supervised runs start with the first test of test_realcli_run.py's
#:   worker and its last tests wait for them (tests/realcli/conftest.py). The modules are
#:   groups of their own, not one tier-wide group: the tier is half CPU (node starting the
#:   CLIs) and half waiting (resets served minutes ahead), and on one worker it was the
#:   suite's critical path by far. The clock's and the install's tests share nothing costly
#:   and go anywhere;
#: - the container image and the built distributions: one build per module, not per worker;
#: - the browser: one chromium per module;
#: - the drills: each measures sweepers against the clock, and two at once would each count
#:   the other's load as theirs.
GROUP_BY_FOLDER = {"browser": "browser"}
GROUP_BY_FILE = {
    "test_container_image.py": "container_image",
    "test_install_wheel.py": "install_wheel",
    "test_sweeper_kill_drill.py": "drills",
    "test_sweeper_host_drills.py": "drills",
}
REALCLI_UNGROUPED = {"test_realcli_clock.py", "test_realcli_install.py"}
#: The groups in the order they are handed out, longest first (their wall time, measured on
#: CI's 2 cores; a worker that takes a long group late ends the run late). Groups not named
#: here come after them; the other tests go in collection order (`make_scheduler`).
LONGEST_FIRST = (
    "realcli:test_realcli_service.py",  # 357-381 s
    "realcli:test_realcli_run.py",  # 345-361 s
    "realcli:test_realcli_one_writer.py",  # 286-342 s
    "realcli:test_realcli_workflow_decline.py",  # 333-346 s
    "realcli:test_realcli_one_writer_pty.py",  # 186-210 s
    "realcli:test_realcli_dst.py",  # 139-171 s
    "realcli:test_realcli_workflow_hook.py",  # 139-164 s
    "realcli:test_realcli_one_writer_gemini.py",  # 94-139 s
    "drills",  # 89-128 s
    "realcli:test_realcli_claude.py",  # 35-133 s
    "realcli:test_realcli_gemini.py",  # 60-118 s
    "browser",  # 30-65 s
    "realcli:test_realcli_workflow.py",  # 57-74 s
    "container_image",  # 38-52 s
    "realcli:test_realcli_gemini_unsaved.py",  # 7-36 s
    "install_wheel",  # 26-30 s
    "realcli:test_realcli_codex.py",  # 11-13 s
)


#: The e2e tests that wait longest (wall time on CI's 2 cores, most of it waiting), handed out
#: before the other e2e tests, longest first. The run ends with e2e tests on every worker, and
#: one of 62-71 s handed out among the last ended the run half a minute after the others. A
#: name ending in "::" stands for every test of that module.
E2E_LONGEST_FIRST = (
    "tests/e2e/test_sweeper_e2e.py::test_every_resume_once_signed_never_early",  # 62-71 s
    "tests/e2e/test_run_deferral.py::",  # 29-36 s
    "tests/e2e/test_sweeper_race.py::",  # 19-24 s each
    "tests/e2e/test_setup_e2e.py::",  # 19-22 s
    "tests/e2e/test_service_resume_store.py::",  # 15-17 s each
)


def group_of(nodeid: str) -> str | None:
    """The group a test (by its node id, tests/...::name) shares a worker with, if any."""
    path = PurePosixPath(nodeid.split("::", 1)[0])
    if "realcli" in path.parts[:-1]:
        return None if path.name in REALCLI_UNGROUPED else f"realcli:{path.name}"
    for folder, group in GROUP_BY_FOLDER.items():
        if folder in path.parts[:-1]:
            return group
    return GROUP_BY_FILE.get(path.name)


#: The kinds of work unit, in the order a worker that waits well takes them: the groups (most
#: of them waiting minutes on resets), tests/e2e's tests (processes of their own, some waiting
#: on timeouts), the rest (quick and CPU-bound).
GROUP, E2E, QUICK = 0, 1, 2


def kind_of(scope: str) -> int:
    if scope.startswith("group:"):
        return GROUP
    return E2E if "e2e" in PurePosixPath(scope.split("::", 1)[0]).parts[:-1] else QUICK


def handed_out(scope: str) -> tuple[int, int]:
    """Where a scheduling unit (a group, else one test's node id) goes in its kind's queue:
    the named ones first, longest first, then the others in collection order."""
    group = scope.removeprefix("group:")
    if group in LONGEST_FIRST:
        return (0, LONGEST_FIRST.index(group))
    for rank, name in enumerate(E2E_LONGEST_FIRST):
        if scope == name or (name.endswith("::") and scope.startswith(name)):
            return (0, rank)
    return (1, 0)


def quick_first(worker: str, workers: int, cores: int) -> bool:
    """Whether a worker (by its id, "gw3") takes the quick tests first. With more workers than
    cores, as many as there are cores do, from the start: the groups mostly wait, and the
    cores would idle while every worker waited. With no more workers than cores, none does:
    the longest groups go first, or one would end the run late."""
    number = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
    return workers > cores and number % workers < cores


#: Which kinds a worker takes first: the quick tests, then the e2e tests (in the run's first
#: minute every worker collects and every group starts its CLIs at once, and a hook e2e test
#: then ran past the hook's 20 s), or the groups first, then the e2e tests.
QUICK_ORDER = (QUICK, E2E, GROUP)
WAITING_ORDER = (GROUP, E2E, QUICK)
#: How many of the group workers go on to the e2e and quick tests once the groups are done,
#: beside the workers kept for them. The e2e tests come last and two thirds of their time is
#: waiting (on sleeps, timeouts, the processes they start): with two, on a machine whose cores
#: ran CI in 12 minutes, the last four minutes were e2e tests on four workers and the cores
#: idled 9 % of the run. With four, on a machine 1.7 times slower per core, six e2e tests ran
#: at once at the end and starved the cores enough that bounds of a second or two failed; two
#: it is. All eight (with the e2e tests first) did the same on the faster machine.
SPARE = 2


def make_scheduler(config: pytest.Config, log: Any, cores: int) -> Any:
    """A parallel run's scheduler: xdist's loadgroup, with the groups above. They are not
    given as xdist_group marks, because xdist joins those to the node id by a pytest internal
    that pytest 9 no longer reads (the marks are silently ignored). Where each unit goes:

    - as many workers as cores take the quick and e2e tests first, the others the groups,
      longest first (`quick_first`); each takes the other kinds once its own are gone;
    - a worker still in a group is given a quick test, not the next group: xdist hands a worker
      its next unit before its last test ends (it runs a test only once it knows the next), and
      a group given then would wait for that test, minutes at times, while another worker
      could have started it;
    - a worker out of groups joins the tests while fewer than `SPARE` others have, and ends
      otherwise;
    - a unit a crashed worker left goes back in the queue and is handed out again."""
    from xdist.scheduler import LoadGroupScheduling

    class Grouped(LoadGroupScheduling):
        #: Each unit's kind, read once, when the first unit is handed out: the queue is complete
        #: then, and is put in the order units are handed out.
        kinds: dict[str, int] | None = None

        def __init__(self, config: pytest.Config, log: Any) -> None:
            super().__init__(config, log)
            #: The group each worker was given last, and the group workers that went on to the
            #: tests once the groups were gone.
            self.group_now: dict[Any, str] = {}
            self.joined: set[Any] = set()

        def _split_scope(self, nodeid: str) -> str:
            group = group_of(nodeid)
            return f"group:{group}" if group is not None else nodeid

        def _in_group(self, node: Any) -> bool:
            scope = self.group_now.get(node)
            unit = self.assigned_work.get(node, {}).get(scope) if scope is not None else None
            return unit is not None and not all(unit.values())

        def _first(self, kind: int) -> str | None:
            """The next unit of `kind` in the queue (a unit a crashed worker left is back in it)."""
            assert self.kinds is not None
            return next((scope for scope in self.workqueue if self.kinds[scope] == kind), None)

        def _next(self, node: Any) -> str | None:
            if quick_first(node.gateway.id, len(self.nodes), cores):
                order = QUICK_ORDER
            elif self._in_group(node):
                order = (QUICK, *WAITING_ORDER)
            elif node in self.joined or len(self.nodes) <= cores or len(self.joined) < SPARE:
                order = WAITING_ORDER
            else:
                order = (GROUP,)  # enough workers run the tests; with no group left, it ends
            for kind in order:
                scope = self._first(kind)
                if scope is None:
                    continue
                if kind == GROUP:
                    self.group_now[node] = scope
                elif order is WAITING_ORDER and len(self.nodes) > cores:
                    self.joined.add(node)
                return scope
            return None

        def _assign_work_unit(self, node: Any) -> None:
            if self.kinds is None:
                self.kinds = {scope: kind_of(scope) for scope in self.workqueue}
                queue = sorted(self.workqueue.items(), key=lambda unit: handed_out(unit[0]))
                self.workqueue.clear()
                self.workqueue.update(queue)
            # A crashed worker's units go back whole, the tests it ran too (xdist's remove_node):
            # one with nothing left to run would be sent as no tests at all, and the worker,
            # which runs its last test only once it knows the next, would wait for good.
            chosen = self._next(node)
            while chosen is not None and all(self.workqueue[chosen].values()):
                del self.workqueue[chosen]
                chosen = self._next(node)
            if chosen is None:
                node.shutdown()
                return
            self.workqueue.move_to_end(chosen, last=False)
            super()._assign_work_unit(node)

    return Grouped(config, log)
