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

from cladelog.core import exports_from_source, lazy_exports

__version__ = "0.1.0"

# The export list, written once as ``from .module import name as name`` lines (read by
# cladelog.core.exports_from_source). These three are bound eagerly, before anything can
# import the submodule ``cladelog.lawv.evaluate`` on its own: the import system would
# otherwise set the package attribute ``evaluate`` to that module instead of the function.
# ``evaluate.py`` imports its building blocks inside the function, so this stays cheap.
from .errors import LawVInputError as LawVInputError
from .evaluate import evaluate as evaluate
from .evaluate import parse_window as parse_window

if TYPE_CHECKING:  # the export list goes on: the names loaded on first use
    from .absolute import AbsoluteValue as AbsoluteValue
    from .absolute import AnchorTerm as AnchorTerm
    from .absolute import absolute_value as absolute_value
    from .absolute import total_band as total_band
    from .claims import ClaimedGains as ClaimedGains
    from .claims import CountedGain as CountedGain
    from .claims import claimed_gains as claimed_gains
    from .claims import window_defects as window_defects
    from .contract import MAX_MC_SAMPLES as MAX_MC_SAMPLES
    from .contract import Anchor as Anchor
    from .contract import Contract as Contract
    from .contract import parse_contract as parse_contract
    from .measurement import MeasuredAnchor as MeasuredAnchor
    from .measurement import Measurement as Measurement
    from .measurement import parse_measurement as parse_measurement
    from .montecarlo import MonteCarloBand as MonteCarloBand
    from .register import KINDS as KINDS
    from .register import Entry as Entry
    from .register import Stage as Stage
    from .register import parse_entries as parse_entries
    from .register import parse_entry as parse_entry
    from .result import CheckResult as CheckResult
    from .traffic import CONTINUE as CONTINUE
    from .traffic import DEFECTIVE as DEFECTIVE
    from .traffic import GAP as GAP
    from .traffic import HALT as HALT
    from .traffic import VERDICTS as VERDICTS
    from .traffic import WARNING as WARNING
    from .traffic import classify as classify

_LAZY = exports_from_source(__file__)
__all__ = [*_LAZY, "__version__"]
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
