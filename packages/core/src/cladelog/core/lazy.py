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

__all__ = ["exports_from_source", "lazy_exports"]


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


def exports_from_source(init_file: str) -> dict[str, str]:
    """A package's export list, read from the re-export lines of its ``__init__.py``.

    The list is written once, for type checkers and for this function alike, as one
    ``from .module import name as name`` line a name (the redundant alias is what marks a
    re-export, PEP 484), normally inside ``if TYPE_CHECKING:``. Returns ``{name: module}``
    for :func:`lazy_exports`. Plain text, no :mod:`ast`: the CLI imports this at start-up.
    """
    exports: dict[str, str] = {}
    with open(init_file, encoding="utf-8") as fh:
        source = fh.read()
    for line in source.splitlines():
        text = line.split("#", 1)[0].strip()
        if not text.startswith("from .") or " import " not in text:
            continue
        module, _, rest = text[len("from ."):].partition(" import ")
        name, _, alias = rest.partition(" as ")
        if name.strip() and name.strip() == alias.strip():
            exports[name.strip()] = module.strip()
    if not exports:
        raise ImportError(f"{init_file}: no 'from .module import name as name' export lines")
    return exports
