"""The parser's corpus (tests/corpus/), read in one place for every data-driven test.

- cases: each message in real/ and synthetic/, its captured text (`<stem>.txt`) and the
  verdict worked out by hand (`<stem>.json`), named `<origin>/<stem>`;
- vectors: the peer vectors (peers/vectors.jsonl), each named by its `id`.

Each is read once per process; `params` turns them into pytest parameters named by their ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import pytest

FOLDER = Path(__file__).resolve().parents[1] / "corpus"
#: The folders that hold cases, each named for where its messages come from.
ORIGINS = ("real", "synthetic")
VECTORS_FILE = FOLDER / "peers" / "vectors.jsonl"


@dataclass(frozen=True)
class Case:
    """One corpus message: the text a host captured (or one made up, in synthetic/) and the
    arguments and verdict its json gives."""

    origin: str
    stem: str
    text: str
    spec: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.origin}/{self.stem}"

    @property
    def observed_at(self) -> datetime:
        return datetime.fromisoformat(self.spec["observed_at"])

    @property
    def zone(self) -> str | None:
        zone: str | None = self.spec["zone"]
        return zone

    @property
    def provider(self) -> str | None:
        provider: str | None = self.spec["provider"]
        return provider

    @property
    def expected(self) -> dict[str, Any]:
        """The verdict worked out by hand (a copy: a test may take it apart)."""
        return dict(self.spec["expected"])

    @property
    def cells(self) -> frozenset[str]:
        """The coverage matrix's tags this case fills (MATRIX.md)."""
        return frozenset(self.spec.get("cells", []))


@dataclass(frozen=True)
class Vector:
    """One peer vector: a message from another project's tests, with the verdict the rules
    give it and what the parser may answer (`read`)."""

    id: str
    spec: dict[str, Any]

    @property
    def text(self) -> str:
        return str(self.spec[self.spec["input"]])

    @property
    def expected(self) -> dict[str, Any]:
        return dict(self.spec["expected"])


@cache
def cases() -> tuple[Case, ...]:
    """Every case, real/ then synthetic/, each folder in file-name order. The text is read as
    bytes and decoded, so line ends stay as captured."""
    found = []
    for origin in ORIGINS:
        for spec_path in sorted((FOLDER / origin).glob("*.json")):
            found.append(
                Case(
                    origin=origin,
                    stem=spec_path.stem,
                    text=spec_path.with_suffix(".txt").read_bytes().decode("utf-8"),
                    spec=json.loads(spec_path.read_text(encoding="utf-8")),
                )
            )
    return tuple(found)


@cache
def vectors() -> tuple[Vector, ...]:
    """Every peer vector, in the file's order."""
    lines = VECTORS_FILE.read_text(encoding="utf-8").splitlines()
    return tuple(Vector(id=spec["id"], spec=spec) for spec in map(json.loads, lines))


class _Named(Protocol):
    @property
    def id(self) -> str: ...


def params(items: Iterable[_Named]) -> list[Any]:
    """`items` as pytest parameters, each named by its id."""
    return [pytest.param(item, id=item.id) for item in items]
