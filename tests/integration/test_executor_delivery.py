"""Executors against real things: the webhook over loopback to the example host (signatures,
idempotency, every outcome), and the command executor spawning real processes."""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rewake.executors.base import DEFAULT_PROMPT, Delivery
from rewake.executors.command import CommandExecutor
from rewake.executors.webhook import WebhookExecutor
from tests.hosts.example_host import ExampleHost

SECRET = "host-secret-0123456789"
SESSION = "0b6f3f3e-8d1c-4c53-9a0e-3c1f5f0d2a11"


def delivery(key: str = "k1-1", root_id: str = "root-1", **changes: object) -> Delivery:
    now = datetime.now(UTC)
    values: dict[str, object] = {
        "mark_id": 1, "root_id": root_id, "run_id": "run-1", "attempt": 1, "attempt_key": key,
        "reset_at": now, "resolution_s": 0, "due_at": now, "armed_by": "alice",
        "armed_at": now, "sent_at": now, "account_key": "acct", "cli_session_id": SESSION,
    }  # fmt: skip
    values.update(changes)
    return Delivery(**values)  # type: ignore[arg-type]


@pytest.fixture
def host() -> Iterator[ExampleHost]:
    with ExampleHost(SECRET) as running:
        yield running


def webhook(host: ExampleHost, timeout_s: float = 5.0, secret: str = SECRET) -> WebhookExecutor:
    return WebhookExecutor(
        host.resume_template, secret, lookup_template=host.lookup_template, timeout_s=timeout_s
    )


def test_webhook_delivers_signed_once(host: ExampleHost) -> None:
    """A resume arrives signed (the host verifies it with the standardwebhooks library), with
    its Idempotency-Key, and the mark is done."""
    executor = webhook(host)
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("done", "done")
    (call,) = host.calls()
    assert call.signature_problem is None
    assert call.key == "k1-1"
    assert call.body["message"] == DEFAULT_PROMPT
    executor.close()


def test_same_key_again_gets_the_stored_answer(host: ExampleHost) -> None:
    """The host dedupes by Idempotency-Key: the same key twice resumes once."""
    executor = webhook(host)
    first = executor.deliver(delivery())
    second = executor.deliver(delivery())
    assert first == second
    assert host.state.answers.keys() == {"k1-1"}
    executor.close()


def test_wrong_secret_is_refused(host: ExampleHost) -> None:
    """A request signed with another secret is refused by the host: failed, not done."""
    executor = webhook(host, secret="not-the-secret")
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("failed", "http_401")
    assert host.calls()[0].signature_problem == "signature_mismatch"
    executor.close()


def test_stale_expected_attempt_is_superseded(host: ExampleHost) -> None:
    """The host's run moved past the marked attempt: 409 attempt_moved_on, mark superseded."""
    host.state.paused[("root-1", "run-1")] = 3
    executor = webhook(host)
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("superseded", "attempt_moved_on")
    executor.close()


def test_other_conflict_fails_with_the_hosts_code(host: ExampleHost) -> None:
    """A 409 for an open question fails the mark and shows the host's code."""
    host.state.refuse["root-1"] = (409, "question_open")
    executor = webhook(host)
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("failed", "question_open")
    executor.close()


def test_gateway_error_is_uncertain(host: ExampleHost) -> None:
    """A 502 may have reached the host: uncertain, never retried."""
    host.state.refuse["root-1"] = (502, "bad_gateway")
    outcome = webhook(host).deliver(delivery())
    assert (outcome.state, outcome.code) == ("uncertain", "http_502")


def test_timeout_after_sending_is_uncertain(host: ExampleHost) -> None:
    """The host took longer than the timeout: the request was sent, the mark is uncertain,
    and the host's lookup later says it was received."""
    host.state.delay_s = 1.0
    executor = webhook(host, timeout_s=0.3)
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("uncertain", "timeout")
    looked = executor.lookup(delivery(), datetime.now(UTC))
    # Still in progress at the host, or already answered: never "not received".
    assert looked is None or looked.received
    executor.close()


