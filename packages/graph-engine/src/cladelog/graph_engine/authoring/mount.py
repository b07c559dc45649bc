"""The mount-regime policy (SPEC §1.14, ``mount``).

A method class runs in one of four regimes: ``frozen`` (replay a crystallized method),
``inline`` (splice a shallow method in place), ``instance`` (run it as its own instance), or
``escalate`` (it drifted too often: always re-derive). :func:`classify` is the pure rule,
with hysteresis (a regime is kept down to its lower threshold); :class:`MountController`
keeps per-method state and, given a sink, emits every change as a record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from ..jsvalue import truthy
from .errors import AuthoringError

__all__ = [
    "ESCALATE",
    "FROZEN",
    "INLINE",
    "INSTANCE",
    "REGIMES",
    "SIGNAL_NAMES",
    "THRESHOLD_NAMES",
    "MountController",
    "MountDecision",
    "MountState",
    "MountThresholds",
    "WidenResult",
    "as_thresholds",
    "classify",
    "normalize_signals",
]

FROZEN: Final = "frozen"
INLINE: Final = "inline"
INSTANCE: Final = "instance"
ESCALATE: Final = "escalate"
REGIMES: Final = (FROZEN, INLINE, INSTANCE, ESCALATE)

Sink = Callable[[str, dict[str, Any]], None]


@attrs.frozen
class MountThresholds:
    """The policy's thresholds (defaults of SPEC §1.14)."""

    max_deopt: int = 3
    freeze_hi: float = 0.85
    freeze_lo: float = 0.70
    inline_hi: float = 0.65
    inline_lo: float = 0.50
    inline_max_depth: float = 1
    widen_cap: int = 5


@attrs.frozen
class MountState:
    """Per-method state: the current regime and the deopt and widen counters."""

    regime: str = INSTANCE
    deopt_count: int = 0
    widen_count: int = 0


@attrs.frozen
class MountDecision:
    """The result of :meth:`MountController.decide`."""

    regime: str
    deopt_count: int
    reason: str


@attrs.frozen
class WidenResult:
    """The result of :meth:`MountController.record_widen`."""

    regime: str
    widen_count: int
    demoted_from: str  # the regime held before the widen


#: Signal names: the SPEC's camelCase spelling -> the snake_case one used internally.
SIGNAL_NAMES: Final = {"reliability": "reliability", "hitRate": "hit_rate", "depth": "depth",
                       "readOnlyFrontier": "read_only_frontier", "deoptCount": "deopt_count"}
_SIGNAL_OF: Final = {**{camel: snake for camel, snake in SIGNAL_NAMES.items()},
                     **{snake: snake for snake in SIGNAL_NAMES.values()}}
_CAMEL_OF: Final = {snake: camel for camel, snake in SIGNAL_NAMES.items()}
_NUMERIC_SIGNALS: Final = frozenset({"reliability", "hit_rate", "depth", "deopt_count"})

#: Threshold names: the SPEC's camelCase spelling -> the :class:`MountThresholds` field.
THRESHOLD_NAMES: Final = {"maxDeopt": "max_deopt", "freezeHi": "freeze_hi",
                          "freezeLo": "freeze_lo", "inlineHi": "inline_hi",
                          "inlineLo": "inline_lo", "inlineMaxDepth": "inline_max_depth",
                          "widenCap": "widen_cap"}
_INTEGER_THRESHOLDS: Final = frozenset({"max_deopt", "widen_cap"})


def _same(a: Any, b: Any) -> bool:
    return bool(a == b) and isinstance(a, bool) == isinstance(b, bool)


