"""Exceptions raised by the fork-score package.

Every exception is a :class:`cladelog.core.InputError` (so also a :class:`ValueError`):
core's CLI reports it as one ``error:`` line and exits 2. Its message is one line of
the form ``<path>: <problem>``, where the path names the offending field
(``child.5F.finetuning.adaptation_improvement_rate``, ``weights.eta``,
``audit_completeness``, ``term loc_delta``, a file name, ...).
"""

from __future__ import annotations

from cladelog.core import InputError, JSONInputError

__all__ = [
    "BatteryInputError",
    "BranchSetError",
    "ForkScoreError",
    "JsonFileError",
    "ScalarInputError",
    "ScoringTermError",
    "WeightsError",
]


class ForkScoreError(InputError):
    """Base class of every input error of the fork-score package."""


class BatteryInputError(ForkScoreError):
    """A parent or child battery-result document is malformed."""


class WeightsError(ForkScoreError):
    """A weight set or weights file is malformed (unknown key, negative value, ...)."""


class ScalarInputError(ForkScoreError):
    """A caller-supplied scalar or threshold is malformed, or the arithmetic overflowed."""


class ScoringTermError(ForkScoreError):
    """An extra scoring term is malformed, collides with another, or returned a bad value."""


class JsonFileError(ForkScoreError, JSONInputError):
    """A JSON file cannot be read or is not strict JSON (core's :class:`JSONInputError`)."""


class BranchSetError(ForkScoreError):
    """A branch-set request is malformed (bad id, bad temperature, unknown set...)."""
