"""Databases for the tests: a URL migrated to head, and a fresh PostgreSQL schema."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

POSTGRES_ENV = "REWAKE_TEST_POSTGRES_URL"


def migrate(url: str) -> None:
    from rewake.db import migrations
    from rewake.db.engine import Database

    database = Database(url)
    migrations.upgrade(database.engine)
    database.dispose()


def postgres_schema_url(base: str, schema: str) -> str:
    """`base` with every connection's search_path set to `schema`."""
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options=-csearch_path%3D{schema}"


@contextmanager
def fresh_postgres_schema(migrated: bool = True) -> Iterator[str]:
    """A URL whose connections live in a new schema, dropped afterwards."""
    base = os.environ.get(POSTGRES_ENV)
    if not base:
        pytest.skip(f"{POSTGRES_ENV} is not set")
    import sqlalchemy

    schema = f"rewake_test_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(base.replace("postgresql://", "postgresql+psycopg://", 1))
    with admin.begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = postgres_schema_url(base, schema)
    try:
        if migrated:
            migrate(url)
        yield url
    finally:
        with admin.begin() as connection:
            connection.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()
