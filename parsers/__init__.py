"""Pure parsing of AI coding CLI output into a Verdict.

    >>> from datetime import datetime, timezone
    >>> verdict = parse(
    ...     "You've hit your session limit · resets 5:40pm (Europe/Berlin)",
    ...     observed_at=datetime(2026, 7, 19, 13, 5, tzinfo=timezone.utc),
    ... )
    >>> verdict.kind, verdict.reset_at.isoformat(), verdict.form
    ('provider_quota', '2026-07-19T15:40:00+00:00', 'named_zone')

`parse` never reads the clock, the network or the disk, and never raises on odd text: any
string gives a Verdict. It raises ValueError only for a naive `observed_at`, one outside
the years 1971-9000, or an unknown `provider`.
"""

from rewake.parsers.pipeline import parse
from rewake.parsers.verdict import PROVIDERS, REFUSAL_CODES, Evidence, Refusal, Verdict

__all__ = ["PROVIDERS", "REFUSAL_CODES", "Evidence", "Refusal", "Verdict", "parse"]
