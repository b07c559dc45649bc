"""Register entries: the data model and its strict parser (schema ``register-entry/v1``).

A register entry is the predicate of a receipt (see ``docs/schema.md``). Every
entry has ``seq`` (0, 1, 2, ... with no gap), ``prev`` (the :func:`entry_hash`
of the previous entry, 64 zeros for seq 0) and ``kind``, one of:

* ``gain_test`` -- ``candidate`` and ``baseline`` (name, version, digest),
  ``oracle`` (name, version), ``epoch`` and ``stages``: exactly a ``short`` then
  a ``long`` stage, each with its game counts, the claimed logistic Elo and 95%
  half-width, optional normalized Elo, a pass criterion and ``pass``;
* ``special_path`` -- a promotion without a demonstrated Elo gain: ``candidate``,
  ``path`` (``speed``, ``settings``, ``simplification`` or ``other``) and ``reason``;
* ``epoch_change`` -- the oracle (name, version) enters ``epoch``, with a ``reason``;
* ``reversion`` -- ``reverts`` names an earlier seq, with a ``reason``.

:func:`parse_entry` accepts a JSON object and returns a frozen entry, or raises
:class:`EntryError` naming the first bad field (``entry.stages[1].results.wins:
must be a non-negative integer, got -1``). Unknown members are refused. The
module is pure: no I/O, no clock.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

import attrs
from cladelog.core import elo, fields
from cladelog.core.canonical import CanonicalError, canonical_bytes
from cladelog.core.fields import MAX_SAFE_INTEGER

from .errors import EntryError

__all__ = [
    "ENTRY_KINDS",
    "GENESIS_PREV",
    "MAX_COUNT",
    "PREDICATE_TYPE",
    "SPECIAL_PATHS",
    "SPRT_MODELS",
    "STAGE_NAMES",
    "Artifact",
    "Entry",
    "EpochChange",
    "FixedCriterion",
    "GainTest",
    "OracleRef",
    "Results",
    "Reversion",
    "SpecialPath",
    "SprtCriterion",
    "Stage",
    "entry_hash",
    "parse_entry",
]

#: The in-toto ``predicateType`` of a receipt whose predicate is a register entry.
PREDICATE_TYPE: Final = "https://cladelog.dev/receipts/register-entry/v1"
ENTRY_KINDS: Final = ("gain_test", "special_path", "epoch_change", "reversion")
STAGE_NAMES: Final = ("short", "long")
SPECIAL_PATHS: Final = ("speed", "settings", "simplification", "other")
SPRT_MODELS: Final = ("logistic", "normalized")
#: ``prev`` of the entry with seq 0.
GENESIS_PREV: Final = "0" * 64
#: Largest accepted count or sequence number (the largest integer a double holds exactly).
MAX_COUNT: Final = MAX_SAFE_INTEGER
_MAX_CLAIM: Final = 1e9  # magnitude bound of a claimed Elo, half-width or LLR
_MAX_NAME: Final = 256
_MAX_REASON: Final = 4000
_HEX64 = re.compile(r"[0-9a-f]{64}", re.ASCII)
# control characters and lone surrogates; a multi-line text (a reason) may hold \n and \t
_BAD_IN_NAME = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
_BAD_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")


# --------------------------------------------------------------------------- the model


@attrs.frozen
class Artifact:
    """A candidate or baseline build: name, version and build digest (e.g. ``sha256:...``)."""

    name: str
    version: str
    digest: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "digest": self.digest}


@attrs.frozen
class OracleRef:
    """The oracle that ran a test: name and version."""

    name: str
    version: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version}


@attrs.frozen
class Results:
    """Game counts of a stage from the candidate's point of view."""

    losses: int
    draws: int
    wins: int

    @property
    def games(self) -> int:
        return self.losses + self.draws + self.wins

    def to_dict(self) -> dict[str, Any]:
        return {"losses": self.losses, "draws": self.draws, "wins": self.wins}


@attrs.frozen
class SprtCriterion:
    """SPRT pass criterion: pass iff the LLR reaches the upper bound ``ln((1-beta)/alpha)``.

    ``elo0``/``elo1`` are logistic Elo for ``model = "logistic"`` and normalized
    Elo for ``model = "normalized"``; ``llr`` is the oracle's claimed LLR.
    """

    elo0: float
    elo1: float
    alpha: float
    beta: float
    model: str
    llr: float

    def to_dict(self) -> dict[str, Any]:
        return {"type": "sprt", "elo0": self.elo0, "elo1": self.elo1, "alpha": self.alpha,
                "beta": self.beta, "model": self.model, "llr": self.llr}


