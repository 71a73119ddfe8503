"""pyproject.toml lists its packages by hand (to install alembic/ inside app): none may be left
out, and the migration scripts must map onto the top-level alembic/ folder."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def setuptools_config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]


def test_every_source_package_is_listed() -> None:
    """Each folder of app/ and parsers/ with an __init__.py is in [tool.setuptools] packages."""
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("app", "parsers")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert found <= set(setuptools_config()["packages"])


def test_migration_scripts_install_inside_app() -> None:
    """alembic/ and its versions/ install as app.migration_scripts, where app.migrations looks."""
    config = setuptools_config()
    assert config["package-dir"] == {"app.migration_scripts": "alembic"}
    assert {"app.migration_scripts", "app.migration_scripts.versions"} <= set(config["packages"])
    assert (ROOT / "alembic" / "env.py").is_file()
    assert list((ROOT / "alembic" / "versions").glob("0001_*.py"))
