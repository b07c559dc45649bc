"""Small shared helpers: canonical strings and digests, running awaitables synchronously."""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Mapping
from typing import Any

from cladelog.core.canonical import canonical_digest, es6_number

from .errors import AuthoringError

__all__ = ["canon", "digest", "error_text", "js_string", "resolve_sync"]

_MAX_DEPTH = 64


def js_string(value: Any) -> str:
    """``String(value)`` for JSON primitives (JavaScript number and boolean formatting)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return es6_number(value)
    return str(value)


def canon(value: Any, path: str = "value", _depth: int = 0) -> str:
    """A recursive key-sorted JSON string of a JSON value (numbers as JavaScript prints them).

    Raises :class:`AuthoringError` naming ``path`` for anything that is not JSON.
    """
    if _depth > _MAX_DEPTH:
        raise AuthoringError(f"{path}: nesting deeper than {_MAX_DEPTH} levels")
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise AuthoringError(f"{path}: must be a finite number, got {value!r}")
        return js_string(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ",".join(
            canon(v, f"{path}[{i}]", _depth + 1) for i, v in enumerate(value)
        ) + "]"
    if isinstance(value, Mapping):
        parts: list[str] = []
        for key in sorted(value, key=lambda k: str(k)):
            if not isinstance(key, str):
                raise AuthoringError(f"{path}: keys must be strings, got {key!r}")
            parts.append(json.dumps(key, ensure_ascii=False) + ":"
                         + canon(value[key], f"{path}.{key}", _depth + 1))
        return "{" + ",".join(parts) + "}"
    raise AuthoringError(f"{path}: not a JSON value ({type(value).__name__})")


def digest(value: Any, path: str = "value") -> str:
    """Hex SHA-256 of the RFC 8785 canonical JSON of ``value`` (whole values, Q12)."""
    try:
        return canonical_digest(value)
    except (ValueError, TypeError) as exc:
        raise AuthoringError(f"{path}: cannot be digested ({exc})") from None


def error_text(exc: BaseException) -> str:
    """``"Type: message"`` of an exception, bounded to 500 characters."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 500 else text[:497] + "..."


def resolve_sync(value: Any, where: str) -> Any:
    """Return ``value``, or run it to completion when it is an awaitable.

    Outside an event loop the awaitable runs on a fresh loop; inside one this raises
    :class:`AuthoringError` (use the ``a``-prefixed async variant instead).
    """
    if not inspect.isawaitable(value):
        return value
    import asyncio  # only for an awaitable: asyncio is ~20 ms of the CLI's start-up

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    if inspect.iscoroutine(value):
        value.close()
    raise AuthoringError(f"{where}: got an awaitable inside a running event loop; "
                         "use the async variant")
