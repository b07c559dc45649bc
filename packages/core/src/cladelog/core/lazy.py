"""Lazily exported package names (PEP 562), shared by every cladelog package.

A package lists its public names and the submodule each lives in; a name is
imported on first use and then cached in the package's namespace, so that
``import cladelog.<package>`` (and the CLI start-up behind it) stays cheap::

    __getattr__, __dir__ = lazy_exports(__name__, {"score": "scoring"}, globals())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package with lazy names.

    ``exports`` maps a public name to the submodule (relative to ``package``)
    that defines it; ``namespace`` is the package's ``globals()``.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
