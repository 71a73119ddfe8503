"""The real-CLI tier's supervised runs start early, when any test that needs them was
selected: they spend minutes waiting for resets, which then overlap other tests instead of
adding to them. In a run on one process they start with the tier's first test; on a parallel
run's workers (each real-CLI module is a group of its own, tests/support/scheduling.py), with
the first test of test_realcli_run.py, on the one worker that runs it: its tests that wait for
the runs come after its other tests. Not earlier: the mock stamps each answer with
time.time(), which other tiers' tests pin with freezegun; the runs' tests wait for them.
Whatever was started is ended when the session finishes, however it finishes."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realcli.realcli_workflow_mock import Served, serving

_started: dict[str, Any] = {}


def _start() -> None:
    from tests.realcli.test_realcli_run import start_all

    _started["root"] = Path(tempfile.mkdtemp(prefix="rewake-realcli-run-"))
    module_tag = os.environ.get(TREE_ENV)
    os.environ[TREE_ENV] = f"{os.getpid()}:runs"  # they outlive the module they start in
    try:
        _started["runs"] = start_all(_started["root"])
    except BaseException as failed:  # a skip or failure belongs to the tests that need it
        _started["error"] = failed
    finally:
        if module_tag is None:
            os.environ.pop(TREE_ENV, None)
        else:
            os.environ[TREE_ENV] = module_tag


#: Every process a real-CLI module starts carries this variable, "<pytest's pid>:<module>"
#: (realcli_drive.base_env passes it into the CLIs' own environments; the rest inherit it),
#: and whatever still carries it when its module ends is ended then: a process a test lost
#: track of (its parent killed, or one that left its parent's session and process group) is
#: found by what it inherited, not by parentage, which ends with its parent.
TREE_ENV = "REWAKE_TEST_TREE"


def _carrying(tag: str, *, prefix: bool = False) -> list[int]:
    """The processes whose environment has TREE_ENV set to `tag` (or to a value under it)."""
    wanted = f"{TREE_ENV}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if any(v == wanted or (prefix and v.startswith(wanted)) for v in variables):
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module", autouse=True)
def _module_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tags what the module starts (set before its other fixtures start anything); after
    its fixtures have ended, ends whatever carries the tag still."""
    from tests.realcli.realcli_drive import end_processes

    tag = f"{os.getpid()}:{request.path.name}"
    os.environ[TREE_ENV] = tag
    try:
        yield
    finally:
        os.environ.pop(TREE_ENV, None)
        end_processes(_carrying(tag))


_wanted: list[bool] = []


def _waits_for_runs(item: pytest.Item) -> bool:
    return "runs" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In each module, the tests that wait for the supervised runs go after the others, so
    that those overlap the runs' waits (stable otherwise: every worker orders alike)."""
    modules = {item.path for item in items if _waits_for_runs(item)}
    for module in modules:
        places = [i for i, item in enumerate(items) if item.path == module]
        block = [items[i] for i in places]
        block.sort(key=_waits_for_runs)
        for i, item in zip(places, block, strict=True):
            items[i] = item


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    _wanted[:] = [any(_waits_for_runs(item) for item in session.items)]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Called for this folder's tests only: in one process the first one starts the runs; in
    a parallel run's worker, the first of the module whose tests wait for them (the worker
    that runs that module; the others never start them)."""
    if _wanted != [True] or _started:
        return
    if hasattr(item.config, "workerinput") and item.path.name != "test_realcli_run.py":
        return
    _start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    for run in _started.get("runs", {}).values():
        run.end()
    if _wanted:  # this process collected the tier: nothing it started outlives the session
        from tests.realcli.realcli_drive import end_processes

        end_processes(_carrying(f"{os.getpid()}:", prefix=True))
    if "root" in _started:
        shutil.rmtree(_started["root"], ignore_errors=True)
    _started.clear()
    _wanted.clear()


@pytest.fixture(scope="session")
def runs() -> Iterator[dict[str, Any]]:
    """The supervised runs, started with the tier's first test (see the module docstring)."""
    if not _started:
        _start()
    if "error" in _started:
        raise _started["error"]
    yield _started["runs"]


@pytest.fixture
def served() -> Iterator[Served]:
    """The workflow mock (tests.realcli.realcli_workflow_mock) on loopback for one test: the
    workflow tests' Claude Code talks to it alone."""
    with serving() as mock:
        yield mock
