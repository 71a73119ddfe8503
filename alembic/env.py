"""Alembic environment for rewake: SQLite (batch mode) and PostgreSQL (psycopg 3).

`rewake.db.migrations` passes an open connection in `config.attributes["connection"]`, already
holding the migration lock; the alembic command line opens its own from the URL.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection
from sqlalchemy.pool import NullPool
from sqlmodel import SQLModel

import rewake.db.models  # noqa: F401  (registers the tables on the metadata)
from alembic import context
from rewake.db.engine import make_engine
from rewake.settings import Settings, normalize_database_url

config = context.config
target_metadata = SQLModel.metadata


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    return normalize_database_url(url) if url else Settings().sqlalchemy_url


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        transactional_ddl=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=_url().startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url(), poolclass=NullPool)
    with engine.connect() as connection:
        _run(connection)
        connection.commit()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
