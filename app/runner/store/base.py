"""What every user of a store needs, without loading one: the calls a store answers (`Store`),
its refusal (`StoreError`), the id check and where the local database lives.

The stores themselves (rewake.runner.store.stores) load SQLAlchemy, the domain or httpx: a
command imports them only once it knows it has something to read or write. The hook runs on
every prompt typed in Claude Code, and most prompts are in sessions rewake never saw.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from rewake.ids import ID_HELP, ID_RE
from rewake.runner.store.records import state_dir

JSON = dict[str, Any]
Clock = Callable[[], datetime]
DATABASE_FILE = "rewake.db"


class StoreError(Exception):
    """The service or the domain refused; `code` is the API's stable code."""

    def __init__(self, code: str, detail: str, status: int = 0) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.status = status


class Store(Protocol):
    """The session API's calls, answered with the API's JSON bodies."""

    #: Who acts, as the timeline and `armed_by` name them.
    actor: str

    def report_failure(self, root_id: str, run_id: str, body: Mapping[str, Any]) -> JSON: ...

    def record_attempt(self, root_id: str, run_id: str, attempt: int, status: str) -> JSON: ...

    def set_auto_resume(
        self,
        root_id: str,
        *,
        enabled: bool,
        despite_native: bool = False,
        fresh_if_missing: bool = False,
    ) -> JSON: ...

    def get_mark(self, root_id: str) -> JSON: ...

    def manual_resume(self, root_id: str, run_id: str) -> JSON: ...

    def cancel(self, root_id: str) -> JSON: ...

    def delete(self, root_id: str) -> JSON: ...

    def resolve(
        self, root_id: str, outcome: str, *, run_id: str | None = None, attempt: int | None = None
    ) -> JSON: ...

    def get_session(self, root_id: str) -> JSON: ...

    def list_sessions(self, *, limit: int = 50, **filters: str) -> JSON: ...

    def sweepers_warnings(self) -> list[str]:
        """Why an armed mark would not be resumed by the sweepers this store can see; [] when
        one that resumes runs, or when the store cannot tell."""
        ...

    def close(self) -> None: ...


def local_actor() -> str:
    """The local user, as `armed_by` records them."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        name = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return f"local:{name}"


def check_id(value: str, what: str) -> str:
    if not ID_RE.fullmatch(value):
        raise StoreError("invalid_request", f"{what} {value!r} must be {ID_HELP}", 422)
    return value


def database_url(env: Mapping[str, str] | None = None, *, create: bool = True) -> tuple[str, str]:
    """(the local database's URL, where it came from): REWAKE_DATABASE_URL when set, else
    `rewake.db` in the state directory (created here unless `create` is false)."""

    env = os.environ if env is None else env
    if env.get("REWAKE_DATABASE_URL"):
        return env["REWAKE_DATABASE_URL"], "REWAKE_DATABASE_URL"
    directory = state_dir(env)
    if create:
        directory.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(directory / DATABASE_FILE).absolute()}", "default: the state dir"


def no_local_database(env: Mapping[str, str]) -> bool:
    """Whether the store a command would open is the state dir's database and that file does
    not exist: nothing was ever recorded on this machine, so every list is empty. Any other
    store (REWAKE_URL, REWAKE_DATABASE_URL) is asked."""
    if env.get("REWAKE_URL") or env.get("REWAKE_DATABASE_URL"):
        return False
    return not (state_dir(env) / DATABASE_FILE).exists()


def token_parts(token: str | None) -> tuple[str | None, str | None]:
    """REWAKE_TOKEN as (name, secret): `name:secret` as REWAKE_API_TOKENS lists it, or the
    secret alone. The bearer is the secret either way; the service knows its name from it."""
    if not token:
        return None, None
    name, colon, secret = token.partition(":")
    return (name or None, secret or None) if colon else (None, token)
