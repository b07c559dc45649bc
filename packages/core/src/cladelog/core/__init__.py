"""cladelog core: the append-only, hash-chained event log, hook specs, plugins and replay.

The public API is listed in ``__all__``; names are imported lazily so that the
command line starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "canonical_bytes": "canonical",
    "canonical_digest": "canonical",
    "CanonicalError": "canonical",
    "DeploymentConfig": "config",
    "Deployment": "deployment",
    "ChainError": "errors",
    "CladelogError": "errors",
    "ConcurrencyError": "errors",
    "ConfigError": "errors",
    "ImportConflictError": "errors",
    "InputError": "errors",
    "ProjectionError": "errors",
    "StoreError": "errors",
    "UnknownEventTypeError": "errors",
    "VerificationError": "errors",
    "GENESIS_HASH": "events",
    "NewEvent": "events",
    "RecordedEvent": "events",
    "chain_hash": "events",
    "encode_body": "events",
    "GateResult": "gate",
    "Vote": "gate",
    "HOOKSPEC_VERSION": "hookspecs",
    "hookimpl": "hookspecs",
    "hookspec": "hookspecs",
    "PluginInfo": "plugins",
    "Projection": "projections",
    "ReplayResult": "projections",
    "replay": "projections",
    "state_digest": "projections",
    "EventType": "registry",
    "EventTypeRegistry": "registry",
    "PayloadError": "schema",
    "Checkpoint": "store",
    "EventStore": "store",
    "Head": "store",
    "PreparedEvent": "store",
    "VerifyReport": "store",
    "open_store": "store",
    "JSONInputError": "strictjson",
    "loads_strict": "strictjson",
    "read_json_file": "strictjson",
}

__all__ = [
    "GENESIS_HASH",
    "HOOKSPEC_VERSION",
    "CanonicalError",
    "ChainError",
    "Checkpoint",
    "CladelogError",
    "ConcurrencyError",
    "ConfigError",
    "Deployment",
    "DeploymentConfig",
    "EventStore",
    "EventType",
    "EventTypeRegistry",
    "GateResult",
    "Head",
    "ImportConflictError",
    "InputError",
    "JSONInputError",
    "NewEvent",
    "PayloadError",
    "PluginInfo",
    "PreparedEvent",
    "Projection",
    "ProjectionError",
    "RecordedEvent",
    "ReplayResult",
    "StoreError",
    "UnknownEventTypeError",
    "VerificationError",
    "VerifyReport",
    "Vote",
    "__version__",
    "canonical_bytes",
    "canonical_digest",
    "chain_hash",
    "encode_body",
    "hookimpl",
    "hookspec",
    "loads_strict",
    "open_store",
    "read_json_file",
    "replay",
    "state_digest",
]

if TYPE_CHECKING:
    from .canonical import CanonicalError, canonical_bytes, canonical_digest
    from .config import DeploymentConfig
    from .deployment import Deployment
    from .errors import (
        ChainError,
        CladelogError,
        ConcurrencyError,
        ConfigError,
        ImportConflictError,
        InputError,
        StoreError,
        UnknownEventTypeError,
        VerificationError,
    )
    from .events import GENESIS_HASH, NewEvent, RecordedEvent, chain_hash, encode_body
    from .gate import GateResult, Vote
    from .hookspecs import HOOKSPEC_VERSION, hookimpl, hookspec
    from .plugins import PluginInfo
    from .projections import Projection, ReplayResult, replay, state_digest
    from .registry import EventType, EventTypeRegistry
    from .schema import PayloadError
    from .store import Checkpoint, EventStore, Head, PreparedEvent, VerifyReport, open_store
    from .strictjson import JSONInputError, loads_strict, read_json_file


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
