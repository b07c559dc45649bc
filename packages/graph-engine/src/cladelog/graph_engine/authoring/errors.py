"""Exception types of the authoring modules.

All are :class:`~cladelog.graph_engine.errors.GraphEngineError` subclasses, so core
:class:`~cladelog.core.InputError` subclasses too."""

from __future__ import annotations

from typing import Any

from ..errors import AuthoringError

__all__ = ["AuthoringError", "MemoStabilityError"]


# AuthoringError is defined in ..errors, below the concept-tree validator that raises it.


class MemoStabilityError(AuthoringError):
    """A structural change perturbed an incumbent's memo surface; ``diff`` says where."""

    def __init__(self, message: str, diff: Any) -> None:
        super().__init__(message)
        self.diff = diff
