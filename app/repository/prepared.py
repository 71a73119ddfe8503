"""Statements compiled once per dialect and run on the transaction's own DBAPI cursor.

`Connection.execute` does the same work on every call: it looks the statement up in the
compiled cache by a cache key it computes, builds an execution context and a result object,
and fires events. On SQLite each of those costs several times more than the statement
itself: an INSERT of a timeline entry took 30 us through Core and 2 us on the cursor, a
primary-key read through the ORM 65-75 us. The write routes' few fixed statements are
therefore compiled here once per dialect and run on the cursor of the session's
connection, inside the session's transaction, with the same SQL and the same type
conversions as Core would apply: each bound value through its column type's bind processor
(UTC instants, JSON), each selected value through its result processor.

Only statements whose every value is a named bind parameter belong here (no literals that
Core would render per call, no expanding IN lists: `one_of` spells a constant list). Errors
are raised as Core raises them (`sqlalchemy.exc.DBAPIError` and its kinds), so that the
callers' handlers see no difference.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from sqlalchemy import bindparam, inspect, select
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.attributes import instance_dict, set_committed_value
from sqlalchemy.sql import ClauseElement, ColumnElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlmodel import Session

from app.db import run_on_cursor

Processor = Callable[[Any], Any] | None


class _Form(NamedTuple):
    """A statement as one dialect runs it."""

    sql: str
    #: Whether the dialect's placeholders are positional (a tuple of values) or named.
    positional: bool
    #: Positional: every parameter in placeholder order; named: those with a bind processor.
    params: tuple[tuple[str, Processor], ...]
    results: tuple[Processor, ...]


class Prepared:
    """One statement, compiled on first use with each dialect.

    `columns` names the insert or update columns the values are given for (Core's
    `column_keys`); `results` the columns a SELECT or RETURNING yields, in order, when they
    are not the statement's own selected columns; `constants` the values of parameters that
    never change (see `one_of`)."""

    def __init__(
        self,
        statement: ClauseElement,
        *,
        columns: Sequence[str] | None = None,
        results: Sequence[Any] | None = None,
        constants: Mapping[str, Any] | None = None,
    ) -> None:
        self.statement = statement
        self.columns = list(columns) if columns is not None else None
        self._results = results
        self._constants = dict(constants or {})
        self.model: type[Any] | None = None
        self.names: tuple[str, ...] = ()
        self._forms: WeakKeyDictionary[Dialect, _Form] = WeakKeyDictionary()
        #: The dialect and form of the last run, looked up without the weak dictionary.
        self._last: tuple[Dialect, _Form] | None = None
        self._lock = threading.Lock()

    def _form(self, dialect: Dialect) -> _Form:
        last = self._last
        if last is not None and last[0] is dialect:
            return last[1]
        form = self._forms.get(dialect)
        if form is None:
            with self._lock:
                form = self._forms.get(dialect) or self._compile(dialect)
                self._forms[dialect] = form
        self._last = (dialect, form)
        return form

    def _compile(self, dialect: Dialect) -> _Form:
        compiled = self.statement.compile(dialect=dialect, column_keys=self.columns)
        assert isinstance(compiled, SQLCompiler)
        processors = {
            name: bind.type.dialect_impl(dialect).bind_processor(dialect)
            for name, bind in compiled.binds.items()
        }
        selected = self._results
        if selected is None:
            selected = list(getattr(self.statement, "selected_columns", ()))
        results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in selected
        )
        if compiled.positional:
            names: tuple[str, ...] = tuple(compiled.positiontup or ())
        else:
            names = tuple(name for name, process in processors.items() if process is not None)
        params = tuple((name, processors.get(name)) for name in names)
        return _Form(compiled.string, compiled.positional, params, results)

    def rows(self, db: Session, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run the statement in `db`'s transaction; the rows it returns, converted.

        The session's pending changes are flushed first, as before any ORM query."""
        db.flush()
        dialect, cursor = _cursor_of(db)
        form = self._form(dialect)
        given = {**self._constants, **params} if self._constants else params
        bound: tuple[Any, ...] | dict[str, Any]
        if form.positional:
            bound = tuple([given[name] if process is None else process(given[name])
                           for name, process in form.params])  # fmt: skip
        else:
            bound = dict(given)
            for name, process in form.params:
                if name in bound:
                    bound[name] = process(bound[name])  # type: ignore[misc]
        fetch = bool(form.results)
        fetched = run_on_cursor(dialect, cursor, form.sql, bound, fetch=fetch)
        if not fetched:
            return []
        results = form.results
        if not any(results):
            return [tuple(row) for row in fetched]
        return [
            tuple(value if process is None else process(value)
                  for process, value in zip(results, row, strict=True))
            for row in fetched
        ]  # fmt: skip

    @classmethod
    def rows_of(
        cls, model: type[Any], where: ColumnElement[bool], *, lock: bool = False, **kwargs: Any
    ) -> Prepared:
        """SELECT every column of `model`'s table WHERE `where` (FOR NO KEY UPDATE with
        `lock`); `objects` and `one` give the rows as persistent objects of the session."""
        stmt = select(*model.__table__.columns).where(where)
        prepared = cls(stmt.with_for_update(key_share=True) if lock else stmt, **kwargs)
        prepared.model = model
        prepared.names = tuple(column.name for column in model.__table__.columns)
        return prepared

    def objects(self, db: Session, params: Mapping[str, Any]) -> list[Any]:
        """The rows as objects of the model given to `rows_of`, attached to `db`."""
        model, names = self.model, self.names
        assert model is not None, "objects() needs a statement made by rows_of()"
        return [attached(db, model, dict(zip(names, row, strict=True)))
                for row in self.rows(db, params)]  # fmt: skip

    def one(self, db: Session, params: Mapping[str, Any]) -> Any:
        found = self.objects(db, params)
        return found[0] if found else None

    def first(self, db: Session, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        found = self.rows(db, params)
        return found[0] if found else None

    def scalar(self, db: Session, params: Mapping[str, Any]) -> Any:
        """The first column of the first row; None when there is no row."""
        found = self.first(db, params)
        return found[0] if found is not None else None

    def run(self, db: Session, params: Mapping[str, Any]) -> None:
        """Run a statement whose rows, if any, are not wanted."""
        self.rows(db, params)


#: Where a session keeps the cursor of its current transaction (`_cursor_of`).
_HELD = "rewake.prepared.cursor"


def _cursor_of(db: Session) -> tuple[Dialect, Any]:
    """The dialect, and a DBAPI cursor on the connection, of `db`'s current transaction,
    begun if need be.

    `Session.connection()` walks the session's transaction state machine on every call
    (10-15 us; a failure report runs eight statements), and a new psycopg cursor costs 18 us:
    both are kept in `db.info` for as long as the same transaction (the innermost, so that a
    SAVEPOINT begun later is still emitted) is current and active."""
    current = db.get_nested_transaction() or db.get_transaction()
    held = db.info.get(_HELD)
    if held is not None and current is not None and held[0] is current and current.is_active:
        return held[1], held[2]
    connection = db.connection()
    current = db.get_nested_transaction() or db.get_transaction()
    # The pool's wrapper adds nothing to running a statement: the driver's own cursor.
    driver = connection.connection.driver_connection
    assert driver is not None  # a connection in a transaction is open
    cursor = driver.cursor()
    db.info[_HELD] = (current, connection.dialect, cursor)
    return connection.dialect, cursor


def one_of(column: Any, name: str, values: Sequence[Any]) -> tuple[Any, dict[str, Any]]:
    """`column IN (values)` with one named parameter per value, and those parameters' values
    (a Prepared statement's `constants`)."""
    names = [f"{name}_{index}" for index in range(len(values))]
    clause = column.in_([bindparam(each, type_=column.type) for each in names])
    return clause, dict(zip(names, values, strict=True))


def attached(db: Session, model: type[Any], values: Mapping[str, Any]) -> Any:
    """The row of `model` whose every column is in `values` (as just read or written), as a
    persistent object of `db`, as the ORM would load it: the object already in the session,
    refreshed (as `populate_existing` does), or a new one added without a SELECT; changes to
    it are written at the next flush."""
    table = model.__table__
    identity = tuple(values[column.name] for column in table.primary_key)
    existing = db.identity_map.get(db.identity_key(model, identity))
    if existing is not None:
        for name, value in values.items():
            set_committed_value(existing, name, value)
        return existing
    row = row_of(model, values)
    make_transient_to_detached(row)
    db.add(row)
    return row


def row_of(model: type[Any], values: Mapping[str, Any]) -> Any:
    """A new object of `model` holding `values` as its loaded state, built as the ORM builds
    the rows it loads (the class's __init__ costs 30 to 90 us on the failure route's tables)."""
    row = inspect(model).class_manager.new_instance()
    # A new instance has no history, expired attributes or loader callables: its loaded
    # state is its dict, which is what `set_committed_value` would fill one key at a time.
    instance_dict(row).update(values)
    return row
