"""The demo's errors: bad options and refused folders are input errors (exit 2)."""

from __future__ import annotations

__all__ = ["DemoError", "ReportError"]


class DemoError(ValueError):
    """A demo cannot run: bad option, non-empty folder, store not empty...

    The message is one line and starts with the option or path at fault.
    """


class ReportError(ValueError):
    """A report cannot be made (no deployment, or nothing to report)."""
