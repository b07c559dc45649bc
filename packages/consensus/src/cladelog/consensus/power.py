"""Voting power, the quorum and ζ (pure integer arithmetic, ζ excepted).

Rules (issue #20, rules 1 and 6):

* weight ``w = stake`` (``linear``) or ``isqrt(stake)`` (``sqrt``);
* with a cap ``p/q``: ``power = max(1, min(w, floor(p * W / q)))`` for every
  ``w > 0``, where ``W`` is the sum of the weights of the frozen set; the power a
  cap removes is not redistributed; validators of weight 0 get no power;
* finalized iff ``3 * accepting power > 2 * total power`` (strictly more than two
  thirds of the capped total; exactly 2/3 does not finalize);
* ζ = H / log2(N): H the Shannon entropy (bits) of the power shares among the
  counted accepts, N the size of the frozen set; 0 when N <= 1 or nobody accepted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from cladelog.consensus.policy import Fraction

__all__ = ["frozen_powers", "missing_for_quorum", "quorum_reached", "weight", "zeta"]


def weight(stake: int, weighting: str) -> int:
    """The weight of a stake: itself, or its integer square root under ``sqrt``."""
    if stake < 0:
        raise ValueError("stake must be >= 0")
    return math.isqrt(stake) if weighting == "sqrt" else stake


def frozen_powers(stakes: Mapping[str, int], weighting: str,
                  cap: Fraction | None) -> dict[str, int]:
    """Voting power of each validator of a frozen set (validators of weight 0 left out)."""
    weights = {v: weight(s, weighting) for v, s in stakes.items()}
    weights = {v: w for v, w in weights.items() if w > 0}
    if cap is None:
        return dict(sorted(weights.items()))
    limit = cap.of(sum(weights.values()))
    return {v: max(1, min(w, limit)) for v, w in sorted(weights.items())}


def quorum_reached(accepting: int, total: int) -> bool:
    """``3 * accepting > 2 * total`` (strictly more than two thirds)."""
    return total > 0 and 3 * accepting > 2 * total


def missing_for_quorum(accepting: int, total: int) -> int:
    """The least extra accepting power that would reach the quorum (0 if reached)."""
    need = (2 * total) // 3 + 1
    return max(0, need - accepting)


def zeta(accepting_powers: Iterable[int], set_size: int) -> float:
    """Normalized Shannon entropy of the accepting powers (see the module docstring)."""
    powers = [p for p in accepting_powers if p > 0]
    total = sum(powers)
    if set_size <= 1 or total == 0:
        return 0.0
    entropy = -sum((p / total) * math.log2(p / total) for p in powers)
    return max(0.0, entropy / math.log2(set_size))
