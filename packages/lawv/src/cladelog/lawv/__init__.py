"""cladelog.lawv: the Law V check, R = ΔA / S, and its traffic light.

The pure arithmetic lives here; the plugin wiring (events, hooks, CLI) in
:mod:`cladelog.lawv.plugin`. Start with :func:`evaluate`.

Every name of ``__all__`` is importable from this package. Only :func:`evaluate`,
:func:`parse_window` and :class:`LawVInputError` are bound when the package is
imported (they are light); the other names are loaded from their modules on first
use (PEP 562), so that importing the plugin module, which every ``cladelog`` command
does when lawv is enabled, does not pay for the whole arithmetic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cladelog.core import lazy_exports

__version__ = "0.1.0"

# Bound eagerly, before anything can import the submodule ``cladelog.lawv.evaluate``
# on its own: the import system would otherwise set the package attribute
# ``evaluate`` to that module instead of the function. ``evaluate.py`` imports its
# building blocks inside the function, so this stays cheap.
from cladelog.lawv.errors import LawVInputError
from cladelog.lawv.evaluate import evaluate, parse_window

if TYPE_CHECKING:
    from cladelog.lawv.absolute import AbsoluteValue, AnchorTerm, absolute_value, total_band
    from cladelog.lawv.claims import ClaimedGains, CountedGain, claimed_gains, window_defects
    from cladelog.lawv.contract import MAX_MC_SAMPLES, Anchor, Contract, parse_contract
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

#: Lazily exported name -> the submodule that defines it.
_LAZY = {
    "AbsoluteValue": "absolute",
    "AnchorTerm": "absolute",
    "absolute_value": "absolute",
    "total_band": "absolute",
    "ClaimedGains": "claims",
    "CountedGain": "claims",
    "claimed_gains": "claims",
    "window_defects": "claims",
    "MAX_MC_SAMPLES": "contract",
    "Anchor": "contract",
    "Contract": "contract",
    "parse_contract": "contract",
    "MeasuredAnchor": "measurement",
    "Measurement": "measurement",
    "parse_measurement": "measurement",
    "MonteCarloBand": "montecarlo",
    "KINDS": "register",
    "Entry": "register",
    "Stage": "register",
    "parse_entries": "register",
    "parse_entry": "register",
    "CheckResult": "result",
    "CONTINUE": "traffic",
    "DEFECTIVE": "traffic",
    "GAP": "traffic",
    "HALT": "traffic",
    "VERDICTS": "traffic",
    "WARNING": "traffic",
    "classify": "traffic",
}

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
    "__version__",
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


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
