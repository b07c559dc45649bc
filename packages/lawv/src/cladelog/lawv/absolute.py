"""The numerator's building block: a version's absolute value A against the anchor set."""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

__all__ = ["AbsoluteValue", "AnchorTerm", "absolute_value", "total_band"]


@attrs.frozen
class AnchorTerm:
    """One anchor's contribution: fixed rating R_i, its uncertainty h_L,i, δ_i and h_i."""

    rating: float
    rating_uncertainty: float
    delta: float
    uncertainty: float
    ndelta: float | None = None


@attrs.frozen
class AbsoluteValue:
    """A = Σ w_i (R_i + δ_i) / Σ w_i and σ = 1/√Σ 1/(h_i² + h_L,i²).

    ``nvalue`` is the same weighted mean over R_i + ndelta_i (None unless every
    anchor carries ``ndelta``).
    """

    value: float
    sigma: float
    nvalue: float | None


def _weighted_mean(values: Sequence[float], variances: Sequence[float]) -> float:
    """Σ x_i/v_i / Σ 1/v_i, computed as a ratio to the smallest v (no overflow).

    Anchors with zero variance carry infinite weight: the mean is then taken over
    them alone (the limit of the formula).
    """
    smallest = min(variances)
    if smallest == 0.0:
        exact = [x for x, v in zip(values, variances, strict=True) if v == 0.0]
        return math.fsum(exact) / len(exact)
    weights = [smallest / v for v in variances]
    return math.fsum(w * x for w, x in zip(weights, values, strict=True)) / math.fsum(weights)


def _combined_sigma(variances: Sequence[float]) -> float:
    """1/√Σ 1/u_i, computed as √(u_min / Σ u_min/u_i); zero when any u_i is zero."""
    smallest = min(variances)
    if smallest == 0.0:
        return 0.0
    return math.sqrt(smallest / math.fsum(smallest / u for u in variances))


def absolute_value(terms: Sequence[AnchorTerm], t: float) -> AbsoluteValue:
    """The absolute value of one version from its anchor terms and the contract's T."""
    if not terms:
        raise ValueError("absolute_value needs at least one anchor term")
    stat = [term.uncertainty**2 + term.rating_uncertainty**2 for term in terms]
    weight_var = [u + t**2 for u in stat]
    value = _weighted_mean([term.rating + term.delta for term in terms], weight_var)
    nvalue: float | None = None
    ndeltas = [term.ndelta for term in terms]
    if all(nd is not None for nd in ndeltas):
        nvalue = _weighted_mean(
            [term.rating + (nd or 0.0) for term, nd in zip(terms, ndeltas, strict=True)],
            weight_var,
        )
    return AbsoluteValue(value=value, sigma=_combined_sigma(stat), nvalue=nvalue)


def total_band(sigma: float, transfer_band: float) -> float:
    """The total band of an absolute value: √(σ² + transfer_band²).

    The statistical part and the transfer band are treated as independent and
    added in quadrature. The transfer band is the same at both endpoints, so it
    cancels in ΔA and never enters ΔA's uncertainty.
    """
    return math.hypot(sigma, transfer_band)
