"""fork-score's own hook spec, for plugins that add scoring terms.

Hook-spec version: :data:`HOOKSPEC_VERSION` (**1**). The signature below is a
public contract; changing it bumps the version.

Writing a term plugin
---------------------
A term plugin is an ordinary cladelog plugin that declares
``requires=("fork-score",)`` (fork-score adds this spec when it is registered,
so the hook only exists where fork-score is enabled) and implements::

    from cladelog.core import hookimpl
    from cladelog.fork_score import ScoringTerm

    FORK_SCORE_HOOKSPEC_VERSION = 1   # optional: the version this plugin was built for

    @hookimpl
    def fork_score_terms():
        return [ScoringTerm(name="loc_growth", weight_name="kappa", default_weight=0.05,
                            sign=-1, fn=my_pure_function)]

The contract of a :class:`~cladelog.fork_score.terms.ScoringTerm` (names,
signs, ``fn(parent, child, inputs)`` purity, ``iota``/``kappa`` filling) is in
:mod:`cladelog.fork_score.terms`. Every enabled plugin's terms are collected
each time a deployment scores a fork, validated together (duplicate names or
weight names are refused, naming the term) and passed to
:func:`~cladelog.fork_score.score` as ``extra_terms``; each term's weight may be
overridden in the weights file under its ``weight_name``, and its contribution
appears in the breakdown.

A plugin module that sets ``FORK_SCORE_HOOKSPEC_VERSION`` to a version other
than this one is refused when the deployment is configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cladelog.core.hookspecs import hookspec

if TYPE_CHECKING:
    from cladelog.fork_score.terms import ScoringTerm

__all__ = ["HOOKSPEC_VERSION", "fork_score_terms"]

#: Version of the hook specs in this module.
HOOKSPEC_VERSION = 1


@hookspec
def fork_score_terms() -> Sequence[ScoringTerm]:  # type: ignore[empty-body]
    """Return the scoring terms this plugin adds to the ForkScore (hook-spec v1).

    Return a sequence of :class:`~cladelog.fork_score.terms.ScoringTerm` (an
    empty one is fine). Called with no arguments whenever a deployment scores
    a fork; keep it cheap and free of side effects. A term filling ``iota``
    (SecurityRiskPenalty) or ``kappa`` (ComplexityPenalty) supplies that
    reserved built-in term; any other term adds its own breakdown key.
    """
