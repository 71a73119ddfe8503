"""Extract the limit, login, overload and auto-continue message templates from released CLIs.

    python tools/extract_templates.py            # fetch what is missing, write the JSON
    python tools/extract_templates.py --offline  # only the digests already in the cache

For each version in VERSIONS the script fetches the npm package that ships the code
(`npm pack`, the npm registry only): Claude Code's bundled `cli.js` or, from 2.1.1xx on, its
linux-x64 native binary; Codex's linux-x64 Rust binary; Gemini's JS bundle. It reads the
tarball without unpacking it to disk and keeps a *digest*: the text around every anchor phrase
("hit your", "resets", "try again at", "/login", ...). Tarballs are deleted once their digest
is written (`--keep-packs` keeps them), so the cache holds a few MB per version.

Each template below is a recogniser: the literal pieces that must be in a version's digest for
the template to be shipped there, the template text with placeholders, its kind and scope, and
the formatter that renders its time. Some tables are read out of the code itself (Claude's
limit names, Codex's plan prefixes, the time formatters' options), so a new limit name or plan
wording in a new release shows up without a new recogniser. Anchor fragments that no
recogniser claims are listed at the end of the run: read them when a CLI ships.

The output (one JSON file per CLI) is deterministic: sorted, no timestamps, no paths.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "corpus" / "templates"
DEFAULT_CACHE = Path("~/.cache/rewake/templates").expanduser()

#: The versions read: about five per CLI over the last months, oldest first.
VERSIONS: dict[str, list[str]] = {
    "claude": ["2.1.100", "2.1.197", "2.1.250", "2.1.300", "2.1.332"],
    "codex": ["0.142.3", "0.159.0", "0.166.0", "0.171.0"],
    "gemini": ["0.45.2", "0.53.0", "0.56.0", "0.59.0", "0.61.0"],
}

ANCHORS: tuple[bytes, ...] = (
    b"hit your",
    b"usage limit",
    b"Usage limit",
    b"resets",
    b"try again at",
    b"Try again at",
    b"try again later",
    b"Try again later",
    b"continue automatically",
    b"Continuing automatically",
    b"/login",
    b"Access resets",
    b"exhausted your",
    b"out of credits",
    b"spend cap",
    b"spend limit",
    b"API key not valid",
    b"overloaded",
    b"Overloaded",
    b"toLocaleTimeString",
    b"DateTimeFormat",
    b"%-I:%M %p",
    b"high demand",
    b"Quota exceeded",
    b"at capacity",
    b"Not logged in",
    b"Invalid API key",
    b"out of usage",
    b"Suggested retry",
    b"limit reached",
    b"Please run",
    b"try again in",
    b"Try again in",
    b"stndrdth",
    b"%b %-d",
    b"getResetTimeMessage",
)
_WINDOW = 600
# Bytes that end a text fragment in a binary: NUL, other C0 controls but tab and newline.
_BREAK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffd]+")


# --------------------------------------------------------------------------------------------
# Fetching and digests


@dataclass(frozen=True)
class Package:
    """Where one CLI version's code is: the npm spec and the tarball members to read."""

    spec: str
    members: re.Pattern[str]


