"""Where `rewake run`, `rewake hook` and the terminal views record and read sessions.

Two stores answer the same calls with the API's JSON: `HttpStore` talks to a rewake service at
`REWAKE_URL` (with `REWAKE_TOKEN`, a `name:secret` pair), `LocalStore` runs the very domain
functions the API's routes call, in the local database, upgrading its schema first as `rewake
serve` does. That database is `REWAKE_DATABASE_URL` when set, else `rewake.db` in the state
directory: one file per user, wherever the command runs (Claude Code runs hooks in the project's
directory), unlike `rewake serve`'s default of the working directory. A refusal is a
`StoreError` with the API's stable code either way, so the callers never care which store they
hold.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from pydantic import ValidationError
from sqlalchemy import exc
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from rewake.context import Context
from rewake.db.engine import Database
from rewake.db.migrations import ensure_current
from rewake.errors import DomainError
from rewake.marks import service as marks
from rewake.marks.rules import SweepersWill
from rewake.parsers import parse
from rewake.reports import failures
from rewake.reports.body import FailureBody
from rewake.runner.store.base import (
    DATABASE_FILE,
    JSON,
    Clock,
    Store,
    StoreError,
    check_id,
    database_url,
    local_actor,
    token_parts,
)
from rewake.secret_env import SecretError
from rewake.session_service import actions
from rewake.session_service import reads as session_views
from rewake.sessions.repository import SessionFilter
from rewake.settings import Settings, explain

#: The names of rewake.runner.store.base are this module's too: callers that open a store
#: import them from here.
__all__ = [
    "DATABASE_FILE",
    "JSON",
    "Clock",
    "HttpStore",
    "LocalStore",
    "Store",
    "StoreError",
    "check_id",
    "database_url",
    "local_actor",
    "local_settings",
    "open_store",
    "token_parts",
]

T = TypeVar("T")


def local_settings(env: Mapping[str, str] | None = None, *, create: bool = True) -> Settings:
    """The service settings from the environment, on the runner's database (`database_url`)."""

    url, _where = database_url(env, create=create)
    try:
        return Settings(database_url=url)
    except ValidationError as error:
        raise StoreError("invalid_configuration", explain(error)) from error
    except SecretError as error:  # a REWAKE_<NAME>_FILE that cannot be read
        raise StoreError("invalid_configuration", str(error)) from error


def open_store(env: Mapping[str, str] | None = None, *, clock: Clock | None = None) -> Store:
    """`HttpStore` when REWAKE_URL is set, `LocalStore` on the runner's database otherwise.
    `clock` is the command's one reading of the clock (the service reads its own)."""
    env = os.environ if env is None else env
    url = env.get("REWAKE_URL")
    if url:
        return HttpStore(url, token=env.get("REWAKE_TOKEN"))
    return LocalStore.from_settings(env, clock=clock)


