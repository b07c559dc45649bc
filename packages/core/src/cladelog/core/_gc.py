"""Pausing the cyclic garbage collector around work that allocates and keeps many objects."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block, then restore its previous state.

    For work that allocates many containers that outlive it and form no cycles (an
    appended batch and its events, the modules a command imports): each collection
    it would trigger walks the young objects (and, now and then, the whole heap) to
    free nothing. Reference counting still frees everything as usual meanwhile. A
    collector that was already paused stays paused, and this never turns on one that
    was off when the block began.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
