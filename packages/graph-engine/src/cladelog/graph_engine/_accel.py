"""The optional compiled module of this package (``_speedups.c``), looked up once.

``CLADELOG_NO_SPEEDUPS=1`` turns it off, as it does core's; without it (no C compiler at
install time) the pure-Python code runs, which is the reference for what the module does.
"""

from __future__ import annotations

import os
from typing import Any


def speedups() -> Any:
    """The compiled module, or None (not built here, or ``CLADELOG_NO_SPEEDUPS`` set)."""
    if os.environ.get("CLADELOG_NO_SPEEDUPS"):
        return None
    try:
        from . import _speedups as module  # type: ignore[attr-defined]
    except ImportError:
        return None
    return module


def compiled(name: str) -> Any:
    """The compiled module's ``name`` (a function or type), or None without the module."""
    module = speedups()
    return None if module is None else getattr(module, name)
