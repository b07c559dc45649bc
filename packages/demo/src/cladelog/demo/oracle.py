"""The demo oracle: register entries whose claims are computed from their own games.

Pure. Every number an entry claims (Elo, half-width, normalized Elo, LLR and
the stage verdict) comes from :mod:`cladelog.core.elo` applied to the stage's
game counts, exactly as the receipts plugin recomputes it, so every receipt is
accepted. Claims are rounded to two decimals, as an oracle would print them
(the register compares claims after rounding both sides to 0.01).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Final

from cladelog.core import elo

from .model import draw_games

__all__ = [
    "LONG_GAMES",
    "ORACLE",
    "SHORT_GAMES",
    "epoch_change_entry",
    "gain_test_entry",
    "reversion_entry",
    "special_path_entry",
    "stage",
]

#: The oracle's identity in every entry.
ORACLE: Final = {"name": "arena-oracle", "version": "2.3"}
SHORT_GAMES: Final = 40_000
LONG_GAMES: Final = 80_000
SHORT_DRAW_RATE: Final = 0.62
LONG_DRAW_RATE: Final = 0.68
#: Short stage: SPRT in logistic Elo, H0 = 0, H1 = 2, alpha = beta = 0.05.
SPRT: Final = {"elo0": 0.0, "elo1": 2.0, "alpha": 0.05, "beta": 0.05, "model": "logistic"}
#: Long stage: fixed length, pass iff elo - half_width > 0.
LONG_THRESHOLD: Final = 0.0


def stage(name: str, counts: list[int], criterion: Mapping[str, Any]) -> dict[str, Any]:
    """A stage with claims computed from ``counts`` (``[losses, draws, wins]``).

    ``criterion`` is ``{"type": "sprt", ...}`` without ``llr`` (it is computed)
    or ``{"type": "fixed", "threshold": x}``.
    """
    logistic = elo.logistic_elo(counts)
    normalized = elo.normalized_elo(counts)
    crit = dict(criterion)
    if crit["type"] == "sprt":
        llr = elo.llr_logistic(counts, crit["elo0"], crit["elo1"]) \
            if crit["model"] == "logistic" else elo.llr_normalized(counts, crit["elo0"],
                                                                    crit["elo1"])
        passed = llr >= elo.sprt_bounds(crit["alpha"], crit["beta"])[1]
        crit["llr"] = round(llr, 2)
    else:
        passed = logistic.elo - logistic.half_width > crit["threshold"]
    losses, draws, wins = counts
    return {"name": name, "results": {"losses": losses, "draws": draws, "wins": wins},
            "games": losses + draws + wins, "elo": round(logistic.elo, 2),
            "half_width": round(logistic.half_width, 2), "nelo": round(normalized.nelo, 2),
            "criterion": crit, "pass": passed}


def gain_test_entry(rng: random.Random, *, seq: int, prev: str, candidate: Mapping[str, str],
                    baseline: Mapping[str, str], epoch: int, oracle_gain: float,
                    ) -> dict[str, Any]:
    """A two-stage gain test of ``candidate`` against ``baseline`` at ``oracle_gain`` Elo."""
    short = draw_games(rng, oracle_gain, SHORT_GAMES, SHORT_DRAW_RATE)
    long = draw_games(rng, oracle_gain, LONG_GAMES, LONG_DRAW_RATE)
    return {"seq": seq, "prev": prev, "kind": "gain_test", "candidate": dict(candidate),
            "baseline": dict(baseline), "oracle": dict(ORACLE), "epoch": epoch,
            "stages": [stage("short", short, {"type": "sprt", **SPRT}),
                       stage("long", long, {"type": "fixed", "threshold": LONG_THRESHOLD})]}


def special_path_entry(*, seq: int, prev: str, candidate: Mapping[str, str], path: str,
                       reason: str) -> dict[str, Any]:
    """A merge without a gain test (speed-up, simplification...)."""
    return {"seq": seq, "prev": prev, "kind": "special_path", "candidate": dict(candidate),
            "path": path, "reason": reason}


def epoch_change_entry(*, seq: int, prev: str, epoch: int, reason: str) -> dict[str, Any]:
    """The oracle enters a new epoch (recalibrated); later gain tests carry it."""
    return {"seq": seq, "prev": prev, "kind": "epoch_change", "oracle": dict(ORACLE),
            "epoch": epoch, "reason": reason}


def reversion_entry(*, seq: int, prev: str, reverts: int, reason: str) -> dict[str, Any]:
    """Revert an earlier entry (it stays in the register; nothing is subtracted)."""
    return {"seq": seq, "prev": prev, "kind": "reversion", "reverts": reverts, "reason": reason}
