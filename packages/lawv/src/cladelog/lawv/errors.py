"""The one exception type of the Law V arithmetic."""

from __future__ import annotations

from cladelog.core import InputError

__all__ = ["LawVInputError"]


class LawVInputError(InputError):
    """Malformed input to the Law V check.

    The one-line message starts with the path of the offending field, e.g.
    ``contract.anchors[2].rating_uncertainty: must be a finite number >= 0, got -1``.
    A *semantically* invalid check (anchors that differ between the endpoints, a
    gap in the register, ...) is not an input error: it yields a DEFECTIVE result.
    """
