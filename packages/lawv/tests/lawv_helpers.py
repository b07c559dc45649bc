"""Builders for Law V test inputs (plain dicts in the documented JSON forms)."""

from __future__ import annotations

import copy
from typing import Any

__all__ = [
    "ANCHORS",
    "contract",
    "gain",
    "measurement",
    "one_anchor_check",
    "plain",
]

#: Three anchors with unequal rating uncertainties.
ANCHORS: list[dict[str, Any]] = [
    {"name": "alpha", "hash": "a1", "rating": 3000.0, "rating_uncertainty": 12.0},
    {"name": "beta", "hash": "b2", "rating": 2950.0, "rating_uncertainty": 5.0},
    {"name": "gamma", "hash": "c3", "rating": 3100.0, "rating_uncertainty": 20.0},
]


def contract(anchors: list[dict[str, Any]] | None = None, **changes: Any) -> dict[str, Any]:
    """A version-7-like contract; keyword arguments replace fields."""
    doc: dict[str, Any] = {
        "version": 7,
        "date": "2026-10-16",
        "T": 36.9,
        "transfer_band": 51,
        "halt_below": 0.40,
        "warn_below": 0.75,
        "mc_samples": 2000,
        "anchors": copy.deepcopy(ANCHORS if anchors is None else anchors),
    }
    doc.update(changes)
    return doc


def measurement(
    ident: str,
    deltas: list[float],
    uncertainties: list[float],
    anchors: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A measurement repeating the anchors' identity with δ_i / h_i."""
    base = copy.deepcopy(ANCHORS if anchors is None else anchors)
    items = []
    for anchor, delta, unc in zip(base, deltas, uncertainties, strict=True):
        items.append({**anchor, "delta": delta, "uncertainty": unc})
    return {"id": ident, "version": f"main-{ident}", "anchors": items}


def gain(
    seq: int,
    long_elo: float,
    short_elo: float = 5.0,
    *,
    long_pass: bool = True,
    short_pass: bool = True,
    **long_extra: Any,
) -> dict[str, Any]:
    """A gain-test register entry."""
    return {
        "seq": seq,
        "kind": "gain_test",
        "stages": [
            {"name": "short", "elo": short_elo, "pass": short_pass},
            {"name": "long", "elo": long_elo, "pass": long_pass, **long_extra},
        ],
    }


def plain(seq: int, kind: str, **extra: Any) -> dict[str, Any]:
    """A non-gain-test entry."""
    return {"seq": seq, "kind": kind, **extra}


ONE_ANCHOR = [{"name": "solo", "hash": "s0", "rating": 3000.0, "rating_uncertainty": 10.0}]


def one_anchor_check(
    old_delta: float, new_delta: float, h: float = 10.0
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Contract, old and new for a single anchor: ΔA = new_delta - old_delta exactly."""
    return (
        contract(ONE_ANCHOR),
        measurement("old", [old_delta], [h], ONE_ANCHOR),
        measurement("new", [new_delta], [h], ONE_ANCHOR),
    )
