"""The sweeper's knobs, taken from the service's settings (REWAKE_* variables)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rewake.marks.pacing import PacingRules
from rewake.sweeper.timer import STEP_S

#: Seconds a send may take before it counts as lost, beyond the executor's own timeout.
LEASE_MARGIN_S = 5.0


@dataclass(frozen=True, slots=True)
class SweeperConfig:
    """How often to sweep, how long leases last, how many sends at once, and pacing."""

    interval_s: float = 30.0
    lease_s: float = 120.0
    workers: int = 16
    pacing: PacingRules = field(default_factory=PacingRules)
    #: A mark still armed this long after its due_at is expired instead of sent.
    expire_after_s: float = 6 * 3600.0
    #: A mark whose session's host was last seen longer ago than this is expired instead of
    #: sent (REWAKE_MARK_HOST_UNSEEN_S); None: off.
    host_unseen_s: float | None = None
    #: A resumed attempt reporting a new limit within this long holds its account's marks.
    hold_window_s: float = 600.0
    heartbeat_s: float = 20.0
    #: Random delay added to each interval sweep, so replicas started together spread out.
    jitter_s: float = 2.0
    step_s: float = STEP_S
    #: How often a claim waiting for a send of its account to finish is looked at again (a
    #: send by another sweeper process finishes without telling this one).
    pacing_poll_s: float = 0.5
    #: Claims a process may hold per worker at most (those waiting for pacing or for a free
    #: worker stay claimed, their leases renewed); fewer when a lease holds fewer sends.
    claims_per_worker: int = 4
    #: The longest one send may take (the executor's deadline), which bounds how many sends a
    #: worker makes within one lease; None: sends are quick (the log executor).
    send_timeout_s: float | None = None
    #: Uncertain marks asked about through the host's lookup route per round of lookups (a
    #: round runs beside each sweep; rewake.sweeper.reconcile).
    reconcile_batch: int = 20
    #: Tombstones of sessions deleted this many days ago are purged
    #: (REWAKE_TOMBSTONE_RETENTION_DAYS).
    tombstone_retention_days: int = 365
    #: How long a deferred mark (its resume program sent nothing: an open CLI holds the
    #: conversation) waits before it is looked at again (REWAKE_DEFER_RECHECK_S).
    defer_recheck_s: float = 60.0

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.lease_s <= 0 or self.workers < 1:
            raise ValueError("interval_s and lease_s must be positive, workers at least 1")
        if self.host_unseen_s is not None and self.host_unseen_s <= 0:
            raise ValueError("host_unseen_s must be positive (or None: off)")
        if self.defer_recheck_s <= 0:
            raise ValueError("defer_recheck_s must be positive")
        if self.send_timeout_s is not None and self.send_timeout_s <= 0:
            raise ValueError("send_timeout_s must be positive (or None: quick sends)")

    @property
    def claim_limit(self) -> int:
        """How many claims one process may hold at once: no more than its workers can send
        within one lease, each send taking up to `send_timeout_s` (at least one a worker), and
        at most `claims_per_worker` a worker."""
        per_worker = self.claims_per_worker
        if self.send_timeout_s is not None:
            per_worker = min(per_worker, int(self.lease_s // self.send_timeout_s))
        return self.workers * max(1, per_worker)

    @classmethod
    def from_settings(cls, settings: Any) -> SweeperConfig:
        """The sweeper's view of `rewake.settings.Settings`."""
        lease_s = max(
            float(settings.sweep_lease_s), float(settings.webhook_timeout_s) + LEASE_MARGIN_S
        )
        return cls(
            interval_s=float(settings.sweep_interval_s),
            lease_s=lease_s,
            workers=int(settings.sweep_workers),
            pacing=PacingRules(
                max_in_flight=int(settings.account_max_in_flight),
                stagger_s=float(settings.account_stagger_s),
            ),
            expire_after_s=float(settings.mark_expire_after_s),
            host_unseen_s=(
                None if settings.mark_host_unseen_s is None else float(settings.mark_host_unseen_s)
            ),
            hold_window_s=float(settings.hold_window_s),
            heartbeat_s=min(20.0, float(settings.sweep_interval_s)),
            jitter_s=min(2.0, float(settings.sweep_interval_s) / 10),
            tombstone_retention_days=int(settings.tombstone_retention_days),
            send_timeout_s=_send_timeout_s(settings),
            defer_recheck_s=float(settings.defer_recheck_s),
        )


def _send_timeout_s(settings: Any) -> float | None:
    """How long one send of the configured executor may take: the webhook's deadline for the
    whole exchange, the time a command is watched before it counts as started."""
    if settings.executor == "webhook":
        return float(settings.webhook_timeout_s)
    if settings.executor == "command":
        # A program that says it looks is waited for up to LOOK_WAIT_S (rewake run --resume-of).
        from rewake.executors.command import LOOK_WAIT_S

        return max(float(settings.command_grace_s), LOOK_WAIT_S)
    return None
