"""The audit replay the consensus plugin asks for (its ``consensus_audit`` hook).

fork-score implements that hook as an optional hook implementation, so a
deployment without consensus never sees it, and neither plugin imports the other.
The audit inputs document is::

    {"parent": {battery results}, "child": {battery results},
     "weights": {weights overrides} | null, "scalars": {name: number}}

(its canonical SHA-256 is the eval digest a proposal names). The audit is the plain
ForkScore of these inputs with the default floors and no deployment terms, so that
every validator and every challenge computes the same verdict from the same digest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cladelog.fork_score.errors import ScalarInputError

__all__ = ["AUDIT_FIELDS", "audit"]

#: The members of an audit inputs document.
AUDIT_FIELDS = frozenset({"parent", "child", "weights", "scalars"})


def audit(document: Mapping[str, Any]) -> dict[str, Any]:
    """``{"verdict", "hard_flags", "score"}`` of the inputs document; raises
    :class:`~cladelog.fork_score.errors.ForkScoreError` naming the field."""
    from cladelog.fork_score.scoring import read_scalars, score

    if not isinstance(document, Mapping) or set(document) != AUDIT_FIELDS:
        raise ScalarInputError("audit inputs: must be an object with exactly "
                               f"{', '.join(sorted(AUDIT_FIELDS))}")
    scalars = document["scalars"]
    if not isinstance(scalars, Mapping):
        raise ScalarInputError("audit inputs.scalars: must be an object")
    # only the caller scalars: a key such as signal_floor must not reach score()'s
    # keyword parameters (the audit's floors are the defaults)
    checked = read_scalars(scalars)
    result = score(document["parent"], document["child"], document["weights"], **checked)
    return {"verdict": str(result.verdict), "hard_flags": list(result.flags),
            "score": result.score}
