"""What `rewake run` knows about each CLI's headless mode: the argv of a first run, of a resume
and of a fresh start, and what its structured events say (the CLI's own session id, proof that
a resumed conversation is under way, a missing conversation, an error ending, and the words
its error events showed the user).

    claude -p --output-format stream-json --verbose --session-id <uuid> [flags] -- <prompt>
    claude -p --resume <id> [flags] --output-format stream-json --verbose -- <prompt>
    codex exec [flags] --json -- <prompt>
    codex exec resume <thread_id> [flags] --json -- <prompt>     (flags are not kept by codex)
    gemini [flags] --output-format stream-json --prompt=<prompt>
    gemini --resume <id> --prompt=<prompt> [flags] --output-format stream-json

The user's own flags are kept and passed again on every resume (Codex keeps none of them and
falls back to a read-only sandbox; Claude and Gemini do not keep all of them either); only the
flags that pin a conversation are replaced.

Every argv puts values rewake did not write itself where no CLI reads them as options: the
prompt after `--` (Gemini: `--prompt=<prompt>`, one token), and a stored conversation id only
once `check_cli_id` accepted it (an id like `--dangerously-skip-permissions` would be a flag).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROVIDERS = ("claude", "codex", "gemini")

Event = dict[str, Any]


class UsageError(ValueError):
    """The command line cannot be run as asked; the message says what to change."""


#: A CLI's own session or thread id (Claude's and Gemini's are UUIDs, Codex's UUID-like): never
#: starting with `-`, so it cannot become an option where it is passed after `--resume`.
_CLI_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")


def valid_cli_id(value: object) -> bool:
    return isinstance(value, str) and _CLI_ID.fullmatch(value) is not None


def check_cli_id(value: object, what: str = "the CLI's session id") -> str:
    """`value` when it is a safe CLI session id; UsageError naming it otherwise."""
    if not valid_cli_id(value):
        raise UsageError(
            f"{what} {value!r} is not a session id (1 to 128 of A-Z a-z 0-9 _ -, starting with "
            "a letter or digit): refusing to pass it to the CLI"
        )
    assert isinstance(value, str)
    return value


@dataclass(frozen=True)
class Split:
    """A CLI's arguments taken apart: option tokens (values included, in order) and the rest."""

    flags: list[str]
    positionals: list[str]


def split_args(args: Sequence[str], value_flags: frozenset[str]) -> Split:
    """Option tokens and positionals; `value_flags` take the next token as their value."""
    flags: list[str] = []
    positionals: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        if arg == "--":
            positionals.extend(items[i + 1 :])
            break
        if arg.startswith("-") and len(arg) > 1:
            flags.append(arg)
            if "=" not in arg and arg in value_flags and i + 1 < len(items):
                flags.append(items[i + 1])
                i += 1
        else:
            positionals.append(arg)
        i += 1
    return Split(flags, positionals)


def drop_flags(
    flags: Sequence[str], names: frozenset[str], value_flags: frozenset[str]
) -> list[str]:
    """`flags` without the options in `names` (and their values, `--name=value` included)."""
    kept: list[str] = []
    skip_next = False
    for token in flags:
        if skip_next:
            skip_next = False
            continue
        name = token.split("=", 1)[0]
        if name in names:
            skip_next = "=" not in token and name in value_flags
            continue
        kept.append(token)
    return kept


def flag_value(flags: Sequence[str], names: frozenset[str]) -> str | None:
    """The value of the last option in `names` (`--x v` or `--x=v`), or None."""
    found = None
    for n, token in enumerate(flags):
        name, eq, value = token.partition("=")
        if name in names:
            found = value if eq else (flags[n + 1] if n + 1 < len(flags) else "")
    return found


def _one_prompt(positionals: Sequence[str], provider: str) -> str:
    if len(positionals) == 1:
        return positionals[0]
    if not positionals:
        raise UsageError(
            f"no prompt: give the task as the last argument, e.g. "
            f'rewake run -- {provider} {"-p " if provider != "codex" else "exec "}"fix the tests"'
        )
    raise UsageError(
        f"{len(positionals)} arguments look like a prompt ({', '.join(map(repr, positionals))}): "
        "quote the prompt as one argument, and write option values as --option=value"
    )


