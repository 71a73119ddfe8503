"""tools/extract_templates.py on fragments of the shipped code, copied verbatim from releases."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "extract_templates.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("extract_templates", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


extract = load_script()

# Claude Code 2.1.332 (an object literal), 2.1.100 (a switch), 2.1.197 (comparisons).
CLAUDE_2_1_332 = (
    'var WFe={five_hour:"5-hour limit",seven_day:"weekly limit",seven_day_opus:"Opus limit",'
    'seven_day_sonnet:"Sonnet limit",seven_day_overage_included:"Fable limit",'
    'overage:"usage credit limit"};'
)
CLAUDE_2_1_100 = (
    'switch(q.rateLimitType){case"seven_day":K="weekly limit";break;case"five_hour":'
    'K="session limit";break;case"seven_day_opus":K="Opus limit";break;case"overage":'
    'K="extra usage";break;case void 0:return null}'
)
CLAUDE_2_1_197 = (
    'if(e.rateLimitType==="five_hour")r="session limit";else if(e.rateLimitType==="seven_day")'
    'r="weekly limit";'
)
CLAUDE_FORMATTER_2_1_197 = (
    "function Vee(e,t=!1,n=!0,r=!1){if(!e)return;let o=new Date(e*1000),s=new Date,"
    'i=o.getMinutes(),a=(o.getTime()-s.getTime())/3600000;if(r||a>24){let c={month:"short",'
    'day:"numeric",hour:n?"numeric":void 0,minute:!n||i===0?void 0:"2-digit",hour12:n?!0:void 0};'
    'if(o.getFullYear()!==s.getFullYear())c.year="numeric";return o.toLocaleString("en-US",c)'
    '.replace(/ ([AP]M)/i,(d,p)=>p.toLowerCase())+(t?` (${ekt()})`:"")}return '
    'o.toLocaleTimeString("en-US",{hour:"numeric",minute:i===0?void 0:"2-digit",hour12:!0})'
)


def test_claude_limit_names_in_every_code_shape() -> None:
    """Limit names are read from object literals, switches and comparisons alike."""
    names = extract.claude_limit_names(CLAUDE_2_1_332 + CLAUDE_2_1_100 + CLAUDE_2_1_197)
    assert names["five_hour"] == ["5-hour limit", "session limit"]
    assert names["seven_day"] == ["weekly limit"]
    assert names["seven_day_overage_included"] == ["Fable limit"]
    # "extra usage" names the Approaching banner's overage, never a "hit your" line.
    assert names["overage"] == ["usage credit limit"]


def test_claude_formatter_reads_the_date_threshold_and_year_rule() -> None:
    """The 24 h date threshold, the :00 rule and the year rule come from the formatter's code."""
    [with_zone, without_zone] = sorted(
        extract.claude_formatters(CLAUDE_FORMATTER_2_1_197),
        key=lambda f: f.name == "claude_continue",
    )
    assert with_zone.fields["date_when_hours_ahead_over"] == 24
    assert with_zone.fields["minute_dropped_at_zero"] is True
    assert with_zone.fields["year_when_not_this_year"] is True
    assert (with_zone.fields["zone"], without_zone.fields["zone"]) == ("(TZ)", None)


def test_fragments_split_binary_strings_and_keep_unicode() -> None:
    """A Rust binary's strings come apart at NULs, with the curly apostrophe intact."""
    data = (
        b"\x00\x08You\xe2\x80\x99ve hit your usage limit. Try again later."
        b"\x00 or try again at \x00%-I:%M %p\x00"
    )
    pieces = extract.fragments(data)
    assert "You’ve hit your usage limit. Try again later." in pieces
    assert " or try again at " in pieces


def test_codex_plan_prefix_gives_a_timed_and_an_untimed_template() -> None:
    """Each plan's wording is read as 'or try again at {time}' and 'or try again later'."""
    digest = "\n".join(
        [
            "You’ve hit your usage limit. To get more access now, send a request to your admin",
            " or try again at ",
            " or try again later.",
            "Your workspace is out of credits. Add credits to continue.",
        ]
    )
    found = {t.id: t for t in extract.codex_templates(digest)}
    timed = found["usage-limit-to-get-more-access-now-curly"]
    assert timed.template.endswith("send a request to your admin or try again at {time}.")
    assert found["usage-limit-to-get-more-access-now-curly-later"].refusal == "not_stated"
    assert found["workspace-owner-credits"].refusal == "no_reset"


def test_tarball_names_follow_npm_pack() -> None:
    """The cached tarball is found under the name npm pack gives it, aliases included."""
    assert (
        extract._tarball_name("@openai/codex@0.171.0-linux-x64")
        == "openai-codex-0.171.0-linux-x64.tgz"
    )
    assert (
        extract._tarball_name("@anthropic-ai/claude-code-linux-x64@2.1.332")
        == "anthropic-ai-claude-code-linux-x64-2.1.332.tgz"
    )
