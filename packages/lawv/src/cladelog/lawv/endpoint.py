"""Check one endpoint's measurement against the contract and turn it into anchor terms."""

from __future__ import annotations

import math

import attrs
from cladelog.lawv.absolute import AnchorTerm
from cladelog.lawv.contract import Anchor, Contract
from cladelog.lawv.measurement import MeasuredAnchor, Measurement

__all__ = ["Resolved", "identity_defects", "resolve_endpoint"]

_FIELDS = ("hash", "rating", "rating_uncertainty")


@attrs.frozen
class Resolved:
    """An endpoint's anchor terms in contract order, or the reasons it is defective."""

    terms: tuple[AnchorTerm, ...] | None
    reasons: tuple[str, ...]


def identity_defects(
    expected: tuple[Anchor, ...], measured: tuple[MeasuredAnchor, ...], label: str, against: str
) -> list[str]:
    """Where the identifying fields of ``measured`` differ from ``expected`` (matched by name)."""
    reasons: list[str] = []
    by_name = {anchor.name: anchor for anchor in expected}
    present = {item.name for item in measured}
    for anchor in expected:
        if anchor.name not in present:
            reasons.append(f"{label}.anchors: anchor {anchor.name!r} of {against} is missing")
    for index, item in enumerate(measured):
        path = f"{label}.anchors[{index}]"
        reference = by_name.get(item.name)
        if reference is None:
            reasons.append(f"{path}: anchor {item.name!r} is not in {against}")
            continue
        for field in _FIELDS:
            mine, theirs = getattr(item.anchor, field), getattr(reference, field)
            if mine != theirs:
                reasons.append(f"{path}.{field}: {mine!r} differs from {against} ({theirs!r})")
    return reasons


def _from_games(games: tuple[int, int, int], path: str) -> tuple[float, float, float] | str:
    """δ, h and normalized δ from game counts via the core Elo module, or why they are unusable."""
    from cladelog.core.elo import logistic_elo, normalized_elo  # lazy: games-based anchors only

    try:
        estimate = logistic_elo(games)
        delta, half_width = float(estimate.elo), float(estimate.half_width)
        ndelta = float(normalized_elo(games).nelo)
    except (ValueError, ArithmeticError) as exc:
        return f"{path}.games: no Elo estimate from {list(games)} ({exc})"
    if not all(math.isfinite(x) for x in (delta, half_width, ndelta)) or half_width < 0:
        return f"{path}.games: no finite Elo estimate from {list(games)}"
    return delta, half_width, ndelta


def _term(item: MeasuredAnchor, path: str) -> AnchorTerm | str:
    ndelta = item.ndelta
    if item.games is not None:
        derived = _from_games(item.games, path)
        if isinstance(derived, str):
            return derived
        delta, uncertainty, games_ndelta = derived
        if ndelta is None:
            ndelta = games_ndelta
    else:
        if item.uncertainty is None:
            return f"{path}: lacks both an uncertainty and game counts"
        if item.delta is None:
            return f"{path}: lacks both a delta and game counts"
        delta, uncertainty = item.delta, item.uncertainty
    return AnchorTerm(
        rating=item.anchor.rating,
        rating_uncertainty=item.anchor.rating_uncertainty,
        delta=delta,
        uncertainty=uncertainty,
        ndelta=ndelta,
    )


def resolve_endpoint(contract: Contract, measurement: Measurement, label: str) -> Resolved:
    """Match ``measurement`` to the contract's anchor set and build its terms.

    Defects: an anchor missing or extra, an identifying field that differs from the
    contract, an anchor without δ/h and without games, games without a finite estimate.
    """
    reasons = identity_defects(contract.anchors, measurement.anchors, label, "the contract")
    by_name = {item.name: (index, item) for index, item in enumerate(measurement.anchors)}
    terms: list[AnchorTerm] = []
    for anchor in contract.anchors:
        found = by_name.get(anchor.name)
        if found is None:
            continue
        index, item = found
        term = _term(item, f"{label}.anchors[{index}]")
        if isinstance(term, str):
            reasons.append(term)
        else:
            terms.append(term)
    if reasons:
        return Resolved(terms=None, reasons=tuple(reasons))
    return Resolved(terms=tuple(terms), reasons=())
