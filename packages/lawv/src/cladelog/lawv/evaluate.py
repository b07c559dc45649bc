"""``evaluate``: one Law V check, R = ΔA / S, from the contract, two measurements and a window."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from cladelog.lawv._fields import fail, req_int, req_list

if TYPE_CHECKING:
    from cladelog.lawv.absolute import AbsoluteValue
    from cladelog.lawv.contract import Contract
    from cladelog.lawv.measurement import Measurement
    from cladelog.lawv.result import CheckResult

# The building blocks (absolute, claims, endpoint, montecarlo, result...) are imported
# inside the functions: ``cladelog.lawv`` binds ``evaluate`` at import time, and the
# plugin module (imported whenever the CLI starts with lawv enabled) must stay light.

__all__ = ["evaluate", "parse_window"]

OVERFITTING_FLAG = "overfitting_suspected"
REVERSION_FLAG = "reversion_in_window"


def parse_window(value: Any, path: str = "window") -> tuple[int, int] | None:
    """Validate ``window`` = (first_seq, last_seq) with first_seq <= last_seq, or None."""
    if value is None:
        return None
    items = req_list(value, path)
    if len(items) != 2:
        raise fail(path, "must be [first_seq, last_seq]", value)
    first = req_int(items[0], f"{path}[0]")
    last = req_int(items[1], f"{path}[1]")
    if first > last:
        raise fail(path, f"first_seq {first} must be <= last_seq {last}")
    return (first, last)


def _endpoint(
    contract: Contract, measurement: Measurement | None, label: str, defects: list[str]
) -> AbsoluteValue | None:
    from cladelog.lawv.absolute import absolute_value
    from cladelog.lawv.endpoint import resolve_endpoint

    if measurement is None:
        return None
    resolved = resolve_endpoint(contract, measurement, label)
    defects.extend(resolved.reasons)
    if resolved.terms is None:
        return None
    return absolute_value(resolved.terms, contract.t)


def _diff(new: float | None, old: float | None) -> float | None:
    if new is None or old is None:
        return None
    return new - old


def _value(absolute: AbsoluteValue | None) -> float | None:
    return None if absolute is None else absolute.value


def _nvalue(absolute: AbsoluteValue | None) -> float | None:
    return None if absolute is None else absolute.nvalue


def evaluate(
    contract: Contract | dict[str, Any],
    old: Measurement | dict[str, Any] | None,
    new: Measurement | dict[str, Any] | None,
    entries: Any,
    *,
    window: tuple[int, int] | list[int] | None = None,
) -> CheckResult:
    """Run one Law V check.

    ``contract``, ``old`` and ``new`` are the documented JSON forms (dicts) or the
    parsed classes; ``old``/``new`` may be None (a missing measurement: GAP).
    ``entries`` are the register entries of the window in order (plain dicts).
    ``window`` = (first_seq, last_seq), when given, is the window the entries must
    cover exactly; without it only the density of the given seqs is checked.

    Malformed input raises :class:`~cladelog.lawv.errors.LawVInputError`; a check
    that cannot be valid comes back with status DEFECTIVE and its reasons; a check
    without an R comes back with status GAP. The function is pure: the Monte Carlo
    band is seeded from the canonical inputs, so a replay reproduces every number.
    """
    from cladelog.lawv.absolute import total_band
    from cladelog.lawv.claims import claimed_gains, window_defects
    from cladelog.lawv.contract import parse_contract
    from cladelog.lawv.endpoint import identity_defects
    from cladelog.lawv.measurement import parse_measurement
    from cladelog.lawv.montecarlo import MonteCarloBand, inputs_digest, monte_carlo_band
    from cladelog.lawv.register import Entry, parse_entries
    from cladelog.lawv.result import CheckResult
    from cladelog.lawv.traffic import (
        GAP,
        STATUS_DEFECTIVE,
        STATUS_GAP,
        STATUS_OK,
        at_decision_precision,
        classify,
    )

    parsed = parse_contract(contract)
    old_m = None if old is None else parse_measurement(old, "old")
    new_m = None if new is None else parse_measurement(new, "new")
    window_t = parse_window(window)
    window_entries: tuple[Entry, ...] = parse_entries(entries)

    defects: list[str] = window_defects(window_entries, window_t)
    old_a = _endpoint(parsed, old_m, "old", defects)
    new_a = _endpoint(parsed, new_m, "new", defects)
    if old_m is not None and new_m is not None:
        reference = tuple(item.anchor for item in old_m.anchors)
        between = identity_defects(reference, new_m.anchors, "new", "the old measurement")
        defects.extend(between)

    claims = claimed_gains(window_entries)
    gaps: list[str] = []
    if old_m is None:
        gaps.append("old measurement missing")
    if new_m is None:
        gaps.append("new measurement missing")
    if not claims.counted:
        gaps.append("no gain test in the window passed both stages")
    elif claims.s <= 0:
        gaps.append(f"S = {claims.s!r} <= 0: no R")

    if defects:
        status = STATUS_DEFECTIVE
    elif gaps:
        status = STATUS_GAP
    else:
        status = STATUS_OK

    delta_a = _diff(_value(new_a), _value(old_a))
    delta_a_nelo = _diff(_nvalue(new_a), _nvalue(old_a))
    delta_u = None
    if old_a is not None and new_a is not None:
        delta_u = math.hypot(old_a.sigma, new_a.sigma)

    flags: list[str] = []
    claimed_excess = overfitting_band = None
    overfitting = False
    if delta_a is not None and delta_u is not None and claims.counted and not defects:
        claimed_excess = claims.s - delta_a
        overfitting_band = math.sqrt(
            delta_u**2 + math.fsum((g.long_half_width or 0.0) ** 2 for g in claims.counted)
        )
        overfitting = at_decision_precision(claimed_excess) > at_decision_precision(
            overfitting_band
        )
        if overfitting:
            flags.append(OVERFITTING_FLAG)
    if any(entry.kind == "reversion" for entry in window_entries):
        flags.append(REVERSION_FLAG)

    digest = inputs_digest(
        {
            "contract": parsed.to_dict(),
            "old": None if old_m is None else old_m.to_dict(),
            "new": None if new_m is None else new_m.to_dict(),
            "entries": [entry.to_dict() for entry in window_entries],
            "window": None if window_t is None else list(window_t),
        }
    )

    r = r_short = r_nelo = None
    band: MonteCarloBand | None = None
    if status == STATUS_OK and delta_a is not None and delta_u is not None:
        r = delta_a / claims.s
        verdict = classify(r, parsed.halt_below, parsed.warn_below)
        if claims.s_short > 0:
            r_short = delta_a / claims.s_short
            verdict_short = classify(r_short, parsed.halt_below, parsed.warn_below)
        else:
            verdict_short = GAP
        if delta_a_nelo is not None and claims.s_nelo is not None and claims.s_nelo > 0:
            r_nelo = delta_a_nelo / claims.s_nelo
        band = monte_carlo_band(delta_a, delta_u, claims.counted, parsed.mc_samples, digest)
    else:
        verdict = verdict_short = status

    return CheckResult(
        contract_version=parsed.version,
        contract_date=parsed.date,
        status=status,
        verdict=verdict,
        verdict_short=verdict_short,
        reasons=tuple(defects + gaps),
        flags=tuple(flags),
        overfitting_suspected=overfitting,
        old_id=None if old_m is None else old_m.id,
        new_id=None if new_m is None else new_m.id,
        old_version=None if old_m is None else old_m.version,
        new_version=None if new_m is None else new_m.version,
        window=window_t,
        a_old=None if old_a is None else old_a.value,
        a_new=None if new_a is None else new_a.value,
        sigma_old=None if old_a is None else old_a.sigma,
        sigma_new=None if new_a is None else new_a.sigma,
        transfer_band=parsed.transfer_band,
        total_band_old=None if old_a is None else total_band(old_a.sigma, parsed.transfer_band),
        total_band_new=None if new_a is None else total_band(new_a.sigma, parsed.transfer_band),
        delta_a=delta_a,
        delta_a_uncertainty=delta_u,
        delta_a_nelo=delta_a_nelo,
        s=claims.s,
        s_short=claims.s_short,
        s_nelo=claims.s_nelo,
        counted_seqs=claims.counted_seqs,
        r=r,
        r_short=r_short,
        r_nelo=r_nelo,
        claimed_excess=claimed_excess,
        overfitting_band=overfitting_band,
        halt_below=parsed.halt_below,
        warn_below=parsed.warn_below,
        monte_carlo=band,
        inputs_digest=digest,
    )
