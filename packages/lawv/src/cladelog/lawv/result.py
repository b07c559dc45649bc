"""The outcome of one Law V check, with every number that went into it."""

from __future__ import annotations

import math
from typing import Any

import attrs
from cladelog.lawv.montecarlo import MonteCarloBand

__all__ = ["CheckResult"]


def _json_number(value: float | None) -> float | None:
    """None for absent or non-finite values, so the dict is always valid JSON."""
    if value is None or not math.isfinite(value):
        return None
    return value


@attrs.frozen(kw_only=True)
class CheckResult:
    """A Law V check.

    ``status`` is ``"ok"`` (a verdict was reached), ``"GAP"`` (no R: missing
    measurement, no counted gain test, S <= 0) or ``"DEFECTIVE"`` (the check is
    invalid; ``reasons`` say why). ``verdict`` is CONTINUE / WARNING / HALT when
    the status is ok, else the status itself. Numbers that could not be computed
    are None. Symbols: ``a_*`` = A, ``sigma_*`` = σ, ``delta_a`` = ΔA, ``s`` = S,
    ``r`` = R (the long stage, which decides), ``r_short`` and ``r_nelo`` recorded only.
    """

    contract_version: int
    contract_date: str
    status: str
    verdict: str
    verdict_short: str
    reasons: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    overfitting_suspected: bool = False
    old_id: str | None = None
    new_id: str | None = None
    old_version: str | None = None
    new_version: str | None = None
    window: tuple[int, int] | None = None
    a_old: float | None = None
    a_new: float | None = None
    sigma_old: float | None = None
    sigma_new: float | None = None
    transfer_band: float = 0.0
    total_band_old: float | None = None
    total_band_new: float | None = None
    delta_a: float | None = None
    delta_a_uncertainty: float | None = None
    delta_a_nelo: float | None = None
    s: float = 0.0
    s_short: float = 0.0
    s_nelo: float | None = None
    counted_seqs: tuple[int, ...] = ()
    r: float | None = None
    r_short: float | None = None
    r_nelo: float | None = None
    claimed_excess: float | None = None
    overfitting_band: float | None = None
    halt_below: float = 0.0
    warn_below: float = 0.0
    monte_carlo: MonteCarloBand | None = None
    inputs_digest: str = ""

    @property
    def halts(self) -> bool:
        """True when the verdict is HALT (no merge without human review)."""
        return self.verdict == "HALT"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (no NaN or infinity; None for absent values)."""
        out: dict[str, Any] = {}
        for field in attrs.fields(CheckResult):
            value = getattr(self, field.name)
            if isinstance(value, float):
                value = _json_number(value)
            elif isinstance(value, MonteCarloBand):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            out[field.name] = value
        return out
