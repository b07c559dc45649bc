"""Recompute a register entry's statistics from its game counts and compare the claims.

For each stage of a gain test, from the counts (pentanomial pair counts when
given, else losses/draws/wins), using :mod:`cladelog.core.elo`:

* the logistic Elo, its 95% interval and half-width and the LOS
  (:func:`~cladelog.core.elo.logistic_elo`), and the normalized Elo with its
  interval (:func:`~cladelog.core.elo.normalized_elo`);
* for an SPRT criterion, the GSPRT log-likelihood ratio in the criterion's model
  (:func:`~cladelog.core.elo.llr_logistic` or
  :func:`~cladelog.core.elo.llr_normalized`) and Wald's bounds
  (:func:`~cladelog.core.elo.sprt_bounds`); the stage passes iff the LLR reaches
  the upper bound;
* for a fixed-length criterion, the stage passes iff ``elo - half_width`` exceeds
  the threshold.

A claim matches when it equals the recomputed value after rounding both to 0.01
(Python's ``round(x, 2)``). Flags:

* ``ELO_MISMATCH`` -- the claimed ``elo``, ``half_width`` or ``nelo`` differs;
* ``LLR_MISMATCH`` -- the claimed SPRT ``llr`` differs;
* ``STAGE_VERDICT_MISMATCH`` -- the claimed ``pass`` differs from the recomputed verdict.

Every output is a finite float (the Elo module regularises zero counts), so
all-wins, all-losses and all-draws results are defined; zero games are refused
when the entry is parsed. Pure: no I/O, no clock.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

import attrs
from cladelog.core import elo

from .entries import (
    GENESIS_PREV,
    Entry,
    FixedCriterion,
    GainTest,
    SprtCriterion,
    Stage,
    parse_entry,
)
from .errors import EntryError

__all__ = [
    "CONFIDENCE",
    "ELO_MISMATCH",
    "EPOCH_MISMATCH",
    "FLAGS",
    "LLR_METHOD",
    "LLR_MISMATCH",
    "STAGE_VERDICT_MISMATCH",
    "EntryRecomputation",
    "StageRecomputation",
    "claims_match",
    "fill_claims",
    "recompute_entry",
    "recompute_stage",
]

ELO_MISMATCH: Final = "ELO_MISMATCH"
LLR_MISMATCH: Final = "LLR_MISMATCH"
STAGE_VERDICT_MISMATCH: Final = "STAGE_VERDICT_MISMATCH"
#: Set by the register (not here): a gain test run in another epoch than the oracle's current one.
EPOCH_MISMATCH: Final = "EPOCH_MISMATCH"
FLAGS: Final = (ELO_MISMATCH, EPOCH_MISMATCH, LLR_MISMATCH, STAGE_VERDICT_MISMATCH)
CONFIDENCE: Final = 0.95
LLR_METHOD: Final = "GSPRT: generalized log-likelihood ratio (MLE under each hypothesis)"


def _json_number(value: Any) -> Any:
    """An integral float as an int: the same canonical JSON (``0.0`` and ``0`` both encode
    as ``0``), but the canonical encoder then takes its fast path for the whole event."""
    if type(value) is float and value.is_integer() and abs(value) < 2.0**53:
        return int(value)
    return value


def claims_match(claimed: float, recomputed: float) -> bool:
    """True iff both values are equal after rounding to 0.01."""
    return round(claimed, 2) == round(recomputed, 2)


@attrs.frozen
class StageRecomputation:
    """What the games of one stage say, and which claims disagree."""

    name: str
    model: str
    games: int
    elo: float
    elo_lower: float
    elo_upper: float
    half_width: float
    los: float
    nelo: float
    nelo_lower: float
    nelo_upper: float
    nelo_half_width: float
    criterion: str
    passed: bool
    flags: tuple[str, ...]
    interval_method: str
    llr: float | None = None
    llr_model: str | None = None
    llr_lower_bound: float | None = None
    llr_upper_bound: float | None = None
    threshold: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the ``recomputed.stages[i]`` of a recorded entry)."""
        out: dict[str, Any] = {
            "name": self.name, "model": self.model, "games": self.games,
            "confidence": CONFIDENCE, "interval_method": self.interval_method,
            "elo": self.elo, "elo_lower": self.elo_lower, "elo_upper": self.elo_upper,
            "half_width": self.half_width, "los": self.los,
            "nelo": self.nelo, "nelo_lower": self.nelo_lower, "nelo_upper": self.nelo_upper,
            "nelo_half_width": self.nelo_half_width,
            "criterion": self.criterion, "pass": self.passed, "flags": list(self.flags),
        }
        if self.llr is not None:
            out |= {"llr": self.llr, "llr_model": self.llr_model, "llr_method": LLR_METHOD,
                    "llr_lower_bound": self.llr_lower_bound,
                    "llr_upper_bound": self.llr_upper_bound}
        if self.threshold is not None:
            out["threshold"] = self.threshold
        # _json_number inlined (a call per member was a tenth of the recomputation)
        return {k: int(v) if type(v) is float and v.is_integer() and abs(v) < 2.0**53 else v
                for k, v in out.items()}


