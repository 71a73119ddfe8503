"""The README's Python examples run as written."""

from __future__ import annotations

import doctest
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_parser_examples() -> None:
    """Every `>>>` example in the README gives the output printed beside it."""
    failures, attempted = doctest.testfile(
        str(README), module_relative=False, optionflags=doctest.ELLIPSIS
    )
    assert attempted > 0
    assert failures == 0
