"""New rows written at once, with one INSERT of their fields, instead of through the unit of
work: a request writes each of its new rows once, and the flush's bookkeeping costs several
times the INSERT. The repositories write rows this way; nothing above them does."""

from __future__ import annotations

from functools import cache
from typing import TypeVar

from sqlalchemy import insert, inspect
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.sql.dml import Insert
from sqlmodel import Session, SQLModel

Row = TypeVar("Row", bound=SQLModel)


def insert_row(db: Session, row: SQLModel) -> None:
    """Write a new row now. It stays outside `db`: the caller keeps it to read, and a change
    made to it afterwards is not written. For rows never changed in the same transaction (a
    failure, a new run)."""
    db.execute(_insert_into(type(row)), row.model_dump())


def insert_kept(db: Session, row: Row) -> Row:
    """Write a new row now and keep it in `db`, as `keep_as_loaded` does. A key the database
    assigns (an autoincrement id left None) is read back into the row."""
    model = type(row)
    assigned = tuple(name for name in _key_of(model) if getattr(row, name) is None)
    if assigned:
        values = row.model_dump(exclude=set(assigned))
        returned = db.execute(_insert_returning(model, assigned), values).one()
        for name, value in zip(assigned, returned, strict=True):
            setattr(row, name, value)
    else:
        insert_row(db, row)
    return keep_as_loaded(db, row)


def keep_as_loaded(db: Session, row: Row) -> Row:
    """Make `row`, which holds what its table holds now, persistent in `db` as if it had been
    read: nothing reads it back, and a later change to it is written as an UPDATE."""
    make_transient_to_detached(row)
    db.add(row)
    return row


@cache
def _insert_into(model: type[SQLModel]) -> Insert:
    return insert(model.__table__)  # type: ignore[attr-defined]


@cache
def _insert_returning(model: type[SQLModel], names: tuple[str, ...]) -> Insert:
    table = model.__table__  # type: ignore[attr-defined]
    return insert(table).returning(*(table.c[name] for name in names))


@cache
def _key_of(model: type[SQLModel]) -> tuple[str, ...]:
    """The names of the model's primary key columns."""
    return tuple(column.key for column in inspect(model).primary_key)
