"""An anchor measurement: one main version measured against every anchor of the set."""

from __future__ import annotations

from typing import Any

import attrs
from cladelog.lawv._fields import (
    check_keys,
    fail,
    opt_number,
    req_int,
    req_list,
    req_mapping,
    req_string,
)
from cladelog.lawv.contract import Anchor, parse_anchor_identity

__all__ = ["MeasuredAnchor", "Measurement", "parse_measurement"]

_REQUIRED = frozenset({"name", "hash", "rating", "rating_uncertainty"})
_OPTIONAL = frozenset({"delta", "uncertainty", "games", "ndelta"})
_TOP = frozenset({"id", "version", "anchors"})


@attrs.frozen
class MeasuredAnchor:
    """One anchor's identity repeated, plus what was measured against it.

    Either ``delta`` (δ_i, Elo of the main version minus the anchor) with
    ``uncertainty`` (h_i, a 95% half-width), or ``games`` = (losses, draws, wins)
    of the main version against the anchor, from which δ_i and h_i are derived.
    ``ndelta`` is an optional δ_i on the normalized-Elo scale.
    """

    anchor: Anchor
    delta: float | None = None
    uncertainty: float | None = None
    games: tuple[int, int, int] | None = None
    ndelta: float | None = None

    @property
    def name(self) -> str:
        """The anchor's name."""
        return self.anchor.name

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (absent optional fields are left out)."""
        out = self.anchor.to_dict()
        if self.delta is not None:
            out["delta"] = self.delta
        if self.uncertainty is not None:
            out["uncertainty"] = self.uncertainty
        if self.games is not None:
            out["games"] = list(self.games)
        if self.ndelta is not None:
            out["ndelta"] = self.ndelta
        return out


@attrs.frozen
class Measurement:
    """A measurement of main version ``version`` (a hash) against the anchor set."""

    id: str
    version: str
    anchors: tuple[MeasuredAnchor, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the measurement."""
        return {
            "id": self.id,
            "version": self.version,
            "anchors": [anchor.to_dict() for anchor in self.anchors],
        }


def _parse_games(value: Any, path: str) -> tuple[int, int, int]:
    items = req_list(value, path)
    if len(items) != 3:
        raise fail(path, "must be [losses, draws, wins]", value)
    losses, draws, wins = (req_int(item, f"{path}[{i}]") for i, item in enumerate(items))
    return (losses, draws, wins)


def _parse_measured(value: Any, path: str) -> MeasuredAnchor:
    obj = req_mapping(value, path)
    check_keys(obj, path, _REQUIRED, _OPTIONAL)
    anchor = parse_anchor_identity(obj, path)
    delta = opt_number(obj, "delta", path)
    uncertainty = opt_number(obj, "uncertainty", path, low=0)
    ndelta = opt_number(obj, "ndelta", path)
    games = None
    if obj.get("games") is not None:
        games = _parse_games(obj["games"], f"{path}.games")
        if delta is not None or uncertainty is not None:
            raise fail(f"{path}.games", "give either games or delta/uncertainty, not both")
    return MeasuredAnchor(
        anchor=anchor, delta=delta, uncertainty=uncertainty, games=games, ndelta=ndelta
    )


def parse_measurement(value: Any, path: str) -> Measurement:
    """Parse and validate a measurement (a dict, or a :class:`Measurement` re-validated).

    Unknown fields and duplicate anchor names are refused with
    :class:`~cladelog.lawv.errors.LawVInputError`. An anchor without a usable
    δ_i/h_i and without games is *not* refused here: the check reports it as DEFECTIVE.
    """
    if isinstance(value, Measurement):
        value = value.to_dict()
    obj = req_mapping(value, path)
    check_keys(obj, path, _TOP, frozenset())
    ident = req_string(obj["id"], f"{path}.id")
    version = req_string(obj["version"], f"{path}.version")
    raw_anchors = req_list(obj["anchors"], f"{path}.anchors")
    anchors: list[MeasuredAnchor] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_anchors):
        item_path = f"{path}.anchors[{index}]"
        measured = _parse_measured(raw, item_path)
        if measured.name in seen:
            raise fail(f"{item_path}.name", "duplicates an earlier anchor name", measured.name)
        seen.add(measured.name)
        anchors.append(measured)
    return Measurement(id=ident, version=version, anchors=tuple(anchors))
