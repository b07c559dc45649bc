"""consensus's own hook spec: the audit replay a validator runs before voting.

Hook-spec version: :data:`HOOKSPEC_VERSION` (**1**); the signature is a public
contract. fork-score implements it as an *optional* hook implementation (pluggy's
``optionalhook=True``), so a deployment without consensus is unaffected, and
consensus never imports fork-score: plugins meet through hooks.

``consensus_audit(document)`` receives the *audit inputs document* whose
canonical SHA-256 (:func:`cladelog.core.canonical_digest`) is a proposal's eval
digest::

    {"parent": {battery results}, "child": {battery results},
     "weights": {weights overrides} | null, "scalars": {name: number}}

and returns the audit result ``{"verdict": "ACCEPT" | "MARGINAL" | "REJECT",
"hard_flags": [str], "score": float | null}``, or ``None`` when it cannot audit
(the first non-None result wins). It must be deterministic: a challenge re-runs it
and compares. Bad inputs raise an exception whose message names the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cladelog.core import hookspec

__all__ = ["HOOKSPEC_VERSION", "consensus_audit"]

#: Version of the hook specs in this module.
HOOKSPEC_VERSION = 1


@hookspec(firstresult=True)
def consensus_audit(document: Mapping[str, Any]) -> Mapping[str, Any] | None:  # type: ignore[empty-body]
    """Re-run the audit on the inputs document (hook-spec v1); see the module docstring."""
