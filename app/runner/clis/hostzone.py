"""The zone the CLIs on this machine print local times in, the way they themselves decide it.

A bare "try again at 9:51 PM" means nothing without it, and a wrong zone resumes hours early or
late, so the answer is the zone the CLI used or None ("unknown": the parser then refuses to
resolve a bare time), never a guess. glibc and Node (Claude Code, Codex's and Gemini's shells)
decide it the same way:

1. `TZ`, when set, decides alone: `Europe/Berlin`, `:Europe/Berlin` (the leading colon means
   "a file name"), `EST5EDT` and `CET` (named zones the tz database ships). A `TZ` zoneinfo does
   not know (`garbage`, a bare POSIX rule such as `CET-1CEST`) gives None: the CLI is following
   it, not the system zone, so the system zone would be wrong.
2. Else `/etc/localtime`, through the zoneinfo file it links to (`.../zoneinfo/America/Recife`).
3. A copied `/etc/localtime` has no name; Debian keeps `/etc/timezone` beside it saying which zone
   was copied, so that file answers then, and only then (it goes stale when someone re-links
   `/etc/localtime` by hand, which is why it never outranks the link).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from zoneinfo import ZoneInfo

#: Names the tz database ships that mean "no zone is configured", not a place.
_NOT_A_PLACE = frozenset({"Etc/Unknown", "Factory", "localtime", "posixrules"})
#: How many symlinks are followed from /etc/localtime (alternatives systems chain two or three).
_MAX_LINKS = 8


def host_zone(env: Mapping[str, str] | None = None, root: Path = Path("/")) -> str | None:
    """The IANA name of the zone local times are printed in here, or None when unknown.

    `root` is where `etc/localtime` and `etc/timezone` are looked up (tests pass a tmp dir)."""
    env = os.environ if env is None else env
    if "TZ" in env:
        return zone_from_tz(env["TZ"])
    localtime = root / "etc" / "localtime"
    if localtime.is_symlink():
        return _zone_from_link(localtime)
    if not localtime.is_file():
        return None  # glibc would use UTC, but nothing here says that was meant
    try:
        named = (root / "etc" / "timezone").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return valid_zone(named)


def zone_from_tz(value: str) -> str | None:
    """The zone a `TZ` value names: `:Europe/Berlin` -> `Europe/Berlin`; a path into a zoneinfo
    directory -> the name under it; anything zoneinfo does not know -> None."""
    value = value.removeprefix(":")
    if value.startswith("/"):
        return _name_under_zoneinfo(value)
    return valid_zone(value)


def valid_zone(name: str) -> str | None:
    """`name` when zoneinfo knows it as a zone of a place, else None."""
    if not name or name.startswith("/") or name in _NOT_A_PLACE:
        return None
    try:
        ZoneInfo(name)
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        return None
    return name


def _zone_from_link(link: Path) -> str | None:
    """The zone name of the first link target on the chain that lies in a zoneinfo dir."""
    current = link
    for _ in range(_MAX_LINKS):
        try:
            target = current.readlink()
        except OSError:
            return None
        # Relative targets (`../usr/share/zoneinfo/...`) are relative to the link's directory;
        # normpath, not resolve(): resolving would follow the zone's own links (US/Eastern ->
        # America/New_York), and the tests' root is not the real one.
        absolute = os.path.normpath(current.parent / target)
        if (name := _name_under_zoneinfo(absolute)) is not None:
            return name
        current = Path(absolute)
        if not current.is_symlink():
            return None
    return None


def _name_under_zoneinfo(path: str) -> str | None:
    marker = "/zoneinfo/"
    if marker not in path:
        return None
    name = path.rsplit(marker, 1)[1].removeprefix("posix/")
    return valid_zone(name)
