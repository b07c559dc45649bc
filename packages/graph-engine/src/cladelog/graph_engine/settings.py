"""``[settings.graph-engine]`` in ``cladelog.toml``: how sessions write to the log."""

from __future__ import annotations

import attrs

__all__ = ["GraphEngineSettings"]


def _non_negative(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 0:
        raise ValueError(f"{attribute.name}: must be an integer >= 0, got {value!r}")


@attrs.frozen
class GraphEngineSettings:
    """Session recording settings.

    ``flush_every``: a settle that buffers this many records appends them early (0: only at
    the end of each settle), which bounds memory on big boots.

    ``pack_records`` (default 1000): records are appended in runs of up to this many, one
    ``graph_engine.records_packed`` event per run. Every record is still kept and covered by
    the hash of its event, and replays decode them; packed sessions are several times
    cheaper to write and to replay than one event per record. 0 appends one event
    ``graph_engine.<record type>`` per record, for consumers that want an event per
    derivation.

    ``checkpoint_every``: after a settle, once this many records were written since the last
    checkpoint, a ``graph_engine.checkpoint`` event holding the whole state is appended in
    the same batch, and :func:`replay_session` starts from the last one (0: never).
    """

    flush_every: int = attrs.field(default=10_000, validator=_non_negative)
    pack_records: int = attrs.field(default=1000, validator=_non_negative)
    checkpoint_every: int = attrs.field(default=50_000, validator=_non_negative)
