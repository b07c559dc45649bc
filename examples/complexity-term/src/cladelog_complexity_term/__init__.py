"""An example fork-score term plugin: ComplexityPenalty from a lines-of-code delta.

See README.md. The term itself is pure and lives in :mod:`.term`; the plugin
wiring (``PLUGIN`` and the ``fork_score_terms`` hook) is in :mod:`.plugin`.
"""

from cladelog_complexity_term.term import (
    DEFAULT_KAPPA,
    LINES_PER_UNIT,
    ComplexityInputError,
    complexity_penalty,
    complexity_term,
)

__all__ = [
    "DEFAULT_KAPPA",
    "LINES_PER_UNIT",
    "ComplexityInputError",
    "complexity_penalty",
    "complexity_term",
]