def _require_stream(value: str | None, wanted: str, provider: str) -> None:
    if value is not None and value != wanted:
        raise UsageError(
            f"rewake run reads {provider}'s {wanted} events; drop --output-format {value}"
        )


class Provider:
    """The shared shape; one subclass per CLI."""

    name = ""
    value_flags: frozenset[str] = frozenset()
    #: Options that pin a conversation: replaced by rewake's own on a resume or fresh start.
    pinning: frozenset[str] = frozenset()
    missing_pattern: re.Pattern[str] = re.compile(r"(?!)")
    #: The CLI keeps a conversation only once the model has answered in it: until then there
    #: is nothing to resume (Gemini; see Gemini.answered).
    saves_only_answered = False

    def split(self, args: Sequence[str]) -> tuple[list[str], str]:
        """The user's flags and the prompt."""
        parts = split_args(args, self.value_flags)
        return parts.flags, _one_prompt(parts.positionals, self.name)

    def first_argv(self, program: str, args: Sequence[str], session_id: str | None) -> list[str]:
        raise NotImplementedError

    def resume_argv(
        self, program: str, args: Sequence[str], session_id: str, prompt: str
    ) -> list[str]:
        raise NotImplementedError

    def pinned_session_id(self, args: Sequence[str]) -> bool:
        """Whether the user's args already name the conversation (rewake then pins none)."""
        return any(token.split("=", 1)[0] in self.pinning for token in split_args(
            args, self.value_flags).flags)  # fmt: skip

    def fresh_argv(self, program: str, args: Sequence[str], session_id: str | None) -> list[str]:
        """A new conversation with the original task, on the same flags."""
        flags, prompt = self.split(args)
        kept = drop_flags(flags, self.pinning, self.value_flags)
        return self.first_argv(program, [*kept, "--", prompt], session_id)

    def session_id(self, event: Event) -> str | None:
        raise NotImplementedError

    def proves_started(self, event: Event) -> bool:
        """The event shows the conversation under way (a missing one never gets this far)."""
        raise NotImplementedError

    def ended_in_error(self, events: Sequence[Event]) -> bool:
        raise NotImplementedError

    def answered(self, event: Event) -> bool:
        """The event shows the model answered (a reply, a tool call), so a CLI that saves
        only answered conversations has this one to resume; see `saves_only_answered`."""
        return False

    def setup_hint(self, exit_code: int, text: str) -> str | None:
        """Why the CLI refused to start at all, and how to let it, when it said so: a failure
        of its set-up, not of the task (the CLI's own words are in the attempt's log)."""
        return None

    def missing_conversation(self, events: Sequence[Event], text: str) -> bool:
        """The CLI said the conversation to resume does not exist."""
        if self.missing_pattern.search(text):
            return True
        return any(self.missing_pattern.search(_event_text(event)) for event in events)

    def cli_text(self, events: Sequence[Event]) -> str:
        """What the CLI showed the user about how the attempt ended: the texts of its error
        events (and of a result that is an error), in order, each once, one per line.

        Headless, a CLI writes these only into its events, so the report's text tail lacks
        them. They are shown to people and never parsed (docs/design.md rule 8: the parser reads
        the events themselves, where it can tell the CLI's words from the model's)."""
        texts = (text.strip() for event in events for text in self.error_texts(event))
        return "\n".join(dict.fromkeys(text for text in texts if text))

    def error_texts(self, event: Event) -> list[str]:
        """The texts one event shows as the CLI's own error; none for any other event (the
        model's answers and tool results are not the CLI's words)."""
        raise NotImplementedError


