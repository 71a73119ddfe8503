"""The import rules of docs/architecture.md, read from the source: no circles, and no module
imports a layer above its own. Every import counts, at the top of a module or inside a function."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The source folders and the package each installs as (pyproject.toml's package-dir).
SOURCES = {"app": "rewake", "parsers": "rewake.parsers"}

#: The layers, lowest first. A module may import its own layer and those below it; the parser
#: sits at the bottom and imports nothing of the service.
LAYERS: list[set[str]] = [
    {"rewake.parsers"},
    {
        "rewake.settings",
        "rewake.logs",
        "rewake.exits",
        "rewake.context",
        "rewake.errors",
        "rewake.instants",
        "rewake.ids",
        "rewake.printable",
        "rewake.jsonl",
        "rewake.spawn_env",
        "rewake.secret_env",
    },
    {"rewake.db"},
    {"rewake.sessions", "rewake.heartbeats"},
    {"rewake.marks"},
    # The session service sits above the marks it clears and shows; the rest of
    # rewake.sessions (its storage and rules) lies below them.
    {"rewake.reports", "rewake.session_service"},
    {"rewake.executors", "rewake.security"},
    {"rewake.notifications"},
    {"rewake.api", "rewake.sweeper"},
    {"rewake.web"},
    {"rewake.runner"},
    {"rewake.main", "rewake.service_cli", "rewake.parse_cli", "rewake.cli", "rewake.__main__"},
]
#: Inside the runner, the same rule by role: what it knows of the CLIs, the local store and
#: records, what `rewake setup` writes and `rewake doctor` checks, then the supervised process,
#: then the hook, then the commands.
RUNNER_LAYERS: list[set[str]] = [
    {"rewake.runner.clis"},
    {"rewake.runner.store"},
    {"rewake.runner.setup"},
    {"rewake.runner.process"},
    {"rewake.runner.hook"},
    {"rewake.runner.commands"},
]


def _modules() -> dict[str, Path]:
    found = {}
    for folder, package in SOURCES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _imported(module: str, path: Path) -> Iterator[str]:
    """The rewake modules `module` imports, anywhere in its body."""
    source = path.read_text(encoding="utf-8")
    return _imports_in(module, source, is_package=path.name == "__init__.py")


def _imports_in(module: str, source: str, *, is_package: bool) -> Iterator[str]:
    """The rewake modules `source`, the text of `module`, imports anywhere in its body."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            # `from a import b` names module a.b when b is a module, else a itself.
            names = [f"{base}.{alias.name}" for alias in node.names]
            names = [name if name in MODULES else base for name in names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module and name.startswith("rewake"):
                yield name


GRAPH = {module: set(_imported(module, path)) for module, path in MODULES.items()}


def _rank(module: str, layers: list[set[str]]) -> int | None:
    if module == "rewake":  # the package's own __init__: its version, nothing else
        return 1
    # The longest name that holds the module decides: a folder may place one of its
    # subfolders in another layer.
    found = [
        (len(name), rank)
        for rank, layer in enumerate(layers)
        for name in layer
        if module == name or module.startswith(name + ".")
    ]
    return max(found)[1] if found else None


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def _package_of(module: str) -> str:
    """The folder a module lives in (a package is its own folder)."""
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def test_every_module_has_a_layer() -> None:
    """A new top-level module or folder gets a place in LAYERS before it lands."""
    assert [module for module in MODULES if _rank(module, LAYERS) is None] == []


def test_no_module_imports_a_layer_above_its_own() -> None:
    """The domain never imports the API, the page, the sweeper or the runner; nothing imports
    the composition root but the commands."""
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if (_rank(target, LAYERS) or 0) > (_rank(module, LAYERS) or 0)
    ]
    assert upward == []


def test_the_runner_imports_downward_by_role() -> None:
    """Inside the runner: the CLIs, the store, setup, then process, then hook, then the
    commands."""
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _rank(module, RUNNER_LAYERS) is not None
        and (_rank(target, RUNNER_LAYERS) or 0) > (_rank(module, RUNNER_LAYERS) or 0)
    ]
    assert upward == []


def test_no_import_circles_between_modules() -> None:
    """No module imports, through any chain, a module that imports it."""
    assert _circles(GRAPH) == []


def test_no_import_circles_between_folders() -> None:
    """Nor does any folder below the top, counting the imports of all its modules (the top
    folder holds both the base modules and the composition root: the layer test rules it)."""
    folders: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        folder = _package_of(module)
        if folder == "rewake":
            continue
        folders.setdefault(folder, set()).update(
            _package_of(target)
            for target in targets
            if _package_of(target) not in (folder, "rewake")
        )
    assert _circles(folders) == []


