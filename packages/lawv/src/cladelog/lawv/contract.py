"""The Law V contract: a versioned document fixing the anchor set and the rule's constants."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from cladelog.lawv._fields import (
    check_keys,
    fail,
    req_date,
    req_int,
    req_list,
    req_mapping,
    req_number,
    req_string,
)

__all__ = [
    "MAX_MC_SAMPLES",
    "THRESHOLD_MAX",
    "THRESHOLD_MIN",
    "Anchor",
    "Contract",
    "parse_anchor_identity",
    "parse_contract",
]

#: Upper bound on ``mc_samples`` (the Monte Carlo band is reported, never decisive).
MAX_MC_SAMPLES = 1_000_000

#: The range of ``halt_below`` and ``warn_below``. R = ΔA / S is the share of the
#: claimed gains that arrives against the anchor set; Law V's thresholds (0.40,
#: 0.75) are shares of it, so a threshold lies in [0, 1]: below 0 would never
#: halt on any gain, above 1 would demand more than was claimed (and ``40`` for
#: ``0.40`` would halt everything).
THRESHOLD_MIN = 0.0
THRESHOLD_MAX = 1.0

_ANCHOR_KEYS = frozenset({"name", "hash", "rating", "rating_uncertainty"})
_CONTRACT_KEYS = frozenset(
    {"version", "date", "T", "transfer_band", "halt_below", "warn_below", "mc_samples", "anchors"}
)


@attrs.frozen
class Anchor:
    """One external reference engine: identity plus its fixed rating R_i and uncertainty h_L,i."""

    name: str
    hash: str
    rating: float
    rating_uncertainty: float

    def identity(self) -> tuple[str, str, float, float]:
        """The identifying fields that must agree at both endpoints and with the contract."""
        return (self.name, self.hash, self.rating, self.rating_uncertainty)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the anchor."""
        return {
            "name": self.name,
            "hash": self.hash,
            "rating": self.rating,
            "rating_uncertainty": self.rating_uncertainty,
        }


@attrs.frozen
class Contract:
    """A version of the Law V contract.

    ``t`` is the constant T of the weights w_i = 1/(h_i^2 + h_L,i^2 + T^2);
    ``transfer_band`` the Elo band added to each absolute value's total band;
    ``halt_below`` / ``warn_below`` the traffic-light thresholds on R
    (0 <= halt_below <= warn_below <= 1);
    ``mc_samples`` the Monte Carlo sample count.
    """

    version: int
    date: str
    t: float
    transfer_band: float
    halt_below: float
    warn_below: float
    mc_samples: int
    anchors: tuple[Anchor, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the contract (the documented field names, ``T`` upper-case)."""
        return {
            "version": self.version,
            "date": self.date,
            "T": self.t,
            "transfer_band": self.transfer_band,
            "halt_below": self.halt_below,
            "warn_below": self.warn_below,
            "mc_samples": self.mc_samples,
            "anchors": [anchor.to_dict() for anchor in self.anchors],
        }


def parse_anchor_identity(obj: Mapping[str, Any], path: str) -> Anchor:
    """Read the identifying fields of an anchor from an already-checked object."""
    return Anchor(
        name=req_string(obj["name"], f"{path}.name"),
        hash=req_string(obj["hash"], f"{path}.hash"),
        rating=req_number(obj["rating"], f"{path}.rating"),
        rating_uncertainty=req_number(
            obj["rating_uncertainty"], f"{path}.rating_uncertainty", low=0
        ),
    )


def _threshold(value: Any, path: str) -> float:
    """A threshold on R: a finite number in [THRESHOLD_MIN, THRESHOLD_MAX]."""
    number = req_number(value, path)
    if not THRESHOLD_MIN <= number <= THRESHOLD_MAX:
        raise fail(path, f"must be a threshold on R in [{THRESHOLD_MIN:g}, {THRESHOLD_MAX:g}] "
                         "(a fraction: 0.40, not 40)", value)
    return number


def parse_contract(value: Any, path: str = "contract") -> Contract:
    """Parse and validate a contract document (a dict) or return a :class:`Contract` as is.

    Unknown fields are refused. Raises :class:`~cladelog.lawv.errors.LawVInputError`
    naming the field path.
    """
    if isinstance(value, Contract):
        value = value.to_dict()  # re-validate: attrs instances may be built by hand
    obj = req_mapping(value, path)
    check_keys(obj, path, _CONTRACT_KEYS, frozenset())
    version = req_int(obj["version"], f"{path}.version", low=1)
    date = req_date(obj["date"], f"{path}.date")
    t = req_number(obj["T"], f"{path}.T", low=0)
    transfer_band = req_number(obj["transfer_band"], f"{path}.transfer_band", low=0)
    halt_below = _threshold(obj["halt_below"], f"{path}.halt_below")
    warn_below = _threshold(obj["warn_below"], f"{path}.warn_below")
    if halt_below > warn_below:
        raise fail(f"{path}.halt_below", f"must be <= warn_below ({warn_below:g})", halt_below)
    mc_samples = req_int(obj["mc_samples"], f"{path}.mc_samples", low=1, high=MAX_MC_SAMPLES)
    raw_anchors = req_list(obj["anchors"], f"{path}.anchors")
    if not raw_anchors:
        raise fail(f"{path}.anchors", "must hold at least one anchor")
    anchors: list[Anchor] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_anchors):
        item_path = f"{path}.anchors[{index}]"
        item = req_mapping(raw, item_path)
        check_keys(item, item_path, _ANCHOR_KEYS, frozenset())
        anchor = parse_anchor_identity(item, item_path)
        if anchor.name in seen:
            raise fail(f"{item_path}.name", "duplicates an earlier anchor name", anchor.name)
        seen.add(anchor.name)
        anchors.append(anchor)
    return Contract(
        version=version,
        date=date,
        t=t,
        transfer_band=transfer_band,
        halt_below=halt_below,
        warn_below=warn_below,
        mc_samples=mc_samples,
        anchors=tuple(anchors),
    )
