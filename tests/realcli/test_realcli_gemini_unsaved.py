"""The real Gemini CLI whose first request hits the limit, supervised by `rewake run
--auto-resume` pointed at a live `rewake serve`: Gemini saves no conversation then, so the
run's report says `conversation_saved: false`, nothing is armed, and the service refuses a plain
auto-resume itself (the API's 409 and the page), as the CLI does."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.realcli import mock_provider as mp
from tests.realcli.realcli_drive import Box, cli_binary, gemini_env, run_ended
from tests.realcli.realcli_install import GEMINI

pytestmark = pytest.mark.realcli

REPO = Path(__file__).absolute().parents[2]
TOKEN = "realcli-unsaved-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Box, mp.MockProvider]]:
    """The mock (a limit on Gemini's first request), `rewake serve`, and the CLI's env."""
    binary = cli_binary(GEMINI)
    box = Box.make(tmp_path / "gemini-unsaved")
    mock = mp.MockProvider().start()
    mock.script(mp.GEMINI, mp.gemini_limit(retry_delay="310s"))
    env = gemini_env(box, binary, mock.url, "Europe/Berlin")
    env.update(PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    (box.root / "service").mkdir()
    with (box.root / "serve.log").open("wb") as log:
        serve = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(port), "--no-sweeper"],
            env=env | {"REWAKE_API_TOKENS": f"me:{TOKEN}"}, cwd=box.root / "service",
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        yield url, env | {"REWAKE_URL": url, "REWAKE_TOKEN": TOKEN}, box, mock
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()
        mock.stop()


def test_real_gemini_with_nothing_saved_ends_with_the_services_toggle_refused(
    service: tuple[str, dict[str, str], Box, mp.MockProvider],
) -> None:
    """`rewake run --auto-resume` arms nothing and exits; the service's failure says
    conversation_saved: false, its offer and PUT refuse with conversation_not_saved, and the
    page says why instead of offering "Turn auto-resume on"."""
    url, env, box, _ = service
    name = "svc-gemini-unsaved"
    done = run_ended(
        [sys.executable, "-m", "rewake", "run", "--provider", "gemini", "--name", name,
         "--auto-resume", "--", "gemini", "-p", "fix the tests"],
        cwd=box.work, env=env, capture_output=True, timeout=600,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "auto-resume not armed" in said, said
    with httpx.Client(base_url=url, headers=AUTH) as http:
        session = http.get(f"/api/agent/runs/{name}").json()
        [attempt] = [a for run in session["runs"] for a in run["attempts"]]
        assert attempt["failure"]["failure_kind"] == "provider_quota", (session, said)
        assert attempt["failure"]["conversation_saved"] is False
        assert session["mark"]["state"] is None
        assert session["mark"]["offer"]["code"] == "conversation_not_saved"
        refused = http.put(f"/api/agent/runs/{name}/auto-resume", json={"enabled": True})
        assert (refused.status_code, refused.json()["code"]) == (409, "conversation_not_saved")
        page = http.get(f"/sessions/{name}", headers={"Accept": "text/html"}).text
        assert 'data-code="conversation_not_saved"' in page
        assert "Turn auto-resume on" not in page
