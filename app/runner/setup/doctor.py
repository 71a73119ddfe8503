"""`rewake doctor`: whether the CLIs rewake drives are installed and accept the flags it uses,
where sessions are stored, whether a sweeper is running, and where the local state lives.

A CLI that is not installed is only reported (few people use all three); an installed CLI whose
`--help` lacks a flag rewake relies on is a failure, named, because `rewake run` and resumes
would then fail at the worst moment: when a limit resets with nobody watching.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import inspect

from rewake.db.engine import Database
from rewake.heartbeats import executors_seen_since, latest_heartbeat
from rewake.instants import instant
from rewake.marks.rules import SweepersWill, sweepers_will
from rewake.runner.clis import provider_env
from rewake.runner.clis.hostzone import host_zone
from rewake.runner.store.records import state_dir
from rewake.runner.store.stores import StoreError, database_url, local_settings, token_parts
from rewake.spawn_env import without_rewake_settings

#: How long one `--help` or `--version` may take (a CLI may check for updates first).
PROBE_TIMEOUT_S = 15.0
SWEEPER_FRESH_S = 90  # rewake.settings.SWEEPER_FRESH_S, not imported: doctor must not need a DB

SETUP_HINT = "`rewake setup` installs a sweeper for this database as a user service"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


@dataclass(frozen=True, slots=True)
class Probe:
    """One help text and the flags or subcommands it must mention; each need lists spellings,
    any one of which will do (`-p` or `--print`)."""

    argv: tuple[str, ...]
    needs: tuple[tuple[str, ...], ...]


#: What rewake relies on, per CLI (docs/providers.md says why each is needed).
PROBES: dict[str, tuple[Probe, ...]] = {
    "claude": (
        Probe(
            ("--help",),
            (
                ("-p", "--print"),
                ("--output-format",),
                ("--verbose",),
                ("--session-id",),
                ("--resume",),
            ),
        ),
    ),
    "codex": (
        Probe(("--help",), (("exec",),)),
        Probe(("exec", "--help"), (("--json",), ("resume",))),
    ),
    "gemini": (Probe(("--help",), (("-p", "--prompt"), ("--output-format",), ("--resume",))),),
}


@dataclass
class CliCheck:
    name: str
    path: str | None = None
    version: str | None = None
    #: Needs not found, each as its spellings joined by "/" (`-p/--print`).
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.path is not None and not self.missing and not self.problems


def mentions(help_text: str, spelling: str) -> bool:
    """Whether `spelling` appears as a whole option or word: `--resume` is not in
    `--resume-last`, and `-p` is not inside `--print`."""
    pattern = rf"(?<![\w-]){re.escape(spelling)}(?![\w-])"
    return re.search(pattern, help_text) is not None


def _probe(argv: Sequence[str], env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(output, problem): the command's stdout and stderr together, ANSI codes removed."""
    try:
        done = subprocess.run(  # noqa: S603  (a fixed argv; no shell)
            list(argv), capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT_S, env={**without_rewake_settings(env), "NO_COLOR": "1"},
            check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, f"`{' '.join(argv)}` did not answer within {PROBE_TIMEOUT_S:g} s"
    except OSError as error:
        return None, f"`{' '.join(argv)}` could not run: {error.strerror or error}"
    output = _ANSI.sub("", (done.stdout or "") + "\n" + (done.stderr or ""))
    if done.returncode != 0 and not output.strip():
        return None, f"`{' '.join(argv)}` exited {done.returncode} without output"
    return output, None


def check_cli(name: str, env: Mapping[str, str]) -> CliCheck:
    check = CliCheck(name, path=shutil.which(name, path=env.get("PATH", os.defpath)))
    if check.path is None:
        return check
    version, problem = _probe([check.path, "--version"], env)
    if version is not None:
        check.version = next((line.strip() for line in version.splitlines() if line.strip()), "")
    elif problem:
        check.problems.append(problem)
    for probe in PROBES[name]:
        help_text, problem = _probe([check.path, *probe.argv], env)
        if help_text is None:
            check.problems.append(problem or "no help text")
            continue
        for spellings in probe.needs:
            if not any(mentions(help_text, s) for s in spellings):
                where = " ".join((name, *probe.argv))
                check.missing.append(f"{'/'.join(spellings)} (not in `{where}`)")
    return check


def cli_lines(check: CliCheck) -> list[str]:
    if check.path is None:
        return [f"- {check.name}: not on PATH"]
    symbol = "✓" if check.ok else "✗"
    version = check.version or "version unknown"
    lines = [f"{symbol} {check.name}: {check.path} ({version})"]
    lines += [f"    missing flag {need}" for need in check.missing]
    lines += [f"    {problem}" for problem in check.problems]
    return lines


@dataclass
class StoreCheck:
    lines: list[str]
    ok: bool


def check_store(env: Mapping[str, str], now: datetime) -> StoreCheck:
    """Where sessions are stored, and when a sweeper last wrote its heartbeat there."""
    url = env.get("REWAKE_URL")
    if url:
        return _check_service(url, env.get("REWAKE_TOKEN"), now)
    return _check_local_db(env, now)


def _check_service(url: str, token: str | None, now: datetime) -> StoreCheck:
    lines = [f"store: the rewake service at {url} (REWAKE_URL)"]
    _name, secret = token_parts(token)
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    try:
        answer = httpx.get(url.rstrip("/") + "/readyz", headers=headers, timeout=10)
        body: Any = answer.json()
    except (httpx.HTTPError, ValueError) as error:
        return StoreCheck([*lines, f"    ✗ not reachable: {error}"], ok=False)
    if answer.status_code in (401, 403):
        detail = body.get("detail") if isinstance(body, dict) else answer.text[:200]
        return StoreCheck([*lines, f"    ✗ refused ({answer.status_code}): {detail}"], ok=False)
    checks = body.get("checks", {}) if isinstance(body, dict) else {}
    seen = (checks.get("sweeper") or {}).get("seen_at")
    lines.append(f"    reachable; ready: {'yes' if answer.status_code == 200 else 'no'}")
    lines.append(sweeper_line(instant(seen), now))
    return StoreCheck(lines, ok=True)


def _check_local_db(env: Mapping[str, str], now: datetime) -> StoreCheck:
    try:
        url = local_settings(env, create=False).sqlalchemy_url
    except StoreError as error:
        return StoreCheck([f"store: ✗ the settings are invalid: {error.detail}"], ok=False)
    _url, where = database_url(env, create=False)
    lines = [f"store: the local database {_redacted(url)} ({where})"]
    path = _sqlite_file(url) if url.startswith("sqlite") else None
    if path is not None:
        lines[0] = f"store: the local SQLite file {path.absolute()} ({where})"
    if where != "REWAKE_DATABASE_URL":
        # `rewake sweep` and `rewake serve` default to rewake.db in their working directory:
        # a sweeper started without this setting watches another file and never fires these.
        lines.append(f"    a sweeper for these sessions needs REWAKE_DATABASE_URL={url}")
    if path is not None and not path.exists():
        return StoreCheck([*lines, "    not created yet: the first report creates it"], True)
    try:
        seen, will = _sweepers_seen(url, now)
    except Exception as error:  # any database error is reported, not raised
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        return StoreCheck([*lines, f"    ✗ cannot read it: {first}"], ok=False)
    lines.append(sweeper_line(seen, now, will))
    if will != "resume":
        # The one-developer case: nothing fires what `rewake auto-resume` arms here.
        lines.append(f"    {SETUP_HINT}")
    return StoreCheck(lines, ok=True)


def _sweepers_seen(url: str, now: datetime) -> tuple[datetime | None, SweepersWill]:
    """When a sweeper was last seen on this database, and what those seen lately will do with
    a due mark."""
    database = Database(url)
    try:
        schema = inspect(database.engine)
        if "sweeper_heartbeats" not in schema.get_table_names():
            return None, "nothing"
        columns = {column["name"] for column in schema.get_columns("sweeper_heartbeats")}
        since = now - timedelta(seconds=SWEEPER_FRESH_S)
        with database.reader() as db:
            seen = latest_heartbeat(db)
            if "executor" not in columns:
                # A database no newer rewake has opened yet: its sweepers do not say, and one
                # seen lately is taken to resume.
                return seen, sweepers_will([None] if seen is not None and seen >= since else [])
            return seen, sweepers_will(executors_seen_since(db, since))
    finally:
        database.dispose()


def _sqlite_file(url: str) -> Path | None:
    rest = url.split(":///", 1)[1] if ":///" in url else ""
    rest = rest.split("?", 1)[0]
    return Path(rest) if rest and rest != ":memory:" else None


def _redacted(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def sweeper_line(seen: datetime | None, now: datetime, will: SweepersWill = "resume") -> str:
    """The sweeper's line; `will` is what the sweepers seen lately do with a due mark (a
    service's /readyz does not say, and its marks' warnings do)."""
    if seen is None:
        return (
            "    ! no sweeper seen here yet: an armed mark fires only while the `rewake run` that"
            " armed it still waits, or once a sweeper runs (rewake sweep)"
        )
    age = int((now - seen).total_seconds())
    if now - seen > timedelta(seconds=SWEEPER_FRESH_S):
        return f"    ! sweeper last seen {age} s ago: armed marks will not fire until one runs"
    if will == "log":
        return (
            f"    ! sweeper seen {max(age, 0)} s ago, with the log executor: armed marks are"
            " logged, never resumed (REWAKE_EXECUTOR=command resumes them)"
        )
    return f"    ✓ sweeper seen {max(age, 0)} s ago"


def state_lines(env: Mapping[str, str], zone: str | None) -> list[str]:
    directory = state_dir(env)
    runs = directory / "runs"
    count = len(list(runs.glob("*.json"))) if runs.is_dir() else 0
    where = "REWAKE_STATE_DIR" if env.get("REWAKE_STATE_DIR") else "default"
    exists = "exists" if directory.is_dir() else "not created yet"
    zone_words = zone or "unknown (set TZ to an IANA name: times without a zone are then read)"
    return [
        f"state dir: {directory} ({where}; {exists}; {count} run record(s))",
        f"host zone: {zone_words}",
    ]


def resumed_cli_lines(env: Mapping[str, str]) -> list[str]:
    """Whether the provider variables of this shell reach a CLI a sweeper resumes: the
    sweeper `rewake setup` installed gets only its environment file's; one started from this
    shell gets this shell's, through the allowlist and REWAKE_PASS_ENV."""
    unit = provider_env.env_file(env).parent.parent / "systemd" / "user" / "rewake-sweeper.service"
    if unit.exists():
        path = provider_env.env_file(env)
        sweeper = {"PATH": env.get("PATH", ""), **provider_env.read_env_file(path)}
        where = f"the sweeper `rewake setup` installed loads them from {path} (NAME=value lines)"
    else:
        sweeper = dict(env)
        where = "name them in REWAKE_PASS_ENV where the sweeper runs"
    missing = provider_env.unreached(env, sweeper)
    if missing:
        return provider_env.advice(missing, where)
    count = len(provider_env.provider_variables(env))
    return [f"resumed CLIs: get this shell's {count} provider variable(s)"] if count else []


def unit_environment(text: str) -> dict[str, str]:
    """The Environment= settings of a unit `rewake setup` wrote (one quoted or bare word per
    line, `%%` for `%`, backslash escapes inside quotes)."""
    values = {}
    for line in text.splitlines():
        if not line.startswith("Environment="):
            continue
        word = line.removeprefix("Environment=")
        if len(word) >= 2 and word[0] == word[-1] == '"':
            word = re.sub(r"\\(.)", r"\1", word[1:-1])
        name, _, value = word.replace("%%", "%").partition("=")
        values[name] = value
    return values


def report_back_lines(env: Mapping[str, str]) -> tuple[list[str], bool]:
    """Whether the resumes of the sweeper `rewake setup` installed are recorded where this
    shell's `rewake run` records and reads its sessions: the same database and state dir.
    (A service's own sweeper hands its URL and a credential for each resume: nothing to set.)"""
    unit = provider_env.env_file(env).parent.parent / "systemd" / "user" / "rewake-sweeper.service"
    if env.get("REWAKE_URL") or not unit.exists():
        return [], True
    try:
        settings = unit_environment(unit.read_text(encoding="utf-8"))
    except OSError as error:
        return [f"✗ cannot read {unit}: {error.strerror or error}"], False
    here_db, _how = database_url(env, create=False)
    here_state = str(state_dir(env).absolute())
    wrong = []
    if settings.get("REWAKE_DATABASE_URL") != here_db:
        wrong.append(f"records into {_redacted(settings.get('REWAKE_DATABASE_URL') or '?')}, "
                     f"this shell into {_redacted(here_db)}")  # fmt: skip
    if settings.get("REWAKE_STATE_DIR") != here_state:
        wrong.append(f"reads run records in {settings.get('REWAKE_STATE_DIR') or '?'}, "
                     f"this shell's are in {here_state}")  # fmt: skip
    if not wrong:
        return ["resumes: the sweeper `rewake setup` installed records them here ✓"], True
    return [
        f"✗ the sweeper `rewake setup` installed ({unit}) {'; '.join(wrong)}: its resumes "
        "would not report back to these sessions. Run `rewake setup` again from this shell",
    ], False


def run_doctor(env: Mapping[str, str], now: datetime) -> tuple[list[str], int]:
    """The report's lines and the exit status: 1 when something rewake needs is broken."""

    checks = [check_cli(name, env) for name in PROBES]
    lines = [line for check in checks for line in cli_lines(check)]
    store = check_store(env, now)
    lines += store.lines
    lines += state_lines(env, host_zone(env))
    back, back_ok = report_back_lines(env)
    lines += back
    lines += resumed_cli_lines(env)
    installed = [check for check in checks if check.path is not None]
    failed = [check.name for check in installed if not check.ok]
    if not installed:
        lines.append("✗ none of claude, codex, gemini is on PATH")
    elif failed:
        lines.append(f"✗ {', '.join(failed)}: a flag rewake relies on is missing (see above)")
    return lines, 0 if installed and not failed and store.ok and back_ok else 1