def _event_text(event: Event) -> str:
    """The error texts an event carries (not assistant content, which may quote anything)."""
    parts = []
    for key in ("result", "message", "error"):
        value = event.get(key)
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict) and isinstance(value.get("message"), str):
            parts.append(value["message"])
    if event.get("type") in ("assistant", "user", "item.completed", "item.started"):
        return ""
    return "\n".join(parts)


def _message_of(error: Any) -> Any:
    """An error given as `{"message": ...}` or as the text itself."""
    return error.get("message") if isinstance(error, dict) else error


def _strings(values: Any) -> list[str]:
    """The non-blank strings of a list (an event's field may be anything)."""
    if not isinstance(values, list):
        return []
    return [value for value in values if isinstance(value, str) and value.strip()]


class Claude(Provider):
    name = "claude"
    value_flags = frozenset({
        "--output-format", "--input-format", "--model", "--fallback-model", "--permission-mode",
        "--append-system-prompt", "--system-prompt", "--allowedTools", "--allowed-tools",
        "--disallowedTools", "--disallowed-tools", "--mcp-config", "--add-dir", "--settings",
        "--setting-sources", "--agents", "--agent", "--max-turns", "--permission-prompt-tool",
        "--session-id", "--resume", "-r", "--max-budget-usd", "--betas", "--plugin-dir",
        "--json-schema", "--tools",
    })  # fmt: skip
    pinning = frozenset({"--session-id", "--resume", "-r", "--continue", "-c", "--fork-session"})
    missing_pattern = re.compile(r"No conversation found with session ID", re.IGNORECASE)
    _ours = frozenset({"-p", "--print", "--verbose", "--output-format"})

    def first_argv(self, program: str, args: Sequence[str], session_id: str | None) -> list[str]:
        flags, prompt = self.split(args)
        _require_stream(flag_value(flags, frozenset({"--output-format"})), "stream-json", "claude")
        kept = drop_flags(flags, self._ours, self.value_flags)
        pin = [] if session_id is None else ["--session-id", session_id]
        return [program, "-p", *kept, "--output-format", "stream-json", "--verbose", *pin, "--",
                prompt]  # fmt: skip

    def resume_argv(
        self, program: str, args: Sequence[str], session_id: str, prompt: str
    ) -> list[str]:
        flags, _ = self.split(args)
        kept = drop_flags(flags, self._ours | self.pinning, self.value_flags)
        return [program, "-p", "--resume", check_cli_id(session_id), *kept, "--output-format",
                "stream-json", "--verbose", "--", prompt]  # fmt: skip

    def session_id(self, event: Event) -> str | None:
        kind = event.get("type")
        if (kind == "system" and event.get("subtype") == "init") or kind == "result":
            value = event.get("session_id")
            return value if isinstance(value, str) and value else None
        return None

    def proves_started(self, event: Event) -> bool:
        kind = event.get("type")
        if kind in ("assistant", "user", "stream_event", "rate_limit_event"):
            return True
        return kind == "result" and not self.missing_pattern.search(str(event.get("result", "")))

    def ended_in_error(self, events: Sequence[Event]) -> bool:
        results = [e for e in events if e.get("type") == "result"]
        return bool(results) and results[-1].get("is_error") is True

    def error_texts(self, event: Event) -> list[str]:
        # `claude -p` prints an error result's `result` as its only output; the synthetic
        # assistant row before it repeats the same words and is left out as assistant content.
        if event.get("type") != "result" or event.get("is_error") is not True:
            return []
        if isinstance(event.get("result"), str) and event["result"].strip():
            return [event["result"]]
        return _strings(event.get("errors"))