@attrs.frozen
class EntryRecomputation:
    """The recomputation of a whole entry: per stage, and the union of the flags."""

    kind: str
    stages: tuple[StageRecomputation, ...] = ()
    flags: tuple[str, ...] = ()

    @property
    def passed(self) -> bool | None:
        """For a gain test: both recomputed stages passed; None for other kinds."""
        if self.kind != "gain_test":
            return None
        return all(s.passed for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the ``recomputed`` member of ``receipts.entry_recorded``)."""
        out: dict[str, Any] = {"kind": self.kind, "flags": list(self.flags)}
        if self.kind == "gain_test":
            out["stages"] = [s.to_dict() for s in self.stages]
            out["pass"] = self.passed
        return out


def recompute_stage(stage: Stage) -> StageRecomputation:
    """Recompute one stage from its counts and compare its claims (see the module doc)."""
    counts = list(stage.counts)
    logistic = elo.logistic_elo(counts, CONFIDENCE)
    normalized = elo.normalized_elo(counts, CONFIDENCE)
    flags: list[str] = []
    if not (claims_match(stage.elo, logistic.elo)
            and claims_match(stage.half_width, logistic.half_width)
            and (stage.nelo is None or claims_match(stage.nelo, normalized.nelo))):
        flags.append(ELO_MISMATCH)
    extra: dict[str, Any] = {}
    crit = stage.criterion
    if isinstance(crit, SprtCriterion):
        if crit.model == "logistic":
            llr = elo.llr_logistic(counts, crit.elo0, crit.elo1)
        else:
            llr = elo.llr_normalized(counts, crit.elo0, crit.elo1)
        lower, upper = elo.sprt_bounds(crit.alpha, crit.beta)
        passed = llr >= upper
        if not claims_match(crit.llr, llr):
            flags.append(LLR_MISMATCH)
        extra = {"llr": llr, "llr_model": crit.model, "llr_lower_bound": lower,
                 "llr_upper_bound": upper}
        kind = "sprt"
    else:
        assert isinstance(crit, FixedCriterion)
        passed = logistic.elo - logistic.half_width > crit.threshold
        extra = {"threshold": crit.threshold}
        kind = "fixed"
    if passed != stage.passed:
        flags.append(STAGE_VERDICT_MISMATCH)
    return StageRecomputation(
        name=stage.name, model=logistic.model, games=logistic.games, elo=logistic.elo,
        elo_lower=logistic.elo_lower, elo_upper=logistic.elo_upper,
        half_width=logistic.half_width, los=logistic.los, nelo=normalized.nelo,
        nelo_lower=normalized.nelo_lower, nelo_upper=normalized.nelo_upper,
        nelo_half_width=normalized.half_width, criterion=kind, passed=passed,
        flags=tuple(flags), interval_method=logistic.interval_method, **extra,
    )


def recompute_entry(entry: Entry) -> EntryRecomputation:
    """Recompute every stage of a gain test; other kinds carry no statistics."""
    if not isinstance(entry, GainTest):
        return EntryRecomputation(entry.kind)
    stages = tuple(recompute_stage(s) for s in entry.stages)
    flags = sorted({f for s in stages for f in s.flags})
    return EntryRecomputation(entry.kind, stages, tuple(flags))


#: Claims :func:`fill_claims` writes are rounded to this many decimals: the precision at
#: which :func:`claims_match` compares them, so a filled claim always matches.
FILL_DECIMALS: Final = 2


def fill_claims(doc: Mapping[str, Any], path: str = "entry") -> tuple[dict[str, Any],
                                                                       dict[str, Any]]:
    """A gain-test entry with its claims computed from its game counts.

    For each stage: ``elo`` and ``half_width`` (always), ``nelo`` (when the stage has
    the member) and, for an SPRT criterion, ``criterion.llr`` are set to the values
    :func:`recompute_stage` computes, rounded to 0.01 (:data:`FILL_DECIMALS`); ``pass``
    is set to the recomputed verdict when it is missing or null (a claimed verdict is
    kept, and a wrong one is flagged when the receipt is recorded). Any of these members
    may be missing or null in ``doc``; everything else is checked as :func:`parse_entry`
    checks it (``seq`` and ``prev`` may be left out, as ``receipts sign`` fills them).

    Returns ``(entry, filled)``: the completed entry (``doc``'s members in their order)
    and ``{"stages[0].elo": value, ...}`` of what was written. Raises
    :class:`~cladelog.receipts.errors.EntryError` naming the field for an entry that
    is not a well-formed gain test.
    """
    if not isinstance(doc, Mapping):
        raise EntryError(f"{path}: must be an object")
    if doc.get("kind") != "gain_test":
        raise EntryError(f"{path}.kind: only a gain_test has claims to fill, "
                         f"got {doc.get('kind')!r:.40}")
    out: dict[str, Any] = copy.deepcopy(dict(doc))
    work = copy.deepcopy(out)
    work.setdefault("seq", 0)
    work.setdefault("prev", GENESIS_PREV)
    stages = work.get("stages")
    for stage in stages if isinstance(stages, list) else ():
        if not isinstance(stage, dict):
            continue  # parse_entry names it
        for member in ("elo", "half_width"):
            if stage.get(member) is None:
                stage[member] = 0
        if "nelo" in stage and stage["nelo"] is None:
            stage["nelo"] = 0
        if stage.get("pass") is None:
            stage["pass"] = False
        criterion = stage.get("criterion")
        if isinstance(criterion, dict) and criterion.get("type") == "sprt" \
                and criterion.get("llr") is None:
            criterion["llr"] = 0
    recomputed = recompute_entry(parse_entry(work, path))
    filled: dict[str, Any] = {}
    for index, (stage, rec) in enumerate(zip(out["stages"], recomputed.stages, strict=True)):
        values = {"elo": rec.elo, "half_width": rec.half_width}
        if "nelo" in stage:
            values["nelo"] = rec.nelo
        for member, value in values.items():
            stage[member] = filled[f"stages[{index}].{member}"] = round(value, FILL_DECIMALS)
        if rec.llr is not None:
            stage["criterion"]["llr"] = filled[f"stages[{index}].criterion.llr"] = \
                round(rec.llr, FILL_DECIMALS)
        if stage.get("pass") is None:
            stage["pass"] = filled[f"stages[{index}].pass"] = rec.passed
    return out, filled
