"""The deployment files in docs/: the systemd unit verifies, the Kubernetes pod parses and runs
the API and a sweeper sidecar, and every REWAKE_ variable they or the docs name is a setting."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rewake.settings import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs"


def known_variables() -> set[str]:
    return {f"REWAKE_{name.upper()}" for name in Settings.model_fields}


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not here")
def test_systemd_unit_verifies(tmp_path: Path) -> None:
    """`systemd-analyze verify` accepts the unit (its program pointed at one that exists)."""
    unit = (DOCS / "rewake-sweep.service").read_text()
    program = Path(sys.executable).parent / "rewake"
    program = program if program.exists() else Path(sys.executable)
    copy = tmp_path / "rewake-sweep.service"
    copy.write_text(unit.replace("/opt/rewake/.venv/bin/rewake", str(program)))
    result = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "ExecStart=/opt/rewake/.venv/bin/rewake sweep" in unit
    assert "Restart=always" in unit


def _pod() -> dict[str, Any]:
    loaded = yaml.safe_load((DOCS / "k8s-pod.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_pod_runs_api_and_sweeper_sidecar() -> None:
    """The pod migrates first, serves the API without an in-process sweeper, and runs
    `rewake sweep` beside it with its metrics port probed."""
    pod = _pod()
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    spec = pod["spec"]
    (init,) = spec["initContainers"]
    assert init["args"] == ["rewake", "migrate"]
    containers = {c["name"]: c for c in spec["containers"]}
    assert set(containers) == {"api", "sweeper"}
    assert containers["api"]["args"][:2] == ["rewake", "serve"]
    assert "--no-sweeper" in containers["api"]["args"]
    assert containers["api"]["readinessProbe"]["httpGet"]["path"] == "/readyz"
    sweeper = containers["sweeper"]
    assert sweeper["args"][:2] == ["rewake", "sweep"]
    port = int(sweeper["args"][sweeper["args"].index("--metrics-port") + 1])
    assert sweeper["ports"][0]["containerPort"] == port
    assert sweeper["livenessProbe"]["httpGet"]["port"] == "metrics"
    images = {c["image"] for c in [init, *spec["containers"]]}
    assert len(images) == 1, "every container runs the same rewake"
    assert spec["terminationGracePeriodSeconds"] >= 30


def test_pod_names_only_real_settings() -> None:
    """Every REWAKE_ variable the pod sets is one rewake reads."""
    names = {
        env["name"]
        for container in _pod()["spec"]["containers"]
        for env in container.get("env", [])
    }
    assert names and names <= known_variables()


def test_docs_name_only_real_settings() -> None:
    """Every REWAKE_ variable the deployment docs and the unit mention exists."""
    text = (DOCS / "deployment.md").read_text() + (DOCS / "rewake-sweep.service").read_text()
    mentioned = set(re.findall(r"REWAKE_[A-Z_]+[A-Z]", text))
    assert mentioned - known_variables() == set()
