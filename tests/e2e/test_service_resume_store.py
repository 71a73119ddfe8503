"""docs/run.md's "service + rewake run" recipe, its settings read from the page: `rewake serve`
with the command executor, and `rewake run --auto-resume` against it. The resume its sweeper
starts is recorded in the service (its session finished), never in a local database, with no
REWAKE_URL or REWAKE_TOKEN in serve's own environment. And `rewake run --resume-of` refuses to
record into a store that does not hold the mark."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rewake.exits import Exit
from tests.support.run import RunEnv, epoch_in, make_run_env
from tests.support.sweeper import free_port, stop_all, wait_until

TOKEN = "svc-token-0123456789abcdef"
RUN_DOC = Path(__file__).resolve().parents[2] / "docs" / "run.md"


def readme_recipe() -> tuple[dict[str, str], dict[str, str]]:
    """The settings of docs/run.md's "service + rewake run" recipe: those `rewake serve` is started
    with, and those `rewake run` is; $TOKEN is the test's token, the port the test's."""
    text = RUN_DOC.read_text(encoding="utf-8")
    section = text[text.index("## With a service: `rewake serve` and `rewake run`") :]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    script = block.group(1).replace("\\\n", " ").replace("$TOKEN", TOKEN)
    commands: dict[str, dict[str, str]] = {}
    for line in script.splitlines():
        words = shlex.split(line.rstrip(" &"))
        settings = dict(w.split("=", 1) for w in words if re.match(r"^REWAKE_\w+=", w))
        rest = [w for w in words if not re.match(r"^REWAKE_\w+=", w)]
        if rest[:2] in (["rewake", "serve"], ["rewake", "run"]):
            commands[rest[1]] = settings
    return commands["serve"], commands["run"]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[RunEnv, httpx.Client]]:
    """`rewake serve` in a folder of its own (its default database there), its sweeper on the
    command executor, started from the same shell as `rewake run` but without REWAKE_URL."""
    serve_settings, run_settings = readme_recipe()
    run_env = make_run_env(tmp_path)
    # `rewake` on PATH, as after `pip install`: the recipe's command names it so.
    run_env.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), run_env.env["PATH"]])
    port = free_port()
    serve_env = dict(run_env.env)
    del serve_env["REWAKE_DATABASE_URL"]  # the recipe's `rewake serve`: rewake.db where it runs
    serve_env.update(serve_settings, REWAKE_SWEEP_INTERVAL_S="1")
    folder = tmp_path / "service"
    folder.mkdir()
    with (tmp_path / "serve.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewake", "serve", "--port", str(port)],
            env=serve_env, cwd=folder, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    # `rewake run` records into the service; its own database setting is left out, so that
    # a resume recorded locally would land in the state dir's rewake.db.
    del run_env.env["REWAKE_DATABASE_URL"]
    run_env.env.update(run_settings, REWAKE_URL=base)
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as client:

        def up() -> bool:
            try:
                return client.get("/readyz").status_code == 200
            except httpx.HTTPError:
                return False

        try:
            assert wait_until(up, 30), (tmp_path / "serve.log").read_text()
            yield run_env, client
        finally:
            stop_all([proc])


def test_the_services_resume_is_recorded_in_the_service(
    service: tuple[RunEnv, httpx.Client], tmp_path: Path
) -> None:
    """The sweeper of `rewake serve` resumes through `rewake run --resume-of`, which records the
    resumed attempt in the service: its session finishes, and no local database gets one."""
    run_env, client = service
    run_env.scenario({"do": "limit", "resets_at": epoch_in(1)}, {"do": "success"})
    done = run_env.rewake("run", "--auto-resume", "--name", "svc1", "--", "claude", "-p", "go")
    assert done.returncode == 0, done.stdout + done.stderr

    def finished() -> bool:
        return client.get("/api/agent/runs/svc1").json().get("state") == "finished"

    assert wait_until(finished, 30), (tmp_path / "serve.log").read_text()
    session = client.get("/api/agent/runs/svc1").json()
    assert session["mark"]["state"] == "done"
    statuses = [a["status"] for run in session["runs"] for a in run["attempts"]]
    assert statuses == ["failed", "completed"]
    assert len(run_env.invocations()) == 2
    # No session anywhere else: the state dir holds no database at all.
    assert not list((tmp_path / "state").glob("*.db")), list((tmp_path / "state").iterdir())


def test_resume_of_refuses_a_store_without_the_mark(
    service: tuple[RunEnv, httpx.Client], tmp_path: Path
) -> None:
    """`rewake run --resume-of` pointed at a local database that does not hold the mark (a
    wrapper that dropped the sweeper's store) starts nothing and says why."""
    run_env, _client = service
    run_env.scenario({"do": "limit", "resets_at": epoch_in(3600)})
    done = run_env.rewake("run", "--name", "svc2", "--", "claude", "-p", "go")
    assert done.returncode != 0 and run_env.record("svc2")["attempt"] == 1
    env = {k: v for k, v in run_env.env.items() if k not in {"REWAKE_URL", "REWAKE_TOKEN"}}
    env.update(REWAKE_ROOT_ID="svc2", REWAKE_EXPECTED_ATTEMPT="1", REWAKE_ATTEMPT_KEY="k-1")
    calls_before = len(run_env.invocations())
    refused = subprocess.run(
        [sys.executable, "-m", "rewake", "run", "--resume-of", "1", "--", "continue"],
        cwd=run_env.work, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == Exit.STORE, refused.stderr
    assert "mark 1 of svc2 is not in the store" in refused.stderr
    assert len(run_env.invocations()) == calls_before
