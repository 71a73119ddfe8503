"""Service settings, read from the environment with the `REWAKE_` prefix.

The names are a contract (docs/design.md#settings); every setting has a working default, so
`rewake serve` runs with no configuration on a SQLite file in the working directory.
"""

from __future__ import annotations

import ipaddress
import re
from functools import cached_property
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from rewake.secret_env import given_secrets

_TOKEN_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")

#: The shortest secret REWAKE_API_TOKENS takes: a bearer secret is the whole of the API's
#: authentication, and one a person can guess or type from memory is no lock at all.
MIN_SECRET_CHARS = 16

#: How recently a sweeper must have written its heartbeat for /readyz and the mark warnings.
SWEEPER_FRESH_S = 90


class _GivenSecrets(PydanticBaseSettingsSource):
    """The secrets read from `REWAKE_<NAME>_FILE` files or handed over at re-execution
    (rewake.secret_env), by field name; they take the environment's place."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return {
            name.removeprefix("REWAKE_").lower(): value for name, value in given_secrets().items()
        }


class Settings(BaseSettings):
    """Everything the service reads from its environment (and its secrets' files)."""

    model_config = SettingsConfigDict(env_prefix="REWAKE_", extra="ignore", frozen=True)

    database_url: str = "sqlite:///rewake.db"
    api_tokens: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8600, ge=0, le=65535)
    sweep_interval_s: float = Field(default=30, gt=0)
    resume_delay_s: int = Field(default=30, ge=0)
    executor: Literal["log", "webhook", "command"] = "log"
    webhook_url: str | None = None
    webhook_secret: str | None = None
    notify_url: str | None = None
    #: apprise URLs (comma- or space-separated) told when a limit pauses a session, a resume is
    #: sent, fails or turns uncertain (rewake.notifications.apprise_notices); they carry
    #: credentials.
    notify: str | None = None
    display_zone: str | None = None
    tombstone_retention_days: int = Field(default=365, ge=1)
    log_json: bool = False
    log_level: str = "INFO"
    # How `rewake serve` holds connections (rewake.api.server).
    header_timeout_s: float = Field(default=10, gt=0)
    request_timeout_s: float = Field(default=60, gt=0)
    keep_alive_s: int = Field(default=5, ge=1)
    max_connections: int = Field(default=256, ge=1)
    # The sweeper and its executors (docs/design.md#sweeper).
    serve_sweeper: bool = True
    sweep_lease_s: float = Field(default=120, gt=0)
    sweep_workers: int = Field(default=16, ge=1)
    account_max_in_flight: int = Field(default=2, ge=1)
    account_stagger_s: float = Field(default=2.0, ge=0)
    mark_expire_after_s: float = Field(default=6 * 3600, gt=0)
    #: Expire an armed mark instead of firing it when its session's host was last seen longer
    #: ago than this; None (the default) turns the rule off.
    mark_host_unseen_s: float | None = Field(default=None, gt=0)
    hold_window_s: float = Field(default=600, ge=0)
    webhook_lookup_url: str | None = None
    webhook_timeout_s: float = Field(default=30, gt=0)
    command: str | None = None
    command_grace_s: float = Field(default=2.0, ge=0)
    #: How long a deferred mark waits before the sweeper looks at it again (its resume program
    #: sent nothing: an open interactive CLI holds the conversation).
    defer_recheck_s: float = Field(default=60, gt=0)
    resume_prompt: str | None = None
    #: More variables for the programs rewake starts (rewake.spawn_env): names, or NAME* for a
    #: prefix, comma-separated; checked here so that a sweeper refuses a bad list at start.
    pass_env: str | None = None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, _GivenSecrets(settings_cls), env_settings)

    @field_validator("database_url")
    @classmethod
    def _driver_installed(cls, value: str) -> str:
        if normalize_database_url(value).startswith("postgresql+psycopg"):
            try:
                import psycopg  # noqa: F401  (only PostgreSQL needs it: an optional extra)
            except ImportError as error:
                raise ValueError(
                    "REWAKE_DATABASE_URL names PostgreSQL, whose driver is not installed: "
                    "pip install 'rewake[postgres]'"
                ) from error
        return _dbapi_importable(value)

    @field_validator("api_tokens")
    @classmethod
    def _tokens_well_formed(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            parse_tokens(value)
        return value

    @field_validator("pass_env")
    @classmethod
    def _pass_env_names(cls, value: str | None) -> str | None:
        if value:
            from rewake.spawn_env import parse_pass_env

            parse_pass_env(value)
        return value

    @field_validator("display_zone")
    @classmethod
    def _zone_exists(cls, value: str | None) -> str | None:
        if value:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError) as error:
                raise ValueError(f"REWAKE_DISPLAY_ZONE {value!r} is not an IANA zone") from error
        return value or None

    @cached_property
    def tokens(self) -> dict[str, str]:
        """Bearer secrets by the name of who holds them; empty when none is configured."""
        if self.api_tokens is None or not self.api_tokens.strip():
            return {}
        return parse_tokens(self.api_tokens)

    @property
    def sqlalchemy_url(self) -> str:
        """The database URL with the psycopg 3 driver named for PostgreSQL."""
        return normalize_database_url(self.database_url)


