"""A Monte Carlo band around R, seeded from the check's own inputs (it decides nothing)."""

from __future__ import annotations

import functools
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


#: Samples drawn per block: the normal deviates of one block are generated together.
_BLOCK = 2048
_TWOPI = 2.0 * math.pi


def _normals(rng: random.Random, count: int, carry: list[float]) -> list[float]:
    """The next ``count`` standard normal deviates of ``rng``, as ``rng.gauss`` draws them.

    The Box-Muller pairs of ``random.Random.gauss`` written out: per pair two
    uniforms u1, u2 (in that order), x = u1 * 2π, g = sqrt(-2 log(1 - u2)), the
    deviates cos(x) * g and then sin(x) * g. The same operations in the same
    order, so the band is defined here and does not pay a method call per draw.
    ``carry`` holds the unused half of the last pair between blocks.
    """
    out = carry[:]
    carry.clear()
    uniform, cos, sin, sqrt, log = rng.random, math.cos, math.sin, math.sqrt, math.log
    append = out.append
    while len(out) < count:
        x = uniform() * _TWOPI
        g = sqrt(-2.0 * log(1.0 - uniform()))
        append(cos(x) * g)
        append(sin(x) * g)
    if len(out) > count:
        carry.append(out.pop())
    return out


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
    is ``random.Random(int(seed_digest, 16))``; per sample, ΔA is drawn first and
    then each uncertain gain in window order, every draw exactly as
    ``rng.gauss(mean, sd)`` = ``mean + z * sd`` would give it: same inputs, same band.

    Pure, so the last few results are cached, keyed by the exact bits of the
    inputs (a recorded check is evaluated by the command and again when the
    projection folds its event).
    """
    key = tuple((float(g.long_elo).hex(),
                 None if not g.long_half_width else float(g.long_half_width).hex())
                for g in gains)
    return _band(float(delta_a).hex(), float(delta_a_half_width).hex(), key, samples,
                 seed_digest)


@functools.lru_cache(maxsize=16)
def _band(
    delta_a_hex: str,
    half_width_hex: str,
    gains: tuple[tuple[str, str | None], ...],
    samples: int,
    seed_digest: str,
) -> MonteCarloBand:
    delta_a = float.fromhex(delta_a_hex)
    delta_a_half_width = float.fromhex(half_width_hex)
    rng = random.Random(int(seed_digest, 16))
    sd_a = delta_a_half_width / Z95
    exact = math.fsum(float.fromhex(elo) for elo, hw in gains if hw is None)
    noisy = [(float.fromhex(elo), float.fromhex(hw) / Z95) for elo, hw in gains
             if hw is not None]
    per = 1 + len(noisy)
    isfinite = math.isfinite
    ratios: list[float] = []
    keep = ratios.append
    skipped = 0
    carry: list[float] = []
    done = 0
    while done < samples:
        block = min(_BLOCK, samples - done)
        z = _normals(rng, block * per, carry)
        # sample i uses z[i * per] for ΔA and z[i * per + 1 + j] for the j-th uncertain
        # gain; S is summed per sample in window order (exact first), as a loop would
        sampled_a = [delta_a + x * sd_a for x in z[0::per]]
        sampled_s = [exact] * block
        for j, (mean, sd) in enumerate(noisy, start=1):
            sampled_s = [acc + (mean + x * sd) for acc, x in zip(sampled_s, z[j::per],
                                                                  strict=True)]
        for a, s_ in zip(sampled_a, sampled_s, strict=True):
            if s_ <= 0:
                skipped += 1
                continue
            ratio = a / s_
            if not isfinite(ratio):
                skipped += 1
                continue
            keep(ratio)
        done += block
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
