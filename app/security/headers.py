"""Headers every HTML page carries, so that another site can neither frame a page (and trick
a click on its buttons) nor make a browser read a response as something else.

The page loads its one script and one stylesheet from `/static/` and has no inline script,
handler or style attribute, so a policy of `'self'` only costs it nothing. The JSON that
`base.html` embeds for the script is a data block (`type="application/json"`), which a
browser never runs, so the policy leaves it alone.
"""

from __future__ import annotations

from starlette.types import Message, Send

PAGE_HEADERS: dict[str, str] = {
    "Content-Security-Policy": (
        "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
_RAW = [(name.lower().encode(), value.encode()) for name, value in PAGE_HEADERS.items()]


def harden_pages(send: Send) -> Send:
    """`send`, adding `PAGE_HEADERS` to any text/html response that passes through it."""

    async def hardened(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            content_type = dict(headers).get(b"content-type", b"")
            if content_type.startswith(b"text/html"):
                message = {**message, "headers": headers + _RAW}
        await send(message)

    return hardened
