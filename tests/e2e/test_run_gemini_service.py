"""`rewake run` against a live `rewake serve` with a stand-in Gemini whose first request hits
the limit: the report tells the service that nothing was saved, so the service refuses a plain
auto-resume (the API, the page) and accepts only the fresh start the CLI arms."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.run import RunEnv, attempts_of, make_run_env
from tests.support.serve import serving_with_token

SECRET = "s3cret-for-the-gemini-test"
AUTH = {"Authorization": f"Bearer {SECRET}"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`rewake serve` with one named token, on a SQLite file of its own, no sweeper."""
    with serving_with_token(tmp_path_factory.mktemp("served"), f"laptop:{SECRET}") as url:
        yield url


@pytest.fixture
def served_env(service: str, tmp_path: Path) -> RunEnv:
    """Stand-in CLIs on PATH, rewake's local state in tmp_path, the store the service."""
    env = make_run_env(tmp_path)
    env.env.update(REWAKE_URL=service, REWAKE_TOKEN=f"laptop:{SECRET}")
    return env


def test_the_service_refuses_a_plain_resume_of_a_gemini_session_with_nothing_saved(
    service: str, served_env: RunEnv
) -> None:
    """The failure the service stores says conversation_saved: false; PUT auto-resume is 409
    conversation_not_saved, the page shows why and no turn-on button, and `rewake
    auto-resume NAME on --fresh-if-missing` arms the fresh start through the service."""
    name = "gsvc1"
    served_env.scenario({"do": "limit"})
    done = served_env.rewake("run", "--name", name, "--", "gemini", "-p", "fix the tests")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"rewake auto-resume {name} on --fresh-if-missing" in done.stdout
    with httpx.Client(base_url=service, headers=AUTH) as http:
        session = http.get(f"/api/agent/runs/{name}").json()
        [attempt] = attempts_of(session)
        assert attempt["failure"]["failure_kind"] == "provider_quota"
        assert attempt["failure"]["conversation_saved"] is False
        refused = http.put(f"/api/agent/runs/{name}/auto-resume", json={"enabled": True})
        assert refused.status_code == 409
        assert refused.json()["code"] == "conversation_not_saved"
        page = http.get(f"/sessions/{name}", headers={"Accept": "text/html"}).text
        assert 'data-code="conversation_not_saved"' in page
        assert "Turn auto-resume on" not in page
        plain = served_env.rewake("auto-resume", name, "on", "--anyway")
        assert plain.returncode == 3, plain.stdout + plain.stderr
        fresh = served_env.rewake("auto-resume", name, "on", "--fresh-if-missing", "--anyway")
        assert fresh.returncode == 0, fresh.stdout + fresh.stderr
        mark = http.get(f"/api/agent/runs/{name}/auto-resume").json()
        assert (mark["state"], mark["armed_by"]) == ("armed", "laptop")