#: Settings whose values may hold a secret (a token, a password in a URL): never echoed.
SECRET_SETTINGS = frozenset(
    {"api_tokens", "webhook_secret", "database_url", "webhook_url", "webhook_lookup_url",
     "notify_url", "notify", "command"}
)  # fmt: skip


def explain(error: ValidationError) -> str:
    """A settings error in the words the user set it with: one line per setting, named by its
    environment variable (`REWAKE_PORT`, not `port`), with the value unless it may be secret."""
    lines = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else ""
        message = str(item["msg"]).removeprefix("Value error, ")
        name = f"REWAKE_{field.upper()}"
        line = message if not field or message.startswith(name) else f"{name}: {message}"
        if field and field not in SECRET_SETTINGS and "input" in item:
            line += f" (got {item['input']!r})"
        lines.append(line)
    return "\n".join(lines)


def parse_tokens(value: str) -> dict[str, str]:
    """`name:secret,name:secret` into a dict; a malformed or repeated pair, or a secret shorter
    than MIN_SECRET_CHARS, is a ValueError. The message names the token, never its secret: it
    is printed where the service's start-up errors go."""
    tokens: dict[str, str] = {}
    for pair in value.split(","):
        name, sep, secret = pair.strip().partition(":")
        if not sep or not _TOKEN_NAME.fullmatch(name) or not secret:
            raise ValueError("REWAKE_API_TOKENS must be name:secret pairs separated by commas")
        if name in tokens:
            raise ValueError(f"REWAKE_API_TOKENS names {name!r} twice")
        if len(secret) < MIN_SECRET_CHARS:
            raise ValueError(
                f"REWAKE_API_TOKENS: the secret of token {name!r} is shorter than "
                f"{MIN_SECRET_CHARS} characters; make one with `openssl rand -hex 24`"
            )
        tokens[name] = secret
    return tokens


def _dbapi_importable(value: str) -> str:
    """`value` when the driver its URL names can be imported; a ValueError naming the driver
    when not (a URL SQLAlchemy cannot read is left to the database's own error at start)."""
    from sqlalchemy import exc as sa_exc
    from sqlalchemy.engine import make_url

    try:
        dialect = make_url(normalize_database_url(value)).get_dialect()
    except (sa_exc.ArgumentError, sa_exc.NoSuchModuleError, ValueError):
        return value
    try:
        dialect.import_dbapi()
    except ImportError as error:
        driver = getattr(dialect, "driver", None) or dialect.name
        raise ValueError(
            f"REWAKE_DATABASE_URL names the {dialect.name}+{driver} driver, which is not "
            f"installed ({error})"
        ) from None
    return value


def normalize_database_url(url: str) -> str:
    """`postgresql://` and `postgres://` mean psycopg 3, the PostgreSQL driver rewake uses (the
    `postgres` extra)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
