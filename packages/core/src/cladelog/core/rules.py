"""The rules every event in a cladelog log obeys, in one place for append, import and verify.

An append builds its events (the store numbers them, the deployment fills ``meta`` and the
clock ``recorded_at``), so it checks what a caller gives: the stream, the type and its
payload, the caller's ``meta``. An import receives whole events, written elsewhere, and
``cladelog verify`` reads a log that may have been written by an older version or by hand;
both check every event against the same rules through :class:`LogRules`, which calls the
very functions an append calls, plus what an append gets right by construction (each
stream's versions run 1, 2, 3, ...; ``recorded_at`` in the documented form).

The rules, by name (a refusal names its rule):

``stream``
    a non-empty string of at most 200 characters, no control characters, no lone
    surrogate.
``reserved``
    the stream ``core.plugins`` and the types ``core.*`` are cladelog's own record of the
    enabled plugins: only ``core.plugin_enabled`` and ``core.plugin_disabled``, only on
    that stream, and never through a caller's append.
``stream_version``
    a stream's events are numbered 1, 2, 3, ... without a gap, continuing the stream.
``type``
    ``plugin.event_name`` (parts of ``[a-z][a-z0-9_]*``). A type no enabled plugin
    registers is kept as it is (a plugin enabled elsewhere, or in the past), and so is an
    older schema version of a registered type (upcast when read): logs written by older
    plugins hold both.
``meta``
    an object; ``plugin`` names the plugin of the event's type; ``plugin_version`` is the
    version that plugin runs (an append) or a version of it the log recorded as enabled
    before the event (import, verify); ``actor`` (required) and ``correlation_id`` are
    non-empty strings.
``recorded_at``
    exactly ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, a real UTC date and time.
``data``
    the payload passes its type's schema (upcast first), for types an enabled plugin
    registers (others are kept as they are).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from .errors import InputError
from .registry import _valid_type_name

if TYPE_CHECKING:
    from .events import RecordedEvent
    from .registry import EventTypeRegistry

__all__ = [
    "CORE_TYPES",
    "PLUGINS_STREAM",
    "RULES",
    "LogRules",
    "RuleError",
    "check_idempotency_key",
    "check_meta",
    "check_payload",
    "check_recorded_at",
    "check_reserved",
    "check_stream",
]

#: cladelog's own stream and event types (see :mod:`cladelog.core.builtin`)
PLUGINS_STREAM = "core.plugins"
CORE_TYPES = frozenset(("core.plugin_enabled", "core.plugin_disabled"))
#: cladelog's own streams and the types each holds (the plugin set; the transparency log's
#: signed checkpoints and received cosignatures, :mod:`cladelog.core.tlog`)
CORE_STREAMS: Mapping[str, frozenset[str]] = {
    PLUGINS_STREAM: CORE_TYPES,
    "core.tlog": frozenset(("core.checkpoint_signed", "core.cosignature_received")),
}
#: the rules' names, in the order :meth:`LogRules.violations` checks them
RULES = ("stream", "reserved", "type", "stream_version", "meta", "recorded_at", "data")
MAX_STREAM = 200


class RuleError(InputError):
    """An event breaks ``rule``; ``position`` is the event's, when it has one."""

    def __init__(self, rule: str, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.rule = rule
        self.position = position


def _at(where: str, field: str) -> str:
    return f"{where}.{field}" if where else field


def check_stream(stream: Any, where: str = "") -> None:
    """Rule ``stream``."""
    if stream.__class__ is not str or not stream or len(stream) > MAX_STREAM:
        raise RuleError("stream", f"{_at(where, 'stream')}: must be a non-empty string of at "
                                  f"most {MAX_STREAM} chars")
    try:
        stream.encode("utf-8")
    except UnicodeEncodeError:
        raise RuleError("stream", f"{_at(where, 'stream')}: contains a lone surrogate") from None
    if not stream.isprintable():  # control characters (a NUL cannot even be stored everywhere)
        bad = next(c for c in stream if not c.isprintable())
        raise RuleError("stream", f"{_at(where, 'stream')}: must not contain control "
                                  f"characters (U+{ord(bad):04X})")


def check_reserved(stream: str, type_: str, where: str = "", *, appending: bool = False) -> None:
    """Rule ``reserved``: cladelog's own stream and types. ``appending``: a caller's append,
    which may write neither."""
    if stream in CORE_STREAMS and (appending or type_ not in CORE_STREAMS[stream]):
        raise RuleError("reserved", f"{_at(where, 'stream')}: {stream} is reserved for "
                                    "cladelog's own records")
    if type_.__class__ is str and type_.startswith("core."):
        if appending:
            raise RuleError("reserved", f"{_at(where, 'type')}: {type_} is written by cladelog "
                                        "itself (plugin enablement follows the deployment "
                                        "file), not appended")
        if type_ not in CORE_STREAMS.get(stream, ()):
            allowed = "; ".join(f"{' and '.join(sorted(types))} on stream {name}"
                                for name, types in CORE_STREAMS.items())
            raise RuleError("reserved", f"{_at(where, 'type')}: {type_} is cladelog's own type: "
                                        f"only {allowed}")


def check_meta(meta: Any, *, plugin: str, versions: str | Collection[str] | None,
               where: str = "") -> None:
    """Rule ``meta``. ``versions``: the plugin version an append writes (a string), the
    versions of ``plugin`` the log recorded as enabled (a collection), or None (any)."""
    if meta.__class__ is not dict and not isinstance(meta, Mapping):
        raise RuleError("meta", f"{_at(where, 'meta')}: must be an object")
    appending = isinstance(versions, str)
    given = meta.get("plugin")
    if given != plugin:
        if appending:
            raise RuleError("meta", f"{_at(where, 'meta.plugin')}: set by the deployment (the "
                                    f"event type's plugin is {plugin} {versions}), not by the "
                                    "caller")
        raise RuleError("meta", f"{_at(where, 'meta.plugin')}: must name the plugin of the "
                                f"event's type, {plugin!r}, not {given!r}")
    version = meta.get("plugin_version")
    if appending:
        if version != versions:
            raise RuleError("meta", f"{_at(where, 'meta.plugin_version')}: set by the "
                                    f"deployment (the event type's plugin is {plugin} "
                                    f"{versions}), not by the caller")
    elif version.__class__ is not str or not version:
        raise RuleError("meta", f"{_at(where, 'meta.plugin_version')}: must be a non-empty "
                                "string")
    elif versions is not None and version not in versions:
        raise RuleError("meta", f"{_at(where, 'meta.plugin_version')}: {plugin} {version} "
                                "was not recorded as enabled in the log before this event")
    if "actor" not in meta:
        raise RuleError("meta", f"{_at(where, 'meta.actor')}: required")
    for key in ("actor", "correlation_id"):
        if key in meta and (meta[key].__class__ is not str or not meta[key]):
            raise RuleError("meta", f"{_at(where, 'meta.' + key)}: must be a non-empty string")


def check_recorded_at(value: Any, where: str = "") -> None:
    """Rule ``recorded_at``: exactly ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (UTC, microseconds)."""
    from datetime import datetime

    fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
    try:
        if value.__class__ is not str or len(value) != 27 or not value.isascii():
            raise ValueError(value)
        if datetime.strptime(value, fmt).strftime(fmt) != value:  # zero padding, digits
            raise ValueError(value)
    except ValueError:
        shown = value[:40] if value.__class__ is str else type(value).__name__
        raise RuleError("recorded_at", f"{_at(where, 'recorded_at')}: must be a UTC time "
                                       f"written YYYY-MM-DDTHH:MM:SS.ffffffZ, not "
                                       f"{shown!r}") from None


def check_idempotency_key(key: Any) -> None:
    """An idempotency key: a non-empty string of at most 200 characters that UTF-8 can
    encode, without control characters (it is stored beside the log)."""
    if key.__class__ is not str or not key or len(key) > MAX_STREAM:
        raise InputError(f"idempotency_key: must be a non-empty string of at most "
                         f"{MAX_STREAM} chars")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError("idempotency_key: is not valid UTF-8 text (a byte that is not "
                         "UTF-8, or a lone surrogate)") from None
    if not key.isprintable():
        bad = next(c for c in key if not c.isprintable())
        raise InputError(f"idempotency_key: must not contain control characters "
                         f"(U+{ord(bad):04X})")


def check_payload(registry: EventTypeRegistry, type_: str, schema_version: int, data: Any,
                  where: str = "") -> None:
    """Rule ``data``: stored ``data`` of a registered type, upcast to the current version,
    passes the type's payload class."""
    try:
        registry.structure(type_, registry.upcast(type_, schema_version, data))
    except InputError as exc:
        raise RuleError("data", f"{where + ': ' if where else ''}{exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # an upcaster's
        raise RuleError("data", f"{where + ': ' if where else ''}data: cannot be upcast "
                                f"({type(exc).__name__}: {exc})") from None


class LogRules:
    """Check a log's events in position order, from position 1, against every rule.

    ``registry`` and ``owners`` (event type -> plugin) are the deployment's. Feed every
    event to :meth:`violations` in order: the object follows each stream's version and
    the plugins the log records as enabled.
    """

    def __init__(self, registry: EventTypeRegistry, owners: Mapping[str, str]) -> None:
        self.registry = registry
        self.owners = owners
        self.versions: dict[str, int] = {}
        self.enabled: dict[str, set[str]] = {}
        self._good_time: str | None = None

    def violations(self, event: RecordedEvent, *, check: bool = True,
                   payload: bool = True) -> list[RuleError]:
        """Every rule ``event`` breaks (empty when none), each a :class:`RuleError` naming
        its position. ``check=False`` only follows the event (a known prefix)."""
        stream, type_ = event.stream, event.type
        previous = self.versions.get(stream, 0) if stream.__class__ is str else 0
        if stream.__class__ is str:
            self.versions[stream] = event.stream_version
        if not check:
            self._follow_plugins(event)
            return []
        found: list[RuleError] = []

        def run(rule: Callable[..., None], *args: Any, **kw: Any) -> None:
            try:
                rule(*args, **kw)
            except RuleError as exc:
                found.append(RuleError(exc.rule, str(exc), event.position))

        run(check_stream, stream)
        if type_.__class__ is not str or not _valid_type_name(type_):
            found.append(RuleError("type", f"type: {str(type_)[:60]!r} is not an event type "
                                           "name (plugin.event_name)", event.position))
            plugin = None
        else:
            run(check_reserved, stream, type_)
            plugin = self._plugin_of(type_, event.meta)
        if event.stream_version != previous + 1:
            found.append(RuleError(
                "stream_version", f"stream_version: stream {str(stream)[:60]!r} is at version "
                                  f"{previous}, so its next event is version {previous + 1}, "
                                  f"not {event.stream_version}", event.position))
        if plugin is not None:
            core = plugin == "core"
            run(check_meta, event.meta, plugin=plugin,
                versions=None if core else self.enabled.get(plugin, ()))
        if event.recorded_at != self._good_time:
            before = len(found)
            run(check_recorded_at, event.recorded_at)
            if len(found) == before:
                self._good_time = event.recorded_at
        if payload and type_ in self.registry:
            run(check_payload, self.registry, type_, event.schema_version, event.data)
        self._follow_plugins(event)
        return found

    def _plugin_of(self, type_: str, meta: Any) -> str:
        """The plugin an event of ``type_`` belongs to: its registered owner, else the
        plugin its namespace names (``fork_score.*`` is fork-score's)."""
        owner = self.owners.get(type_)
        if owner is not None:
            return owner
        namespace = type_.split(".", 1)[0]
        given = meta.get("plugin") if meta.__class__ is dict else None
        if given.__class__ is str and given.replace("-", "_") == namespace:
            return given  # type: ignore[return-value]
        return namespace

    def _follow_plugins(self, event: RecordedEvent) -> None:
        """Note the plugin versions the log records as enabled."""
        if event.type == "core.plugin_enabled" and event.stream == PLUGINS_STREAM:
            data = event.data
            if data.__class__ is dict and data.get("name").__class__ is str \
                    and data.get("version").__class__ is str:
                self.enabled.setdefault(data["name"], set()).add(data["version"])
