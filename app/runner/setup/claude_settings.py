"""rewake's hook entries in Claude Code's user settings: added, replaced, or removed, and nothing
else touched.

The entries are docs/providers.md's ("Interactive Claude Code"), with the absolute command
of this rewake: Claude Code runs hooks through a shell on its own PATH, where a `rewake`
installed in a virtualenv is not found. An entry is rewake's when its command is `<dir>/rewake
hook claude ...` or `<python> -m rewake hook claude ...`; every other key, event and hook of the
file is the user's and is kept as it is.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rewake.runner.setup.user_files import SetupError, home_of

#: Seconds Claude Code gives the hook; the hook itself gives up after 20.
HOOK_TIMEOUT_S = 30
NATIVE_TYPES = "quota_auto_resume_fired|quota_auto_resume_stale|quota_auto_resume_disabled"
#: (event, matcher or None, the arguments after `rewake`), in docs/providers.md's order.
ENTRIES: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("StopFailure", "rate_limit", ("hook", "claude", "--auto-resume")),
    ("UserPromptSubmit", None, ("hook", "claude")),
    ("SessionStart", "resume", ("hook", "claude")),
    # Claude Code's own auto-continue: continued, or given up (rewake.runner.hook.native). The
    # matcher names the notification types (a list of words, matched whole); others never run it.
    ("Notification", NATIVE_TYPES, ("hook", "claude")),
    # A main turn's end: a workflow run Claude Code paused at a limit and then declined to wait
    # out is reported here (rewake.runner.hook.workflow); without a held run, one file lookup.
    ("Stop", None, ("hook", "claude")),
)

JSON = dict[str, Any]


def settings_path(env: Mapping[str, str]) -> Path:
    """Claude Code's user settings: `settings.json` in CLAUDE_CONFIG_DIR when set, the folder
    that replaces `~/.claude` for everything Claude Code keeps; else in `~/.claude`."""

    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    return home_of(env) / ".claude" / "settings.json"


def is_rewake_hook(command: object) -> bool:
    """Whether a hook's command runs `rewake hook claude` (by any path, or as `-m rewake`)."""

    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: not a command rewake wrote
        return False
    if len(words) >= 3 and Path(words[0]).name == "rewake" and words[1:3] == ["hook", "claude"]:
        return True
    return len(words) >= 5 and words[1:5] == ["-m", "rewake", "hook", "claude"]


def read_settings(path: Path) -> JSON:
    """The settings as an object ({} when the file is missing); a file that is not a JSON
    object is refused, naming it, so that nothing of the user's is overwritten."""

    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SetupError("settings_unreadable", f"{path}: cannot be read: {error}") from error
    try:
        settings = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise SetupError(
            "settings_not_json",
            f"{path}: not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
            "fix it or move it away, then run this again",
        ) from error
    if not isinstance(settings, dict):
        raise SetupError(
            "settings_not_object", f"{path}: holds a JSON {type(settings).__name__}, not an object"
        )
    return settings


def _event_lists(settings: JSON, path: Path) -> dict[str, Any]:
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SetupError("settings_hooks_not_object", f'{path}: "hooks" is not an object')
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise SetupError("settings_hooks_not_list", f"{path}: hooks.{event} is not a list")
    return hooks


def _strip(groups: list[Any]) -> tuple[list[Any], int | None]:
    """`groups` without rewake's hooks, dropping a group they leave empty; the position of the
    first group that held one (where the new entry goes, so a second run changes nothing)."""

    kept: list[Any] = []
    first: int | None = None
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not any(
            isinstance(hook, dict) and is_rewake_hook(hook.get("command")) for hook in inner
        ):
            kept.append(group)
            continue
        if first is None:
            first = len(kept)
        rest = [h for h in inner if not (isinstance(h, dict) and is_rewake_hook(h.get("command")))]
        if rest:
            kept.append({**group, "hooks": rest})
    return kept, first


def without_rewake(settings: JSON, path: Path) -> JSON:
    """The settings with every rewake hook removed, and the event lists (and the `hooks`
    object) that this leaves empty dropped."""

    hooks = _event_lists(settings, path)
    if "hooks" not in settings:
        return settings
    remaining: dict[str, Any] = {}
    for event, groups in hooks.items():
        kept, first = _strip(groups)
        if kept or first is None:
            remaining[event] = kept
    result = dict(settings)
    if remaining or not hooks:
        result["hooks"] = remaining
    else:
        del result["hooks"]
    return result


def with_rewake(settings: JSON, path: Path, rewake: Sequence[str]) -> JSON:
    """The settings with rewake's entries for the command `rewake`, each where an
    earlier rewake entry of its event was (else at the end), and no other rewake hook."""

    hooks = _event_lists(settings, path)
    wanted = {event: (matcher, args) for event, matcher, args in ENTRIES}
    result_hooks: dict[str, Any] = {}
    for event, groups in hooks.items():
        kept, first = _strip(groups)
        if event in wanted:
            kept.insert(len(kept) if first is None else first, _entry(*wanted[event], rewake))
        if kept or first is None:
            result_hooks[event] = kept
    for event, (matcher, args) in wanted.items():
        result_hooks.setdefault(event, [_entry(matcher, args, rewake)])
    return {**settings, "hooks": result_hooks}


def _entry(matcher: str | None, args: tuple[str, ...], rewake: Sequence[str]) -> JSON:
    hook = {"type": "command", "command": shlex.join([*rewake, *args]), "timeout": HOOK_TIMEOUT_S}
    return {"matcher": matcher, "hooks": [hook]} if matcher else {"hooks": [hook]}


def dumps(settings: JSON) -> str:
    """The file's text: two-space indents, as Claude Code writes it, non-ASCII kept."""

    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
