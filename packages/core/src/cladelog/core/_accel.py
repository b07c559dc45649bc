"""The optional compiled module (``_speedups.c``), looked up once.

``CLADELOG_NO_SPEEDUPS=1`` turns it off; without it (no C compiler at install time) the
pure-Python code runs, which is the reference for what the module does.
"""

from __future__ import annotations

import os
from typing import Any

_SPEEDUPS: Any = False  # not looked up yet


def speedups() -> Any:
    """The compiled module, or None (not built here, or ``CLADELOG_NO_SPEEDUPS`` set)."""
    global _SPEEDUPS
    if _SPEEDUPS is False:
        _SPEEDUPS = None
        if not os.environ.get("CLADELOG_NO_SPEEDUPS"):
            try:
                from . import _speedups as module  # type: ignore[attr-defined]
            except ImportError:
                pass
            else:
                _SPEEDUPS = module
    return _SPEEDUPS
