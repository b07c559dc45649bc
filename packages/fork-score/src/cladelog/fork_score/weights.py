"""Weight sets: the seed defaults, strict loading, and the weight-set identity.

Weights are non-negative; the sign of each term lives in the formula. The JSON
form names the MemoryInvalidationPenalty weight ``"lambda"`` (``lambda_`` in
Python, because ``lambda`` is a keyword). Weights of extra terms
(:class:`~cladelog.fork_score.terms.ScoringTerm`) belong to the same set under
their ``weight_name`` and take part in its identity.

``weights_id`` is the hex SHA-256 of the RFC 8785 canonical JSON of the full
set (built-ins and extras, JSON key names), so the same effective weights give
the same id wherever they were loaded from (``1`` and ``1.0`` are the same).
A scoring with hard-flag gating turned off (``[settings.fork-score]
hard_flag_gating = false``) reports the id of ``{"hard_flag_gating": false,
"weights": <the full set>}`` instead, so the two policies never share an id; with
gating on (the default) the id is the set's own, as it always was.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
from cladelog.core.canonical import canonical_bytes
from cladelog.core.fields import did_you_mean, short_text, shown
from cladelog.fork_score.errors import WeightsError
from cladelog.fork_score.jsonio import load_json_file
from cladelog.fork_score.terms import (
    BUILTIN_TERM_NAMES,
    BUILTIN_WEIGHT_NAMES,
    ScoringTerm,
    check_terms,
)

__all__ = [
    "DEFAULT_WEIGHTS",
    "WeightSet",
    "default_weights",
    "load_weights",
    "weights_from_json",
    "weights_id",
]

_PY_NAME = {"lambda": "lambda_"}


def _validate_weight(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    json_name = "lambda" if attribute.name == "lambda_" else attribute.name
    _check_weight(value, f"weights.{json_name}")


def _check_weight(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WeightsError(f"{path}: must be a non-negative number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        raise WeightsError(f"{path}: must be finite, got a huge integer") from None
    if not math.isfinite(number):
        raise WeightsError(f"{path}: must be finite, got {number!r}")
    if number < 0:
        raise WeightsError(f"{path}: must be non-negative, got {value!r}")
    return number


def _extra_weights(value: Any) -> tuple[tuple[str, float], ...]:
    if isinstance(value, Mapping):
        pairs = list(value.items())
    else:
        try:
            pairs = [tuple(pair) for pair in value]
        except TypeError:
            raise WeightsError("weights.extra: must map weight names to numbers") from None
    out: dict[str, float] = {}
    for pair in pairs:
        if len(pair) != 2 or not isinstance(pair[0], str):
            raise WeightsError("weights.extra: must map weight names to numbers")
        name, number = pair
        if name in BUILTIN_WEIGHT_NAMES or name in _PY_NAME.values():
            raise WeightsError(f"weights.{name}: is a built-in weight, not an extra one")
        if name in out:
            raise WeightsError(f"weights.{short_text(name)}: given twice")
        out[name] = _check_weight(number, f"weights.{short_text(name)}")
    return tuple(sorted(out.items()))


@attrs.frozen
class WeightSet:
    """The eleven built-in weights (seed defaults) plus weights of extra terms.

    Every weight is a finite number ``>= 0``; construction raises
    :class:`WeightsError` naming the weight otherwise. ``extra`` holds extra-term
    weights as sorted ``(weight_name, value)`` pairs (a mapping is accepted).
    """

    alpha: float = attrs.field(default=1.0, validator=_validate_weight)
    beta: float = attrs.field(default=1.0, validator=_validate_weight)
    gamma: float = attrs.field(default=1.0, validator=_validate_weight)
    delta: float = attrs.field(default=0.5, validator=_validate_weight)
    epsilon: float = attrs.field(default=0.3, validator=_validate_weight)
    zeta: float = attrs.field(default=0.0, validator=_validate_weight)
    eta: float = attrs.field(default=2.0, validator=_validate_weight)
    theta: float = attrs.field(default=0.5, validator=_validate_weight)
    iota: float = attrs.field(default=0.0, validator=_validate_weight)
    kappa: float = attrs.field(default=0.0, validator=_validate_weight)
    lambda_: float = attrs.field(default=0.5, validator=_validate_weight)
    extra: tuple[tuple[str, float], ...] = attrs.field(default=(), converter=_extra_weights)

    def __attrs_post_init__(self) -> None:
        # Validated above; store every built-in weight as a float (1 -> 1.0).
        for field in attrs.fields(type(self)):
            if field.name != "extra":
                object.__setattr__(self, field.name, float(getattr(self, field.name)))

    def get(self, weight_name: str) -> float:
        """The weight called ``weight_name`` in the JSON form (``"lambda"``, ``"mu"``...).

        Raises :class:`WeightsError` if the set has no such weight.
        """
        if weight_name in BUILTIN_WEIGHT_NAMES:
            return float(getattr(self, _PY_NAME.get(weight_name, weight_name)))
        for name, value in self.extra:
            if name == weight_name:
                return value
        raise WeightsError(f"weights.{short_text(weight_name)}: no such weight in this set")

    def to_json_dict(self) -> dict[str, float]:
        """The flat JSON form: built-in weights (``"lambda"`` spelled so) then extras."""
        out = {name: self.get(name) for name in BUILTIN_WEIGHT_NAMES}
        out.update(self.extra)
        return out

    @property
    def weights_id(self) -> str:
        """Hex SHA-256 of the canonical JSON of :meth:`to_json_dict`."""
        return weights_id(self)


#: The seed's default weight set (no extra terms).
DEFAULT_WEIGHTS = WeightSet()


def weights_id(weights: WeightSet, *, hard_flag_gating: bool = True) -> str:
    """Hex SHA-256 of the RFC 8785 canonical bytes of ``weights.to_json_dict()``.

    With ``hard_flag_gating=False`` the hashed object is ``{"hard_flag_gating": false,
    "weights": weights.to_json_dict()}``: a scoring whose hard flags do not force
    REJECT never shares an id with one whose flags do. (That object cannot be a flat
    weight set, which always holds ``alpha``.)
    """
    if hard_flag_gating is not True and hard_flag_gating is not False:
        raise WeightsError("hard_flag_gating: must be true or false, "
                           f"got {shown(hard_flag_gating)}")
    return _cached_weights_id(weights, hard_flag_gating)


@functools.lru_cache(maxsize=128)
def _cached_weights_id(weights: WeightSet, hard_flag_gating: bool = True) -> str:
    # A WeightSet is frozen and hashable, and equal sets have equal canonical bytes
    # (-0.0 == 0.0 both encode as 0), so the id can be remembered per set.
    doc: dict[str, Any] = weights.to_json_dict()
    if not hard_flag_gating:
        doc = {"hard_flag_gating": False, "weights": doc}
    return hashlib.sha256(canonical_bytes(doc)).hexdigest()


def default_weights(terms: Iterable[ScoringTerm] = ()) -> WeightSet:
    """The seed defaults, completed by the default weights of ``terms``.

    A term filling ``zeta``, ``iota`` or ``kappa`` sets that weight to its own default;
    any other term adds its weight under its ``weight_name``.
    """
    checked = check_terms(terms)
    if not checked:
        return DEFAULT_WEIGHTS
    fills = {t.weight_name: t.default_weight for t in checked if t.fills is not None}
    extra = {t.weight_name: t.default_weight for t in checked if t.fills is None}
    return attrs.evolve(DEFAULT_WEIGHTS, **fills, extra=extra)


def load_weights(mapping: Mapping[str, Any], terms: Iterable[ScoringTerm] = ()) -> WeightSet:
    """Build a weight set from a JSON-style mapping of overrides.

    Keys are built-in weight names (``"lambda"``, not ``"lambda_"``) or the
    ``weight_name`` of one of ``terms``; weights not given keep their defaults
    (:func:`default_weights`). An unknown key, a negative, non-finite or
    non-numeric value raises :class:`WeightsError` naming the key.
    """
    checked = check_terms(terms)
    if not isinstance(mapping, Mapping):
        raise WeightsError(f"weights: must be an object, got {type(mapping).__name__}")
    base = default_weights(checked)
    term_weights = [t.weight_name for t in checked if t.fills is None]
    known = [*BUILTIN_WEIGHT_NAMES, *term_weights]
    builtin: dict[str, float] = {}
    extra = dict(base.extra)
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise WeightsError(f"weights: key {type(key).__name__} is not a string")
        if key not in known:
            raise WeightsError(f"weights.{short_text(key)}: {_unknown(key, known)}")
        number = _check_weight(value, f"weights.{key}")
        if key in BUILTIN_WEIGHT_NAMES:
            builtin[_PY_NAME.get(key, key)] = number
        else:
            extra[key] = number
    return attrs.evolve(base, **builtin, extra=extra)


def weights_from_json(path: str | Path, terms: Iterable[ScoringTerm] = ()) -> WeightSet:
    """Read a weights file (a JSON object of overrides) and :func:`load_weights` it.

    File and syntax problems raise :class:`~cladelog.fork_score.errors.JsonFileError`;
    content problems raise :class:`WeightsError`.
    """
    return load_weights(load_json_file(path), terms)


def _unknown(key: str, known: list[str]) -> str:
    message = "unknown weight"
    if key == "lambda_":
        return message + " (the JSON name is 'lambda')"
    if key in BUILTIN_TERM_NAMES:
        return message + " (that is a term name; weights are named alpha..lambda)"
    return f"{message} {did_you_mean(key, known)}"
