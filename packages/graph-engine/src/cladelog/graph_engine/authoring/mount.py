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

from .errors import AuthoringError

__all__ = [
    "ESCALATE",
    "FROZEN",
    "INLINE",
    "INSTANCE",
    "REGIMES",
    "MountController",
    "MountDecision",
    "MountState",
    "MountThresholds",
    "WidenResult",
    "classify",
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
    demoted_from: str | None


def _opt_number(signals: Mapping[str, Any], key: str) -> float | None:
    value = signals.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise AuthoringError(f"signals.{key}: must be a number, got {value!r}")
    return value


def _reason(signals: Mapping[str, Any], current: str, t: MountThresholds
            ) -> tuple[str, str]:
    if not isinstance(signals, Mapping):
        raise AuthoringError(f"signals: must be an object, got {type(signals).__name__}")
    if current not in REGIMES:
        raise AuthoringError(f"current: must be one of {list(REGIMES)}, got {current!r}")
    reliability = _opt_number(signals, "reliability")
    hit_rate = _opt_number(signals, "hit_rate")
    depth = _opt_number(signals, "depth")
    deopts = _opt_number(signals, "deopt_count") or 0
    rel = reliability or 0
    score = min(rel, hit_rate if hit_rate is not None else rel)
    depth = 99 if depth is None else depth
    read_only = bool(signals.get("read_only_frontier"))
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
             thresholds: MountThresholds | None = None) -> str:
    """The regime for ``signals`` given the ``current`` regime.

    Signals (all optional): ``reliability``, ``hit_rate``, ``depth`` (default 99),
    ``read_only_frontier``, ``deopt_count``. ``score = min(reliability or 0, hit_rate if
    given else reliability or 0)``. Escalate at ``deopt_count ≥ max_deopt``; else frozen on
    a read-only frontier with score ≥ freeze_hi (freeze_lo when already frozen); else inline
    on a read-only frontier at depth ≤ inline_max_depth with score ≥ inline_hi (inline_lo
    when already inline); else instance.
    """
    return _reason(signals, current, thresholds or MountThresholds())[0]


class MountController:
    """Per-method mount state with the policy of :func:`classify`.

    With a ``sink``, every change is emitted as a record whose data carries the method's
    full state after the change (``mount.decided``, ``mount.deopted``, ``mount.widened``),
    so folding the records is idempotent.
    """

    def __init__(self, thresholds: MountThresholds | None = None,
                 sink: Sink | None = None) -> None:
        self.thresholds = thresholds or MountThresholds()
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
        """Classify with the stored deopt count and regime, store and return the result."""
        if signals is not None and not isinstance(signals, Mapping):
            raise AuthoringError(f"signals: must be an object, got {type(signals).__name__}")
        s = self.state_of(mid)
        merged = {**(signals or {}), "deopt_count": s.deopt_count}
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
        """A frozen method had to widen: frozen becomes instance; at ``widen_cap`` widens the
        regime becomes escalate."""
        s = self.state_of(mid)
        demoted = FROZEN if s.regime == FROZEN else None
        regime = INSTANCE if demoted else s.regime
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
