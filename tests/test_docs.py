"""The README is a front page, its commands are the project's, and no relative link in the
documentation points at a file or a heading that is not there."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
PAGES = sorted([README, CONTRIBUTING, *(ROOT / "docs").glob("*.md")])

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
MD_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)=\"([^\"]+)\"", re.I)
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:id|name)=\"([^\"]+)\"", re.I)
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def prose(text: str) -> str:
    """The text with its code blocks and code spans blanked: a link shown as code is no link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """The anchors a Markdown renderer gives the page's headings, GitHub's way: lower case,
    punctuation dropped, spaces as hyphens, a repeated heading numbered -1, -2, ..."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set(HTML_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(text):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    text = prose(page.read_text(encoding="utf-8"))
    targets = MD_LINK.findall(text) + HTML_LINK.findall(text)
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def link_cases() -> list[tuple[Path, str]]:
    return [(page, target) for page in PAGES for target in relative_links(page)]


@pytest.mark.parametrize(
    ("page", "target"),
    link_cases(),
    ids=[f"{p.relative_to(ROOT)}->{t}" for p, t in link_cases()],
)
def test_every_relative_link_points_at_something(page: Path, target: str) -> None:
    """A relative link in README.md, CONTRIBUTING.md or docs/*.md names a file or folder that
    exists, and its #anchor, on a Markdown page, is one of that page's headings."""
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    assert resolved.exists(), f"{page.relative_to(ROOT)}: {target} names no file"
    if anchor and resolved.suffix == ".md":
        assert anchor in anchors(resolved), f"{page.relative_to(ROOT)}: {target}: no such heading"


def test_the_link_check_finds_the_links() -> None:
    """The extraction sees the README's links to docs/ and the web page's pictures, so the check
    above cannot pass by finding nothing."""
    assert any(t.startswith("docs/") for t in relative_links(README))
    assert any(t.endswith(".png") for t in relative_links(ROOT / "docs" / "web.md"))


def test_a_heading_anchor_is_made_as_a_renderer_makes_it(tmp_path: Path) -> None:
    """Backticks, colons, dots and slashes drop out of a heading's anchor, spaces become
    hyphens, underscores stay, and a repeated heading gets -1."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## The parser: `bench/parse_bench.py`\n\n```\n# not a heading\n```\n\n"
        "## Notes\n\n## Notes\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"title", "the-parser-benchparse_benchpy", "notes", "notes-1"}


def test_the_readme_is_a_front_page() -> None:
    """README.md stays under 300 lines: the rest of the documentation lives in docs/."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines"


def first_block(text: str) -> str:
    match = FENCE.search(text)
    assert match is not None
    return match.group(0)


def test_the_readme_opens_with_the_two_commands() -> None:
    """Before any section, the README's first block starts the service on its default, then
    runs the whole suite the way CI runs it (.ci/run's pytest invocation)."""
    text = README.read_text(encoding="utf-8")
    block = first_block(text)
    assert text.index(block) < text.index("\n## ")
    serve, suite = block.splitlines()[1:-1]
    assert serve == "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/rewake serve"
    install, _, run_suite = suite.rpartition(" && ")
    assert install == "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]'"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert run_suite in [line.strip() for line in ci], ".ci/run runs the suite otherwise"


def inner_loop(page: Path) -> list[str]:
    """The page's inner-loop command, its continuation lines joined, as argv."""
    text = page.read_text(encoding="utf-8")
    blocks = [m.group(0) for m in FENCE.finditer(text) if '-m "not e2e' in m.group(0)]
    assert len(blocks) == 1, f"{page.name}: not exactly one inner-loop block"
    body = "\n".join(blocks[0].splitlines()[1:-1]).replace("\\\n", " ")
    return shlex.split(body)


def test_the_inner_loop_is_one_command_in_readme_and_contributing() -> None:
    """README and CONTRIBUTING give the same inner-loop command."""
    assert inner_loop(README) == inner_loop(CONTRIBUTING)


def test_the_inner_loop_runs_the_gates() -> None:
    """The inner loop's paths take in tests/test_gates.py, and its marker expression selects
    the gates' tests there."""
    argv = inner_loop(README)
    marks = argv[argv.index("-m") + 1]
    paths = {p for arg in argv if arg.startswith("tests/") for p in ROOT.glob(arg)}
    gates = ROOT / "tests" / "test_gates.py"
    assert gates in paths
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", marks, str(gates)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "test_gates.py::" in collected.stdout
