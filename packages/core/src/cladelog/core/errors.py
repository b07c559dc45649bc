"""The exceptions cladelog raises.

Every error that reaches an operator carries a one-line message that names
the field, position or setting concerned. The CLI maps them to exit codes
(:func:`exit_code`): :class:`VerificationError` (and its subclasses) exits 1, every
other :class:`CladelogError` (:class:`InputError`, :class:`ConfigError`, ...) exits 2.
Plugins derive their errors from these classes, so that none of them reaches the
CLI as an "internal error" (exit 70, kept for bugs).
"""

from __future__ import annotations

__all__ = [
    "ChainError",
    "CladelogError",
    "ConcurrencyError",
    "ConfigError",
    "ImportConflictError",
    "InputError",
    "ProjectionError",
    "StoreError",
    "UnknownEventTypeError",
    "VerificationError",
    "exit_code",
]

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70


class CladelogError(Exception):
    """Base class of every error cladelog raises on purpose."""


class InputError(CladelogError, ValueError):
    """Bad input: a payload, a file or an argument that cannot be accepted."""


class UnknownEventTypeError(InputError):
    """An event type no enabled plugin registered."""


class ConfigError(CladelogError):
    """A deployment file or a plugin setting is wrong."""


class StoreError(CladelogError):
    """The store cannot be opened or used (missing file, server down, ...)."""


class ConcurrencyError(CladelogError):
    """An append's ``expected_version`` does not match the stream; nothing was appended."""

    def __init__(self, stream: str, expected: int, actual: int) -> None:
        super().__init__(
            f"stream {stream!r}: expected version {expected}, but it is at {actual}; "
            "nothing was appended"
        )
        self.stream = stream
        self.expected = expected
        self.actual = actual


class VerificationError(CladelogError):
    """A verification failed (hash chain, signature, gate)."""


class ChainError(VerificationError):
    """The hash chain is broken at ``position``."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"position {position}: {reason}")
        self.position = position
        self.reason = reason


class ImportConflictError(InputError):
    """An imported log disagrees with the history the store already holds."""


class ProjectionError(CladelogError):
    """A projection's ``apply`` (or an upcaster) failed on the event at ``position``: the log
    holds an event the plugin's code cannot fold. Nothing is saved; the message names the
    projection, the position and the exception."""

    def __init__(self, position: int, projection: str | None, reason: str) -> None:
        what = f"projection {projection}" if projection else "upcasting"
        super().__init__(f"position {position}: {what} failed: {reason}")
        self.position = position
        self.projection = projection


def exit_code(exc: BaseException) -> int | None:
    """The exit code of the ``cladelog`` command line for ``exc``: 1 for a
    :class:`VerificationError`, 2 for any other :class:`CladelogError`, ``None`` for an
    exception that is not cladelog's (a bug: the CLI reports it as an internal error, 70)."""
    if isinstance(exc, VerificationError):
        return EXIT_FAILED
    if isinstance(exc, CladelogError):
        return EXIT_BAD_INPUT
    return None
