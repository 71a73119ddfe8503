"""The real CLIs resumed by `rewake serve`'s own sweeper, the way docs/run.md's "service + rewake
run" recipe runs them: `rewake serve` with the command executor (`rewake run --resume-of`)
and nothing else about the store in its environment, and `rewake run --auto-resume` pointed
at it with REWAKE_URL and REWAKE_TOKEN. The resume is recorded in the service: its session
ends finished, and no local database is created under the user's home. A resumed Codex whose
key variable is not passed on (REWAKE_PASS_ENV) fails, and the failure names the variable."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.realcli import mock_provider as mp
from tests.realcli.realcli_drive import Box, claude_env, cli_binary, codex_env, end_tree, gemini_env
from tests.realcli.realcli_install import CLAUDE, CODEX, GEMINI, Pin

pytestmark = pytest.mark.realcli

REPO = Path(__file__).absolute().parents[2]
TOKEN = "realcli-service-token-0123456789"
RUN_TIMEOUT_S = 600
#: What the CLIs' offline switches need to reach a resumed CLI (they are outside the allowlist).
OFFLINE_PASS = "DISABLE_*,NO_UPDATE_NOTIFIER"


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Served:
    """One CLI's case: its mock, its `rewake serve`, its `rewake run`."""

    name: str
    box: Box
    mock: mp.MockProvider
    serve: subprocess.Popen[bytes]
    run: subprocess.Popen[str]
    url: str

    def api(self, path: str) -> Any:
        answer = httpx.get(self.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
        return answer.json()

    def show(self) -> str:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(self.box.home),
               "REWAKE_URL": self.url, "REWAKE_TOKEN": TOKEN, "COLUMNS": "200"}  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "rewake", "show", self.name], env=env, capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip
        return done.stdout + done.stderr

    def stop(self) -> None:
        """End the run and the service with everything below them: the service's resumes
        (`rewake run --resume-of`) and the CLIs they start in sessions of their own."""
        for proc in (self.run, self.serve):
            end_tree(proc, grace_s=20)
        self.mock.stop()


def start(name: str, pin: Pin, root: Path, argv: list[str], *, pass_env: str) -> Served:
    binary = cli_binary(pin)
    box = Box.make(root / name)
    mock = mp.MockProvider().start()
    now = time.time()
    if pin.cli == "claude":
        mock.script(mp.ANTHROPIC, mp.claude_limit(int(now + 20), "five_hour"), mp.answer("Ok."))
        env = claude_env(box, binary, mock.url, "Europe/Berlin")
    elif pin.cli == "codex":
        mock.script(mp.OPENAI, mp.codex_limit(int(now + 20), now=now), mp.answer("Ok."))
        env = codex_env(box, binary, mock.url, "Europe/Berlin")
        subprocess.run(["git", "init", "-q", str(box.work)], check=True, timeout=30)
    else:
        mock.script(mp.GEMINI, mp.tool_call(), mp.gemini_limit(retry_delay="310s"),
                    mp.answer("Ok."))  # fmt: skip
        env = gemini_env(box, binary, mock.url, "Europe/Berlin")
    env.update(PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", REWAKE_RESUME_DELAY_S="0")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    service_home = box.root / "service"
    service_home.mkdir()
    serve_env = dict(env)
    serve_env.update(
        REWAKE_API_TOKENS=f"me:{TOKEN}", REWAKE_EXECUTOR="command",
        REWAKE_COMMAND=f'["{sys.executable}", "-m", "rewake", "run", "--resume-of", "{{mark_id}}"]',
        REWAKE_COMMAND_GRACE_S="60", REWAKE_SWEEP_INTERVAL_S="2", REWAKE_PASS_ENV=pass_env,
    )  # fmt: skip
    with (box.root / "serve.log").open("wb") as log:
        serve = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(port)], env=serve_env,
            cwd=service_home, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz").status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    run_env = dict(env)
    run_env.update(REWAKE_URL=url, REWAKE_TOKEN=TOKEN)
    run = subprocess.Popen(
        [sys.executable, "-m", "rewake", "run", "--provider", pin.cli, "--name", name,
         "--auto-resume", "--", *argv],
        cwd=box.work, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return Served(name, box, mock, serve, run, url)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Served]]:
    """The four cases, started together, Gemini's first: its reset is 310 s ahead, and the
    others' starts (a service each, up before its run starts) overlap that wait instead of
    adding to it."""
    root = tmp_path_factory.mktemp("realcli-service")
    for pin in (CLAUDE, CODEX, GEMINI):
        cli_binary(pin)
    cases: dict[str, Served] = {}
    try:
        cases["gemini"] = start("svc-gemini", GEMINI, root, ["gemini", "-p", "fix the tests"],
                                pass_env=OFFLINE_PASS)  # fmt: skip
        cases["claude"] = start("svc-claude", CLAUDE, root, ["claude", "-p", "fix the tests"],
                                pass_env=OFFLINE_PASS)  # fmt: skip
        cases["codex"] = start("svc-codex", CODEX, root, ["codex", "exec", "fix the tests"],
                               pass_env=f"{OFFLINE_PASS},MOCK_OPENAI_KEY")  # fmt: skip
        cases["codex-nokey"] = start(
            "svc-codex-nokey",
            CODEX,
            root,
            ["codex", "exec", "fix the tests"],
            pass_env=OFFLINE_PASS,
        )
        yield cases
    finally:
        for case in cases.values():
            case.stop()


def settled(case: Served, done: Any) -> dict[str, Any]:
    """The service's session once `done(session)` holds (or the run's time is up)."""
    try:
        out, _ = case.run.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        out = "(rewake run still running)"
    deadline = time.monotonic() + 180
    session = case.api(f"/api/agent/runs/{case.name}")
    while not done(session) and time.monotonic() < deadline:
        time.sleep(1)
        session = case.api(f"/api/agent/runs/{case.name}")
    assert done(session), (session, out, (case.box.root / "serve.log").read_text()[-4000:])
    return session


def no_local_database(case: Served) -> None:
    """Neither the user's state dir nor anywhere under their home holds a rewake database."""
    found = [p for p in case.box.root.rglob("*.db") if "service" not in p.parts]
    assert found == [], found


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini"])
def test_the_services_resume_of_a_real_cli_finishes_in_the_service(
    served: dict[str, Served], cli: str
) -> None:
    """Limit, the service's sweeper resumes, the resumed attempt is recorded in the service:
    the session finished with attempts failed, completed; no local database anywhere."""
    case = served[cli]
    session = settled(case, lambda s: s.get("state") == "finished")
    statuses = [a["status"] for run in session["runs"] for a in run["attempts"]]
    assert statuses == ["failed", "completed"], session
    assert session["mark"]["state"] == "done", session["mark"]
    no_local_database(case)


def test_a_resumed_codex_without_its_key_says_which_variable(served: dict[str, Served]) -> None:
    """REWAKE_PASS_ENV leaves MOCK_OPENAI_KEY out: the resumed Codex fails, and what the
    service shows of that failure names the missing variable."""
    case = served["codex-nokey"]

    def failed_again(session: dict[str, Any]) -> bool:
        attempts = [a for run in session.get("runs", []) for a in run["attempts"]]
        mark = session.get("mark") or {}
        return (len(attempts) >= 2 and attempts[-1]["status"] == "failed") or mark.get(
            "state"
        ) == "failed"

    settled(case, failed_again)
    shown = case.show()
    assert "MOCK_OPENAI_KEY" in shown, shown
    no_local_database(case)
