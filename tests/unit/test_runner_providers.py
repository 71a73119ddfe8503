"""`rewake run`'s argv building per provider, and what it reads from their events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewake.runner.clis.providers import (
    Provider,
    UsageError,
    provider_named,
    resolve_command,
    split_args,
)

SID = "3f6c2a9e-1b7d-4c55-9e0a-8d2f4b6a1c03"
claude, codex, gemini = (provider_named(n) for n in ("claude", "codex", "gemini"))


def test_claude_first_run_adds_headless_stream_and_a_new_session_id() -> None:
    """Claude's first run gets -p, stream-json, --verbose and the pinned id; the prompt goes
    last after --, the user's flags are kept."""
    argv = claude.first_argv("claude", ["-p", "fix it", "--model", "opus"], SID)
    assert argv == [
        "claude",
        "-p",
        "--model",
        "opus",
        "--output-format",
        "stream-json",
        "--verbose",
        "--session-id",
        SID,
        "--",
        "fix it",
    ]


def test_claude_flags_the_user_gave_are_not_doubled() -> None:
    """-p, --verbose and --output-format stream-json given by the user appear once."""
    args = ["--print", "--verbose", "--output-format=stream-json", "go"]
    argv = claude.first_argv("claude", args, SID)
    assert argv.count("--verbose") == 1 and argv.count("--output-format") == 1
    assert "--print" not in argv and argv.count("-p") == 1


def test_claude_resume_replaces_the_pinning_flags() -> None:
    """The resume is `claude -p --resume <id> <flags> ... -- <prompt>`: no --session-id."""
    args = ["-p", "--session-id", SID, "--permission-mode", "acceptEdits", "task"]
    argv = claude.resume_argv("claude", args, "new-id", "continue")
    assert argv[:4] == ["claude", "-p", "--resume", "new-id"]
    assert "--session-id" not in argv and SID not in argv and "task" not in argv
    assert argv[4:6] == ["--permission-mode", "acceptEdits"] and argv[-2:] == ["--", "continue"]


def test_claude_refuses_another_output_format() -> None:
    """rewake run reads stream-json; another --output-format is a usage error that says so."""
    with pytest.raises(UsageError, match="drop --output-format json"):
        claude.first_argv("claude", ["-p", "--output-format", "json", "x"], SID)


def test_a_prompt_is_required_and_must_be_one_argument() -> None:
    """No prompt, or several loose words, are usage errors naming the fix."""
    with pytest.raises(UsageError, match="no prompt"):
        claude.first_argv("claude", ["-p"], SID)
    with pytest.raises(UsageError, match="quote the prompt"):
        claude.first_argv("claude", ["-p", "fix", "tests"], SID)


def test_codex_first_run_and_resume_keep_the_original_flags() -> None:
    """`codex exec <flags> --json -- prompt`, and the resume passes the same flags again."""
    args = ["exec", "--full-auto", "-m", "gpt-5", "--json", "write it"]
    assert codex.first_argv("codex", args, None) == [
        "codex",
        "exec",
        "--full-auto",
        "-m",
        "gpt-5",
        "--json",
        "--",
        "write it",
    ]
    assert codex.resume_argv("codex", args, "T1", "go on") == [
        "codex",
        "exec",
        "resume",
        "T1",
        "--full-auto",
        "-m",
        "gpt-5",
        "--json",
        "--",
        "go on",
    ]
    assert codex.first_argv("codex", ["--sandbox", "workspace-write", "w"], None)[1] == "exec"


def test_gemini_prompt_positional_or_flag_and_resume() -> None:
    """Gemini takes the prompt from -p or a positional; the resume is `--resume <id>
    --prompt=<prompt>`."""
    assert gemini.first_argv("gemini", ["-y", "fix"], None) == [
        "gemini",
        "-y",
        "--output-format",
        "stream-json",
        "--prompt=fix",
    ]
    args = ["-p", "fix", "-m", "pro", "--output-format", "stream-json"]
    assert gemini.resume_argv("gemini", args, "S1", "go") == [
        "gemini",
        "--resume",
        "S1",
        "--prompt=go",
        "-m",
        "pro",
        "--output-format",
        "stream-json",
    ]


