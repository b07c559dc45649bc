"""cladelog.lawv: the Law V check, R = ΔA / S, and its traffic light.

The pure arithmetic lives here; the plugin wiring (events, hooks, CLI) in
:mod:`cladelog.lawv.plugin`. Start with :func:`evaluate`.
"""

from cladelog.lawv.absolute import AbsoluteValue, AnchorTerm, absolute_value, total_band
from cladelog.lawv.claims import ClaimedGains, CountedGain, claimed_gains, window_defects
from cladelog.lawv.contract import MAX_MC_SAMPLES, Anchor, Contract, parse_contract
from cladelog.lawv.errors import LawVInputError
from cladelog.lawv.evaluate import evaluate, parse_window
from cladelog.lawv.measurement import MeasuredAnchor, Measurement, parse_measurement
from cladelog.lawv.montecarlo import MonteCarloBand
from cladelog.lawv.register import KINDS, Entry, Stage, parse_entries, parse_entry
from cladelog.lawv.result import CheckResult
from cladelog.lawv.traffic import (
    CONTINUE,
    DEFECTIVE,
    GAP,
    HALT,
    VERDICTS,
    WARNING,
    classify,
)

__all__ = [
    "CONTINUE",
    "DEFECTIVE",
    "GAP",
    "HALT",
    "KINDS",
    "MAX_MC_SAMPLES",
    "VERDICTS",
    "WARNING",
    "AbsoluteValue",
    "Anchor",
    "AnchorTerm",
    "CheckResult",
    "ClaimedGains",
    "Contract",
    "CountedGain",
    "Entry",
    "LawVInputError",
    "MeasuredAnchor",
    "Measurement",
    "MonteCarloBand",
    "Stage",
    "absolute_value",
    "claimed_gains",
    "classify",
    "evaluate",
    "parse_contract",
    "parse_entries",
    "parse_entry",
    "parse_measurement",
    "parse_window",
    "total_band",
    "window_defects",
]
