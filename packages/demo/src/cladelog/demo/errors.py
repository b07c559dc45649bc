"""The demo's errors: bad options and refused folders are input errors (exit 2).

A log that does not verify is not an input error: ``cladelog report`` exits 1
on :class:`ReportVerificationError`, as ``cladelog verify`` does.
"""

from __future__ import annotations

from cladelog.core import CladelogError, InputError, VerificationError

__all__ = ["DemoError", "ReportError", "ReportPathError", "ReportVerificationError"]


class DemoError(InputError):
    """A demo cannot run: bad option, non-empty folder, store not empty...

    The message is one line and starts with the option or path at fault.
    """


class ReportError(CladelogError, ValueError):
    """A report cannot be made (no deployment, or nothing to report)."""


class ReportPathError(ReportError, InputError):
    """The page cannot be written where asked (a folder, a path under a file...).

    The message is one line starting with ``--html:``.
    """


class ReportVerificationError(ReportError, VerificationError):
    """The deployment's hash chain does not verify: no report is made of it.

    The message is one line naming the first position that does not verify.
    """