class Codex(Provider):
    name = "codex"
    value_flags = frozenset({
        "-m", "--model", "-s", "--sandbox", "-C", "--cd", "-c", "--config", "-p", "--profile",
        "-i", "--image", "--color", "-o", "--output-last-message", "--output-schema",
        "--add-dir", "--local-provider", "-a", "--ask-for-approval", "--enable", "--disable",
    })  # fmt: skip
    missing_pattern = re.compile(
        r"no rollout found|no (?:saved )?(?:session|thread|conversation) found"
        r"|(?:session|thread) not found",
        re.IGNORECASE,
    )
    _json = frozenset({"--json", "--experimental-json"})

    def split(self, args: Sequence[str]) -> tuple[list[str], str]:
        rest = list(args)
        if rest[:1] in (["exec"], ["e"]):
            rest = rest[1:]
        if rest[:1] == ["resume"]:
            raise UsageError(
                "start a new task with rewake run; resume a supervised one with "
                "rewake run --resume NAME"
            )
        return super().split(rest)

    def first_argv(self, program: str, args: Sequence[str], session_id: str | None) -> list[str]:
        flags, prompt = self.split(args)
        kept = drop_flags(flags, self._json, self.value_flags)
        return [program, "exec", *kept, "--json", "--", prompt]

    def resume_argv(
        self, program: str, args: Sequence[str], session_id: str, prompt: str
    ) -> list[str]:
        flags, _ = self.split(args)
        kept = drop_flags(flags, self._json, self.value_flags)
        resumed = check_cli_id(session_id)
        return [program, "exec", "resume", resumed, *kept, "--json", "--", prompt]

    def pinned_session_id(self, args: Sequence[str]) -> bool:
        return False

    def session_id(self, event: Event) -> str | None:
        value = event.get("thread_id") if event.get("type") == "thread.started" else None
        return value if isinstance(value, str) and value else None

    def proves_started(self, event: Event) -> bool:
        kind = str(event.get("type", ""))
        return kind in ("turn.started", "turn.completed") or kind.startswith("item.")

    def ended_in_error(self, events: Sequence[Event]) -> bool:
        return any(e.get("type") == "turn.failed" for e in events)

    def error_texts(self, event: Event) -> list[str]:
        # `error` (retries included, "Reconnecting... 1/5 (...)") and `turn.failed`, which
        # repeats the last error's words.
        kind = event.get("type")
        if kind == "error":
            return _strings([event.get("message")])
        if kind == "turn.failed":
            return _strings([_message_of(event.get("error"))])
        return []

    def setup_hint(self, exit_code: int, text: str) -> str | None:
        if "--skip-git-repo-check" in text:
            return (
                "Codex runs only inside a git repository: run it in one, or pass "
                "--skip-git-repo-check to codex (after --)"
            )
        return None


