"""docs/design.md and the code cannot drift apart: its mark tables are read and compared with
rewake.marks.states, and every `docs/design.md#section` the code cites must be a heading there."""

from __future__ import annotations

import re
from pathlib import Path

from rewake.marks.states import FINAL_STATES, LIVE_STATES, TRANSITIONS, MarkState
from rewake.parsers.verdict import REFUSAL_CODES

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
#: Where the code and its docs cite the contract.
CITING = ("app", "parsers", "tests", "docs")
CITATION = re.compile(r"design\.md#([A-Za-z0-9_-]+)")
STATE = re.compile(r"^`([a-z_]+)`$")


def table(text: str, header: tuple[str, ...]) -> list[list[str]]:
    """The rows of the one Markdown table in `text` whose header cells are `header`, each row
    as its cells, stripped."""
    lines = text.splitlines()
    found: list[list[list[str]]] = []
    for index, line in enumerate(lines):
        if tuple(cells(line)) != header:
            continue
        rows = []
        for row in lines[index + 2 :]:
            if not row.startswith("|"):
                break
            rows.append(cells(row))
        found.append(rows)
    assert len(found) == 1, f"expected one table headed {header} in {DESIGN}, found {len(found)}"
    return found[0]


def cells(line: str) -> list[str]:
    """A Markdown table line's cells (escaped pipes `\\|` stay inside their cell)."""
    if not line.startswith("|"):
        return []
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [part.strip() for part in parts]


def state(cell: str) -> MarkState:
    """A cell that names one state in backticks, as that MarkState."""
    match = STATE.match(cell)
    assert match, f"{cell!r} is not one state in backticks"
    return MarkState(match.group(1))


def documented_transitions(text: str) -> dict[MarkState, set[MarkState]]:
    """The changes the doc's `| from | to | by |` table lists, one row each."""
    changes: dict[MarkState, set[MarkState]] = {}
    for row in table(text, ("from", "to", "by")):
        before, after = state(row[0]), state(row[1])
        assert after not in changes.get(before, set()), f"{before} -> {after} listed twice"
        changes.setdefault(before, set()).add(after)
    return changes


def slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading: lower case, punctuation dropped,
    spaces as hyphens."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def test_the_documented_state_changes_are_the_lifecycle_table() -> None:
    """docs/design.md's state-change table lists exactly rewake.marks.states.TRANSITIONS."""
    documented = documented_transitions(DESIGN.read_text(encoding="utf-8"))
    in_code = {before: set(after) for before, after in TRANSITIONS.items()}
    assert documented == in_code


def test_the_documented_states_are_the_code_states_live_and_final_alike() -> None:
    """docs/design.md's state table names every MarkState once, live and final as the code
    has them."""
    rows = table(DESIGN.read_text(encoding="utf-8"), ("state", "live", "final", "meaning"))
    named = [state(row[0]) for row in rows]
    assert sorted(named) == sorted(MarkState)
    live = {state(row[0]) for row in rows if row[1] == "yes"}
    final = {state(row[0]) for row in rows if row[2] == "yes"}
    assert {row[1] for row in rows} | {row[2] for row in rows} == {"yes", "no"}
    assert live == set(LIVE_STATES)
    assert final == set(FINAL_STATES)


def test_the_table_reader_sees_a_change_the_code_lacks() -> None:
    """A row added to the doc's table alone (uncertain -> armed) makes the tables differ."""
    text = DESIGN.read_text(encoding="utf-8")
    anchor = "| `uncertain` | `failed` |"
    assert anchor in text
    drifted = text.replace(anchor, "| `uncertain` | `armed` | a retry |\n" + anchor, 1)
    in_code = {before: set(after) for before, after in TRANSITIONS.items()}
    assert documented_transitions(drifted) != in_code


def test_the_documented_refusal_codes_are_the_parsers() -> None:
    """docs/design.md's refusal table names each code of rewake.parsers.verdict.REFUSAL_CODES,
    once, and no other."""
    rows = table(DESIGN.read_text(encoding="utf-8"), ("code", "meaning"))
    named = [row[0].strip("`") for row in rows]
    assert sorted(named) == sorted(REFUSAL_CODES)


def test_every_citation_of_the_design_names_one_of_its_sections() -> None:
    """Each `design.md#anchor` in app/, parsers/, tests/ and docs/ is a heading of
    docs/design.md."""
    headings = {
        slug(line.lstrip("#"))
        for line in DESIGN.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }
    cited: dict[str, set[str]] = {}
    for folder in CITING:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".md") or path == Path(__file__).resolve():
                continue  # this file names the pattern, not a section
            if ".venv" in path.parts:
                continue
            for anchor in CITATION.findall(path.read_text(encoding="utf-8", errors="replace")):
                cited.setdefault(anchor, set()).add(str(path.relative_to(ROOT)))
    assert cited, "no citation of docs/design.md found: the scan is looking in the wrong place"
    missing = {anchor: paths for anchor, paths in cited.items() if anchor not in headings}
    assert not missing, f"cited sections that docs/design.md has no heading for: {missing}"
