"""The plugin's settings: the ``[settings.receipts]`` table of ``cladelog.toml``.

::

    [settings.receipts]
    on_mismatch = "refuse"        # or "record": keep a receipt whose claims disagree, flagged
    log_key_file = "keys/log.key" # the log's signer key (relative to cladelog.toml)
    origin = ""                   # checkpoint origin line; default: the log key's name
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = ["ON_MISMATCH", "ReceiptsSettings"]

ON_MISMATCH: Final = ("refuse", "record")


@attrs.frozen
class ReceiptsSettings:
    """Settings of the receipts plugin (every field has a default)."""

    on_mismatch: str = "refuse"
    log_key_file: str = ""
    origin: str = ""
