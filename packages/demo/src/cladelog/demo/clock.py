"""A deterministic ``recorded_at`` source for the demo's deployment.

Core stamps every appended batch with ``clock()``; the demo passes a
:class:`DemoClock` so that the same seed writes the same hashes on every
machine. The clock starts at a fixed instant, moves one second per batch and
can be moved forward explicitly (:meth:`DemoClock.advance`) to spread the
story over days, as a real engine's history would be.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = ["DEMO_EPOCH", "DemoClock"]

#: The instant the demo's history starts at (UTC).
DEMO_EPOCH = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


class DemoClock:
    """Callable clock: each call returns the current instant, then moves one second on."""

    def __init__(self, start: datetime = DEMO_EPOCH) -> None:
        if start.tzinfo is None:
            raise ValueError("start: must be timezone-aware")
        self._now = start.astimezone(UTC)

    def __call__(self) -> str:
        stamp = self.peek()
        self._now += timedelta(seconds=1)
        return stamp

    def peek(self) -> str:
        """The ``recorded_at`` string the next batch gets (ISO 8601, microseconds, ``Z``)."""
        return self._now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def advance(self, *, hours: float = 0.0, minutes: float = 0.0) -> None:
        """Move the clock forward (never backwards)."""
        step = timedelta(hours=hours, minutes=minutes)
        if step < timedelta(0):
            raise ValueError(f"advance: must not go backwards, got {step}")
        self._now += step
