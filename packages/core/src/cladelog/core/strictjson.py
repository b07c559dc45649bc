"""Strict JSON reading: the one place cladelog parses JSON that someone handed it.

Strict means, beyond RFC 8259's grammar:

* no ``NaN``, ``Infinity`` or ``-Infinity`` literals;
* no number beyond a double's range (``1e999`` is refused, not read as infinity);
* no object with the same member name twice (RFC 8259 leaves the outcome to the
  reader; different readers keep different copies, so a signed or hashed document
  could mean two things);
* no nesting so deep that the parser would run out of stack;
* text is UTF-8 (a file may start with a byte-order mark, which is skipped, as
  RFC 8259 section 8.1 allows a reader to do).

Every refusal raises :class:`JSONInputError` (an :class:`~cladelog.core.InputError`,
so the CLI reports it as one ``error:`` line and exits 2) whose message is
``<where>: <problem>``; ``where`` names the file, line or field. Integers of any
size are read exactly; the range a field allows is the field's business
(:mod:`cladelog.core.fields`).

This module imports only the standard library and :mod:`cladelog.core.errors`, so
pure verifiers and the CLI can use it without loading anything else.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from .errors import InputError

__all__ = [
    "JSONInputError",
    "loads_strict",
    "read_json_file",
    "read_lines",
    "read_text",
    "shown_name",
]


class JSONInputError(InputError):
    """A JSON text refused by the strict reader, or a file that cannot be read as one.

    ``where`` names the file (or ``file:line``, or the field); ``problem`` is the rest of
    the message. For a refused text ``reason`` is the parser's complaint alone (``duplicate
    member 'a'``), so that a caller with its own wording can reuse it; for a file that
    cannot be read it is ``None``.
    """

    def __init__(self, where: str, problem: str, reason: str | None = None) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem
        self.reason = reason


class _Refused(ValueError):
    """Raised from the parser's hooks; its message is the reason."""


def _reject_constant(name: str) -> Any:
    raise _Refused(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # inf - inf is nan; a finite value gives 0.0
        raise _Refused(f"number {text[:40]} is out of range for a double")
    return value


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # which one, only when there is one
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"duplicate member {key[:40]!r}")
            seen.add(key)
    return out


def _refused(where: str, reason: str) -> JSONInputError:
    return JSONInputError(where, f"invalid JSON ({reason})", reason)


def loads_strict(text: str | bytes, where: str) -> Any:
    """Parse one JSON value strictly; ``where`` names the text in the error message.

    ``bytes`` must be UTF-8 (a leading byte-order mark is not skipped here: it is not
    part of a JSON text). Raises :class:`JSONInputError`.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _refused(where, f"not valid UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                          object_pairs_hook=_unique_members)
    except RecursionError:
        raise _refused(where, "nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, _Refused, an integer too long to convert
        lines = str(exc).splitlines()
        raise _refused(where, lines[0] if lines else type(exc).__name__) from None


def shown_name(name: str) -> str:
    """A file name as it may stand in a one-line message (control characters escaped)."""
    if name.isprintable():
        return name
    return name.encode("unicode_escape", "backslashreplace").decode("ascii")


def _path_text(path: object) -> str:
    if not isinstance(path, str | os.PathLike):
        raise JSONInputError("path", f"must be a file path, got {type(path).__name__}")
    return shown_name(os.fsdecode(path))


def _cannot_read(where: str, exc: BaseException) -> JSONInputError:
    if isinstance(exc, OSError):
        reason = exc.strerror or type(exc).__name__
    else:  # an embedded NUL byte and the like
        reason = "not a valid file name"
    return JSONInputError(where, f"cannot read ({reason})")


def read_text(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of a file (``'-'`` for stdin), without a leading byte-order mark.

    Raises :class:`JSONInputError` naming the file when it cannot be read or is not UTF-8.
    """
    where = _path_text(path)
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                raw = fh.read()
    except (OSError, ValueError) as exc:
        raise _cannot_read(where, exc) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JSONInputError(where, f"not valid UTF-8 (byte {exc.start})") from None


def read_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a text file (``'-'`` for stdin) with their numbers, read one
    at a time (an exported log can be large).

    Raises :class:`JSONInputError` naming the file (and line) when it cannot be read or is
    not UTF-8.
    """
    where = _path_text(path)
    try:
        fh = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    except (OSError, ValueError) as exc:
        raise _cannot_read(where, exc) from None
    try:
        for n, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise JSONInputError(f"{where}:{n}",
                                     f"not valid UTF-8 (byte {exc.start})") from None
            if line.strip():
                yield n, line
    except OSError as exc:
        raise _cannot_read(where, exc) from None
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()


def read_json_file(path: str | os.PathLike[str]) -> Any:
    """Read one JSON value from a file (``'-'`` for stdin), strictly.

    Raises :class:`JSONInputError` (``<file>: cannot read (...)``, ``<file>: not valid
    UTF-8 (byte N)``, ``<file>: invalid JSON (...)``).
    """
    return loads_strict(read_text(path), _path_text(path))