class HttpStore:
    """A rewake service over HTTP; its problem+json answers become `StoreError`s."""

    #: Every session route is under this path; the list is the path itself, with no slash
    #: after it (the service redirects `/api/agent/runs/`).
    SESSIONS = "/api/agent/runs"

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 30) -> None:
        name, secret = token_parts(token)
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        self.actor = name or local_actor()
        import httpx  # here: the local store, far more common, never needs it

        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s
        )

    def _call(self, method: str, path: str, **kwargs: Any) -> JSON:
        import httpx

        try:
            response = self._client.request(method, self.SESSIONS + path, **kwargs)
        except httpx.HTTPError as error:
            raise StoreError("service_unreachable", f"{self._client.base_url}: {error}") from error
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_success and isinstance(body, dict):
            return body
        if isinstance(body, dict) and isinstance(body.get("code"), str):
            detail = str(body.get("detail") or body.get("title") or body["code"])
            raise StoreError(body["code"], detail, response.status_code)
        raise StoreError(
            "service_error", f"HTTP {response.status_code}: {response.text[:200]}",
            response.status_code,
        )  # fmt: skip

    def report_failure(self, root_id: str, run_id: str, body: Mapping[str, Any]) -> JSON:
        return self._call("POST", f"/{root_id}/runs/{run_id}/failures", json=dict(body))

    def record_attempt(self, root_id: str, run_id: str, attempt: int, status: str) -> JSON:
        payload = {"attempt": attempt, "status": status}
        return self._call("POST", f"/{root_id}/runs/{run_id}/attempts", json=payload)

    def set_auto_resume(
        self,
        root_id: str,
        *,
        enabled: bool,
        despite_native: bool = False,
        fresh_if_missing: bool = False,
    ) -> JSON:
        payload = {"enabled": enabled, "despite_native": despite_native}
        if fresh_if_missing:  # sent only when asked: a service of an older rewake ignores it
            payload["fresh_if_missing"] = True
        return self._call("PUT", f"/{root_id}/auto-resume", json=payload)

    def get_mark(self, root_id: str) -> JSON:
        return self._call("GET", f"/{root_id}/auto-resume")

    def manual_resume(self, root_id: str, run_id: str) -> JSON:
        return self._call("POST", f"/{root_id}/runs/{run_id}/resume")

    def cancel(self, root_id: str) -> JSON:
        return self._call("POST", f"/{root_id}/cancel")

    def delete(self, root_id: str) -> JSON:
        return self._call("DELETE", f"/{root_id}")

    def resolve(
        self, root_id: str, outcome: str, *, run_id: str | None = None, attempt: int | None = None
    ) -> JSON:
        body: dict[str, Any] = {"outcome": outcome}
        if run_id is not None:
            body["run_id"] = run_id
        if attempt is not None:
            body["attempt"] = attempt
        return self._call("POST", f"/{root_id}/auto-resume/resolve", json=body)

    def get_session(self, root_id: str) -> JSON:
        return self._call("GET", f"/{root_id}")

    def list_sessions(self, *, limit: int = 50, **filters: str) -> JSON:
        return self._call("GET", "", params={"limit": limit, **filters})

    def sweepers_warnings(self) -> list[str]:
        # The service's sweepers are its operators' to run: the armed mark's own warnings
        # (in the PUT's answer) say when none is seen.
        return []

    def close(self) -> None:
        self._client.close()


def _unavailable(url: str, error: BaseException) -> StoreError | None:
    """`store_unavailable` for an error of the database itself (cannot open the file, not a
    database, locked past the busy timeout, connection lost), else None. Programming and
    integrity errors are bugs, not an unavailable store: they keep their traceback. The caller
    treats the store like an unreachable service: one line, and a report kept in the outbox."""

    unavailable = isinstance(error, exc.OperationalError | exc.InterfaceError | exc.InternalError)
    if not unavailable and type(error) is not exc.DatabaseError:  # "file is not a database"
        return None
    cause = getattr(error, "orig", None) or error
    first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    return StoreError("store_unavailable", f"{redacted_url(url)}: {first}")


def redacted_url(url: str) -> str:
    """The database URL without its password, fit for a message."""

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "the database URL"


