"""The environment of the programs rewake starts: an allowlist, never rewake's secrets.

rewake starts two kinds of program, and both used to inherit its whole environment:

- the command executor's program (`REWAKE_COMMAND`, usually `rewake run --resume-of`), started
  by a sweeper whose environment holds every service secret: `REWAKE_API_TOKENS` (every token's
  secret), `REWAKE_WEBHOOK_SECRET` (the key that signs resumes), `REWAKE_NOTIFY_URL` and
  `REWAKE_WEBHOOK_URL` (credentials in their user info or query), `REWAKE_DATABASE_URL`;
- the agent's CLI, started by `rewake run`. An agent holding those could act as any token's
  name or sign resumes of its own.

So the agent's CLI of an automatic resume gets only `agent_environment`: what a coding CLI
needs (the names and prefixes below), the resume's ids and attempt key, and the names the
operator lists in `REWAKE_PASS_ENV`. The command executor's program gets
`command_environment`: the same, plus what `rewake run --resume-of` needs to record the resume
in the sweeper's store (and which it never passes on). A CLI started by hand (`rewake run` in a
terminal) keeps the user's own environment but loses every rewake setting
(`without_rewake_settings`).

Imports nothing of rewake: the executors and the runner both use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

#: What a coding CLI needs to run as the user: paths, locale, terminal, time zone, temporary
#: files, proxies and the certificates they need.
AGENT_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM",
        "NO_COLOR", "TZ", "TMPDIR", "TMP", "TEMP",
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
        "http_proxy", "https_proxy", "no_proxy", "all_proxy",
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        # Claude Code on Vertex AI names its region so.
        "CLOUD_ML_REGION",
    }
)  # fmt: skip
#: Prefixes of the same: locale categories, XDG directories, and the CLIs' own configuration
#: and credentials (Claude Code, Codex CLI, Gemini CLI).
AGENT_PREFIXES = (
    "LC_", "XDG_", "ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_",
)  # fmt: skip
#: What the command executor sets for the resume it starts: ids, the attempt key and the audit
#: note. Passed on to the agent's CLI, whose hooks read them; none of them is a secret.
DELIVERY_NAMES = (
    "REWAKE_ATTEMPT_KEY", "REWAKE_MARK_ID", "REWAKE_ROOT_ID", "REWAKE_RUN_ID",
    "REWAKE_EXPECTED_ATTEMPT", "REWAKE_NOTE",
)  # fmt: skip
#: Set by `rewake run` in its CLI's environment, for a globally configured `rewake hook`.
SUPERVISED = "REWAKE_SUPERVISED"
#: Names the operator adds (comma-separated; `NAME*` is a prefix), for a CLI that needs more
#: (Bedrock's `AWS_*`, a test suite's variables). A `REWAKE_` name is never passed this way.
ADDED_NAMES_VAR = "REWAKE_PASS_ENV"
#: What `rewake run --resume-of` needs to record the resume where the sweeper keeps the mark,
#: and the settings its store reads (the delay of a mark it arms again, the zone it shows), and
#: REWAKE_NOTIFY (a resume that stops on a new limit tells of the pause: only it knows).
#: Given to the command executor's program only; never to the agent's CLI.
STORE_NAMES = (
    "REWAKE_STATE_DIR", "REWAKE_DATABASE_URL", "REWAKE_URL", "REWAKE_TOKEN",
    "REWAKE_RESUME_DELAY_S", "REWAKE_DISPLAY_ZONE", "REWAKE_EXECUTOR", "REWAKE_RESUME_PROMPT",
    "REWAKE_HOLD_WINDOW_S", "REWAKE_TOMBSTONE_RETENTION_DAYS", ADDED_NAMES_VAR, "REWAKE_NOTIFY",
)  # fmt: skip

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")


def parse_pass_env(value: str | None) -> tuple[frozenset[str], tuple[str, ...]]:
    """REWAKE_PASS_ENV as (names, prefixes); ValueError for an entry that is no variable name
    (or `NAME*`), or that names a rewake setting."""
    names: set[str] = set()
    prefixes: list[str] = []
    for raw in (value or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        if not _NAME.fullmatch(entry):
            raise ValueError(f"REWAKE_PASS_ENV: {entry!r} is not a variable name (or NAME*)")
        if entry.upper().startswith("REWAKE"):
            raise ValueError(
                f"REWAKE_PASS_ENV: {entry!r} names rewake's own settings, which are never passed on"
            )
        if entry.endswith("*"):
            prefixes.append(entry[:-1])
        else:
            names.add(entry)
    return frozenset(names), tuple(prefixes)


def _passed_by_operator(source: Mapping[str, str]) -> tuple[frozenset[str], tuple[str, ...]]:
    try:
        return parse_pass_env(source.get(ADDED_NAMES_VAR))
    except ValueError:
        # The service refuses to start with it (Settings); a program started anyway gets only
        # the allowlist.
        return frozenset(), ()


def agent_environment(source: Mapping[str, str]) -> dict[str, str]:
    """What an agent's CLI started for an automatic resume may see of `source`: the allowlist,
    the names in REWAKE_PASS_ENV, the resume's ids; no rewake setting, no other secret."""
    names, prefixes = _passed_by_operator(source)
    kept = {}
    for name, value in source.items():
        if name.startswith("REWAKE"):
            if name in DELIVERY_NAMES or name == SUPERVISED:
                kept[name] = value
            continue
        if (
            name in AGENT_NAMES
            or name.startswith(AGENT_PREFIXES)
            or name in names
            or (prefixes and name.startswith(prefixes))
        ):
            kept[name] = value
    return kept


def command_environment(source: Mapping[str, str]) -> dict[str, str]:
    """What the command executor's program may see of `source`: the agent's allowlist and the
    store's names (`STORE_NAMES`), which `rewake run --resume-of` needs and keeps to itself.
    The database URL goes without its password: the program is where the agent runs, so a
    password it needs comes from its own credential (~/.pgpass), never from the service's."""
    kept = agent_environment(source)
    kept.update((name, source[name]) for name in STORE_NAMES if name in source)
    if "REWAKE_DATABASE_URL" in kept:
        kept["REWAKE_DATABASE_URL"] = without_password(kept["REWAKE_DATABASE_URL"])
    return kept


def without_password(url: str) -> str:
    """`url` with the password of its user info removed (`scheme://user@host/...`)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.netloc.rpartition("@")[0].partition(":")[0]
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


def without_rewake_settings(source: Mapping[str, str]) -> dict[str, str]:
    """`source` without any rewake setting (the resume's ids and the supervision marker
    stay): for a CLI a person starts with `rewake run`, whose environment is otherwise theirs."""
    return {
        name: value
        for name, value in source.items()
        if not name.startswith("REWAKE") or name in DELIVERY_NAMES or name == SUPERVISED
    }
