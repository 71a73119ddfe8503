"""The deployment files: the systemd units verify and are hardened to an exposure of 4.0 or
less, and every REWAKE_ variable the deployment files and docs name is a setting."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rewake.secret_env import FILE_SUFFIX, SECRET_VARIABLES
from rewake.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
UNITS = sorted((DOCS / "systemd").glob("*.service"))
INSTALLED_PROGRAM = "/opt/rewake/bin/rewake"
#: `systemd-analyze security` grades from 0 (locked down) to 10; the issue asks for 4.0 or less.
MAX_EXPOSURE = 4.0

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze not here (Debian: apt-get install systemd)",
)


def known_variables() -> set[str]:
    """The settings rewake reads, and the `_FILE` variants of its secrets."""
    files = {name + FILE_SUFFIX for name in SECRET_VARIABLES}
    return {f"REWAKE_{name.upper()}" for name in Settings.model_fields} | files


def unit_settings(unit: Path) -> dict[str, list[str]]:
    """Each `Key=value` of a unit file, every value a key was given, in order."""
    settings: dict[str, list[str]] = {}
    for line in unit.read_text().splitlines():
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def exposure(unit: Path) -> float:
    """The overall exposure `systemd-analyze security --offline=true` gives the unit."""
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert found, result.stdout + result.stderr
    return float(found.group(1))


def test_both_system_units_exist() -> None:
    """docs/systemd holds a system unit for `rewake serve` and one for `rewake sweep`."""
    assert [unit.name for unit in UNITS] == ["rewake-serve.service", "rewake-sweep.service"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_unit_runs_its_command_as_the_rewake_user(unit: Path) -> None:
    """Each unit runs its rewake command as the dedicated user, restarting, its state in
    StateDirectory= and the rest of the file system read-only."""
    settings = unit_settings(unit)
    command = unit.stem.removeprefix("rewake-")
    (exec_start,) = settings["ExecStart"]
    assert exec_start.split()[:2] == [INSTALLED_PROGRAM, command]
    assert settings["User"] == ["rewake"] and settings["Group"] == ["rewake"]
    assert settings["StateDirectory"] == ["rewake"]
    assert settings["WorkingDirectory"] == ["%S/rewake"]
    assert settings["ProtectSystem"] == ["strict"]
    assert settings["Restart"] == ["always"]
    assert "ReadWritePaths" not in settings, "the state directory is the one writable place"


def test_sysusers_file_creates_the_units_user() -> None:
    """The sysusers.d file creates the system user that both units name."""
    lines = [
        line.split()
        for line in (DOCS / "systemd" / "rewake.sysusers.conf").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert [(fields[0], fields[1]) for fields in lines] == [("u", "rewake")]


@needs_systemd_analyze
@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_unit_verifies(unit: Path, tmp_path: Path) -> None:
    """`systemd-analyze verify` accepts the unit (its program pointed at one that exists)."""
    program = Path(sys.executable).parent / "rewake"
    program = program if program.exists() else Path(sys.executable)
    copy = tmp_path / unit.name
    copy.write_text(unit.read_text().replace(INSTALLED_PROGRAM, str(program)))
    result = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


@needs_systemd_analyze
@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_unit_exposure_is_at_most_four(unit: Path) -> None:
    """`systemd-analyze security --offline=true` rates the unit 4.0 or less."""
    assert exposure(unit) <= MAX_EXPOSURE


@needs_systemd_analyze
def test_exposure_check_fails_an_unhardened_unit(tmp_path: Path) -> None:
    """The same check rates a unit without a sandbox above 4.0, so it can tell them apart."""
    bare = tmp_path / "rewake-bare.service"
    bare.write_text(f"[Service]\nExecStart={INSTALLED_PROGRAM} sweep\n")
    assert exposure(bare) > MAX_EXPOSURE


def test_docs_name_only_real_settings() -> None:
    """Every REWAKE_ variable the deployment docs, units, manifests and compose file mention
    exists."""
    files = [
        DOCS / "deployment.md",
        *UNITS,
        *sorted((DOCS / "k8s").glob("*.yaml")),
        ROOT / "compose.yaml",
        ROOT / "Dockerfile",
    ]
    text = "".join(path.read_text() for path in files)
    mentioned = set(re.findall(r"REWAKE_[A-Z_]+[A-Z]", text))
    assert mentioned
    assert mentioned - known_variables() == set()


def test_compose_sets_only_real_settings() -> None:
    """Every REWAKE_ variable the compose file gives its containers is one rewake reads."""
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    names = {
        name
        for service in compose["services"].values()
        for name in service.get("environment", {})
        if name.startswith("REWAKE_")
    }
    assert names and names <= known_variables()