#: Every query on marks; only the modules of rewake.marks import it.
MARK_REPOSITORY = "rewake.marks.repository"


def _in_marks(module: str) -> bool:
    return module == "rewake.marks" or module.startswith("rewake.marks.")


def repository_importers(graph: dict[str, set[str]]) -> list[str]:
    """The modules outside rewake.marks that import the marks repository."""
    return sorted(
        m for m, targets in graph.items() if MARK_REPOSITORY in targets and not _in_marks(m)
    )


def test_nothing_outside_marks_imports_its_repository() -> None:
    """The API, the sweeper, the reports and the runner read and change marks through the
    public modules of rewake.marks (its lifecycle, its service), never its SQL."""
    assert repository_importers(GRAPH) == []


def test_the_repository_rule_names_a_module_that_imports_it() -> None:
    """An import of the marks repository from outside rewake.marks, in any spelling, is
    named; the same import inside rewake.marks is not."""
    spellings = [
        "from rewake.marks import repository as mark_repo",
        "from rewake.marks.repository import live_mark",
        "import rewake.marks.repository",
        "def late():\n    from ..marks import repository",
    ]
    for source in spellings:
        found = {
            "rewake.sweeper.step": set(
                _imports_in("rewake.sweeper.step", source, is_package=False)
            ),
            "rewake.marks.lifecycle": set(
                _imports_in("rewake.marks.lifecycle", source, is_package=False)
            ),
        }
        assert repository_importers(found) == ["rewake.sweeper.step"], source


#: The calls that write rows of a table given as their first argument.
_WRITES = {"update", "insert", "pg_insert", "sqlite_insert"}


def _mentions_mark_row(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "MarkRow" for n in ast.walk(node))


def _stored_state_on(node: ast.AST) -> list[ast.Attribute]:
    """The `<object>.state` targets an assignment stores to (tuple targets too)."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    else:
        return []
    return [
        target
        for top in targets
        for target in ast.walk(top)
        if isinstance(target, ast.Attribute)
        and target.attr == "state"
        and isinstance(target.ctx, ast.Store)
    ]


def mark_state_writes(source: str) -> list[str]:
    """Where `source` changes a mark's state itself rather than through rewake.marks: an UPDATE
    or INSERT of MarkRow's table, a new MarkRow, or a `.state` stored (by assignment or by
    `setattr`) on anything but `session`. The session is the one other row whose state is
    written outside its folder (it follows its runs, rewake.sessions.rules), and its code
    always names it `session`; any other object's `.state` is taken for a mark's."""
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}: {ast.unparse(node)[:80]}"
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            new_mark = name == "MarkRow"
            writes_marks = name in _WRITES and (
                any(_mentions_mark_row(arg) for arg in node.args)
                or (isinstance(func, ast.Attribute) and _mentions_mark_row(func.value))
            )
            sets_state = (
                name == "setattr"
                and len(node.args) == 3
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == "state"
                and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "session")
            )
            if new_mark or writes_marks or sets_state:
                found.append(where)
        for target in _stored_state_on(node):
            if not (isinstance(target.value, ast.Name) and target.value.id == "session"):
                found.append(where)
    return found


def test_only_marks_changes_a_marks_state() -> None:
    """The sweeper, the reports, the API and every other module outside rewake.marks change a
    mark's state only by calling rewake.marks (whose verbs check each change against the
    lifecycle's one table): none of them writes the marks table or a mark's `.state`."""
    writes = {
        module: found
        for module, path in MODULES.items()
        if not _in_marks(module) and (found := mark_state_writes(path.read_text(encoding="utf-8")))
    }
    assert writes == {}


@pytest.mark.parametrize(
    "source",
    [
        "row.state = MarkState.ARMED",
        "mark.state, mark.updated_at = 'done', now",
        "moved.state: str = 'failed'",
        "setattr(row, 'state', 'cleared')",
        "db.execute(update(MarkRow).where(col(MarkRow.id) == 1).values(state='armed'))",
        "db.execute(sa.update(MarkRow.__table__).values(state='armed'))",
        "db.execute(MarkRow.__table__.update().values(state='armed'))",
        "db.execute(pg_insert(MarkRow).values(state='armed'))",
        "db.add(MarkRow(root_id='r', state='armed'))",
    ],
)
def test_the_state_rule_sees_a_mark_state_written_outside_marks(source: str) -> None:
    """Each way of writing a mark's state by hand is found."""
    assert len(mark_state_writes(source)) == 1


