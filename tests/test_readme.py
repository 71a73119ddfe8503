"""The Python examples of the README and of docs/parsing.md run as written."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("page", ["README.md", "docs/parsing.md"])
def test_parser_examples(page: str) -> None:
    """Every `>>>` example on the page gives the output printed beside it."""
    failures, attempted = doctest.testfile(
        str(ROOT / page), module_relative=False, optionflags=doctest.ELLIPSIS
    )
    assert attempted > 0
    assert failures == 0