def _aliased(value: Mapping[str, Any], names: Mapping[str, str], camel_of: Mapping[str, str],
             path: str, what: str) -> dict[str, Any]:
    """``value`` with every key mapped to its snake_case name; an unknown key, or one given
    under both spellings with different values, is an :class:`AuthoringError`."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        target = names.get(key) if isinstance(key, str) else None
        if target is None:
            raise AuthoringError(f"{path}.{key}: unknown {what} (one of "
                                 f"{', '.join(camel_of.values())}; snake_case also accepted)")
        if target in out and not _same(out[target], item):
            camel = camel_of[target]
            raise AuthoringError(f"{path}.{camel}: given as {camel} and {target} with different "
                                 f"values ({out[target]!r}, {item!r})")
        out[target] = item
    return out


def normalize_signals(signals: Any, path: str = "signals") -> dict[str, Any]:
    """Mount signals with snake_case keys, checked.

    The SPEC's names (``reliability``, ``hitRate``, ``depth``, ``readOnlyFrontier``,
    ``deoptCount``) and their snake_case spellings are accepted; an unknown key, the same
    signal under both spellings with different values, or a non-number where a number is
    expected (``None`` means absent) is an :class:`AuthoringError` naming the key.
    """
    if not isinstance(signals, Mapping):
        raise AuthoringError(f"{path}: must be an object, got {type(signals).__name__}")
    out = _aliased(signals, _SIGNAL_OF, _CAMEL_OF, path, "signal")
    for key in _NUMERIC_SIGNALS & out.keys():
        value = out[key]
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise AuthoringError(f"{path}.{_CAMEL_OF[key]}: must be a number, got {value!r}")
    return out


def as_thresholds(value: MountThresholds | Mapping[str, Any] | None) -> MountThresholds:
    """:class:`MountThresholds` from an instance, None (the defaults), or the reference's
    object of thresholds (``{maxDeopt, freezeHi, ...}``, snake_case also accepted; missing
    keys keep their defaults)."""
    if value is None:
        return MountThresholds()
    if isinstance(value, MountThresholds):
        return value
    if not isinstance(value, Mapping):
        raise AuthoringError(f"thresholds: must be MountThresholds or an object, got "
                             f"{type(value).__name__}")
    names = {**THRESHOLD_NAMES, **{f: f for f in THRESHOLD_NAMES.values()}}
    camel_of = {f: c for c, f in THRESHOLD_NAMES.items()}
    fields = _aliased(value, names, camel_of, "thresholds", "threshold")
    for key, number in fields.items():
        where = f"thresholds.{camel_of[key]}"
        if isinstance(number, bool) or not isinstance(number, int | float) or not math.isfinite(
                number):
            raise AuthoringError(f"{where}: must be a finite number, got {number!r}")
        if key in _INTEGER_THRESHOLDS and not isinstance(number, int):
            raise AuthoringError(f"{where}: must be an integer, got {number!r}")
    return MountThresholds(**fields)


def _reason(signals: Mapping[str, Any], current: str, t: MountThresholds
            ) -> tuple[str, str]:
    """The rule of SPEC §1.14 over signals already normalized by :func:`normalize_signals`."""
    if current not in REGIMES:
        raise AuthoringError(f"current: must be one of {list(REGIMES)}, got {current!r}")
    reliability = signals.get("reliability")
    hit_rate = signals.get("hit_rate")
    depth = signals.get("depth")
    deopts = signals.get("deopt_count") or 0
    rel = reliability or 0
    score = min(rel, hit_rate if hit_rate is not None else rel)
    depth = 99 if depth is None else depth
    read_only = truthy(signals.get("read_only_frontier"))
    if deopts >= t.max_deopt:
        return ESCALATE, f"deoptCount {deopts:g} >= maxDeopt {t.max_deopt}"
    freeze_at = t.freeze_lo if current == FROZEN else t.freeze_hi
    if read_only and score >= freeze_at:
        return FROZEN, f"read-only frontier, score {score:g} >= {freeze_at:g}"
    inline_at = t.inline_lo if current == INLINE else t.inline_hi
    if read_only and depth <= t.inline_max_depth and score >= inline_at:
        return INLINE, f"read-only frontier, depth {depth:g}, score {score:g} >= {inline_at:g}"
    return INSTANCE, f"score {score:g}, readOnlyFrontier {read_only}"


def classify(signals: Mapping[str, Any], current: str = INSTANCE,
             thresholds: MountThresholds | Mapping[str, Any] | None = None) -> str:
    """The regime for ``signals`` given the ``current`` regime.

    Signals (all optional), under the SPEC's names or their snake_case spelling:
    ``reliability``, ``hitRate``, ``depth`` (default 99), ``readOnlyFrontier``,
    ``deoptCount``; an unknown key is an :class:`AuthoringError`. ``score =
    min(reliability or 0, hitRate if given else reliability or 0)``. Escalate at
    ``deoptCount ≥ maxDeopt``; else frozen on a read-only frontier with score ≥ freezeHi
    (freezeLo when already frozen); else inline on a read-only frontier at depth ≤
    inlineMaxDepth with score ≥ inlineHi (inlineLo when already inline); else instance.
    ``thresholds`` is a :class:`MountThresholds` or an object of thresholds (see
    :func:`as_thresholds`).
    """
    return _reason(normalize_signals(signals), current, as_thresholds(thresholds))[0]


class MountController:
    """Per-method mount state with the policy of :func:`classify`.

    With a ``sink``, every change is emitted as a record whose data carries the method's
    full state after the change (``mount.decided``, ``mount.deopted``, ``mount.widened``),
    so folding the records is idempotent.
    """

    def __init__(self, thresholds: MountThresholds | Mapping[str, Any] | None = None,
                 sink: Sink | None = None) -> None:
        self.thresholds = as_thresholds(thresholds)
        self._state: dict[str, MountState] = {}
        self._sink = sink

    def _emit(self, kind: str, mid: str, extra: dict[str, Any]) -> None:
        if self._sink is not None:
            s = self.state_of(mid)
            self._sink(kind, {"id": mid, "regime": s.regime, "deoptCount": s.deopt_count,
                              "widenCount": s.widen_count, **extra})

    def state_of(self, mid: str) -> MountState:
        """The stored state of method ``mid`` (default state when unknown)."""
        return self._state.get(mid, MountState())

    def states(self) -> dict[str, MountState]:
        """A copy of every method's state."""
        return dict(self._state)

    def restore(self, mid: str, state: MountState) -> None:
        """Set a method's state (rebuilding from a projection); emits nothing."""
        self._state[mid] = state

    def decide(self, mid: str, signals: Mapping[str, Any] | None = None) -> MountDecision:
        """Classify with the stored deopt count and regime, store and return the result.

        ``signals`` are checked as by :func:`classify`; a ``deoptCount`` among them is
        ignored (the stored count is used)."""
        s = self.state_of(mid)
        merged = {**normalize_signals({} if signals is None else signals),
                  "deopt_count": s.deopt_count}
        regime, reason = _reason(merged, s.regime, self.thresholds)
        self._state[mid] = attrs.evolve(s, regime=regime)
        self._emit("mount.decided", mid, {"reason": reason})
        return MountDecision(regime, s.deopt_count, reason)

    def record_deopt(self, mid: str) -> int:
        """Count one deopt; at ``max_deopt`` the regime becomes escalate. Returns the count."""
        s = self.state_of(mid)
        count = s.deopt_count + 1
        regime = ESCALATE if count >= self.thresholds.max_deopt else s.regime
        self._state[mid] = attrs.evolve(s, deopt_count=count, regime=regime)
        self._emit("mount.deopted", mid, {})
        return count

    def record_widen(self, mid: str) -> WidenResult:
        """A method had to widen: frozen becomes instance; at ``widen_cap`` widens the
        regime becomes escalate. ``demoted_from`` is the regime held before this widen,
        whatever it was (``instance`` for an id never seen), SPEC §1.14."""
        s = self.state_of(mid)
        demoted = s.regime
        regime = INSTANCE if demoted == FROZEN else demoted
        widens = s.widen_count + 1
        if widens >= self.thresholds.widen_cap:
            regime = ESCALATE
        self._state[mid] = attrs.evolve(s, regime=regime, widen_count=widens)
        self._emit("mount.widened", mid, {"demotedFrom": demoted})
        return WidenResult(regime, widens, demoted)

    def regime_of(self, mid: str) -> str:
        """The current regime of method ``mid`` (``instance`` when unknown)."""
        return self.state_of(mid).regime

    def deopt_budget(self, mid: str) -> int:
        """``max(0, max_deopt − deopts)``."""
        return max(0, self.thresholds.max_deopt - self.state_of(mid).deopt_count)

    def widen_budget(self, mid: str) -> int:
        """``max(0, widen_cap − widens)``."""
        return max(0, self.thresholds.widen_cap - self.state_of(mid).widen_count)
