"""Schema upgrades through Alembic, under a lock, refusing a schema newer than this code.

The scripts are `alembic/` at the top of a source checkout, where the alembic command line finds
them through alembic.ini; a wheel installs the same files inside this package, as
`app/migration_scripts` (pyproject.toml maps the one onto the other), so that `pip install .`
migrates too. Scripts with no revision are an incomplete install: refused, never taken for an
empty head that every database is "current" with.

SQLite: the upgrade runs inside one `BEGIN IMMEDIATE` transaction, so a second process waits
for the first and then finds the schema current. PostgreSQL: `pg_advisory_xact_lock` taken at
the start of the upgrade transaction (DDL is transactional there too).

Alembic is loaded only to change a schema or to judge one that is not at HEAD: every command
that opens the local store (the hook on each prompt of a session rewake reported among them)
first asks whether the schema is current, and loading Alembic to answer took about a fifth of
such a command's start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, column, inspect, select, table, text
from sqlalchemy.engine import Connection

if TYPE_CHECKING:
    from alembic.config import Config

#: Where an installed rewake keeps its migration scripts.
PACKAGED_SCRIPTS = Path(__file__).resolve().parent.parent / "migration_scripts"
#: Where a source checkout keeps them, beside the alembic.ini that names them.
SOURCE_SCRIPTS = Path(__file__).resolve().parent.parent.parent / "alembic"
SOURCE_INI = SOURCE_SCRIPTS.parent / "alembic.ini"

#: An arbitrary constant naming rewake's migration lock among PostgreSQL advisory locks.
PG_MIGRATION_LOCK = 0x72657761  # "rewa"

#: The newest revision of the scripts this code ships. A database stamped with exactly this is
#: current without Alembic reading the scripts; anything else is judged by Alembic. A test holds
#: it to the scripts' head, so a new migration fails the suite until this names it.
HEAD = "0006"

#: Where Alembic records a database's revision (its default, which alembic/env.py keeps).
_VERSIONS = table("alembic_version", column("version_num"))


class SchemaError(RuntimeError):
    """The database's schema is not one this code can run on."""


class ScriptsMissing(SchemaError):
    """This rewake has no migration scripts to check or build a schema with."""


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


def script_location() -> Path:
    """This rewake's migration scripts: installed in the package, else the source checkout's.
    ScriptsMissing when neither holds any (a lone `versions` folder is not enough: the
    alembic library itself sits beside `app` after an install)."""
    for location in (PACKAGED_SCRIPTS, SOURCE_SCRIPTS):
        if (location / "env.py").is_file() and (location / "versions").is_dir():
            return location
    raise ScriptsMissing(
        f"no migration scripts in {PACKAGED_SCRIPTS} or {SOURCE_SCRIPTS}: this rewake is "
        "installed incompletely; reinstall it"
    )


def alembic_config() -> Config:
    from alembic.config import Config

    location = script_location()
    from_source = location == SOURCE_SCRIPTS and SOURCE_INI.is_file()
    config = Config(str(SOURCE_INI)) if from_source else Config()
    config.set_main_option("script_location", str(location))
    config.set_main_option("path_separator", "os")
    return config


def _status(connection: Connection) -> SchemaStatus:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = alembic_config()
    script = ScriptDirectory.from_config(config)
    head = tuple(script.get_heads())
    if not head:
        raise ScriptsMissing(
            f"the migration scripts in {config.get_main_option('script_location')} hold no "
            "revision: this rewake is installed incompletely; reinstall it"
        )
    current = tuple(MigrationContext.configure(connection).get_current_heads())
    known = {revision.revision for revision in script.walk_revisions()}
    return SchemaStatus(
        current=current,
        head=head,
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
                from alembic import command

                config = alembic_config()
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
        return _status(connection)


def stamped(connection: Connection) -> tuple[str, ...]:
    """The revisions the database is stamped with, read without Alembic; () when it was never
    migrated (no version table)."""
    if not inspect(connection).has_table(_VERSIONS.name):
        return ()
    return tuple(connection.execute(select(_VERSIONS.c.version_num)).scalars())


def ensure_current(engine: Engine) -> SchemaStatus:
    """Upgrade to head only when the schema is behind. A current schema is only read, without
    the migration lock: on SQLite that lock is the write lock, and a command that only reads
    (`rewake ls`) must not wait behind a writer for it. A database stamped HEAD is taken as
    current without loading Alembic. SchemaError if the schema is newer."""
    with engine.connect() as connection:
        if stamped(connection) == (HEAD,):
            return SchemaStatus(current=(HEAD,), head=(HEAD,), unknown=())
    status = schema_status(engine)
    if status.is_newer:
        raise SchemaError(_newer_message(status))
    if status.is_current:
        return status
    return upgrade(engine)


def downgrade(engine: Engine, revision: str) -> SchemaStatus:
    """Downgrade to `revision` under the migration lock (tests and operators only)."""
    with engine.connect() as connection:
        connection = connection.execution_options(rewake_write=True)
        with connection.begin():
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_MIGRATION_LOCK}
                )
            from alembic import command

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
