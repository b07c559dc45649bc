"""A Monte Carlo band around R, seeded from the check's own inputs (it decides nothing)."""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from typing import Any

import attrs
from cladelog.core.canonical import canonical_bytes
from cladelog.lawv.claims import CountedGain

__all__ = [
    "PERCENTILES",
    "Z95",
    "MonteCarloBand",
    "inputs_digest",
    "monte_carlo_band",
    "percentile",
]

#: The two-sided 95% quantile of the standard normal: a 95% half-width / Z95 = one sd.
Z95 = 1.959963984540054
#: The percentiles reported.
PERCENTILES = (2.5, 50.0, 97.5)


@attrs.frozen
class MonteCarloBand:
    """Percentiles of sampled R with the sample accounting.

    ``samples`` were drawn; ``skipped`` had a sampled S <= 0 (or a non-finite ratio)
    and were left out; ``used`` = samples - skipped. Percentiles are None when
    nothing was used.
    """

    samples: int
    used: int
    skipped: int
    p2_5: float | None
    p50: float | None
    p97_5: float | None
    seed_digest: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "samples": self.samples,
            "used": self.used,
            "skipped": self.skipped,
            "percentiles": {"2.5": self.p2_5, "50": self.p50, "97.5": self.p97_5},
            "seed_digest": self.seed_digest,
        }


def inputs_digest(payload: Any) -> str:
    """Hex SHA-256 of the canonical JSON (RFC 8785) of the check's inputs."""
    return hashlib.sha256(canonical_bytes(payload)).hexdigest()


def percentile(ordered: Sequence[float], p: float) -> float:
    """The p-th percentile of sorted data by linear interpolation between order statistics.

    The position is p/100 * (n - 1) (the usual "type 7" definition).
    """
    if not ordered:
        raise ValueError("percentile of no data")
    position = p / 100.0 * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


def monte_carlo_band(
    delta_a: float,
    delta_a_half_width: float,
    gains: Sequence[CountedGain],
    samples: int,
    seed_digest: str,
) -> MonteCarloBand:
    """Sample R = ΔA / S ``samples`` times.

    ΔA ~ Normal(delta_a, delta_a_half_width / Z95); each counted gain ~
    Normal(long_elo, long_half_width / Z95) when it carries a half-width, else exact.
    Both uncertainties are 95% half-widths, hence the division by Z95. The generator
    is ``random.Random(int(seed_digest, 16))``: same inputs, same band.
    """
    rng = random.Random(int(seed_digest, 16))
    gauss = rng.gauss
    sd_a = delta_a_half_width / Z95
    exact = math.fsum(g.long_elo for g in gains if not g.long_half_width)
    noisy = [(g.long_elo, g.long_half_width / Z95) for g in gains if g.long_half_width]
    ratios: list[float] = []
    skipped = 0
    for _ in range(samples):
        sampled_a = gauss(delta_a, sd_a)
        sampled_s = exact
        for mean, sd in noisy:
            sampled_s += gauss(mean, sd)
        if sampled_s <= 0:
            skipped += 1
            continue
        ratio = sampled_a / sampled_s
        if not math.isfinite(ratio):
            skipped += 1
            continue
        ratios.append(ratio)
    ratios.sort()
    p2_5: float | None = None
    p50: float | None = None
    p97_5: float | None = None
    if ratios:
        p2_5, p50, p97_5 = (percentile(ratios, p) for p in PERCENTILES)
    return MonteCarloBand(
        samples=samples,
        used=len(ratios),
        skipped=skipped,
        p2_5=p2_5,
        p50=p50,
        p97_5=p97_5,
        seed_digest=seed_digest,
    )
