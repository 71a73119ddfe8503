"""The Dockerfile and compose.yaml, read as a builder would: a slim two-stage build whose
final image runs `rewake serve` as a non-root user with no compiler, health-checked on
/healthz with the image's own Python; compose runs the API, a sweeper and PostgreSQL."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[2]
COMPILERS = {"gcc", "g++", "cc", "c++", "clang", "make", "build-essential", "cpp", "binutils"}


@dataclass
class Stage:
    """One FROM ... section: its base, its name, and its instructions in order."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for key, args in self.instructions if key == keyword]


@dataclass
class Dockerfile:
    args: dict[str, str]
    stages: list[Stage]


def parse_dockerfile(text: str) -> Dockerfile:
    """Instructions by stage, with continuation lines joined and comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the file ends inside a continued line"
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
        elif not stages:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            key, _, default = rest.partition("=")
            args[key] = default
        else:
            stages[-1].instructions.append((keyword, rest))
    return Dockerfile(args=args, stages=stages)


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return parse_dockerfile((ROOT / "Dockerfile").read_text())


@pytest.fixture(scope="module")
def final(dockerfile: Dockerfile) -> Stage:
    return dockerfile.stages[-1]


def exec_form(args: str) -> list[str]:
    """A JSON-array (exec form) argument; shell form would put a shell between."""
    parsed = json.loads(args)
    assert isinstance(parsed, list) and all(isinstance(word, str) for word in parsed)
    return parsed


def healthcheck_command(final: Stage) -> tuple[list[str], str]:
    """The HEALTHCHECK's exec-form command and its options."""
    (healthcheck,) = final.all("HEALTHCHECK")
    options, _, command = healthcheck.partition(" CMD ")
    return exec_form(command.strip()), options


def test_parser_joins_continuations_and_splits_stages() -> None:
    """The reader this file uses joins continued lines and starts a stage at each FROM."""
    parsed = parse_dockerfile("ARG X=a\nFROM a AS one\nRUN b \\\n  c\n# note\nFROM a\nUSER 1\n")
    assert parsed.args == {"X": "a"}
    assert [(stage.base, stage.name) for stage in parsed.stages] == [("a", "one"), ("a", None)]
    assert parsed.stages[0].instructions == [("RUN", "b  c")]
    assert parsed.stages[1].all("USER") == ["1"]


def test_two_stages_on_a_slim_python(dockerfile: Dockerfile) -> None:
    """A builder stage and a final stage, both on the slim Python 3.11+ image by default."""
    builder, final = dockerfile.stages
    assert builder.name == "builder"
    assert builder.base == final.base == "${PYTHON_IMAGE}"
    default = dockerfile.args["PYTHON_IMAGE"]
    found = re.fullmatch(r"python:3\.(\d+)-slim(-\w+)?", default)
    assert found and int(found.group(1)) >= 11, default


def test_the_wheel_is_built_in_the_builder(dockerfile: Dockerfile, final: Stage) -> None:
    """The builder makes the wheels and the venv; the final stage only copies the venv."""
    builder = dockerfile.stages[0]
    assert any("pip wheel" in run for run in builder.all("RUN"))
    assert final.all("COPY") == ["--from=builder /opt/rewake /opt/rewake"]
    assert not any("pip" in run for run in final.all("RUN"))


def test_final_stage_installs_tzdata_and_no_compiler(final: Stage) -> None:
    """The final stage installs the system tzdata and nothing that compiles."""
    installed: set[str] = set()
    for run in final.all("RUN"):
        for command in run.split("&&"):
            words = shlex.split(command)
            if "apt-get" in words and "install" in words:
                installed |= {w for w in words[words.index("install") + 1 :] if w[0] != "-"}
    assert "tzdata" in installed
    assert installed & COMPILERS == set()
    assert not any(word.endswith("-dev") for word in installed)


def test_final_stage_runs_as_a_fixed_non_root_user(final: Stage) -> None:
    """The final stage's last USER is a fixed numeric uid other than 0, after every RUN, so
    Kubernetes' runAsNonRoot can check it without a passwd lookup."""
    keywords = [key for key, _ in final.instructions]
    last_user = len(keywords) - 1 - keywords[::-1].index("USER")
    assert "RUN" not in keywords[last_user:]
    user, _, group = final.all("USER")[-1].partition(":")
    assert user.isdigit() and int(user) != 0
    assert group.isdigit() and int(group) != 0
    assert any(f"--uid {user}" in run for run in final.all("RUN"))


