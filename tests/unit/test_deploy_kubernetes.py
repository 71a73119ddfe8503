"""docs/k8s/: valid against the Kubernetes schema, a Deployment of the API with a sweeper
sidecar under the restricted pod security profile, probes that carry no secret, and every
secret taken from the Secret."""

from __future__ import annotations

import copy
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from rewake.secret_env import FILE_SUFFIX, SECRET_VARIABLES
from rewake.settings import Settings, parse_tokens

K8S = Path(__file__).resolve().parents[2] / "docs" / "k8s"
MANIFESTS = sorted(K8S.glob("*.yaml"))
#: Settings whose values are secrets: they may come only from the Secret.
SECRET_SETTINGS = {"REWAKE_DATABASE_URL", "REWAKE_API_TOKENS", "REWAKE_WEBHOOK_SECRET"}


def known_variables() -> set[str]:
    """The settings rewake reads, and the `_FILE` variants of its secrets."""
    files = {name + FILE_SUFFIX for name in SECRET_VARIABLES}
    return {f"REWAKE_{name.upper()}" for name in Settings.model_fields} | files


def load(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((K8S / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def pod_spec() -> dict[str, Any]:
    spec: dict[str, Any] = load("deployment.yaml")["spec"]["template"]["spec"]
    return spec


def every_container(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def containers_by_name() -> dict[str, dict[str, Any]]:
    return {container["name"]: container for container in pod_spec()["containers"]}


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda path: path.name)
def test_manifest_is_valid_against_the_schema(manifest: Path) -> None:
    """Each manifest passes kubernetes-validate's strict check (no unknown fields)."""
    for document in yaml.safe_load_all(manifest.read_text()):
        kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_schema_check_refuses_an_unknown_field() -> None:
    """The same check fails a Deployment with a misspelt field, so it is not a formality."""
    broken = copy.deepcopy(load("deployment.yaml"))
    broken["spec"]["template"]["spec"]["containers"][0]["securityContxt"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, kubernetes_validate.latest_version(), strict=True)


def test_manifests_are_a_deployment_a_service_and_the_secret() -> None:
    """docs/k8s holds a Deployment, a Service selecting its pods, and the example Secret."""
    kinds = {path.name: load(path.name)["kind"] for path in MANIFESTS}
    assert kinds == {
        "deployment.yaml": "Deployment",
        "secret.example.yaml": "Secret",
        "service.yaml": "Service",
    }
    deployment, service = load("deployment.yaml"), load("service.yaml")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    assert service["spec"]["selector"].items() <= labels.items()
    ports = {port["name"] for c in pod_spec()["containers"] for port in c.get("ports", [])}
    assert {port["targetPort"] for port in service["spec"]["ports"]} <= ports


def test_pod_migrates_then_runs_api_and_sweeper_sidecar() -> None:
    """The pod migrates first, serves the API without an in-process sweeper, and runs
    `rewake sweep` beside it with its metrics port probed."""
    spec = pod_spec()
    (init,) = spec["initContainers"]
    assert init["args"] == ["rewake", "migrate"]
    containers = containers_by_name()
    assert set(containers) == {"api", "sweeper"}
    api, sweeper = containers["api"], containers["sweeper"]
    assert api["args"][:2] == ["rewake", "serve"] and "--no-sweeper" in api["args"]
    assert sweeper["args"][:2] == ["rewake", "sweep"]
    port = int(sweeper["args"][sweeper["args"].index("--metrics-port") + 1])
    assert sweeper["ports"][0]["containerPort"] == port
    assert sweeper["livenessProbe"]["httpGet"]["port"] == "metrics"
    assert len({c["image"] for c in every_container(spec)}) == 1, "one rewake everywhere"
    assert spec["terminationGracePeriodSeconds"] >= 30


def test_pod_meets_the_restricted_profile() -> None:
    """Pod and containers meet the restricted Pod Security Standard: non-root, no privilege
    escalation, every capability dropped, seccomp RuntimeDefault, no host namespaces."""
    spec = pod_spec()
    pod_context = spec["securityContext"]
    assert pod_context["runAsNonRoot"] is True and pod_context["runAsUser"] != 0
    assert pod_context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not {"hostNetwork", "hostPID", "hostIPC"} & spec.keys()
    for container in every_container(spec):
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False, container["name"]
        assert context["readOnlyRootFilesystem"] is True, container["name"]
        assert context["capabilities"] == {"drop": ["ALL"]}, container["name"]
        assert context.get("runAsNonRoot", True) is True
        assert context.get("runAsUser", 1) != 0
        assert context.get("privileged", False) is False
        assert context.get("seccompProfile", {"type": "RuntimeDefault"}) == {
            "type": "RuntimeDefault"
        }


def test_only_tmp_is_writable() -> None:
    """The one writable place is a small in-memory emptyDir on /tmp; beside it only the Secret,
    read-only; nothing from the host."""
    spec = pod_spec()
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    assert set(volumes) == {"tmp", "secrets"}
    assert volumes["tmp"]["emptyDir"]["medium"] == "Memory"
    assert set(volumes["secrets"]) == {"name", "secret"}
    for container in every_container(spec):
        mounts = [
            (m["name"], m["mountPath"], m.get("readOnly", False))
            for m in container.get("volumeMounts", [])
        ]
        assert mounts == [
            ("tmp", "/tmp", False),
            ("secrets", "/run/secrets/rewake", True),
        ], container["name"]


def test_probes_carry_no_token() -> None:
    """No probe sends a header or a query string: /healthz and the sweeper's /metrics need no
    token, and readiness is an in-container command."""
    for container in every_container(pod_spec()):
        for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
            http = container.get(kind, {}).get("httpGet")
            if http:
                assert "httpHeaders" not in http, (container["name"], kind)
                assert "?" not in http["path"], (container["name"], kind)
    api = containers_by_name()["api"]
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert "exec" in api["readinessProbe"]


def test_secrets_come_only_from_the_secret_as_files() -> None:
    """Every container mounts the Secret read-only and names its files by REWAKE_<NAME>_FILE;
    no secret setting is in an environment, and the example Secret holds one file per secret."""
    secret = load("secret.example.yaml")
    volumes = {volume["name"]: volume for volume in pod_spec()["volumes"]}
    assert volumes["secrets"]["secret"]["secretName"] == secret["metadata"]["name"]
    for container in every_container(pod_spec()):
        assert "envFrom" not in container, container["name"]
        mount = next(m for m in container["volumeMounts"] if m["name"] == "secrets")
        assert mount["readOnly"] is True
        written = {env["name"]: env.get("value") for env in container.get("env", [])}
        assert set(written) <= known_variables(), container["name"]
        assert not set(written) & SECRET_SETTINGS, container["name"]
        assert "REWAKE_DATABASE_URL_FILE" in written, container["name"]
        for name, value in written.items():
            if name.endswith("_FILE"):
                directory, _, key = value.rpartition("/")
                assert directory == mount["mountPath"] and key in secret["stringData"]
    assert set(secret["stringData"]) == {"database-url", "api-tokens", "webhook-secret"}
    deployment_text = (K8S / "deployment.yaml").read_text()
    token_secrets = [
        pair.partition(":")[2] for pair in secret["stringData"]["api-tokens"].split(",")
    ]
    for value in [*secret["stringData"].values(), *token_secrets]:
        assert value and value not in deployment_text
    # The placeholders are secrets rewake would start with (16 characters at least).
    assert set(parse_tokens(secret["stringData"]["api-tokens"])) == {"admin", "probe"}


class _Readyz(BaseHTTPRequestHandler):
    """/readyz as rewake guards it: 401 without the right bearer token, else the status."""

    def do_GET(self) -> None:
        server: Any = self.server
        authorized = self.headers.get("Authorization") == "Bearer probe-secret-0123456789"
        self.send_response(server.status if authorized else 401)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def readyz() -> Iterator[Any]:
    server: Any = HTTPServer(("127.0.0.1", 0), _Readyz)
    server.status = 200
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("tokens", "status", "ready"),
    [
        ("admin:other-secret-0123456789, probe:probe-secret-0123456789", 200, True),
        ("admin:other-secret-0123456789,probe:probe-secret-0123456789", 503, False),
        ("admin:probe-secret-0123456789", 200, False),
        ("probe:wrong-secret-0123456789", 200, False),
    ],
)
def test_readiness_command_sends_the_probe_token(
    readyz: Any, tokens: str, status: int, ready: bool, tmp_path: Path
) -> None:
    """The readiness command sends the `probe` token from the REWAKE_API_TOKENS_FILE file to
    /readyz and passes only when it answers 200."""
    command = containers_by_name()["api"]["readinessProbe"]["exec"]["command"]
    assert command[:2] == ["python3", "-c"]
    readyz.status = status
    (tmp_path / "api-tokens").write_text(tokens + "\n")
    env = {
        "REWAKE_API_TOKENS_FILE": str(tmp_path / "api-tokens"),
        "REWAKE_PORT": str(readyz.server_address[1]),
    }
    result = subprocess.run(
        [sys.executable, *command[1:]], env=env, capture_output=True, timeout=30
    )
    assert (result.returncode == 0) is ready, result.stderr
