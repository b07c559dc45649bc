"""The plugin's settings: the ``[settings.receipts]`` table of ``cladelog.toml``.

::

    [settings.receipts]
    on_mismatch = "refuse"        # or "record": keep a receipt whose claims disagree, flagged
    log_key_file = "keys/log.key" # the log's signer key (relative to cladelog.toml)
    origin = ""                   # checkpoint origin line; default: the log key's name
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs

__all__ = ["ON_MISMATCH", "ReceiptsSettings"]

ON_MISMATCH: Final = ("refuse", "record")


def _one_of_on_mismatch(_: Any, __: Any, value: str) -> None:
    if value not in ON_MISMATCH:
        raise ValueError(f"must be one of {', '.join(map(repr, ON_MISMATCH))}, got {value!r}")


@attrs.frozen
class ReceiptsSettings:
    """Settings of the receipts plugin (every field has a default)."""

    on_mismatch: Literal["refuse", "record"] = attrs.field(default="refuse",
                                                          validator=_one_of_on_mismatch)
    log_key_file: str = ""
    origin: str = ""
