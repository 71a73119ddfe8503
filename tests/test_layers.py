"""The import rules of docs/architecture.md, read from the source: no circles, and no module
imports a layer above its own. Every import counts, at the top of a module or inside a function."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

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
        "rewake.spawn_env",
        "rewake.secret_env",
    },
    {"rewake.db"},
    {"rewake.sessions"},
    {"rewake.marks"},
    # The session service sits above the marks it clears and shows; the rest of
    # rewake.sessions (its storage and rules) lies below them.
    {"rewake.reports", "rewake.sessions.service"},
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
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
    # subfolders in another layer (rewake.sessions.service).
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