@attrs.frozen
class FixedCriterion:
    """Fixed-length criterion: pass iff ``elo - half_width > threshold``."""

    threshold: float

    def to_dict(self) -> dict[str, Any]:
        return {"type": "fixed", "threshold": self.threshold}


@attrs.frozen
class Stage:
    """One stage (``short`` or ``long``) of a gain test with its games and claims.

    ``pentanomial`` holds the pair counts ``[LL, LD+DL, LW+DD+WL, DW+WD, WW]``
    when the games were played in pairs; recomputation then uses them.
    """

    name: str
    results: Results
    elo: float
    half_width: float
    criterion: SprtCriterion | FixedCriterion
    passed: bool
    nelo: float | None = None
    pentanomial: tuple[int, int, int, int, int] | None = None

    @property
    def counts(self) -> tuple[int, ...]:
        """The counts the statistics use: the pair counts if given, else L/D/W."""
        if self.pentanomial is not None:
            return self.pentanomial
        return (self.results.losses, self.results.draws, self.results.wins)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "results": self.results.to_dict(),
                               "elo": self.elo, "half_width": self.half_width,
                               "criterion": self.criterion.to_dict(), "pass": self.passed}
        if self.nelo is not None:
            out["nelo"] = self.nelo
        if self.pentanomial is not None:
            out["pentanomial"] = list(self.pentanomial)
        return out


@attrs.frozen
class GainTest:
    """A two-stage gain test; it counts as passed only when both stages passed."""

    seq: int
    prev: str
    candidate: Artifact
    baseline: Artifact
    oracle: OracleRef
    epoch: int
    stages: tuple[Stage, Stage]
    kind: str = "gain_test"

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "prev": self.prev, "kind": self.kind,
                "candidate": self.candidate.to_dict(), "baseline": self.baseline.to_dict(),
                "oracle": self.oracle.to_dict(), "epoch": self.epoch,
                "stages": [s.to_dict() for s in self.stages]}


@attrs.frozen
class SpecialPath:
    """A promotion without a demonstrated Elo gain."""

    seq: int
    prev: str
    candidate: Artifact
    path: str
    reason: str
    kind: str = "special_path"

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "prev": self.prev, "kind": self.kind,
                "candidate": self.candidate.to_dict(), "path": self.path, "reason": self.reason}


@attrs.frozen
class EpochChange:
    """The oracle enters a new epoch (results of different epochs are not comparable)."""

    seq: int
    prev: str
    oracle: OracleRef
    epoch: int
    reason: str
    kind: str = "epoch_change"

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "prev": self.prev, "kind": self.kind,
                "oracle": self.oracle.to_dict(), "epoch": self.epoch, "reason": self.reason}


@attrs.frozen
class Reversion:
    """Reversion of the earlier entry ``reverts``; it subtracts nothing from the register."""

    seq: int
    prev: str
    reverts: int
    reason: str
    kind: str = "reversion"

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "prev": self.prev, "kind": self.kind,
                "reverts": self.reverts, "reason": self.reason}


Entry = GainTest | SpecialPath | EpochChange | Reversion


def entry_hash(entry: Mapping[str, Any] | Entry) -> str:
    """Hex SHA-256 of the RFC 8785 canonical bytes of an entry (what ``prev`` links to)."""
    doc = entry if isinstance(entry, Mapping) else entry.to_dict()
    try:
        return hashlib.sha256(canonical_bytes(doc, path="entry")).hexdigest()
    except CanonicalError as exc:
        raise EntryError(str(exc)) from None


# ------------------------------------------------------------------------ field checks
# The common rules (objects and their members, integers and counts in the safe range,
# finite numbers, booleans, how a bad value is shown) are core's (cladelog.core.fields);
# here they raise EntryError. Bounded, printable text and the claim bounds are receipts'.

# Each helper first takes the plain case in one test (a value core's check accepts
# unchanged), and hands everything else to core's check, which accepts or words the refusal.
_shown = fields.shown
_bool = functools.partial(fields.require_bool, error=EntryError)


def _count(value: object, path: str) -> int:
    if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:
        return value
    return fields.safe_count(value, path, EntryError)


def _int(value: object, path: str) -> int:
    if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:
        return value
    return fields.require_int(value, path, error=EntryError)


def _object(value: object, path: str, required: frozenset[str],
            optional: frozenset[str] = frozenset()) -> Mapping[str, Any]:
    # A well-formed object passes on one set comparison; anything else goes through core's
    # checks, which raise with core's message (or accept a Mapping that is not a dict).
    if type(value) is dict and required <= value.keys() <= required | optional:
        return value
    obj = fields.require_mapping(value, path, EntryError)
    fields.check_keys(obj, path, required, optional, EntryError)
    return obj