def test_default_command_serves_beyond_loopback(final: Stage) -> None:
    """The image runs `rewake serve --host 0.0.0.0` by default, without a shell."""
    assert not final.all("ENTRYPOINT")
    (cmd,) = final.all("CMD")
    assert exec_form(cmd) == ["rewake", "serve", "--host", "0.0.0.0"]


def test_healthcheck_asks_healthz_with_python(final: Stage) -> None:
    """The HEALTHCHECK is exec form, runs the image's Python (no curl) and asks /healthz."""
    command, options = healthcheck_command(final)
    assert command[:2] == ["python3", "-c"]
    assert "/healthz" in command[2] and "urllib" in command[2]
    assert "--interval=" in options and "--timeout=" in options


class _Answer(BaseHTTPRequestHandler):
    """Answers every GET with the server's status and records the request."""

    def do_GET(self) -> None:
        server: Any = self.server
        server.seen.append((self.path, self.headers.get("Authorization")))
        self.send_response(server.status)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_stub() -> Iterator[Any]:
    server: Any = HTTPServer(("127.0.0.1", 0), _Answer)
    server.status, server.seen = 200, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_healthcheck_command_passes_only_on_success(
    final: Stage, http_stub: Any, status: int, healthy: bool
) -> None:
    """The HEALTHCHECK's command exits 0 when /healthz answers 200 and fails otherwise."""
    command, _ = healthcheck_command(final)
    http_stub.status = status
    env = {"REWAKE_PORT": str(http_stub.server_address[1])}
    result = subprocess.run(
        [sys.executable, *command[1:]], env=env, capture_output=True, timeout=30
    )
    assert (result.returncode == 0) is healthy
    assert http_stub.seen == [("/healthz", None)]


def test_build_context_leaves_out_checkout_state() -> None:
    """.dockerignore keeps the git history, virtualenvs, databases and tests out of the image."""
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", "*.db", "tests"} <= ignored
    assert not ignored & {"README.md", "LICENSE", "pyproject.toml"}, "the wheel needs these"


def _compose() -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_compose_runs_api_sweeper_and_postgres() -> None:
    """compose.yaml runs the API without its own sweeper, a `rewake sweep` beside it and
    PostgreSQL, both rewake services waiting for the database to be healthy."""
    services = _compose()["services"]
    assert set(services) == {"api", "sweeper", "db"}
    assert services["api"]["command"][:2] == ["rewake", "serve"]
    assert "--no-sweeper" in services["api"]["command"]
    assert services["sweeper"]["command"][:2] == ["rewake", "sweep"]
    assert services["db"]["image"].startswith("postgres:")
    for name in ("api", "sweeper"):
        assert services[name]["depends_on"] == {"db": {"condition": "service_healthy"}}
        assert services[name]["read_only"] is True
        assert services[name]["cap_drop"] == ["ALL"]


def test_compose_takes_its_secrets_from_files() -> None:
    """The services read the database URL and the tokens from compose secrets (files under
    /run/secrets), never from their environment; the database its password likewise."""
    compose = _compose()
    for name in ("api", "sweeper"):
        service = compose["services"][name]
        environment = service["environment"]
        assert not {"REWAKE_DATABASE_URL", "REWAKE_API_TOKENS"} & set(environment)
        assert environment["REWAKE_DATABASE_URL_FILE"] == "/run/secrets/database_url"
        assert environment["REWAKE_API_TOKENS_FILE"] == "/run/secrets/api_tokens", name
        assert set(service["secrets"]) == {"database_url", "api_tokens"}
    db = compose["services"]["db"]
    assert "POSTGRES_PASSWORD" not in db["environment"] and db["secrets"] == ["db_password"]
    assert set(compose["secrets"]) == {"database_url", "api_tokens", "db_password"}
    # The URL the comment makes is a postgresql+psycopg URL to the db service.
    made = re.search(r'"(postgresql\+psycopg://[^"]*)"', (ROOT / "compose.yaml").read_text())
    assert made is not None
    parsed = make_url(re.sub(r"\$\([^)]*\)", "secret", made.group(1)))
    assert (parsed.drivername, parsed.host, parsed.database) == (
        "postgresql+psycopg",
        "db",
        "rewake",
    )
