"""The graph-engine plugin's projection: one light summary row per recorded session."""

from __future__ import annotations

from typing import Any, Final

from cladelog.core import Projection, RecordedEvent

from .events import EVENT_TYPES, PREFIX, STREAM_PREFIX, record_status

__all__ = ["SESSIONS", "apply_sessions"]

_PACKED: Final = PREFIX + "records_packed"


def _row(state: dict[str, Any], stream: str) -> dict[str, Any]:
    sid = stream[len(STREAM_PREFIX):] if stream.startswith(STREAM_PREFIX) else stream
    sessions: dict[str, Any] = state["sessions"]
    row = sessions.get(sid)
    if row is None:
        row = sessions[sid] = {"records": 0, "settles": 0, "errors": 0, "status": "running",
                               "revision": 0, "digest": None}
    return row


def _settled(row: dict[str, Any], data: dict[str, Any]) -> None:
    """Keep the revision and digest of a ``settled`` record."""
    row["revision"] = data.get("revision", row["revision"])
    row["digest"] = data.get("digest")


def _fold(row: dict[str, Any], kind: str, data: Any) -> None:
    row["records"] += 1
    if kind == "provider_error":
        row["errors"] += 1
        return
    status = record_status(kind, data)
    if status is not None:
        row["status"] = status
        if kind == "settled":
            row["settles"] += 1
            _settled(row, data)


def apply_sessions(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    """Count a session's records; keep its status, last settled revision and digest.

    ``status`` is ``running`` after a (re)load, then ``settled`` or ``capped`` (a per-settle
    cap stopped the last settle), or ``failed`` (a ``run_failed`` record: a scenario step
    was refused); other records leave it as it was (:func:`.events.record_status`). A
    packed event counts as its records would one by one: it carries their counts, the last
    ``settled`` and the status they leave (schema version 3, older ones upcast).
    """
    row = _row(state, event.stream)
    if event.type == _PACKED:
        data = event.data
        row["records"] += data["count"]
        row["errors"] += data["errors"]
        row["settles"] += data["settles"]
        if data["settled"] is not None:
            _settled(row, data["settled"])
        if data["status"] is not None:
            row["status"] = data["status"]
    else:
        _fold(row, event.type[len(PREFIX):], event.data)
    return state


SESSIONS: Final = Projection(
    name="graph_engine.sessions",
    # 2: packed events count every settle and set the status as their records one by one
    version=2,
    event_types=frozenset(t.name for t in EVENT_TYPES),
    initial={"sessions": {}},
    apply=apply_sessions,
    summary=lambda s: f"{len(s['sessions'])} session(s)",
)
