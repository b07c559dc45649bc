"""Scoring terms: the eleven built-in terms and the contract for extra ones.

Built-in terms
--------------
The seed formula has eleven terms, each ``sign x weight x value``. Their names
(used in ``breakdown`` keys as ``<weight>_x_<name>``, or
``minus_<weight>_x_<name>`` when subtracted) are, in formula order:
:data:`BUILTIN_TERMS`.

Extra terms (the contract for other plugins)
--------------------------------------------
A plugin contributes a term as a :class:`ScoringTerm`:

* ``name`` -- a lower-case identifier (``[a-z][a-z0-9_]*``) that is not one of
  the built-in term names;
* ``weight_name`` -- the name of its weight in the weight set and the weights
  file (same syntax); it must not be a built-in weight, except ``iota`` and
  ``kappa`` (see below);
* ``default_weight`` -- a finite number ``>= 0``, used unless the weights file
  overrides it;
* ``sign`` -- ``+1`` for a reward, ``-1`` for a penalty (the weight itself is
  never negative);
* ``fn(parent, child, inputs) -> float`` -- a pure function of the two input
  documents (exactly as given to :func:`~cladelog.fork_score.score`) and a
  read-only mapping of the caller scalars. It must return a finite ``int`` or
  ``float`` (not ``bool``) and must not mutate its arguments.

The term adds ``sign x weight x fn(...)`` to the score under the breakdown key
``<weight_name>_x_<name>`` (``minus_<weight_name>_x_<name>`` when ``sign`` is
-1). Extra terms are summed after the eleven built-ins, ordered by name, so the
result does not depend on registration order.

Three built-ins may be *filled* this way: a term whose ``weight_name`` is
``iota`` supplies the value of SecurityRiskPenalty, one whose ``weight_name``
is ``kappa`` supplies ComplexityPenalty (both are 0 when no term fills them),
and one whose ``weight_name`` is ``zeta`` supplies ValidatorDiversity (instead
of the caller scalar ``validator_diversity``; the consensus plugin fills it).
A filling term has the built-in's sign (``-1`` for iota and kappa, ``+1`` for
zeta); its value appears under the built-in key
(``minus_iota_x_security_risk_penalty``, ``minus_kappa_x_complexity_penalty``,
``zeta_x_validator_diversity``) and no extra key is added; its
``default_weight`` replaces the reserved default of 0 for that weight.

A hook may also return a term as a plain mapping with exactly the five fields
below (``name``, ``weight_name``, ``default_weight``, ``sign``, ``fn``), so that
a plugin can contribute a term without importing fork-score (plugins never
import each other); fork-score builds the :class:`ScoringTerm` from it.

Errors (all :class:`~cladelog.fork_score.errors.ScoringTermError`): a malformed
term, two terms with the same name or weight name, a name that collides with a
built-in, a ``fn`` that raises, or a ``fn`` that returns NaN, an infinity or a
non-number. Each message names the term.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from cladelog.core.fields import short_text
from cladelog.fork_score.errors import ScoringTermError

__all__ = [
    "BUILTIN_TERMS",
    "BUILTIN_TERM_NAMES",
    "BUILTIN_WEIGHT_NAMES",
    "FILLABLE_WEIGHTS",
    "BuiltinTerm",
    "ScoringTerm",
    "TermFn",
    "breakdown_key",
    "check_terms",
    "evaluate_term",
    "term_label",
]

#: Signature of an extra term's function: ``fn(parent, child, inputs) -> float``.
TermFn = Callable[[Any, Any, Mapping[str, float | int]], float]

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,63}")


@attrs.frozen
class BuiltinTerm:
    """One of the eleven terms of the seed formula."""

    weight_name: str
    name: str
    sign: int

    @property
    def key(self) -> str:
        """The breakdown key of this term."""
        return breakdown_key(self.weight_name, self.name, self.sign)


#: The eleven built-in terms in formula order (weight names in their JSON form).
BUILTIN_TERMS: tuple[BuiltinTerm, ...] = (
    BuiltinTerm("alpha", "delta_5s", 1),
    BuiltinTerm("beta", "delta_5t", 1),
    BuiltinTerm("gamma", "delta_5f", 1),
    BuiltinTerm("delta", "selfmodel_calibration_gain", 1),
    BuiltinTerm("epsilon", "audit_completeness", 1),
    BuiltinTerm("zeta", "validator_diversity", 1),
    BuiltinTerm("eta", "regression_penalty", -1),
    BuiltinTerm("theta", "capital_cost_penalty", -1),
    BuiltinTerm("iota", "security_risk_penalty", -1),
    BuiltinTerm("kappa", "complexity_penalty", -1),
    BuiltinTerm("lambda", "memory_invalidation", -1),
)

BUILTIN_TERM_NAMES: frozenset[str] = frozenset(t.name for t in BUILTIN_TERMS)
BUILTIN_WEIGHT_NAMES: tuple[str, ...] = tuple(t.weight_name for t in BUILTIN_TERMS)

_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "zeta": "ζ",
          "eta": "η", "theta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ",
          "nu": "ν", "xi": "ξ", "omicron": "ο", "pi": "π", "rho": "ρ", "sigma": "σ",
          "tau": "τ", "upsilon": "υ", "phi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω"}
_BUILTIN_VALUE_LABELS = {
    "delta_5s": "Δ5S", "delta_5t": "Δ5T", "delta_5f": "Δ5F",
    "selfmodel_calibration_gain": "SelfModelCalibrationGain",
    "audit_completeness": "AuditCompleteness", "validator_diversity": "ValidatorDiversity",
    "regression_penalty": "RegressionPenalty", "capital_cost_penalty": "CapitalCostPenalty",
    "security_risk_penalty": "SecurityRiskPenalty", "complexity_penalty": "ComplexityPenalty",
    "memory_invalidation": "MemoryInvalidationPenalty",
}


def term_label(key: str) -> str:
    """The label a person reads for a breakdown key, as the formula writes the term.

    ``alpha_x_delta_5s`` -> ``α·Δ5S``, ``minus_eta_x_regression_penalty`` ->
    ``−η·RegressionPenalty``; an extra term's key keeps its term name, its weight
    written as a Greek letter when it is named after one
    (``minus_mu_x_loc_growth`` -> ``−μ·loc_growth``). A key that is no term key
    comes back unchanged.
    """
    prefix, sep, name = key.partition("_x_")
    if not sep:
        return key
    sign = ""
    if prefix.startswith("minus_"):
        sign, prefix = "−", prefix[len("minus_"):]
    weight = _GREEK.get(prefix, prefix)
    value = _BUILTIN_VALUE_LABELS.get(name, name) if prefix in BUILTIN_WEIGHT_NAMES else name
    return f"{sign}{weight}·{value}"


#: Reserved built-in weights whose term value an extra term may supply.
FILLABLE_WEIGHTS: tuple[str, ...] = ("zeta", "iota", "kappa")


def breakdown_key(weight_name: str, name: str, sign: int) -> str:
    """``<weight>_x_<name>``, prefixed with ``minus_`` for a subtracted term."""
    key = f"{weight_name}_x_{name}"
    return key if sign > 0 else f"minus_{key}"


def _check_identifier(kind: str) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, str) or _IDENTIFIER.fullmatch(value) is None:
            shown = short_text(value) if isinstance(value, str) else type(value).__name__
            raise ScoringTermError(
                f"term {kind}: must match [a-z][a-z0-9_]* (at most 64 chars), got {shown!r}"
            )

    return check


def _check_name(instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if value in BUILTIN_TERM_NAMES:
        raise ScoringTermError(f"term {value}: name collides with a built-in term")


def _check_weight_name(instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if value in BUILTIN_WEIGHT_NAMES and value not in FILLABLE_WEIGHTS:
        raise ScoringTermError(
            f"term {instance.name}: weight name {value!r} is a built-in weight "
            f"(only {' and '.join(FILLABLE_WEIGHTS)} may be filled)"
        )
    if value == "lambda_":
        raise ScoringTermError(f"term {instance.name}: weight name 'lambda_' is reserved")


def _check_default_weight(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScoringTermError(
            f"term {instance.name}: default_weight must be a number, got {type(value).__name__}"
        )
    try:
        number = float(value)
    except OverflowError:  # an int too large for a double
        raise ScoringTermError(
            f"term {instance.name}: default_weight must be finite and >= 0, got a huge integer"
        ) from None
    if not math.isfinite(number) or number < 0:
        raise ScoringTermError(
            f"term {instance.name}: default_weight must be finite and >= 0, got {value!r}"
        )


def _check_sign(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or value not in (1, -1) or not isinstance(value, int):
        raise ScoringTermError(f"term {instance.name}: sign must be +1 or -1, got {value!r}")
    if instance.weight_name in FILLABLE_WEIGHTS:
        builtin = next(t for t in BUILTIN_TERMS if t.weight_name == instance.weight_name)
        if value != builtin.sign:
            kind, sign = ("a reward", "+1") if builtin.sign > 0 else ("a penalty", "-1")
            raise ScoringTermError(
                f"term {instance.name}: a term filling {instance.weight_name} is {kind}; "
                f"sign must be {sign}"
            )


def _check_fn(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not callable(value):
        raise ScoringTermError(f"term {instance.name}: fn must be callable")


@attrs.frozen
class ScoringTerm:
    """An extra term contributed to the ForkScore (see the module docstring)."""

    name: str = attrs.field(validator=[_check_identifier("name"), _check_name])
    weight_name: str = attrs.field(validator=[_check_identifier("weight_name"), _check_weight_name])
    default_weight: float = attrs.field(validator=_check_default_weight)
    sign: int = attrs.field(validator=_check_sign)
    fn: TermFn = attrs.field(validator=_check_fn)

    @property
    def fills(self) -> str | None:
        """The built-in weight whose term this one supplies (``iota``/``kappa``), if any."""
        return self.weight_name if self.weight_name in FILLABLE_WEIGHTS else None

    @property
    def key(self) -> str:
        """The breakdown key the contribution is reported under."""
        if self.fills is not None:
            builtin = next(t for t in BUILTIN_TERMS if t.weight_name == self.fills)
            return builtin.key
        return breakdown_key(self.weight_name, self.name, self.sign)


def check_terms(terms: Iterable[object]) -> tuple[ScoringTerm, ...]:
    """Validate a collection of extra terms; return them ordered by name.

    Raises :class:`ScoringTermError` for a non-term, a duplicate name or a
    duplicate weight name (two terms filling the same reserved weight included).
    """
    if isinstance(terms, str | bytes | Mapping):
        raise ScoringTermError("extra_terms: must be a sequence of ScoringTerm")
    try:
        items = list(terms)
    except TypeError:
        raise ScoringTermError("extra_terms: must be a sequence of ScoringTerm") from None
    names: set[str] = set()
    weight_names: set[str] = set()
    for index, term in enumerate(items):
        if not isinstance(term, ScoringTerm):
            raise ScoringTermError(
                f"extra_terms[{index}]: must be a ScoringTerm, got {type(term).__name__}"
            )
        if term.name in names:
            raise ScoringTermError(f"term {term.name}: registered twice")
        if term.weight_name in weight_names:
            raise ScoringTermError(
                f"term {term.name}: weight name {term.weight_name!r} is already used by "
                "another term"
            )
        names.add(term.name)
        weight_names.add(term.weight_name)
    ordered: list[ScoringTerm] = sorted(items, key=lambda t: t.name)  # type: ignore[arg-type]
    return tuple(ordered)


def evaluate_term(
    term: ScoringTerm, parent: Any, child: Any, inputs: Mapping[str, float | int]
) -> float:
    """Call ``term.fn`` and return its value as a finite float.

    Raises :class:`ScoringTermError` naming the term if the function raises or
    returns anything but a finite number.
    """
    try:
        value = term.fn(parent, child, inputs)
    except Exception as exc:  # a plugin bug must not escape as a bare traceback
        detail = short_text(str(exc).splitlines()[0] if str(exc) else "", 120)
        raise ScoringTermError(
            f"term {term.name}: fn raised {type(exc).__name__}: {detail}".rstrip(": ")
        ) from exc
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScoringTermError(
            f"term {term.name}: fn must return a number, got {type(value).__name__}"
        )
    try:
        result = float(value)
    except OverflowError:
        raise ScoringTermError(f"term {term.name}: fn returned an integer too large") from None
    if not math.isfinite(result):
        raise ScoringTermError(f"term {term.name}: fn returned a non-finite value {result!r}")
    return result
