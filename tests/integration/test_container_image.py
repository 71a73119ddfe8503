"""The Dockerfile builds an image that runs rewake, and the pod of docs/k8s works under its
restrictions: built with podman where podman runs and the base image is already in local
storage (nothing is pulled), else skipped saying why."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import rewake
from tests.support.db import fresh_postgres_schema

ROOT = Path(__file__).resolve().parents[2]
#: Overrides the Dockerfile's PYTHON_IMAGE: any Debian-based image with Python 3.11+ that is
#: already in podman's local storage.
BASE_ENV = "REWAKE_TEST_PYTHON_IMAGE"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")

pytestmark = pytest.mark.slow


def podman_options() -> list[str]:
    """Global options that let podman run on more hosts: crun refuses a host whose cgroup
    controllers are split between v1 and v2, runc does not."""
    runc = shutil.which("runc")
    return ["--runtime", runc] if runc else []


#: A container may not raise a limit above its caller's; these are below any host's.
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000"]


def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *podman_options(), *args], capture_output=True, text=True, timeout=timeout
    )


def base_image() -> str:
    configured = os.environ.get(BASE_ENV)
    if configured:
        return configured
    found = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert found, "the Dockerfile names its base image in ARG PYTHON_IMAGE"
    return found.group(1)


#: Set (CI sets it): a missing podman or base image fails the tests instead of skipping them.
REQUIRE_ENV = "REWAKE_REQUIRE_CONTAINER"


def skip_or_fail(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1 says the image tests must run)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("podman") is None:
        skip_or_fail("podman not here (Debian: apt-get install podman runc)")
    base = base_image()
    if podman("image", "exists", base).returncode != 0:
        skip_or_fail(
            f"base image {base} is not in podman's local storage and none is pulled here; "
            f"tools/python_base_image.sh makes one from Debian's packages: set {BASE_ENV} to it"
        )
    tag = f"localhost/rewake-test:{uuid.uuid4().hex[:12]}"
    # --layers=false: no stage is kept as an image of its own, so removing the tag leaves
    # nothing behind.
    build = ["build", "--format", "docker", "--layers=false", "--network", "host", *LIMITS]
    build += ["--build-arg", f"PYTHON_IMAGE={base}", "--tag", tag]
    if HOST_CA_BUNDLE.exists():
        # The host's trust store, so a build behind a TLS-inspecting proxy reaches PyPI as the
        # host does; the mounts are not part of the image.
        pip_conf = tmp_path_factory.mktemp("pip") / "pip.conf"
        pip_conf.write_text(f"[global]\ncert = {HOST_CA_BUNDLE}\n")
        build += ["--volume", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro"]
        build += ["--volume", f"{pip_conf}:/etc/pip.conf:ro"]
    result = podman(*build, str(ROOT), timeout=1500)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    yield tag
    podman("rmi", "--force", tag)


def run_in(image: str, *command: str) -> subprocess.CompletedProcess[str]:
    return podman("run", "--rm", "--network", "none", *LIMITS, image, *command)


def test_image_runs_rewake_version(image: str) -> None:
    """`rewake --version` in the image prints the version the project declares."""
    version = rewake.__version__
    result = run_in(image, "rewake", "--version")
    assert result.returncode == 0, result.stderr
    assert version in result.stdout


def test_image_user_zones_and_no_compiler(image: str) -> None:
    """The image runs as uid 10001, has the system zone database and no compiler on PATH."""
    script = (
        "import os, shutil, zoneinfo; "
        "print(os.getuid(), os.path.exists('/usr/share/zoneinfo/Europe/Berlin'), "
        "[c for c in ('gcc', 'cc', 'clang', 'make') if shutil.which(c)])"
    )
    result = run_in(image, "python3", "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(maxsplit=2) == ["10001", "True", "[]\n"]


def test_image_healthcheck_passes_on_a_serving_container(image: str) -> None:
    """The default command serves, and the image's HEALTHCHECK passes against it."""
    name = f"rewake-test-{uuid.uuid4().hex[:12]}"
    started = podman(
        "run", "--detach", "--name", name, "--network", "none", *LIMITS,
        "--env", "REWAKE_API_TOKENS=probe:probe-secret-0123456789", image,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        deadline = time.monotonic() + 60
        while True:
            check = podman("healthcheck", "run", name)
            if check.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        logs = podman("logs", name)
        assert check.returncode == 0, check.stdout + check.stderr + logs.stdout + logs.stderr
    finally:
        podman("rm", "--force", "--time", "5", name)


#: What docs/k8s/deployment.yaml asks of every container, in podman's words. The image's VOLUME
#: is ignored, as Kubernetes ignores it, so the root file system is read-only everywhere.
RESTRICTED = [
    "--read-only", "--image-volume", "ignore", "--tmpfs", "/tmp", "--cap-drop", "ALL",
    "--security-opt", "no-new-privileges", "--user", "10001:10001",
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def readiness_script() -> str:
    deployment = yaml.safe_load((ROOT / "docs" / "k8s" / "deployment.yaml").read_text())
    (api,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "api"]
    script: str = api["readinessProbe"]["exec"]["command"][2]
    return script


@pytest.mark.postgres
def test_pod_containers_run_restricted_and_become_ready(image: str, tmp_path: Path) -> None:
    """Migrate, the API and the sweeper run as the pod runs them (read-only root, only /tmp
    writable, uid 10001, no capability, the secrets as files in a read-only volume) against
    PostgreSQL, and the readiness command passes with the probe token read from its file."""
    api_port, metrics_port = free_port(), free_port()
    names = [f"rewake-test-{uuid.uuid4().hex[:12]}" for _ in range(2)]
    with fresh_postgres_schema(migrated=False) as url:
        # The secret volume of docs/k8s: one file per key, readable by the container's user.
        secrets = tmp_path / "secrets"
        secrets.mkdir(mode=0o755)
        tokens = "admin:admin-secret-0123456789,probe:probe-secret-0123456789"
        for key, value in (("database-url", url), ("api-tokens", tokens)):
            (secrets / key).write_text(value + "\n", encoding="utf-8")
            (secrets / key).chmod(0o444)
        # The host's network: the test database listens on the host's loopback only.
        common = [*RESTRICTED, *LIMITS, "--network", "host"]
        common += ["--volume", f"{secrets}:/run/secrets/rewake:ro"]
        common += ["--env", "REWAKE_DATABASE_URL_FILE=/run/secrets/rewake/database-url"]
        common += ["--env", "REWAKE_API_TOKENS_FILE=/run/secrets/rewake/api-tokens"]
        common += ["--env", f"REWAKE_PORT={api_port}"]
        migrated = podman("run", "--rm", *common, image, "rewake", "migrate")
        assert migrated.returncode == 0, migrated.stderr
        api = ["rewake", "serve", "--host", "127.0.0.1", "--no-sweeper"]
        sweep = ["rewake", "sweep", "--metrics-port", str(metrics_port)]
        try:
            for name, command in zip(names, (api, sweep), strict=True):
                started = podman("run", "--detach", "--name", name, *common, image, *command)
                assert started.returncode == 0, started.stderr
            deadline = time.monotonic() + 90
            while True:
                ready = podman("exec", names[0], "python3", "-c", readiness_script())
                if ready.returncode == 0 or time.monotonic() > deadline:
                    break
                time.sleep(2)
            logs = [podman("logs", name).stderr[-2000:] for name in names]
            assert ready.returncode == 0, ready.stderr[-2000:] + "".join(logs)
        finally:
            for name in names:
                podman("rm", "--force", "--time", "10", name)