def test_refused_connection_fails_with_nothing_sent() -> None:
    """Nobody listens on the port: failed, and the detail says nothing was sent."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    executor = WebhookExecutor(f"http://127.0.0.1:{port}/r/{{root_id}}", SECRET)
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("failed", "connection_refused")
    assert outcome.detail is not None and "nothing was sent" in outcome.detail
    executor.close()


def test_lookup_tells_seen_from_never_seen(host: ExampleHost) -> None:
    """The lookup route answers seen for a delivered key and never-seen for another."""
    executor = webhook(host)
    executor.deliver(delivery(key="seen-1"))
    now = datetime.now(UTC)
    seen = executor.lookup(delivery(key="seen-1"), now)
    unseen = executor.lookup(delivery(key="never-1"), now)
    assert seen is not None and seen.received
    assert unseen is not None and not unseen.received
    # Both lookups verified: signed over an empty body with the key as webhook-id.
    assert [(e["id"], e["problem"]) for e in host.journal("lookup")] == [
        ("seen-1", None), ("never-1", None),
    ]  # fmt: skip
    # A key the host said it never saw is refused if it arrives late.
    late = executor.deliver(delivery(key="never-1"))
    assert (late.state, late.code) == ("failed", "key_retired")
    executor.close()


RECORDER = """
import json, os, sys
with open(sys.argv[1], "w") as out:
    json.dump({"argv": sys.argv[2:], "key": os.environ.get("REWAKE_ATTEMPT_KEY"),
               "note": os.environ.get("REWAKE_NOTE")}, out)
