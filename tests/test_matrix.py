"""The coverage matrix (tests/corpus/MATRIX.md): every required cell has a case that fills it.

This checks coverage, not verdicts (tests/test_corpus.py does those), so it never imports the
parser.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pytest

from tests.support import corpus
from tests.support.corpus import ORIGINS

MATRIX = corpus.FOLDER / "MATRIX.md"

# A matrix row: | provider | form | edge | `tag tag ...` | real or synthetic |
_ROW = re.compile(
    r"^\|(?P<provider>[^|]*)\|(?P<form>[^|]*)\|(?P<edge>[^|]*)\|\s*`(?P<tags>[^`]+)`\s*\|"
    r"\s*(?P<filled_by>[a-z]+)\s*\|\s*$"
)
# The vocabulary table lists every tag in backticks, one group a row.
_VOCABULARY_ROW = re.compile(r"^\|[^|`]*\|(?P<tags>.*`.*)\|\s*$")
_TAG = re.compile(r"`([a-z0-9_]+)`")


@dataclass(frozen=True)
class Cell:
    provider: str
    form: str
    edge: str
    tags: frozenset[str]
    filled_by: str

    @property
    def name(self) -> str:
        return "-".join(sorted(self.tags))


def load_cells() -> list[Cell]:
    cells = []
    for line in MATRIX.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line.strip())
        if match:
            cells.append(
                Cell(
                    provider=match["provider"].strip(),
                    form=match["form"].strip(),
                    edge=match["edge"].strip(),
                    tags=frozenset(match["tags"].split()),
                    filled_by=match["filled_by"],
                )
            )
    return cells


def load_vocabulary() -> frozenset[str]:
    tags: set[str] = set()
    for line in MATRIX.read_text(encoding="utf-8").splitlines():
        match = _VOCABULARY_ROW.match(line.strip())
        if match and not _ROW.match(line.strip()):
            tags.update(_TAG.findall(match["tags"]))
    return frozenset(tags)


CELLS = load_cells()
CASES = corpus.cases()


def test_matrix_has_cells() -> None:
    """MATRIX.md parses into cells for all three providers, each from a known origin."""
    assert {cell.provider for cell in CELLS} == {"claude", "codex", "gemini"}
    assert {cell.filled_by for cell in CELLS} <= set(ORIGINS)


def test_each_cell_names_its_provider() -> None:
    """A cell's tags include its provider, so a case of another provider never fills it."""
    wrong = [cell.name for cell in CELLS if cell.provider not in cell.tags]
    assert not wrong


def test_cells_are_distinct() -> None:
    """No two rows of the matrix ask for the same tags."""
    counts = Counter(cell.tags for cell in CELLS)
    assert [sorted(tags) for tags, n in counts.items() if n > 1] == []


def test_cell_tags_are_in_the_vocabulary() -> None:
    """Every tag a row asks for is listed in the matrix's tag table."""
    vocabulary = load_vocabulary()
    unknown = sorted({tag for cell in CELLS for tag in cell.tags} - vocabulary)
    assert unknown == []


@pytest.mark.parametrize("cell", CELLS, ids=[f"{cell.filled_by}:{cell.name}" for cell in CELLS])
def test_cell_is_filled(cell: Cell) -> None:
    """A required cell has at least one case, from the set the matrix names, carrying its tags."""
    candidates = [case for case in CASES if case.origin == cell.filled_by]
    filling = [case.stem for case in candidates if cell.tags <= case.cells]
    assert filling, f"no {cell.filled_by} case has cells {sorted(cell.tags)} ({cell.edge})"


def test_origin_matches_folder() -> None:
    """Real and synthetic cases are kept apart: each says the origin of the folder it is in."""
    misplaced = [
        f"{case.origin}/{case.stem}: origin {case.spec.get('origin')!r}"
        for case in CASES
        if case.spec.get("origin") != case.origin
    ]
    assert misplaced == []


def test_ids_are_unique_and_match_file_names() -> None:
    """Every case id is unique across real/ and synthetic/ and equals its file name."""
    ids = Counter(case.spec.get("id") for case in CASES)
    assert [case_id for case_id, n in ids.items() if n > 1] == []
    assert [case.stem for case in CASES if case.spec.get("id") != case.stem] == []


def test_every_case_has_its_text() -> None:
    """Each expected verdict has the captured text beside it, and no text is left without one."""
    for origin in ORIGINS:
        folder = corpus.FOLDER / origin
        specs = {path.stem for path in folder.glob("*.json")}
        texts = {path.stem for path in folder.glob("*.txt")}
        assert sorted(specs ^ texts) == [], origin


def test_synthetic_cases_use_matrix_tags() -> None:
    """Synthetic cases use only tags the matrix defines, and say they are made up."""
    vocabulary = load_vocabulary()
    for case in CASES:
        if case.origin != "synthetic":
            continue
        assert sorted(case.cells - vocabulary) == [], case.stem
        assert case.spec.get("source") == "synthetic", case.stem
        assert case.spec.get("source_date") is None, case.stem
        assert case.spec.get("why"), case.stem