class Gemini(Provider):
    name = "gemini"
    value_flags = frozenset({
        "-m", "--model", "-p", "--prompt", "-i", "--prompt-interactive", "--output-format", "-o",
        "--approval-mode", "--allowed-tools", "--allowed-mcp-server-names", "-e", "--extensions",
        "--include-directories", "--resume", "-r", "--telemetry-target", "--proxy",
    })  # fmt: skip
    pinning = frozenset({"--resume", "-r"})
    # Gemini CLI 0.61.0 prints an `init` with a session id and echoes the user's message, but
    # when the first request hits the limit it saves nothing: `--resume <id>` then fails with
    # "No previous sessions found for this project" (corpus/realcli e2e-gemini-limit-then-ok).
    # Once the model answered (e2e-gemini-tool-then-limit: a tool call, then the limit) the
    # conversation is saved and resumes.
    saves_only_answered = True
    missing_pattern = re.compile(
        r"invalid session identifier|no (?:previous )?sessions? found|session \S+ not found"
        r"|could not find (?:the )?session",
        re.IGNORECASE,
    )
    _prompt = frozenset({"-p", "--prompt"})
    _format = frozenset({"--output-format", "-o"})

    def split(self, args: Sequence[str]) -> tuple[list[str], str]:
        parts = split_args(args, self.value_flags)
        given = flag_value(parts.flags, self._prompt)
        flags = drop_flags(parts.flags, self._prompt, self.value_flags)
        if given is not None and not parts.positionals:
            return flags, given
        return flags, _one_prompt(parts.positionals, self.name)

    def first_argv(self, program: str, args: Sequence[str], session_id: str | None) -> list[str]:
        flags, prompt = self.split(args)
        _require_stream(flag_value(flags, self._format), "stream-json", "gemini")
        kept = drop_flags(flags, self._format, self.value_flags)
        # One token: `-p <prompt>` would read a prompt starting with `-` as an option.
        return [program, *kept, "--output-format", "stream-json", f"--prompt={prompt}"]

    def resume_argv(
        self, program: str, args: Sequence[str], session_id: str, prompt: str
    ) -> list[str]:
        flags, _ = self.split(args)
        kept = drop_flags(flags, self._format | self.pinning, self.value_flags)
        return [program, "--resume", check_cli_id(session_id), f"--prompt={prompt}", *kept,
                "--output-format", "stream-json"]  # fmt: skip

    def fresh_argv(self, program: str, args: Sequence[str], session_id: str | None) -> list[str]:
        flags, prompt = self.split(args)
        kept = drop_flags(flags, self.pinning, self.value_flags)
        return self.first_argv(program, [*kept, f"--prompt={prompt}"], session_id)

    def session_id(self, event: Event) -> str | None:
        value = event.get("session_id") if event.get("type") == "init" else None
        return value if isinstance(value, str) and value else None

    def proves_started(self, event: Event) -> bool:
        kind = event.get("type")
        if kind in ("message", "tool_use", "tool_result"):
            return True
        return kind == "result" and event.get("status") == "success"

    def ended_in_error(self, events: Sequence[Event]) -> bool:
        results = [e for e in events if e.get("type") == "result"]
        return bool(results) and results[-1].get("status") == "error"

    def answered(self, event: Event) -> bool:
        kind = event.get("type")
        if kind == "message":
            return event.get("role") == "assistant"
        if kind in ("tool_use", "tool_result"):
            return True
        return kind == "result" and event.get("status") == "success"

    def error_texts(self, event: Event) -> list[str]:
        # An error `result` carries the "[API Error: ...]" text Gemini prints; an `error` event
        # a warning the run went on after is not how it ended.
        kind = event.get("type")
        if kind == "result" and event.get("status") == "error":
            return _strings([_message_of(event.get("error"))])
        if kind == "error" and event.get("severity") != "warning":
            return _strings([event.get("message")])
        return []

    def setup_hint(self, exit_code: int, text: str) -> str | None:
        if exit_code == 55 or "not running in a trusted directory" in text:
            return (
                "Gemini CLI does not trust this folder (exit 55): trust it in Gemini, set "
                "GEMINI_CLI_TRUST_WORKSPACE=true, or pass --skip-trust to gemini (after --)"
            )
        if exit_code == 41 or "Invalid auth method selected" in text:
            return (
                "Gemini CLI's sign-in setting is wrong (exit 41, \"Invalid auth method "
                'selected"): set security.auth.selectedType in ~/.gemini/settings.json to the '
                'method you use (e.g. "gemini-api-key" with GEMINI_API_KEY)'
            )
        return None


_BY_NAME: dict[str, Provider] = {p.name: p for p in (Claude(), Codex(), Gemini())}


def provider_named(name: str) -> Provider:
    return _BY_NAME[name]


def resolve_command(provider: str | None, args: Sequence[str]) -> tuple[Provider, str, list[str]]:
    """The provider, the program to run and its arguments, from `rewake run`'s ARGS.

    `ARGS[0]` names the CLI (`claude`, `codex`, `gemini`, or a path to one); with `--provider`
    and no CLI named, ARGS are all arguments of that provider's CLI."""
    if not args:
        raise UsageError('nothing to run: rewake run -- claude -p "fix the tests"')
    first = Path(args[0]).name
    if first in PROVIDERS:
        if provider is not None and provider != first:
            raise UsageError(f"--provider {provider} but the command runs {first}")
        return _BY_NAME[first], args[0], list(args[1:])
    if provider is None:
        raise UsageError(
            f"cannot tell which CLI {args[0]!r} is: start ARGS with claude, codex or gemini "
            f'(rewake run -- claude -p "..."), or name it with --provider'
        )
    return _BY_NAME[provider], provider, list(args)