def test_fresh_argv_is_the_original_task_in_a_new_conversation() -> None:
    """A fresh start drops the old conversation's id and runs the original prompt."""
    argv = claude.fresh_argv("claude", ["-p", "--resume", "old", "the task"], "new")
    assert "old" not in argv and argv[-3:] == ["new", "--", "the task"]


def test_resolve_command_by_program_name_or_provider() -> None:
    """ARGS[0] names the CLI (a path too); --provider alone makes ARGS the CLI's arguments;
    a mismatch or an unknown program is a usage error."""
    p, program, rest = resolve_command(None, ["/opt/bin/claude", "-p", "x"])
    assert (p.name, program, rest) == ("claude", "/opt/bin/claude", ["-p", "x"])
    p, program, rest = resolve_command("codex", ["--full-auto", "x"])
    assert (p.name, program, rest) == ("codex", "codex", ["--full-auto", "x"])
    with pytest.raises(UsageError, match="--provider gemini but the command runs claude"):
        resolve_command("gemini", ["claude", "x"])
    with pytest.raises(UsageError, match="cannot tell which CLI"):
        resolve_command(None, ["aider", "x"])


def test_split_args_values_and_double_dash() -> None:
    """Value flags take the next token; `--x=y` stands alone; everything after -- is positional."""
    parts = split_args(["-m", "a", "--x=1", "--flag", "p", "--", "-q"], frozenset({"-m"}))
    assert parts.flags == ["-m", "a", "--x=1", "--flag"] and parts.positionals == ["p", "-q"]


def test_claude_events_session_id_proof_and_missing_conversation() -> None:
    """init and result carry the session id; an init alone proves nothing; a missing
    conversation is read from the result, never from assistant text quoting it."""
    init = {"type": "system", "subtype": "init", "session_id": "A"}
    missing = {
        "type": "result",
        "is_error": True,
        "result": "No conversation found with session ID: X",
        "session_id": "B",
    }
    quoted = {
        "type": "assistant",
        "message": {"content": [{"type": "text", "text": "No conversation found with session ID"}]},
    }
    assert claude.session_id(init) == "A" and claude.session_id(missing) == "B"
    assert not claude.proves_started(init) and not claude.proves_started(missing)
    assert claude.proves_started({"type": "rate_limit_event"})
    assert claude.missing_conversation([missing], "")
    assert not claude.missing_conversation([quoted], "")
    assert claude.ended_in_error([init, missing])


def test_codex_and_gemini_events() -> None:
    """Codex: thread.started's id, turn.failed is an error; Gemini: init's id, error result."""
    assert codex.session_id({"type": "thread.started", "thread_id": "T"}) == "T"
    assert codex.proves_started({"type": "item.completed"})
    assert not codex.proves_started({"type": "thread.started"})
    assert codex.ended_in_error([{"type": "turn.failed", "error": {"message": "x"}}])
    assert codex.missing_conversation([], "Error: no rollout found for thread id T")
    assert gemini.session_id({"type": "init", "session_id": "G"}) == "G"
    assert gemini.ended_in_error([{"type": "result", "status": "error"}])
    assert not gemini.ended_in_error([{"type": "result", "status": "success"}])
    assert gemini.missing_conversation([], 'Invalid session identifier "G"')


@pytest.mark.parametrize("provider", [claude, codex, gemini], ids=lambda p: p.name)
@pytest.mark.parametrize("bad", ["--dangerously-skip-permissions", "-x", "", "a b", "../x"])
def test_resume_argv_refuses_an_id_that_could_be_an_option(provider: Provider, bad: str) -> None:
    """A stored session id that is not a plain id (one starting with `-` above all) is refused
    before it can reach the CLI's argv as a flag."""
    args = ["exec", "fix"] if provider.name == "codex" else ["-p", "fix"]
    with pytest.raises(UsageError, match="not a session id"):
        provider.resume_argv(provider.name, args, bad, "go on")