sys.exit(int(os.environ.get("EXIT_WITH", "0")))
"""


def test_command_runs_without_shell_and_passes_key_in_env(tmp_path: Path) -> None:
    """The program gets the filled argv, `--`, the prompt; the attempt key is in its env."""
    script = tmp_path / "record.py"
    script.write_text(RECORDER)
    out = tmp_path / "out.json"
    executor = CommandExecutor(
        [sys.executable, str(script), str(out), "{run_id}", "{session_id}"], grace_s=10
    )
    outcome = executor.deliver(delivery(run_id="run-$(touch x)".replace("$(touch x)", "2")))
    assert (outcome.state, outcome.code) == ("done", "exit_0")
    recorded = json.loads(out.read_text())
    assert recorded["argv"] == ["run-2", SESSION, "--", DEFAULT_PROMPT]
    assert recorded["key"] == "k1-1"
    assert "requested in advance by alice" in recorded["note"]
    executor.close()


def test_command_exit_status_decides(tmp_path: Path) -> None:
    """A non-zero exit within the grace fails the mark with the status shown."""
    script = tmp_path / "record.py"
    script.write_text(RECORDER)
    executor = CommandExecutor(
        [sys.executable, str(script), str(tmp_path / "o.json")],
        grace_s=10,
        env={"EXIT_WITH": "3", "PATH": "/usr/bin:/bin", "REWAKE_PASS_ENV": "EXIT_WITH"},
    )
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("failed", "exit_3")


#: The environment of a sweeper as an operator sets it up: the service's secrets, another
#: secret of the machine, and what a coding CLI needs.
SWEEPER_ENV = {
    "REWAKE_API_TOKENS": "alice:token-secret-0123456789-1,bob:token-secret-0123456789-2",
    "REWAKE_WEBHOOK_SECRET": "webhook-secret-3",
    "REWAKE_NOTIFY_URL": "https://ops:notify-secret-4@notify.example/hook",
    "REWAKE_WEBHOOK_URL": "https://host.example/resume?token=webhook-url-secret-5",
    "REWAKE_WEBHOOK_LOOKUP_URL": "https://host.example/lookup?token=lookup-secret-6",
    "REWAKE_DATABASE_URL": "postgresql://rewake:database-secret-7@db/rewake",
    "REWAKE_STATE_DIR": "/var/lib/rewake/state",
    "REWAKE_RESUME_DELAY_S": "45",
    "REWAKE_COMMAND": '["rewake", "run", "--resume-of", "{mark_id}"]',
    "REWAKE_PASS_ENV": "EXTRA_FOR_THE_CLI,TEAM_*",
    "AWS_SECRET_ACCESS_KEY": "machine-secret-8",
    "PGPASSWORD": "machine-secret-9",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/home/agent",
    "USER": "agent",
    "LANG": "C.UTF-8",
    "LC_TIME": "de_DE.UTF-8",
    "TZ": "Europe/Berlin",
    "TERM": "xterm-256color",
    "XDG_CONFIG_HOME": "/home/agent/.config",
    "HTTPS_PROXY": "http://proxy.example:3128",
    "ANTHROPIC_API_KEY": "cli-key-1",
    "OPENAI_API_KEY": "cli-key-2",
    "CODEX_HOME": "/home/agent/.codex",
    "GEMINI_API_KEY": "cli-key-3",
    "GOOGLE_CLOUD_PROJECT": "project",
    "CLAUDE_CONFIG_DIR": "/home/agent/.claude",
    "EXTRA_FOR_THE_CLI": "1",
    "TEAM_SETTING": "2",
}
#: What the command's program may see of it (rewake run --resume-of records the resume with
#: the store's names; the ids are set for the resume).
COMMAND_SEES = {
    "PATH", "HOME", "USER", "LANG", "LC_TIME", "TZ", "TERM", "XDG_CONFIG_HOME", "HTTPS_PROXY",
    "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEX_HOME", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT",
    "CLAUDE_CONFIG_DIR", "EXTRA_FOR_THE_CLI", "TEAM_SETTING", "REWAKE_PASS_ENV",
    "REWAKE_DATABASE_URL", "REWAKE_STATE_DIR", "REWAKE_RESUME_DELAY_S",
    "REWAKE_ATTEMPT_KEY", "REWAKE_MARK_ID", "REWAKE_ROOT_ID", "REWAKE_RUN_ID",
    "REWAKE_EXPECTED_ATTEMPT", "REWAKE_NOTE", "REWAKE_LOOK_FD",
}  # fmt: skip

DUMP_ENV = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"


def test_the_command_gets_an_allowlisted_environment_without_service_secrets(
    tmp_path: Path,
) -> None:
    """The spawned program sees what a coding CLI needs, the names REWAKE_PASS_ENV adds, the
    resume's ids and the store names `rewake run --resume-of` records with; never the API
    tokens, the webhook secret, the notify or webhook URLs, nor any other variable."""
    out = tmp_path / "env.json"
    executor = CommandExecutor(
        [sys.executable, "-c", DUMP_ENV, str(out)], grace_s=10, env=SWEEPER_ENV
    )
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("done", "exit_0")
    seen = json.loads(out.read_text())
    seen.pop("LC_CTYPE", None)  # Python's own locale coercion may add it
    assert set(seen) == COMMAND_SEES
    assert seen["REWAKE_ATTEMPT_KEY"] == "k1-1" and seen["REWAKE_ROOT_ID"] == "root-1"
    leaked = [v for k, v in SWEEPER_ENV.items() if k not in COMMAND_SEES and v in out.read_text()]
    assert not leaked


def test_command_still_running_is_done(tmp_path: Path) -> None:
    """A program still running after the grace has started the resume: done."""
    executor = CommandExecutor([sys.executable, "-c", "import time; time.sleep(2)"], grace_s=0.2)
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("done", "spawned")
    executor.close()


#: A program that speaks the look protocol as `rewake run --resume-of` does (rewake.exits).
LOOKS_THEN = """
import os, sys, time
fd = int(os.environ["REWAKE_LOOK_FD"])
os.write(fd, b"L")
time.sleep(float(sys.argv[1]))
if sys.argv[2] == "start":
    os.write(fd, b"S"); os.close(fd); time.sleep(3)
