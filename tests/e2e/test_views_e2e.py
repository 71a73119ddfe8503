"""End to end with real processes on a real SQLite file: `rewake ls`, `show` and `auto-resume`
after a hook report, their refusals in words, and their exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from sweeper_support import REPO, rewake_env

SID = "7d0c5b1e-2a3f-4e6d-9c8b-1a2b3c4d5e6f"
ROOT = f"claude-{SID}"


def rewake(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], input=stdin, capture_output=True, text=True,
        env={**env, "COLUMNS": "160"}, cwd=str(REPO), timeout=60, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A store holding one Claude session paused on a limit that states no reset."""
    tmp = tmp_path_factory.mktemp("views")
    env = rewake_env(f"sqlite:///{tmp / 'rewake.db'}", state_dir=tmp / "state")
    env["TZ"] = "Europe/Berlin"
    payload = {"session_id": SID, "hook_event_name": "StopFailure", "error": "rate_limit",
               "last_assistant_message": "5 hour limit reached", "cwd": str(tmp)}  # fmt: skip
    hooked = rewake(env, "hook", "claude", stdin=json.dumps(payload))
    assert hooked.returncode == 0 and "attempt 1 reported" in hooked.stderr, hooked.stderr
    assert "auto-resume not offered: the reset time was not stated" in hooked.stderr
    return env


def test_auto_resume_on_without_a_stated_reset_is_refused_in_words(env: dict[str, str]) -> None:
    """`rewake auto-resume NAME on` for a not-stated reset: exit 3 and the 409 reason."""
    answer = rewake(env, "auto-resume", ROOT, "on")
    assert answer.returncode == 3
    assert answer.stderr.startswith(
        "rewake auto-resume: refused (reset_not_stated): the limit message states no reset time"
    )
    assert "Traceback" not in answer.stderr


@pytest.mark.parametrize(
    ("name", "code"), [("no-such-session", "session_not_found"), ("bad name!", "invalid_request")]
)
def test_an_unknown_or_invalid_name_is_exit_4_with_the_store_code(
    env: dict[str, str], name: str, code: str
) -> None:
    """`rewake show` of an unknown or malformed NAME: one line with the code, exit 4."""
    answer = rewake(env, "show", name)
    assert answer.returncode == 4
    assert answer.stderr.startswith(f"rewake show: {code}: ")
    assert len(answer.stderr.splitlines()) == 1


def test_ls_lists_and_filters_the_session(env: dict[str, str]) -> None:
    """The table names the session with its banner and reason; filters select it or not."""
    table = rewake(env, "ls")
    assert table.returncode == 0
    [header, row] = table.stdout.splitlines()
    assert header.split()[:3] == ["NAME", "PROVIDER", "STATE"]
    assert row.startswith(ROOT) and "Paused · provider limit" in row
    assert "the reset time was not stated" in row and row.rstrip().endswith("off")
    assert ROOT in rewake(env, "ls", "--state", "paused", "--provider", "claude").stdout
    assert rewake(env, "ls", "--state", "running").stdout == "no sessions (state running)\n"


def test_show_prints_banner_offer_failure_tail_and_timeline(env: dict[str, str]) -> None:
    """`rewake show NAME`: the banner, why auto-resume is not offered, the CLI text, events."""
    shown = rewake(env, "show", ROOT)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "Paused · provider limit: the reset time was not stated" in text
    assert "not offered: the limit message states no reset time" in text
    assert "│ 5 hour limit reached" in text
    assert "failure_reported" in text