@pytest.mark.parametrize("provider", [claude, codex, gemini], ids=lambda p: p.name)
def test_a_prompt_starting_with_a_dash_stays_a_value(provider: Provider) -> None:
    """A prompt like `--help me` is passed where the CLI reads it as the prompt, never as an
    option: after `--` (Claude, Codex) or inside one `--prompt=` token (Gemini)."""
    prompt = "--help me"
    first = {"claude": ["-p", "--", prompt], "codex": ["exec", "--", prompt],
             "gemini": ["-p", prompt]}[provider.name]  # fmt: skip
    for argv in (
        provider.resume_argv(provider.name, first, "5d0c8f7e-8a53", prompt),
        provider.first_argv(provider.name, first, None),
    ):
        if provider.name == "gemini":
            assert f"--prompt={prompt}" in argv and prompt not in argv
        else:
            assert argv[-2:] == ["--", prompt]


@pytest.mark.parametrize(
    ("name", "exit_code", "text", "says"),
    [
        ("codex", 1, "Not inside a trusted directory and --skip-git-repo-check was not "
         "specified.", "--skip-git-repo-check"),
        ("gemini", 55, "Gemini CLI is not running in a trusted directory. To proceed, ...",
         "GEMINI_CLI_TRUST_WORKSPACE=true"),
        ("gemini", 41, "Invalid auth method selected.", "security.auth.selectedType"),
    ],
)  # fmt: skip
def test_a_cli_that_refuses_to_start_is_explained(
    name: str, exit_code: int, text: str, says: str
) -> None:
    """The real CLIs' set-up refusals (their own words and statuses) get the reason and the
    fix in words; an ordinary failure gets none."""
    provider = provider_named(name)
    hint = provider.setup_hint(exit_code, text)
    assert hint is not None and says in hint
    assert provider.setup_hint(1, "Error: something else went wrong") is None


REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"


def real_events(case: str) -> list[dict[str, Any]]:
    """The events of a real capture in the parser corpus (its source is in the case's json)."""
    lines = (REAL / f"{case}.txt").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_claude_cli_text_is_the_error_result_once() -> None:
    """Claude's error result text is the CLI text; the synthetic assistant row that repeats it
    is assistant content and adds nothing."""
    events = real_events("cc-rc-stream-5h-kathmandu")
    assert any(event["type"] == "assistant" for event in events)
    kathmandu = "You've hit your 5-hour limit · resets 4:17am (Asia/Kathmandu)"
    assert claude.cli_text(events) == kathmandu
    assert claude.cli_text(real_events("cc-rc-stream-past-2min-api-error-row")) == (
        "You've hit your 5-hour limit · resets 8:33pm (UTC)"
    )


def test_codex_cli_text_is_its_error_events_without_the_repeat() -> None:
    """Codex's `error` events in order, with turn.failed's repeat of the last left out; an
    answer (agent_message) is never CLI text."""
    assert codex.cli_text(real_events("cx-realcli-team-2h-new-york")) == (
        "You’ve hit your usage limit. To get more access now, send a request to your admin or "
        "try again at 5:46 PM."
    )
    lines = codex.cli_text(real_events("cx-realcli-throttle-reconnecting")).splitlines()
    last = "exceeded retry limit, last status: 429 Too Many Requests"
    assert lines[0] == f"Reconnecting... 1/5 ({last})" and lines[-1] == last
    assert len(lines) == 6
    assert codex.cli_text(real_events("cx-realcli-answer-with-window-at-100")) == ""


def test_gemini_cli_text_is_the_error_results_message() -> None:
    """Gemini's error result message, its lines kept; the user's prompt row is not CLI text."""
    text = gemini.cli_text(real_events("gm-realcli-stream-json-retry-after-31447s"))
    assert text.startswith("[API Error: Resource has been exhausted (e.g. check quota).\n")
    assert "Suggested retry after 31447s." in text and "hi" not in text.splitlines()
    assert gemini.cli_text(real_events("gm-realcli-api-key-not-valid")).startswith(
        '[API Error: {"error":{"code":400,"message":"API key not valid.'
    )
