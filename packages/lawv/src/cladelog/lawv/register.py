"""Register entries as Law V reads them: the kind, the sequence number and the test stages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from cladelog.lawv._fields import (
    fail,
    opt_number,
    req_bool,
    req_int,
    req_list,
    req_mapping,
    req_number,
    req_string,
)

__all__ = ["KINDS", "Entry", "Stage", "parse_entries", "parse_entry"]

#: The entry kinds Law V knows.
KINDS = ("gain_test", "special_path", "epoch_change", "reversion")


@attrs.frozen
class Stage:
    """One stage of a gain test: its oracle Elo (logistic), pass flag and optional extras.

    ``nelo`` is the stage's gain on the normalized-Elo scale; ``half_width`` the
    95% half-width of ``elo`` (used only by the Monte Carlo band).
    """

    name: str
    elo: float
    passed: bool
    nelo: float | None = None
    half_width: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``pass`` as in the register)."""
        out: dict[str, Any] = {"name": self.name, "elo": self.elo, "pass": self.passed}
        if self.nelo is not None:
            out["nelo"] = self.nelo
        if self.half_width is not None:
            out["half_width"] = self.half_width
        return out


@attrs.frozen
class Entry:
    """A register entry reduced to what Law V reads.

    ``stages`` is empty except for gain tests; ``reverts`` is set only for reversions.
    """

    seq: int
    kind: str
    stages: tuple[Stage, ...] = ()
    reverts: int | None = None

    def stage(self, name: str) -> Stage | None:
        """The stage called ``name``, or None."""
        for stage in self.stages:
            if stage.name == name:
                return stage
        return None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the fields Law V reads."""
        out: dict[str, Any] = {"seq": self.seq, "kind": self.kind}
        if self.kind == "gain_test":
            out["stages"] = [stage.to_dict() for stage in self.stages]
        if self.reverts is not None:
            out["reverts"] = self.reverts
        return out


def _parse_stage(value: Any, path: str) -> Stage:
    obj = req_mapping(value, path)
    for key in ("name", "elo", "pass"):
        if key not in obj:
            raise fail(f"{path}.{key}", "is required")
    return Stage(
        name=req_string(obj["name"], f"{path}.name"),
        elo=req_number(obj["elo"], f"{path}.elo"),
        passed=req_bool(obj["pass"], f"{path}.pass"),
        nelo=opt_number(obj, "nelo", path),
        half_width=opt_number(obj, "half_width", path, low=0),
    )


def _parse_stages(value: Any, path: str) -> tuple[Stage, ...]:
    stages: list[Stage] = []
    names: set[str] = set()
    for index, raw in enumerate(req_list(value, path)):
        stage = _parse_stage(raw, f"{path}[{index}]")
        if stage.name in names:
            raise fail(f"{path}[{index}].name", "duplicates an earlier stage", stage.name)
        names.add(stage.name)
        stages.append(stage)
    for needed in ("short", "long"):
        if needed not in names:
            raise fail(path, f"a gain test needs a '{needed}' stage")
    return tuple(stages)


def parse_entry(value: Any, path: str) -> Entry:
    """Parse one register entry (a dict, or an :class:`Entry` re-validated).

    Fields Law V does not read are ignored; ``stages`` are read only for gain tests.
    """
    if isinstance(value, Entry):
        value = value.to_dict()
    obj: Mapping[str, Any] = req_mapping(value, path)
    for key in ("seq", "kind"):
        if key not in obj:
            raise fail(f"{path}.{key}", "is required")
    seq = req_int(obj["seq"], f"{path}.seq")
    kind = obj["kind"]
    if not isinstance(kind, str) or kind not in KINDS:
        raise fail(f"{path}.kind", f"must be one of {', '.join(KINDS)}", kind)
    stages: tuple[Stage, ...] = ()
    reverts: int | None = None
    if kind == "gain_test":
        if "stages" not in obj:
            raise fail(f"{path}.stages", "is required for a gain test")
        stages = _parse_stages(obj["stages"], f"{path}.stages")
    elif kind == "reversion":
        if "reverts" not in obj:
            raise fail(f"{path}.reverts", "is required for a reversion")
        reverts = req_int(obj["reverts"], f"{path}.reverts")
        if reverts >= seq:
            raise fail(f"{path}.reverts", f"must name an earlier seq than {seq}", reverts)
    return Entry(seq=seq, kind=kind, stages=stages, reverts=reverts)


def parse_entries(value: Any, path: str = "entries") -> tuple[Entry, ...]:
    """Parse the register entries of a window, keeping their order."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise fail(path, "must be an array of register entries", value)
    return tuple(parse_entry(raw, f"{path}[{index}]") for index, raw in enumerate(value))
