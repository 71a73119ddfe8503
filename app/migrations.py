"""Schema upgrades through Alembic, under a lock, refusing a schema newer than this code.

SQLite: the upgrade runs inside one `BEGIN IMMEDIATE` transaction, so a second process waits
for the first and then finds the schema current. PostgreSQL: `pg_advisory_xact_lock` taken at
the start of the upgrade transaction (DDL is transactional there too).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection

from alembic import command

ALEMBIC_DIR = Path(__file__).resolve().parent.parent / "alembic"
ALEMBIC_INI = ALEMBIC_DIR.parent / "alembic.ini"

#: An arbitrary constant naming rewake's migration lock among PostgreSQL advisory locks.
PG_MIGRATION_LOCK = 0x72657761  # "rewa"


class SchemaError(RuntimeError):
    """The database's schema is not one this code can run on."""


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """Where the database's schema stands against the migrations this code ships."""

    current: tuple[str, ...]
    head: tuple[str, ...]
    unknown: tuple[str, ...]

    @property
    def is_current(self) -> bool:
        return set(self.current) == set(self.head)

    @property
    def is_newer(self) -> bool:
        """The database was migrated by a newer rewake: revisions this code does not know."""
        return bool(self.unknown)


def alembic_config() -> Config:
    config = Config(str(ALEMBIC_INI)) if ALEMBIC_INI.exists() else Config()
    config.set_main_option("script_location", str(ALEMBIC_DIR))
    return config


def _status(connection: Connection) -> SchemaStatus:
    script = ScriptDirectory.from_config(alembic_config())
    current = tuple(MigrationContext.configure(connection).get_current_heads())
    known = {revision.revision for revision in script.walk_revisions()}
    return SchemaStatus(
        current=current,
        head=tuple(script.get_heads()),
        unknown=tuple(rev for rev in current if rev not in known),
    )


def schema_status(engine: Engine) -> SchemaStatus:
    """Read the schema's revision (no lock, no change)."""
    with engine.connect() as connection:
        return _status(connection)


def upgrade(engine: Engine, revision: str = "head") -> SchemaStatus:
    """Upgrade to `revision` under the migration lock; SchemaError if the schema is newer."""
    with engine.connect() as connection:
        connection = connection.execution_options(rewake_write=True)
        with connection.begin():
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_MIGRATION_LOCK}
                )
            status = _status(connection)
            if status.is_newer:
                raise SchemaError(_newer_message(status))
            if not status.is_current or revision != "head":
                config = alembic_config()
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
        return _status(connection)


def downgrade(engine: Engine, revision: str) -> SchemaStatus:
    """Downgrade to `revision` under the migration lock (tests and operators only)."""
    with engine.connect() as connection:
        connection = connection.execution_options(rewake_write=True)
        with connection.begin():
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_MIGRATION_LOCK}
                )
            config = alembic_config()
            config.attributes["connection"] = connection
            command.downgrade(config, revision)
        return _status(connection)


def require_current(engine: Engine) -> SchemaStatus:
    """The schema must be exactly this code's head; SchemaError otherwise."""
    status = schema_status(engine)
    if status.is_newer:
        raise SchemaError(_newer_message(status))
    if not status.is_current:
        raise SchemaError(
            f"the schema is at {_revs(status.current)} but this rewake needs "
            f"{_revs(status.head)}: run `rewake migrate`"
        )
    return status


def _newer_message(status: SchemaStatus) -> str:
    return (
        f"the schema is at {_revs(status.current)}, newer than this rewake knows "
        f"({_revs(status.head)}): upgrade rewake instead of running this version"
    )


def _revs(revisions: tuple[str, ...]) -> str:
    return ", ".join(revisions) if revisions else "no revision (empty database)"