sys.exit(int(sys.argv[2]) if sys.argv[2].isdigit() else 0)
"""


@pytest.mark.parametrize(
    ("then", "expected"),
    [("8", ("armed", "deferred")), ("7", ("superseded", "attempt_moved_on")),
     ("start", ("done", "started"))],
)  # fmt: skip
def test_a_look_longer_than_the_grace_ends_in_its_own_answer(
    then: str, expected: tuple[str, str]
) -> None:
    """A program that said it looks is waited for past the grace: its later exit 8 defers the
    mark and 7 supersedes it (not `spawned`, as a look longer than the grace was before); one
    that says it starts is done at once."""
    program = [sys.executable, "-c", LOOKS_THEN, "1.0", then]
    executor = CommandExecutor(program, grace_s=0.2)
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == expected
    executor.close()


def test_rewake_itself_says_it_looks_as_it_starts() -> None:
    """`rewake` started by the command executor writes LOOKING at once (rewake.cli): a rewake
    that then takes longer than the grace is waited for, and its exit decides."""
    script = "import sys, time; from rewake.cli import main; main(['--version']); time.sleep(1.0)"
    executor = CommandExecutor([sys.executable, "-c", script], grace_s=0.2)
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("done", "exit_0")
    executor.close()


def test_command_that_cannot_start_fails_with_nothing_sent(tmp_path: Path) -> None:
    """A missing program fails the mark; nothing ran."""
    executor = CommandExecutor([str(tmp_path / "missing-program")])
    outcome = executor.deliver(delivery())
    assert (outcome.state, outcome.code) == ("failed", "spawn_failed")


def test_notifier_posts_failed_and_uncertain_marks(host: ExampleHost) -> None:
    """The notify webhook hears of a mark that failed or turned uncertain, each signed under a
    fresh `notify-` webhook-id the host verifies with the library; not of one that is done."""
    from rewake.db.models import MarkRow
    from rewake.notifications.webhook import Notifier

    now = datetime.now(UTC)

    def mark(state: str) -> MarkRow:
        return MarkRow(
            id=5, root_id="root-1", run_id="run-1", attempt=1, state=state, reset_at=now,
            resolution_s=0, due_at=now, armed_by="alice", armed_at=now, despite_native=False,
            updated_at=now, outcome="http_500",
        )  # fmt: skip

    notifier = Notifier(host.notify_url, SECRET)
    notifier.mark_changed(mark("failed"), now)
    notifier.mark_changed(mark("done"), now)
    notifier.mark_changed(mark("uncertain"), now)
    notifier.close()
    notices = host.journal("notify")
    assert sorted(n["event"] for n in notices) == ["mark_failed", "mark_uncertain"]
    assert all(n["problem"] is None and n["status"] == 204 for n in notices)
    ids = [n["id"] for n in notices]
    assert len(set(ids)) == 2
    assert all(re.fullmatch(r"notify-[0-9a-f]{32}", i) for i in ids)


def test_unsigned_notifier_still_names_each_notice() -> None:
    """Without a secret the notice carries webhook-id and webhook-timestamp and no signature."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    from rewake.db.models import MarkRow
    from rewake.notifications.webhook import Notifier

    received: list[dict[str, str]] = []

    class Recorder(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            received.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    now = datetime.now(UTC)
    row = MarkRow(
        id=5, root_id="root-1", run_id="run-1", attempt=1, state="expired", reset_at=now,
        resolution_s=0, due_at=now, armed_by="alice", armed_at=now, despite_native=False,
        updated_at=now,
    )  # fmt: skip
    notifier = Notifier(f"http://127.0.0.1:{server.server_address[1]}/notify", None)
    notifier.mark_changed(row, now)
    notifier.close()
    server.shutdown()
    server.server_close()
    (headers,) = received
    assert headers["webhook-id"].startswith("notify-")
    assert headers["webhook-timestamp"] == str(int(now.timestamp()))
    assert "webhook-signature" not in headers
