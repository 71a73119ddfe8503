"""pyproject.toml maps the source folders into the one `rewake` namespace and lists its
packages by hand: none may be left out, and each maps onto the folder it comes from."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The installed name of each top-level source folder.
FOLDERS = {"app": "rewake", "parsers": "rewake.parsers", "alembic": "rewake.migration_scripts"}


def setuptools_config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]


def test_each_source_folder_installs_under_rewake() -> None:
    """app/ is `rewake`, parsers/ is `rewake.parsers`, alembic/ is `rewake.migration_scripts`."""
    config = setuptools_config()
    assert config["package-dir"] == {name: folder for folder, name in FOLDERS.items()}


def test_every_source_package_is_listed() -> None:
    """Each folder of app/ and parsers/ with an __init__.py is listed, under its installed name."""
    found = {
        ".".join([FOLDERS[top], *init.parent.relative_to(ROOT / top).parts])
        for top in ("app", "parsers")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found <= set(setuptools_config()["packages"])


def test_every_listed_package_is_rewake() -> None:
    """Nothing is installed at the top level but `rewake`."""
    assert {name.split(".")[0] for name in setuptools_config()["packages"]} == {"rewake"}


def test_migration_scripts_install_inside_rewake() -> None:
    """alembic/ and its versions/ install as rewake.migration_scripts, where rewake.db.migrations
    looks for them."""
    packages = set(setuptools_config()["packages"])
    assert {"rewake.migration_scripts", "rewake.migration_scripts.versions"} <= packages
    assert (ROOT / "alembic" / "env.py").is_file()
    assert list((ROOT / "alembic" / "versions").glob("0001_*.py"))