def _number(value: object, path: str, bound: float = _MAX_CLAIM) -> float:
    if type(value) is float and -bound <= value <= bound:  # NaN fails the comparison
        return value
    number = fields.finite_number(value, path, EntryError)
    if abs(number) > bound:
        raise EntryError(f"{path}: must lie in [-{bound:g}, {bound:g}], got {_shown(value)}")
    return number


def _text(value: object, path: str, limit: int = _MAX_NAME, multiline: bool = False) -> str:
    # printable ASCII (no control character, no surrogate) that is not all spaces
    if type(value) is str and value and len(value) <= limit and value.isascii() \
            and value.isprintable() and not value.isspace():
        return value
    text = fields.require_string(value, path, EntryError)
    if not text.strip():
        raise EntryError(f"{path}: must not be blank")
    if len(text) > limit:
        raise EntryError(f"{path}: must be at most {limit} characters, got {len(text)}")
    bad = (_BAD_IN_TEXT if multiline else _BAD_IN_NAME).search(text)
    if bad is not None:
        i, c = bad.start(), bad.group()
        if c < "\ud800":
            raise EntryError(f"{path}: control character U+{ord(c):04X} at offset {i}")
        raise EntryError(f"{path}: lone surrogate at offset {i}")
    return text


def _choice(value: object, path: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise EntryError(f"{path}: must be one of {', '.join(choices)}, got {_shown(value)}")
    return value


# ---------------------------------------------------------------------------- parsing

_ARTIFACT: Final = frozenset({"name", "version", "digest"})
_ORACLE: Final = frozenset({"name", "version"})
_FIXED: Final = frozenset({"type", "threshold"})
_SPRT: Final = frozenset({"type", "elo0", "elo1", "alpha", "beta", "model", "llr"})
_STAGE: Final = frozenset({"name", "results", "elo", "half_width", "criterion", "pass"})
_STAGE_OPTIONAL: Final = frozenset({"nelo", "pentanomial", "games"})
_RESULTS: Final = frozenset({"losses", "draws", "wins"})


def _artifact(value: object, path: str) -> Artifact:
    obj = _object(value, path, _ARTIFACT)
    return Artifact(_text(obj["name"], f"{path}.name"), _text(obj["version"], f"{path}.version"),
                    _text(obj["digest"], f"{path}.digest"))


def _oracle(value: object, path: str) -> OracleRef:
    obj = _object(value, path, _ORACLE)
    return OracleRef(_text(obj["name"], f"{path}.name"), _text(obj["version"], f"{path}.version"))


def _criterion(value: object, path: str) -> SprtCriterion | FixedCriterion:
    if not isinstance(value, Mapping):
        raise EntryError(f"{path}: must be an object, got {_shown(value)}")
    kind = _choice(value.get("type"), f"{path}.type", ("sprt", "fixed"))
    if kind == "fixed":
        obj = _object(value, path, _FIXED)
        return FixedCriterion(_number(obj["threshold"], f"{path}.threshold"))
    obj = _object(value, path, _SPRT)
    elo0 = _number(obj["elo0"], f"{path}.elo0", elo.MAX_BOUND)
    elo1 = _number(obj["elo1"], f"{path}.elo1", elo.MAX_BOUND)
    if not elo0 < elo1:
        raise EntryError(f"{path}.elo1: must be greater than elo0 ({elo0:g}), got {elo1:g}")
    alpha = _number(obj["alpha"], f"{path}.alpha")
    beta = _number(obj["beta"], f"{path}.beta")
    try:  # alpha, beta in (0, 1) and alpha + beta < 1: the SPRT's own rule (core's elo)
        elo.sprt_bounds(alpha, beta)
    except elo.EloInputError as exc:  # "alpha: ...", "beta: ..." or "alpha + beta: ..."
        raise EntryError(f"{path}.{exc}") from None
    model = _choice(obj["model"], f"{path}.model", SPRT_MODELS)
    return SprtCriterion(elo0, elo1, alpha, beta, model, _number(obj["llr"], f"{path}.llr"))


def _pentanomial(value: object, path: str) -> tuple[int, int, int, int, int]:
    if not isinstance(value, list | tuple) or len(value) != 5:
        raise EntryError(f"{path}: must be a list of 5 pair counts, got {_shown(value)}")
    a, b, c, d, e = (_count(v, f"{path}[{i}]") for i, v in enumerate(value))
    return a, b, c, d, e


def _stage(value: object, path: str, name: str) -> Stage:
    obj = _object(value, path, _STAGE, _STAGE_OPTIONAL)
    if obj["name"] != name:
        raise EntryError(f"{path}.name: must be {name!r}, got {_shown(obj['name'])}")
    res = _object(obj["results"], f"{path}.results", _RESULTS)
    results = Results(*(_count(res[k], f"{path}.results.{k}")
                        for k in ("losses", "draws", "wins")))
    if "games" in obj and _count(obj["games"], f"{path}.games") != results.games:
        raise EntryError(f"{path}.games: {obj['games']} does not equal losses + draws + wins "
                         f"= {results.games}")
    if results.games == 0:
        raise EntryError(f"{path}.results: zero games; a stage needs at least one game")
    pairs = None
    if "pentanomial" in obj:
        pairs = _pentanomial(obj["pentanomial"], f"{path}.pentanomial")
        # each pair is two games; in half points a pair scores 0, 1, 2, 3 or 4
        if 2 * sum(pairs) != results.games:
            raise EntryError(f"{path}.pentanomial: {sum(pairs)} pairs make {2 * sum(pairs)} "
                             f"games, but the results count {results.games}")
        half_points = pairs[1] + 2 * pairs[2] + 3 * pairs[3] + 4 * pairs[4]
        if half_points != 2 * results.wins + results.draws:
            raise EntryError(f"{path}.pentanomial: the pairs score {half_points} half points, "
                             f"but the results score {2 * results.wins + results.draws}")
    half_width = _number(obj["half_width"], f"{path}.half_width")
    if half_width < 0:
        raise EntryError(f"{path}.half_width: must be >= 0, got {_shown(obj['half_width'])}")
    return Stage(
        name=name,
        results=results,
        elo=_number(obj["elo"], f"{path}.elo"),
        half_width=half_width,
        criterion=_criterion(obj["criterion"], f"{path}.criterion"),
        passed=_bool(obj["pass"], f"{path}.pass"),
        nelo=_number(obj["nelo"], f"{path}.nelo") if "nelo" in obj else None,
        pentanomial=pairs,
    )


_COMMON: Final = ("seq", "prev", "kind")
_MEMBERS: Final[dict[str, frozenset[str]]] = {
    "gain_test": frozenset({*_COMMON, "candidate", "baseline", "oracle", "epoch", "stages"}),
    "special_path": frozenset({*_COMMON, "candidate", "path", "reason"}),
    "epoch_change": frozenset({*_COMMON, "oracle", "epoch", "reason"}),
    "reversion": frozenset({*_COMMON, "reverts", "reason"}),
}


def parse_entry(value: object, path: str = "entry") -> Entry:
    """Parse a register entry (a JSON object) strictly; raise :class:`EntryError` if bad."""
    if not isinstance(value, Mapping):
        raise EntryError(f"{path}: must be an object, got {_shown(value)}")
    kind = _choice(value.get("kind"), f"{path}.kind", ENTRY_KINDS)
    obj = _object(value, path, _MEMBERS[kind])
    seq = _int(obj["seq"], f"{path}.seq")
    prev = obj["prev"]
    if not isinstance(prev, str) or not _HEX64.fullmatch(prev):
        raise EntryError(f"{path}.prev: must be 64 lower-case hex digits, got {_shown(prev)}")
    if seq == 0 and prev != GENESIS_PREV:
        raise EntryError(f"{path}.prev: the entry with seq 0 must have prev = 64 zeros")
    if kind == "gain_test":
        stages = obj["stages"]
        if not isinstance(stages, list | tuple) or len(stages) != 2:
            raise EntryError(f"{path}.stages: must be a list of 2 stages (short, long), "
                             f"got {_shown(stages)}")
        short = _stage(stages[0], f"{path}.stages[0]", "short")
        long = _stage(stages[1], f"{path}.stages[1]", "long")
        return GainTest(seq, prev, _artifact(obj["candidate"], f"{path}.candidate"),
                        _artifact(obj["baseline"], f"{path}.baseline"),
                        _oracle(obj["oracle"], f"{path}.oracle"),
                        _int(obj["epoch"], f"{path}.epoch"), (short, long))
    if kind == "special_path":
        return SpecialPath(seq, prev, _artifact(obj["candidate"], f"{path}.candidate"),
                           _choice(obj["path"], f"{path}.path", SPECIAL_PATHS),
                           _text(obj["reason"], f"{path}.reason", _MAX_REASON, True))
    if kind == "epoch_change":
        return EpochChange(seq, prev, _oracle(obj["oracle"], f"{path}.oracle"),
                           _int(obj["epoch"], f"{path}.epoch"),
                           _text(obj["reason"], f"{path}.reason", _MAX_REASON, True))
    reverts = _int(obj["reverts"], f"{path}.reverts")
    if reverts >= seq:
        raise EntryError(f"{path}.reverts: must name an earlier seq than {seq}, got {reverts}")
    return Reversion(seq, prev, reverts, _text(obj["reason"], f"{path}.reason", _MAX_REASON, True))
