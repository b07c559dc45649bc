"""cladelog core: the append-only, hash-chained event log, hook specs, plugins and replay.

The public API is the export list below, written once: type checkers read its import
lines, and :func:`~cladelog.core.lazy.exports_from_source` reads the same lines to build
``__all__`` and the lazy loader, so that a name is imported on first use and the command
line starts fast. Add a public name by adding one ``from .module import name as name``
line (and say so in the CHANGELOG; the API snapshot test shows the change).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import exports_from_source as exports_from_source  # exported, and used below
from .lazy import lazy_exports as lazy_exports  # exported, and used below

__version__ = "0.1.0"

if TYPE_CHECKING:  # the export list: one public name a line
    from .canonical import CanonicalError as CanonicalError
    from .canonical import canonical_bytes as canonical_bytes
    from .canonical import canonical_digest as canonical_digest
    from .cli import OneLineCommand as OneLineCommand
    from .cli import OneLineGroup as OneLineGroup
    from .cli import fail as fail
    from .cli import pass_deployment as pass_deployment
    from .config import DeploymentConfig as DeploymentConfig
    from .config import find_config as find_config
    from .deployment import Deployment as Deployment
    from .errors import EXIT_BAD_INPUT as EXIT_BAD_INPUT
    from .errors import EXIT_FAILED as EXIT_FAILED
    from .errors import ChainError as ChainError
    from .errors import CladelogError as CladelogError
    from .errors import ConcurrencyError as ConcurrencyError
    from .errors import ConfigError as ConfigError
    from .errors import ImportConflictError as ImportConflictError
    from .errors import InputError as InputError
    from .errors import ProjectionError as ProjectionError
    from .errors import StoreError as StoreError
    from .errors import UnknownEventTypeError as UnknownEventTypeError
    from .errors import VerificationError as VerificationError
    from .errors import exit_code as exit_code
    from .events import GENESIS_HASH as GENESIS_HASH
    from .events import NewEvent as NewEvent
    from .events import RecordedEvent as RecordedEvent
    from .events import chain_hash as chain_hash
    from .events import encode_body as encode_body
    from .gate import GateResult as GateResult
    from .gate import Vote as Vote
    from .hookspecs import HOOKSPEC_VERSION as HOOKSPEC_VERSION
    from .hookspecs import hookimpl as hookimpl
    from .hookspecs import hookspec as hookspec
    from .output import HELP_SETTINGS as HELP_SETTINGS
    from .output import echo_json as echo_json
    from .output import human_number as human_number
    from .output import json_option as json_option
    from .output import progress as progress
    from .output import progress_option as progress_option
    from .plugins import PluginInfo as PluginInfo
    from .projections import Projection as Projection
    from .projections import ReplayResult as ReplayResult
    from .projections import replay as replay
    from .projections import state_digest as state_digest
    from .registry import EventType as EventType
    from .registry import EventTypeRegistry as EventTypeRegistry
    from .schema import PayloadError as PayloadError
    from .store import Checkpoint as Checkpoint
    from .store import EventStore as EventStore
    from .store import Head as Head
    from .store import PreparedEvent as PreparedEvent
    from .store import VerifyReport as VerifyReport
    from .store import open_store as open_store
    from .store import redact_url as redact_url
    from .strictjson import JSONInputError as JSONInputError
    from .strictjson import loads_strict as loads_strict
    from .strictjson import read_json_file as read_json_file
    from .tables import echo_table as echo_table


_EXPORTS = exports_from_source(__file__)
__all__ = [*_EXPORTS, "__version__"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