class LocalStore:
    """The local database, through the domain functions the API's routes call."""

    def __init__(
        self,
        settings: Any,
        *,
        clock: Clock | None = None,
        actor: str | None = None,
        migrate: bool = True,
    ) -> None:

        self.settings = settings
        self.actor = actor or local_actor()
        self._clock = clock or (lambda: datetime.now(UTC))
        url = settings.sqlalchemy_url
        try:
            self.database = Database(url)
        except ArgumentError as error:  # a URL SQLAlchemy cannot use (a driver not installed)
            raise StoreError("invalid_configuration", f"{redacted_url(url)}: {error}") from error
        if migrate:
            try:
                # Only a schema that is behind takes the write lock: reads never wait for it.
                ensure_current(self.database.engine)
            except Exception as error:
                self.database.dispose()
                if (unavailable := _unavailable(url, error)) is None:
                    raise
                raise unavailable from error

    @classmethod
    def from_settings(cls, env: Mapping[str, str] | None = None, **kwargs: Any) -> LocalStore:
        """The store on `local_settings(env)`: REWAKE_DATABASE_URL, else the state dir's file."""
        return cls(local_settings(env), **kwargs)

    def context(self) -> Any:
        """One call's view of the world: the clock is read here, once."""

        s = self.settings
        return Context(
            now=self._clock(),
            actor=self.actor,
            resume_delay_s=s.resume_delay_s,
            display_zone=ZoneInfo(s.display_zone) if s.display_zone else None,
            tombstone_retention_days=s.tombstone_retention_days,
            hold_window_s=s.hold_window_s,
        )

    def _run(self, work: Callable[[Any, Any], T], *, write: bool) -> T:
        ctx = self.context()
        try:
            if write:
                with self.database.writer() as db, self.database.transaction(db):
                    return work(db, ctx)
            with self.database.reader() as db:
                return work(db, ctx)
        except DomainError as refused:
            raise StoreError(refused.code, refused.detail, refused.status) from refused
        except Exception as error:
            if (unavailable := _unavailable(self.settings.sqlalchemy_url, error)) is None:
                raise
            raise unavailable from error

    def report_failure(self, root_id: str, run_id: str, body: Mapping[str, Any]) -> JSON:
        check_id(root_id, "root_id")
        check_id(run_id, "run_id")
        try:
            report = FailureBody.model_validate(dict(body)).to_report(root_id, run_id)
        except ValidationError as error:
            raise StoreError("invalid_request", str(error), 422) from error

        def work(db: Any, ctx: Any) -> JSON:
            read = failures.read_report(report, parse=parse, now=ctx.now)
            answer, _created = failures.store_failure(db, read, ctx=ctx)
            return answer

        return self._run(work, write=True)

    def record_attempt(self, root_id: str, run_id: str, attempt: int, status: str) -> JSON:
        check_id(root_id, "root_id")
        check_id(run_id, "run_id")
        return self._run(
            lambda db, ctx: actions.record_attempt(db, root_id, run_id, attempt, status, ctx),
            write=True,
        )

    def set_auto_resume(
        self,
        root_id: str,
        *,
        enabled: bool,
        despite_native: bool = False,
        fresh_if_missing: bool = False,
    ) -> JSON:
        check_id(root_id, "root_id")
        return self._run(
            lambda db, ctx: marks.set_auto_resume(
                db,
                root_id,
                enabled=enabled,
                despite_native=despite_native,
                ctx=ctx,
                fresh_if_missing=fresh_if_missing,
            ),
            write=True,
        )

    def get_mark(self, root_id: str) -> JSON:
        check_id(root_id, "root_id")
        return self._run(lambda db, ctx: marks.mark_view(db, root_id, ctx), write=False)

    def manual_resume(self, root_id: str, run_id: str) -> JSON:
        check_id(root_id, "root_id")
        check_id(run_id, "run_id")
        return self._run(
            lambda db, ctx: actions.manual_resume(db, root_id, run_id, ctx), write=True
        )

    def cancel(self, root_id: str) -> JSON:
        check_id(root_id, "root_id")
        return self._run(lambda db, ctx: actions.cancel_session(db, root_id, ctx), write=True)

    def delete(self, root_id: str) -> JSON:
        check_id(root_id, "root_id")
        return self._run(lambda db, ctx: actions.delete_session(db, root_id, ctx), write=True)

    def resolve(
        self, root_id: str, outcome: str, *, run_id: str | None = None, attempt: int | None = None
    ) -> JSON:
        check_id(root_id, "root_id")
        if outcome not in ("done", "not_sent"):
            raise StoreError("invalid_request", "outcome must be done or not_sent", 422)
        return self._run(
            lambda db, ctx: marks.resolve_mark(
                db, root_id, outcome, ctx, run_id=run_id, attempt=attempt
            ),
            write=True,
        )

    def get_session(self, root_id: str) -> JSON:
        check_id(root_id, "root_id")
        return self._run(lambda db, ctx: session_views.session_view(db, root_id, ctx), write=False)

    def sweepers_warnings(self) -> list[str]:
        return self._run(lambda db, ctx: marks.sweepers_warnings(db, ctx), write=False)

    def what_sweepers_will_do(self) -> SweepersWill:
        """What the sweepers seen lately on this database will do with a due mark."""
        return self._run(lambda db, ctx: marks.what_sweepers_will_do(db, ctx), write=False)

    def list_sessions(self, *, limit: int = 50, **filters: str) -> JSON:
        where = SessionFilter(**filters)
        return self._run(
            lambda db, ctx: session_views.list_sessions(db, where, limit=limit, offset=0, ctx=ctx),
            write=False,
        )

    def close(self) -> None:
        self.database.dispose()
