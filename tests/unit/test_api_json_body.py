"""Bodies too deeply nested for Python's JSON decoder are decoded with the excess cut."""

from __future__ import annotations

import json

import pytest

from rewake.api.json_body import BODY_CUT, cap_depth, load_json_body


def test_cap_depth_cuts_only_past_the_depth_and_skips_strings() -> None:
    """Arrays and objects deeper than the cap become the cut string; brackets inside strings,
    escaped quotes included, do not count."""
    text = '{"a": "[[{\\"[", "b": [[{"c": [1]}], 2], "d": {}}'
    capped = json.loads(cap_depth(text, max_depth=3, cut="CUT"))
    assert capped == {"a": '[[{"[', "b": [["CUT"], 2], "d": {}}
    assert cap_depth(text, max_depth=5) == text


def test_load_json_body_survives_any_nesting_and_long_integers() -> None:
    """A body nested 100,000 deep, or with a 5,000-digit integer, decodes instead of raising."""
    deep = load_json_body(("[" * 100_000 + "]" * 100_000).encode())
    for _ in range(200):
        deep = deep[0]
    assert deep == BODY_CUT
    assert load_json_body(b'{"n": ' + b"7" * 5000 + b", " + b'"m": 1}') == {"n": "7" * 5000, "m": 1}


def test_load_json_body_still_refuses_broken_json() -> None:
    """Text that is not JSON stays a JSONDecodeError, so the route answers 422 as before."""
    with pytest.raises(json.JSONDecodeError):
        load_json_body(b"[" * 5000 + b"oops")
