"""Exception types of the authoring modules (all :class:`ValueError` subclasses).

They are defined in :mod:`cladelog.graph_engine.errors`, so that the concept-tree validator,
which sits below this package, raises the same classes.
"""

from __future__ import annotations

from ..errors import AuthoringError, MemoStabilityError

__all__ = ["AuthoringError", "MemoStabilityError"]
