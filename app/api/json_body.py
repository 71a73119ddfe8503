"""JSON bodies that Python's decoder refuses for their shape, not their syntax, still decode.

`json.loads` recurses once per level of nesting, so a body nested a few thousand levels deep
raises RecursionError (FastAPI answers 400: the report would be lost); an integer of more than
4300 digits raises ValueError. Such a body is decoded again with every array or object nested
deeper than BODY_MAX_DEPTH replaced by a string, and oversized integers kept as their digits.
The domain then cuts the events further (rewake.reports.rules.clean_json) and says so in the
answer's warnings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

#: Nesting kept when a body is decoded again: deep enough that only values beyond the domain's
#: own cut (EVENTS_MAX_DEPTH inside the events) are lost here, shallow enough to decode.
BODY_MAX_DEPTH = 200
BODY_CUT = f"[cut: nested deeper than {BODY_MAX_DEPTH} levels]"

#: A JSON string (so that brackets inside it are skipped) or a bracket: linear, no nesting of
#: unbounded quantifiers.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def cap_depth(text: str, max_depth: int = BODY_MAX_DEPTH, cut: str = BODY_CUT) -> str:
    """JSON text with every array or object nested deeper than `max_depth` replaced by the
    JSON string `cut`. Text that is not JSON stays not JSON."""
    parts: list[str] = []
    depth = 0
    copied_to = 0  # text[:copied_to] is in parts
    skipping_from = -1  # where the array or object being cut began
    for token in _TOKEN.finditer(text):
        mark = token.group()
        if mark[0] == '"':
            continue
        if mark in "[{":
            depth += 1
            if depth == max_depth + 1 and skipping_from < 0:
                skipping_from = token.start()
        else:
            depth -= 1
            if depth == max_depth and skipping_from >= 0:
                parts += [text[copied_to:skipping_from], json.dumps(cut)]
                copied_to, skipping_from = token.end(), -1
    if skipping_from >= 0:  # never closed: not JSON, and it stays so, without the nesting
        return "".join([*parts, text[copied_to:skipping_from], json.dumps(cut)])
    parts.append(text[copied_to:])
    return "".join(parts)


def _keep_long_integers(digits: str) -> int | str:
    try:
        return int(digits)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows
        return digits


def load_json_body(body: bytes) -> Any:
    """`json.loads`, or, for a body too deeply nested or with too long integers for it, the
    body decoded with those values cut (see the module's docstring)."""
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as refused:
        try:
            return json.loads(cap_depth(body.decode("utf-8")), parse_int=_keep_long_integers)
        except json.JSONDecodeError:
            raise
        except (RecursionError, ValueError):  # not UTF-8, or beyond what the cut can mend
            raise refused from None


class TolerantJSONRequest(Request):
    """A request whose JSON body is read by `load_json_body`."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = load_json_body(await self.body())
        return self._json


class TolerantJSONRoute(APIRoute):
    """A route that reads its JSON body with `load_json_body`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def tolerant(request: Request) -> Response:
            return await handler(TolerantJSONRequest(request.scope, request.receive))

        return tolerant