def _npm(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["npm", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def _packages(cli: str, version: str) -> list[Package]:
    if cli == "claude":
        main = Package(f"@anthropic-ai/claude-code@{version}", re.compile(r"package/cli\.js"))
        bin_field = json.loads(_npm("view", main.spec, "bin", "--json") or "{}")
        if bin_field.get("claude") == "cli.js":
            return [main]
        # From 2.1.1xx on the package is a launcher; the code ships in a native binary.
        return [
            Package(f"@anthropic-ai/claude-code-linux-x64@{version}", re.compile(r"package/claude"))
        ]
    if cli == "codex":
        deps = json.loads(
            _npm("view", f"@openai/codex@{version}", "optionalDependencies", "--json") or "{}"
        )
        spec = str(deps.get("@openai/codex-linux-x64", f"npm:@openai/codex@{version}-linux-x64"))
        return [
            Package(
                spec.removeprefix("npm:"),
                re.compile(r"package/vendor/x86_64[^/]*/(?:bin|codex)/codex"),
            )
        ]
    return [
        Package(f"@google/gemini-cli@{version}", re.compile(r"package/(?:bundle|dist)/[^/]+\.m?js"))
    ]


def _tarball_name(spec: str) -> str:
    """The file name `npm pack` gives `spec`'s tarball: "@scope/name@1.2" -> scope-name-1.2.tgz."""
    name, _, version = spec.lstrip("@").rpartition("@")
    return f"{name.replace('/', '-')}-{version}.tgz"


def _windows(data: bytes) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for anchor in ANCHORS:
        at = data.find(anchor)
        while at >= 0:
            spans.append((max(0, at - _WINDOW), min(len(data), at + len(anchor) + _WINDOW)))
            at = data.find(anchor, at + 1)
    spans.sort()
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def fragments(data: bytes) -> list[str]:
    """The text fragments around every anchor in `data`, in order, each once."""
    seen: dict[str, None] = {}
    for start, end in _windows(data):
        for piece in _BREAK.split(data[start:end].decode("utf-8", "replace")):
            if len(piece) >= 8:
                seen.setdefault(piece, None)
    return list(seen)


def digest(cli: str, version: str, cache: Path, *, offline: bool, keep_packs: bool) -> str:
    """The digest of one version: fetched and written to the cache unless already there."""
    path = cache / "digests" / f"{cli}-{version}.txt"
    if path.exists():
        return path.read_text(encoding="utf-8")
    if offline:
        raise SystemExit(f"{path} is missing and --offline forbids fetching it")
    packs = cache / "packs"
    packs.mkdir(parents=True, exist_ok=True)
    pieces: list[str] = []
    for package in _packages(cli, version):
        tarball = packs / _tarball_name(package.spec)
        if not tarball.exists():
            tarball = packs / _npm("pack", "--silent", package.spec, cwd=packs).splitlines()[-1]
        with tarfile.open(tarball) as archive:
            for member in archive:
                if member.isfile() and package.members.fullmatch(member.name):
                    stream = archive.extractfile(member)
                    if stream is not None:
                        pieces.extend(fragments(stream.read()))
        if not keep_packs:
            tarball.unlink()
    if not pieces:
        raise SystemExit(f"{cli} {version}: no code found in the package")
    text = "\n".join(dict.fromkeys(p.replace("\n", "\\n") for p in pieces)) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


# --------------------------------------------------------------------------------------------
# Normalising code into templates

_JS_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|n)")
_JS_INTERPOLATION = re.compile(r"\$\{[^{}]{1,80}\}")


def js_text(literal: str) -> str:
    """A JS string or template literal's text: escapes decoded (\\xB7 -> ·)."""

    def decode(match: re.Match[str]) -> str:
        code = match.group(1)
        return "\n" if code == "n" else chr(int(code[1:], 16))

    return _JS_ESCAPE.sub(decode, literal)


@dataclass
class Template:
    """One message template as a CLI prints it, and what a reader must make of it."""

    id: str
    kind: str
    template: str
    scope: str | None = None
    formatter: str | None = None
    #: the refusal code the reading must carry where the template states no reset
    refusal: str | None = None
    native_auto_continue: bool | None = None
    login_command: str | None = None
    #: where the template gets its reset: the CLI's own window for drawing one
    window_s: int | None = None
    source: str = ""
    versions: list[str] = field(default_factory=list)

    def key(self) -> tuple[str, str]:
        return (self.id, self.template)


@dataclass
class Formatter:
    """How a CLI turns a reset instant into text, read from its code."""

    name: str
    fields: dict[str, object]
    versions: list[str] = field(default_factory=list)


_HOUR = 3600
_DAY = 24 * _HOUR
_WEEK = 7 * _DAY

Recogniser = Callable[[str], Iterable[Template]]


def _has(digest: str, *pieces: str) -> bool:
    return all(piece in digest for piece in pieces)


# ---- Claude Code ---------------------------------------------------------------------------

#: rateLimitType -> (scope, window): the representative claim names the limit it hit.
_CLAUDE_LIMITS: dict[str, tuple[str, int]] = {
    "five_hour": ("five_hour", 5 * _HOUR),
    "seven_day": ("weekly", _WEEK),
    "seven_day_opus": ("weekly", _WEEK),
    "seven_day_sonnet": ("weekly", _WEEK),
    "seven_day_overage_included": ("weekly", _WEEK),
    "overage": ("monthly", _WEEK),
}
# A limit-name table, in any of the shapes the bundles use: an object literal
# (five_hour:"5-hour limit"), a switch (case"five_hour":K="session limit") or a comparison
# (rateLimitType==="five_hour")_="session limit").
_CLAUDE_LIMIT_NAME = re.compile(
    r"\b(five_hour|seven_day_opus|seven_day_sonnet|seven_day_overage_included|seven_day|overage)"
    r"\"?\)?:?(?:[A-Za-z_$][\w$]{0,3}=)?\"([A-Za-z0-9 .'-]{2,40}(?:limit|usage))\""
)


def claude_limit_names(digest: str) -> dict[str, list[str]]:
    """rateLimitType -> the limit names the code gives it ("5-hour limit", "session limit")."""
    names: dict[str, set[str]] = {}
    for match in _CLAUDE_LIMIT_NAME.finditer(digest):
        key, name = match.groups()
        if key == "overage" and not name.endswith("limit"):
            continue  # "extra usage" is the Approaching-banner wording, never "hit your"
        names.setdefault(key, set()).add(name)
    return {key: sorted(found) for key, found in sorted(names.items())}


# A call of the hit-your builder with a literal first argument, possibly the far side of a
# ternary: q("usage limit",g,n), q(S?lyo:"org's monthly spend limit",`...`,n).
_CLAUDE_BUILDER_NAME = re.compile(
    r"[\w$]{1,4}\((?:[\w$]{1,3}\?[\w$]{1,4}:)?\"([A-Za-z' ]{0,40}limit)\",[\w$`]"
)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def claude_templates(digest: str) -> Iterable[Template]:
    hit = "return`You've hit your ${"
    resets = ("\\xB7 resets ${", "· resets ${")
    if hit in digest and any(piece in digest for piece in resets):
        for key, names in claude_limit_names(digest).items():
            scope, window = _CLAUDE_LIMITS[key]
            for name in names:
                yield Template(
                    id=f"hit-{_slug(name)}",
                    kind="provider_quota",
                    scope=scope,
                    template=f"You've hit your {name} · resets {{reset}}",
                    formatter="claude_reset",
                    window_s=window,
                    source=f"rateLimitType {key}: limit-name table + the hit-your builder",
                )
                yield Template(
                    id=f"hit-{_slug(name)}-no-reset",
                    kind="provider_quota",
                    scope=scope,
                    template=f"You've hit your {name}",
                    refusal="not_stated",
                    source=f"rateLimitType {key} without anthropic-ratelimit-unified-reset",
                )
    # The builder is also called with a literal name: the overage claim ("usage limit"), a
    # rejected overage ("limit"), an overage switched off by a cap ("individual usage limit").
    for name in sorted(
        set(_CLAUDE_BUILDER_NAME.findall(digest))
        | set(re.findall(r"\"(individual usage limit)\"", digest))
    ):
        if "spend" in name:
            continue
        yield Template(
            id=f"hit-{_slug(name)}",
            kind="provider_quota",
            scope="monthly",
            template=f"You've hit your {name} · resets {{reset}}",
            formatter="claude_reset",
            window_s=_WEEK,
            source="the hit-your builder called with a literal limit name",
        )
    if _has(digest, "You're out of usage credits${"):
        yield Template(
            id="out-of-usage-credits",
            kind="provider_quota",
            scope="credits",
            template="You're out of usage credits · resets {reset}",
            formatter="claude_reset",
            window_s=_WEEK,
            source="overageStatus rejected, overageDisabledReason out_of_credits",
        )
    if _has(digest, "You're out of extra usage${"):
        yield Template(
            id="out-of-extra-usage",
            kind="provider_quota",
            scope="credits",
            template="You're out of extra usage · resets {reset}",
            formatter="claude_reset",
            window_s=_WEEK,
            source="overage rejected (extra-usage wording)",
        )
    spend_names = sorted(
        set(re.findall(r"\"((?:individual |monthly |org's monthly )spend limit)\"", digest))
    )
    if hit in digest:
        for spend in spend_names:
            yield Template(
                id=f"hit-{_slug(spend)}",
                kind="provider_quota",
                scope="spend_cap",
                template=f"You've hit your {spend} · ask your admin to raise it at {{url}}",
                refusal="no_reset",
                source="overage disabled by a spend cap, no other limit hit",
            )
    if re.search(r"your \$\{\w+\.limitName\} resets \$\{\w+\.resetTime\}", digest):
        for spend in spend_names:
            yield Template(
                id=f"hit-{_slug(spend)}-then-weekly",
                kind="provider_quota",
                scope="weekly",
                template=(
                    f"You've hit your {spend} · ask your admin to raise it at {{url}}"
                    " · your weekly limit resets {reset}"
                ),
                formatter="claude_reset",
                window_s=_WEEK,
                source="overage disabled by a spend cap; the plan's own limit resets later",
            )
    # The auto-continue copy: a table of phrases with a {when} slot ("at <time>"), or, in
    # older builds, template literals with the time interpolated.
    continue_copy = {
        js_text(text)
        for text in re.findall(
            r"(?:waiting|started|rearmed):\"([^\"]*ontinu[^\"]*automatically \{when\}[^\"]*)\"",
            digest,
        )
    }
    continue_copy |= {
        _JS_INTERPOLATION.sub("{when}", js_text(text)).replace("at {when}", "{when}")
        for text in re.findall(r"`(Continuing automatically at \$\{\w+\}[^`]{0,40})`", digest)
    }
    for text in sorted(continue_copy):
        yield Template(
            id=f"auto-continue-{_slug(text.split('{when}')[0])}",
            kind="provider_quota",
            template=text.replace("{when}", "at {time}"),
            formatter="claude_continue",
            native_auto_continue=True,
            window_s=_WEEK,
            source="the interactive auto-continue footer",
        )
    if re.search(r"`\$\{\w+\} \\xB7 limit resets \$\{\w+\}`", digest) and _has(
        digest, '"Usage limit reached"'
    ):
        yield Template(
            id="usage-limit-reached-limit-resets",
            kind="provider_quota",
            template="Usage limit reached · limit resets {time}",
            formatter="claude_continue",
            window_s=_WEEK,
            source="the auto-continue status line, above its footer",
        )
    for text in sorted(
        {
            js_text(t)
            for t in re.findall(r"\"((?:[A-Z][^\"\\]{2,60}\\xB7 )?Please run /login)\"", digest)
        }
    ):
        yield Template(
            id=f"login-{_slug(text.split('·')[0])}",
            kind="login_required",
            template=text,
            login_command="/login",
            source="authentication failures",
        )
    throttle = "Server is temporarily limiting requests (not your usage limit)"
    if _has(digest, f'"{throttle}"'):
        yield Template(
            id="temporarily-limiting-requests",
            kind="transient",
            template=f"API Error: {throttle} · This request would exceed your account's rate "
            "limit. Please try again later.",
            source="a 429 without the unified rate-limit claim, after the retries",
        )
    for model in sorted(set(re.findall(r"\"(\w+) is experiencing high load, please use", digest))):
        yield Template(
            id=f"{_slug(model)}-high-load",
            kind="transient",
            template=f"{model} is experiencing high load, please use /model to switch to Sonnet",
            source="overloaded model, a fallback offered",
        )
    if _has(digest, '"Repeated 529 Overloaded errors"'):
        yield Template(
            id="repeated-529-overloaded",
            kind="transient",
            template="API Error: Repeated 529 Overloaded errors",
            source="overloaded retries",
        )
    # Caps that waiting does not lift, printed as whole sentences.
    for text, scope in (
        ("You've hit your monthly spend limit.", "spend_cap"),
        ("You've hit your channel's monthly spend limit.", "spend_cap"),
        ("Your group's usage limit is set to $0", "spend_cap"),
    ):
        if _has(digest, f'"{text}"'):
            yield Template(
                id=f"cap-{_slug(text)}",
                kind="provider_quota",
                scope=scope,
                template=text,
                refusal="no_reset",
                source="usage credits capped or switched off",
            )


def claude_formatters(digest: str) -> Iterable[Formatter]:
    """The reset formatter (time, date past a threshold, zone in parentheses)."""
    match = re.search(
        r"/3600000(?:>(\d+)|;if\(\w+\|\|\w+>(\d+)\)|,\w+=\(\w+\.getTime\(\)-\w+\.getTime\(\)\)"
        r"/3600000;if\(\w+\|\|\w+>(\d+)\))",
        digest,
    ) or re.search(r"\)/3600000[;,].{0,80}?\w>(\d+)\)\{let \w+=\{month:\"short\"", digest)
    threshold = next((int(g) for g in (match.groups() if match else ()) if g), None)
    minute_dropped = bool(
        re.search(
            r"toLocaleTimeString\(\"en-US\",\{hour:\"numeric\",minute:\w+===0\?void 0:\"2-digit\","
            r"hour12:!0",
            digest,
        )
    )
    common: dict[str, object] = {
        "locale": "en-US",
        "time": "h:mma, the minute left out at :00, am/pm lower-case and glued",
        "minute_dropped_at_zero": minute_dropped,
        "ampm": "lower" if re.search(r"\.replace\(/\[? ", digest) else None,
        "date_when_hours_ahead_over": threshold,
        "date": "MMM d, h:mma",
        "year_when_not_this_year": '.year="numeric"' in digest,
        "floor": "minute",
    }
    yield Formatter("claude_reset", {**common, "zone": "(TZ)"})
    yield Formatter("claude_continue", {**common, "zone": None})


# ---- Codex ---------------------------------------------------------------------------------

_CODEX_PREFIX = re.compile(r"You[’']ve hit your usage limit\.(?: [^\n\\]{10,200})?")


def codex_templates(digest: str) -> Iterable[Template]:
    after_or = " or try again at " in digest
    plain = " Try again at " in digest
    # The suffixes for a 429 without resets_at, after an upsell and after the bare sentence.
    after_or_later = " or try again later." in digest
    plain_later = " Try again later." in digest
    prefixes = sorted({m.group(0).rstrip() for m in _CODEX_PREFIX.finditer(digest)})
    for prefix in prefixes:
        apostrophe = "curly" if "’" in prefix else "straight"
        body = prefix.split(".", 1)[1].strip()
        name = _slug(body.split("(")[0].split(",")[0])[:40] or "bare"
        if body:
            if after_or:
                yield Template(
                    id=f"usage-limit-{name}-{apostrophe}",
                    kind="provider_quota",
                    template=f"{prefix} or try again at {{time}}.",
                    formatter="codex_retry",
                    window_s=_WEEK,
                    source="UsageLimitReachedError with the plan's upsell",
                )
            if after_or_later:
                yield Template(
                    id=f"usage-limit-{name}-{apostrophe}-later",
                    kind="provider_quota",
                    template=f"{prefix} or try again later.",
                    refusal="not_stated",
                    source="UsageLimitReachedError without resets_at",
                )
        else:
            if plain:
                yield Template(
                    id=f"usage-limit-{apostrophe}",
                    kind="provider_quota",
                    template=f"{prefix} Try again at {{time}}.",
                    formatter="codex_retry",
                    window_s=_WEEK,
                    source="UsageLimitReachedError, plan without an upsell",
                )
            if plain_later:
                yield Template(
                    id=f"usage-limit-{apostrophe}-later",
                    kind="provider_quota",
                    template=f"{prefix} Try again later.",
                    refusal="not_stated",
                    source="UsageLimitReachedError without resets_at",
                )
    fixed = {
        "workspace-owner-credits": (
            "Your workspace is out of credits. Add credits to continue.",
            "credits",
        ),
        "workspace-member-credits": (
            "Your workspace is out of credits. Ask your workspace owner "
            "to refill in order to continue.",
            "credits",
        ),
        "workspace-owner-spend-cap": (
            "You hit your spend cap set in your workspace. Increase your spend cap to continue.",
            "spend_cap",
        ),
        "workspace-member-spend-cap": (
            "You hit your spend cap set by the owner of your "
            "workspace. Ask an owner to increase your spend cap to "
            "continue.",
            "spend_cap",
        ),
    }
    for ident, (text, scope) in fixed.items():
        if text in digest:
            yield Template(
                id=ident,
                kind="provider_quota",
                scope=scope,
                template=text,
                refusal="no_reset",
                source="RateLimitReachedType from the 429",
            )
    for apostrophe, mark in (("curly", "’"), ("straight", "'")):
        if _has(digest, f"You{mark}ve hit your usage limit for ", ". Switch to another model now,"):
            yield Template(
                id=f"usage-limit-for-model-{apostrophe}",
                kind="provider_quota",
                template=f"You{mark}ve hit your usage limit for {{limit_name}}. Switch to another "
                "model now, or try again at {time}.",
                formatter="codex_retry",
                window_s=_WEEK,
                source="UsageLimitReachedError for a per-model limit (rate_limits.limit_name)",
            )
    for ident, text, kind, refusal in (
        (
            "quota-exceeded",
            "Quota exceeded. Check your plan and billing details.",
            "provider_quota",
            "no_reset",
        ),
        (
            "usage-not-included",
            "To use Codex with your ChatGPT plan, upgrade to Plus: "
            "https://chatgpt.com/explore/plus.",
            "provider_quota",
            "no_reset",
        ),
        (
            "model-at-capacity",
            "Selected model is at capacity. Please try a different model.",
            "transient",
            None,
        ),
        (
            "high-demand",
            "We’re currently experiencing high demand, which may cause temporary errors.",
            "transient",
            None,
        ),
    ):
        if text in digest:
            yield Template(
                id=ident, kind=kind, template=text, refusal=refusal, source="CodexErr display"
            )


def codex_formatters(digest: str) -> Iterable[Formatter]:
    yield Formatter(
        "codex_retry",
        {
            "zone": None,
            "same_local_date": "%-I:%M %p" if "%-I:%M %p" in digest else None,
            "other_date": "%b %-d{ordinal}, %Y %-I:%M %p" if ", %Y %-I:%M %p" in digest else None,
            "ordinals": "st nd rd th (11-13: th)" if "stndrdth" in digest else None,
            "floor": "minute",
        },
    )


# ---- Gemini --------------------------------------------------------------------------------


def gemini_templates(digest: str) -> Iterable[Template]:
    stats = next(
        (s for s in ("/stats model for usage details", "/stats for usage details") if s in digest),
        None,
    )
    if "Usage limit reached for ${" in digest and "Access resets at ${" in digest and stats:
        switch = "\n/model to switch models." if "/model to switch models." in digest else ""
        yield Template(
            id="usage-limit-reached-access-resets",
            kind="provider_quota",
            template=f"Usage limit reached for {{model}}.\nAccess resets at {{time}}.\n{stats}"
            f"{switch}",
            formatter="gemini_reset",
            window_s=_DAY,
            source="TerminalQuotaError with retryDelay (useQuotaAndFallback)",
        )
        yield Template(
            id="usage-limit-reached",
            kind="provider_quota",
            template=f"Usage limit reached for {{model}}.\n{stats}{switch}",
            refusal="not_stated",
            source="TerminalQuotaError without retryDelay",
        )
    if "You have exhausted your daily quota on this model." in digest:
        yield Template(
            id="daily-quota-exhausted",
            kind="provider_quota",
            scope="daily",
            template="[API Error: You have exhausted your daily quota on this model.]",
            refusal="not_stated",
            source="QuotaFailure quotaId PerDay",
        )
    if "Suggested retry after ${" in digest:
        yield Template(
            id="suggested-retry-after",
            kind="provider_quota",
            template="[API Error: Resource has been exhausted (e.g. check quota).\n"
            "Suggested retry after {delay}.]",
            formatter="gemini_delay",
            window_s=_DAY,
            source="RetryInfo retryDelay over 300 s",
        )
    if "We are currently experiencing high demand for ${" in digest:
        yield Template(
            id="high-demand-for-model-access-resets",
            kind="provider_quota",
            scope="model",
            template="We are currently experiencing high demand for {model}.\n"
            "We apologize and appreciate your patience.\nAccess resets at {time}.\n"
            "/model to switch models.",
            formatter="gemini_reset",
            window_s=_DAY,
            source="TerminalQuotaError for capacity, with retryDelay",
        )
    if "We are currently experiencing high demand" in digest:
        yield Template(
            id="high-demand",
            kind="transient",
            template="We are currently experiencing high demand.\n"
            "We apologize and appreciate your patience.\n/model to switch models.",
            source="capacity errors without a model",
        )
    if "API key not valid" in digest:
        yield Template(
            id="api-key-not-valid",
            kind="login_required",
            template="[API Error: API key not valid. Please pass a valid API key.]",
            source="400 INVALID_ARGUMENT API_KEY_INVALID, passed through",
        )


def gemini_formatters(digest: str) -> Iterable[Formatter]:
    compact = re.sub(r"(?:\\n|\s)+", "", digest)
    options = re.search(
        r"functiongetResetTimeMessage\(\w+\)\{.{0,120}?Intl\.DateTimeFormat\(\"en-US\",\{([^}]*)\}",
        compact,
    )
    yield Formatter(
        "gemini_reset",
        {
            "locale": "en-US",
            "options": options.group(1) if options else None,
            "time": "h:mm AM",
            "zone": "en-US short name, else GMT±h[:mm]",
            "from": "Date.now() + retryDelayMs",
            "floor": "minute",
        },
    )
    yield Formatter("gemini_delay", {"unit": "s", "decimals": "as the API sent them"})


RECOGNISERS: dict[str, tuple[Recogniser, Callable[[str], Iterable[Formatter]]]] = {
    "claude": (claude_templates, claude_formatters),
    "codex": (codex_templates, codex_formatters),
    "gemini": (gemini_templates, gemini_formatters),
}
PACKAGE_NAMES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def collect(cli: str, digests: dict[str, str]) -> dict[str, object]:
    """The JSON document for one CLI: every template with the versions that ship it."""
    find_templates, find_formatters = RECOGNISERS[cli]
    templates: dict[tuple[str, str], Template] = {}
    formatters: dict[tuple[str, str], Formatter] = {}
    for version in sorted(digests, key=_version_key):
        for found in find_templates(digests[version]):
            templates.setdefault(found.key(), found).versions.append(version)
        for fmt in find_formatters(digests[version]):
            key = (fmt.name, json.dumps(fmt.fields, sort_keys=True))
            formatters.setdefault(key, fmt).versions.append(version)
    return {
        "cli": cli,
        "package": PACKAGE_NAMES[cli],
        "versions_read": sorted(digests, key=_version_key),
        "generated_by": "tools/extract_templates.py",
        "formatters": [
            {"name": f.name, **f.fields, "versions": sorted(set(f.versions), key=_version_key)}
            for _, f in sorted(formatters.items())
        ],
        "templates": [
            {
                "id": t.id,
                "kind": t.kind,
                "scope": t.scope,
                "template": t.template,
                "formatter": t.formatter,
                "refusal": t.refusal,
                "native_auto_continue": t.native_auto_continue,
                "login_command": t.login_command,
                "window_s": t.window_s,
                "source": t.source,
                "versions": sorted(set(t.versions), key=_version_key),
            }
            for _, t in sorted(templates.items())
        ],
    }


def unclaimed(cli: str, digest: str, document: dict[str, object]) -> list[str]:
    """Anchor sentences in the code that no template's fixed text covers: read them."""
    texts = [str(t["template"]) for t in document["templates"]]  # type: ignore[attr-defined]
    stems = {re.split(r"\{|\n", text.removeprefix("[API Error: "))[0][:24] for text in texts}
    sentence = re.compile(
        r"[\"`]([A-Z][^\"`\\]{0,40}(?:hit your|usage limit|out of credits|spend cap|"
        r"exhausted your|try again at|Access resets|continue automatically)[^\"`]{0,80})[\"`]"
    )
    found = {m.group(1) for m in sentence.finditer(digest)}
    return sorted(s for s in found if not any(s.startswith(stem) for stem in stems if stem))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("REWAKE_TEMPLATES_CACHE", DEFAULT_CACHE)),
        help="where tarballs and digests are kept (outside the tree)",
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--offline", action="store_true", help="never fetch: digests only")
    parser.add_argument("--keep-packs", action="store_true", help="keep the npm tarballs")
    parser.add_argument("--cli", choices=sorted(VERSIONS), action="append")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for cli in args.cli or sorted(VERSIONS):
        digests = {
            v: digest(cli, v, args.cache, offline=args.offline, keep_packs=args.keep_packs)
            for v in VERSIONS[cli]
        }
        document = collect(cli, digests)
        (args.out / f"{cli}.json").write_text(
            json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        count = len(document["templates"])  # type: ignore[arg-type]
        print(f"{cli}: {count} templates from {', '.join(VERSIONS[cli])}")
        latest = VERSIONS[cli][-1]
        for line in unclaimed(cli, digests[latest], document):
            print(f"  unclaimed in {latest}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
