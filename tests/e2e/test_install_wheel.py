"""rewake installed from its wheel (`pip install .`), not from the source tree: it must carry
its migration scripts, and refuse to serve when they are missing."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import httpx
import pytest
from alembic.script import ScriptDirectory

import alembic
from rewake.db import migrations
from tests.support.sweeper import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
#: What a wheel is built from; everything else in the checkout stays out of the copy.
SOURCES = (
    "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md", "CONTRIBUTING.md",
    "SECURITY.md", "Dockerfile", "compose.yaml", "alembic.ini", "alembic", "app", "parsers",
    "docs",
)  # fmt: skip
TABLES = {"sessions", "runs", "attempts", "failures", "marks", "tombstones", "timeline"}

pytestmark = pytest.mark.slow


def run(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
    return done.stdout


def copy_sources(into: Path) -> Path:
    """The files a distribution is built from, copied from this checkout."""
    source = into / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    return source


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtualenv holding rewake's wheel, its dependencies taken from this one."""
    work = tmp_path_factory.mktemp("wheel")
    source = copy_sources(work)
    run(sys.executable, "-m", "pip", "wheel", source, "--no-deps", "-q", "-w", work / "dist",
        cwd=work)  # fmt: skip
    [wheel] = (work / "dist").glob("rewake-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"rewake"}, tops
    venv = work / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=work)
    python = venv / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = Path(run(python, "-c", where, cwd=work).strip())
    # Plain paths, so that the .pth files there (an editable rewake's finder) are not run.
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    # As after `pip install .` with its dependencies, the alembic library sits beside `app`:
    # a rewake that looked for its scripts in `../alembic` found the library and no revision.
    (purelib / "alembic").symlink_to(Path(alembic.__file__).parent, target_is_directory=True)
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
        "-q", wheel, cwd=work)  # fmt: skip
    yield venv


def rewake_env(database: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("REWAKE_")}
    env.pop("PYTHONPATH", None)
    return env | {"REWAKE_DATABASE_URL": f"sqlite:///{database}"}


def test_installed_wheel_migrates_an_empty_database(installed: Path, tmp_path: Path) -> None:
    """`rewake migrate` from a wheel install finds its packaged scripts and creates the tables."""
    where = "from rewake.db import migrations; print(migrations.script_location())"
    found = run(installed / "bin" / "python", "-c", where, cwd=tmp_path)
    assert Path(found.strip()).is_relative_to(installed), found
    database = tmp_path / "rewake.db"
    run(installed / "bin" / "rewake", "migrate", cwd=tmp_path, env=rewake_env(database))
    with sqlite3.connect(database) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        [(revision,)] = connection.execute("SELECT version_num FROM alembic_version")
    assert tables >= TABLES
    assert revision == ScriptDirectory.from_config(migrations.alembic_config()).get_current_head()


def test_installed_wheel_answers_python_m_rewake(installed: Path, tmp_path: Path) -> None:
    """`python -m rewake --version` from a wheel install names the distribution's version."""
    done = run(installed / "bin" / "python", "-m", "rewake", "--version", cwd=tmp_path)
    assert done.strip() == f"rewake {metadata.version('rewake')}"


def test_installed_wheel_serves_the_web_page(installed: Path, tmp_path: Path) -> None:
    """A wheel install carries the page's templates and static files: `rewake serve` from it
    renders / and /docs and serves their stylesheets and scripts (Swagger UI's included)."""
    port = free_port()
    server = subprocess.Popen(
        [str(installed / "bin" / "rewake"), "serve", "--port", str(port), "--no-sweeper"],
        cwd=tmp_path, env=rewake_env(tmp_path / "rewake.db"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            try:
                return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        assert wait_until(up, 60), f"rewake serve exited {server.poll()}"
        page = httpx.get(f"{base}/", timeout=10)
        assert page.status_code == 200 and "<h1" in page.text and "Sessions" in page.text
        docs = httpx.get(f"{base}/docs", timeout=10)
        assert docs.status_code == 200 and "swagger-ui-bundle.js" in docs.text
        assets = ("rewake.css", "rewake.js", "docs.js", "swagger-ui/swagger-ui-bundle.js",
                  "swagger-ui/swagger-ui.css")  # fmt: skip
        for asset in assets:
            assert httpx.get(f"{base}/static/{asset}", timeout=10).status_code == 200, asset
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_install_without_scripts_refuses_to_serve(installed: Path, tmp_path: Path) -> None:
    """With its migration scripts gone, an install exits 2 from serve and migrate, saying so."""
    purelib = next((installed / "lib").glob("python3*/site-packages"))
    scripts = purelib / "rewake" / "migration_scripts"
    scripts.rename(scripts.with_name("moved_away"))
    env = rewake_env(tmp_path / "rewake.db")
    try:
        for argv in (["serve", "--port", "0", "--no-sweeper"], ["migrate"]):
            done = subprocess.run(
                [str(installed / "bin" / "rewake"), *argv],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert done.returncode == 2, (argv, done.stdout, done.stderr)
            assert "no migration scripts" in done.stderr, (argv, done.stderr)
    finally:
        scripts.with_name("moved_away").rename(scripts)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel `python -m build` makes from a copy of the sources."""
    work = tmp_path_factory.mktemp("build")
    source = copy_sources(work)
    run(sys.executable, "-m", "build", "-q", "-o", work / "dist", source, cwd=work)
    [sdist] = (work / "dist").glob("rewake-*.tar.gz")
    [built_wheel] = (work / "dist").glob("rewake-*.whl")
    return sdist, built_wheel


def wheel_metadata(built_wheel: Path) -> str:
    with zipfile.ZipFile(built_wheel) as wheel:
        names = wheel.namelist()
        return wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()


def test_the_distributions_carry_the_license_and_pass_twine_check(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """`python -m build` makes an sdist and a wheel whose metadata twine accepts (strict), with
    the MIT license file, the classifiers and the postgres extra."""
    sdist, built_wheel = built
    run(sys.executable, "-m", "twine", "check", "--strict", sdist, built_wheel, cwd=tmp_path)
    with zipfile.ZipFile(built_wheel) as wheel:
        names = wheel.namelist()
    meta = wheel_metadata(built_wheel)
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "License-Expression: MIT" in meta and "Classifier: Typing :: Typed" in meta
    assert "Provides-Extra: postgres" in meta
    # The documentation the package page names comes with the source distribution.
    with tarfile.open(sdist) as archive:
        carried = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    named = {"README.md", "CHANGELOG.md", "SECURITY.md", "docs/api.md", "docs/run.md",
             "docs/deployment.md", "docs/host-contract.md", "docs/operations.md",
             "docs/parsing.md", "docs/providers.md", "docs/k8s/deployment.yaml",
             "Dockerfile"}  # fmt: skip
    assert named <= carried


def test_the_package_page_installs_from_the_index_and_links_nowhere_relative(
    built: tuple[Path, Path],
) -> None:
    """The wheel's description, the page a package index shows, installs with `pip install
    rewake` rather than an editable checkout, and holds no link into the source tree, which an
    index cannot follow."""
    headers, _, page = wheel_metadata(built[1]).partition("\n\n")
    assert "Description-Content-Type: text/markdown" in headers
    assert "pip install rewake" in page and "pip install -e" not in page
    links = re.findall(r"\]\(([^)]*)\)", page)
    assert [link for link in links if not link.startswith(("https://", "#"))] == []
