"""The denominator S: the oracle's claimed gains over the window, and the window's integrity."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import attrs
from cladelog.lawv.register import Entry

__all__ = ["ClaimedGains", "CountedGain", "claimed_gains", "window_defects"]


@attrs.frozen
class CountedGain:
    """A gain test that passed both stages: its long-stage Elo (and extras) as counted."""

    seq: int
    long_elo: float
    short_elo: float
    long_nelo: float | None
    long_half_width: float | None


@attrs.frozen
class ClaimedGains:
    """S over the window with everything that went into it.

    ``s`` sums the long-stage Elo of the counted gain tests, ``s_short`` their
    short-stage Elo; ``s_nelo`` sums the long-stage ``nelo`` and is None unless
    every counted test carries one (and at least one is counted).
    """

    counted: tuple[CountedGain, ...]
    s: float
    s_short: float
    s_nelo: float | None

    @property
    def counted_seqs(self) -> tuple[int, ...]:
        """The seq of every counted gain test, in window order."""
        return tuple(gain.seq for gain in self.counted)


def claimed_gains(entries: Sequence[Entry]) -> ClaimedGains:
    """Sum the claimed gains of a window.

    A gain test counts when both its short and its long stage passed; it adds its
    long-stage Elo to S. Special paths, epoch changes, failed tests and reversions
    add nothing (a reversion does not subtract what it reverts).
    """
    counted: list[CountedGain] = []
    for entry in entries:
        if entry.kind != "gain_test":
            continue
        short, long = entry.stage("short"), entry.stage("long")
        if short is None or long is None or not (short.passed and long.passed):
            continue
        counted.append(
            CountedGain(
                seq=entry.seq,
                long_elo=long.elo,
                short_elo=short.elo,
                long_nelo=long.nelo,
                long_half_width=long.half_width,
            )
        )
    s = sum(gain.long_elo for gain in counted)
    s_short = sum(gain.short_elo for gain in counted)
    nelos = [gain.long_nelo for gain in counted]
    s_nelo: float | None = None
    if nelos and all(value is not None for value in nelos):
        s_nelo = sum(value for value in nelos if value is not None)
    return ClaimedGains(counted=tuple(counted), s=float(s), s_short=float(s_short), s_nelo=s_nelo)


def window_defects(entries: Sequence[Entry], window: tuple[int, int] | None) -> list[str]:
    """Reasons why ``entries`` do not cover the window without gaps (empty when they do).

    The seqs must rise by exactly one from entry to entry. When ``window`` =
    (first_seq, last_seq) is given, the entries must be exactly first_seq..last_seq.
    """
    reasons: list[str] = []
    for before, after in itertools.pairwise(entries):
        if after.seq != before.seq + 1:
            expected = before.seq + 1
            reasons.append(
                f"register gap: seq {after.seq} follows seq {before.seq} (expected {expected})"
            )
    if window is not None:
        first, last = window
        if not entries:
            reasons.append(f"register gap: window {first}..{last} holds no entries")
        else:
            if entries[0].seq != first:
                reasons.append(
                    f"register gap: window starts at seq {first}, entries at {entries[0].seq}"
                )
            if entries[-1].seq != last:
                reasons.append(
                    f"register gap: window ends at seq {last}, entries at {entries[-1].seq}"
                )
    return reasons
