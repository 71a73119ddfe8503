"""The host's zone, one answer for `rewake run` and `rewake hook`: TZ decides when set, else the
zone /etc/localtime links to, else (a copied file) /etc/timezone; never a guess."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewake.runner.clis.hostzone import host_zone
from rewake.runner.commands import hook, run


def etc(root: Path, *, timezone: str | None = None, link: str | None = None) -> Path:
    """A root dir with etc/timezone holding `timezone` and etc/localtime linking to `link`
    (a path under root) or, with link None, a copied zone file."""
    (root / "etc").mkdir(parents=True, exist_ok=True)
    if timezone is not None:
        (root / "etc" / "timezone").write_text(timezone + "\n")
    localtime = root / "etc" / "localtime"
    if link is not None:
        target = root / link
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"TZif")
        localtime.symlink_to(target)
    else:
        localtime.write_bytes(b"TZif")
    return root


def test_a_posix_named_tz_wins_over_etc_timezone(tmp_path: Path) -> None:
    """TZ=EST5EDT is a zone (not skipped for lacking a `/`): 9:51 PM there is 02:51Z, not the
    Asia/Tokyo /etc/timezone says."""
    root = etc(tmp_path, timezone="Asia/Tokyo")
    assert host_zone({"TZ": "EST5EDT"}, root) == "EST5EDT"
    assert host_zone({"TZ": "CET"}, root) == "CET"


def test_a_tz_that_is_no_zone_is_unknown_not_the_system_zone(tmp_path: Path) -> None:
    """TZ=garbage: the CLI follows TZ, not /etc, so the answer is None (unknown)."""
    root = etc(tmp_path, timezone="Asia/Tokyo", link="usr/share/zoneinfo/Asia/Tokyo")
    assert host_zone({"TZ": "garbage"}, root) is None


@pytest.mark.parametrize(
    ("tz", "zone"),
    [
        (":Europe/Berlin", "Europe/Berlin"),
        ("Europe/Berlin", "Europe/Berlin"),
        ("/usr/share/zoneinfo/Asia/Tokyo", "Asia/Tokyo"),
        ("CET-1CEST", None),
        ("Etc/Unknown", None),
        ("Factory", None),
        ("", None),
    ],
)
def test_tz_values(tmp_path: Path, tz: str, zone: str | None) -> None:
    """A leading `:` is dropped, a zoneinfo path gives its name; a bare POSIX rule, a
    placeholder zone or an empty TZ is unknown."""
    assert host_zone({"TZ": tz}, etc(tmp_path, timezone="Asia/Tokyo")) == zone


def test_without_tz_the_localtime_link_decides_over_etc_timezone(tmp_path: Path) -> None:
    """TZ unset: /etc/localtime -> .../zoneinfo/America/Recife gives America/Recife, even with
    a stale /etc/timezone beside it (glibc and Node read the link)."""
    root = etc(tmp_path, timezone="Asia/Tokyo", link="usr/share/zoneinfo/America/Recife")
    assert host_zone({}, root) == "America/Recife"


def test_a_relative_or_chained_link_is_followed_to_the_zoneinfo_dir(tmp_path: Path) -> None:
    """`../usr/share/zoneinfo/...` and a link through /etc/alternatives both name the zone."""
    (tmp_path / "usr/share/zoneinfo/Europe").mkdir(parents=True)
    (tmp_path / "usr/share/zoneinfo/Europe/Lisbon").write_bytes(b"TZif")
    (tmp_path / "etc/alternatives").mkdir(parents=True)
    (tmp_path / "etc/alternatives/localtime").symlink_to("../../usr/share/zoneinfo/Europe/Lisbon")
    (tmp_path / "etc/localtime").symlink_to("alternatives/localtime")
    assert host_zone({}, tmp_path) == "Europe/Lisbon"


def test_a_copied_localtime_falls_back_to_etc_timezone(tmp_path: Path) -> None:
    """A copy has no name: /etc/timezone names it when it is a zone, else the zone is unknown."""
    assert host_zone({}, etc(tmp_path / "a", timezone="Asia/Tokyo")) == "Asia/Tokyo"
    assert host_zone({}, etc(tmp_path / "b", timezone="Mars/Olympus")) is None
    assert host_zone({}, etc(tmp_path / "c")) is None


def test_no_localtime_at_all_is_unknown(tmp_path: Path) -> None:
    """Nothing configured: None, not /etc/timezone's word for a file that is not there."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "timezone").write_text("Asia/Tokyo\n")
    assert host_zone({}, tmp_path) is None


def test_run_and_hook_ask_the_one_helper() -> None:
    """`rewake run` and `rewake hook` ask the same function for the host's zone."""
    assert run.host_zone is host_zone
    assert hook.host_zone is host_zone