def test_the_state_rule_leaves_reads_and_the_sessions_state_alone() -> None:
    """Reading marks by state, and the session's own state, are no mark writes."""
    source = (
        "rows = db.scalars(select(MarkRow).where(col(MarkRow.state) == 'armed'))\n"
        "session.state = session_state(False, ['paused'])\n"
        "setattr(session, 'state', 'paused')\n"
        "if row.state == 'claimed':\n    pass\n"
    )
    assert mark_state_writes(source) == []


def unchecked_state_writes(source: str) -> list[str]:
    """The functions of `source` that set a mark's state in an UPDATE (`.values(state=...)`)
    without calling `check_transition`, the lifecycle's one table."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef):
            continue
        calls = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
        sets_state = any(
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "values"
            and any(keyword.arg == "state" for keyword in call.keywords)
            for call in calls
        )
        checks = any(
            (call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", ""))
            == "check_transition"
            for call in calls
        )
        if sets_state and not checks:
            found.append(function.name)
    return found


def test_inside_marks_every_state_write_is_checked_against_the_lifecycle() -> None:
    """In rewake.marks, only the repository writes the marks table, and each of its functions
    that sets a mark's state checks the change against TRANSITIONS first: no write path
    skips the table."""
    writers = {
        module: found
        for module, path in MODULES.items()
        if _in_marks(module)
        and module != MARK_REPOSITORY
        and (found := mark_state_writes(path.read_text(encoding="utf-8")))
    }
    assert writers == {}
    repository = MODULES[MARK_REPOSITORY].read_text(encoding="utf-8")
    assert unchecked_state_writes(repository) == []


def test_the_check_rule_sees_a_state_write_that_skips_the_table() -> None:
    """A function that sets `state=` in an UPDATE without check_transition is named; the same
    function with the check is not."""
    unchecked = (
        "def rearm(db, mark_id, now):\n"
        "    stmt = update(MarkRow).where(col(MarkRow.id) == mark_id)\n"
        "    return db.execute(stmt.values(state=MarkState.ARMED, updated_at=now))\n"
    )
    check = "    check_transition([MarkState.CLAIMED], MarkState.ARMED)\n"
    checked = unchecked.replace("    stmt =", check + "    stmt =")
    assert unchecked_state_writes(unchecked) == ["rearm"]
    assert unchecked_state_writes(checked) == []


#: The test modules: every tests/**/test_*.py. Code two of them share lives in tests/support/
#: (or a folder's own non-test module, or its conftest.py), never in one of them.
TESTS = ROOT / "tests"


def _test_module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_test_modules(module: str, source: str) -> list[str]:
    """The test modules (a `test_*` module under tests/) that `source`, the text of the test
    module `module`, imports anywhere in its body, in any spelling."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: -node.level]
                base = ".".join([*package, base] if base else package)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "tests" and any(part.startswith("test_") for part in parts[1:]):
                found.append(name)
                break
    return found


def test_no_test_module_imports_another() -> None:
    """A test module imports what it shares from tests/support/ or its folder's helpers and
    takes fixtures from conftest.py: no tests/**/test_*.py imports another test module."""
    imports = {
        _test_module_name(path): found
        for path in sorted(TESTS.rglob("test_*.py"))
        if (found := imported_test_modules(_test_module_name(path), path.read_text("utf-8")))
    }
    assert imports == {}


@pytest.mark.parametrize(
    "source",
    [
        "from tests.e2e.test_hook_e2e import claude_dir, stop_failure",
        "from tests.e2e import test_hook_e2e",
        "import tests.e2e.test_hook_e2e",
        "from .test_hook_e2e import claude_dir",
        "from . import test_hook_e2e",
        "from ..integration.test_api_marks import arm",
        "def late():\n    from tests.realcli.test_realcli_run import start_all",
    ],
)
def test_the_test_import_rule_sees_a_test_module_imported(source: str) -> None:
    """Each spelling of an import of another test module, from a test module, is named."""
    assert len(imported_test_modules("tests.e2e.test_hook_resume", source)) == 1


def test_the_test_import_rule_leaves_shared_code_alone() -> None:
    """Imports of tests/support/, a folder's helpers and the code under test are no finding."""
    source = (
        "import pytest\n"
        "from rewake.marks import lifecycle\n"
        "from tests.support.hook import claude_dir\n"
        "from tests.support import api\n"
        "from tests.realcli.realcli_rewake import hook_settings\n"
        "from .conftest import something\n"
    )
    assert imported_test_modules("tests.e2e.test_hook_resume", source) == []
