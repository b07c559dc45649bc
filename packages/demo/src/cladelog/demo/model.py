"""The seeded model of a self-improving engine that the demo's history is drawn from.

Pure: every function takes a :class:`random.Random` (seeded by the caller from
the demo seed) or plain values; nothing reads a clock or global randomness.

The story
---------
The engine ("lumen") proposes candidate versions in rounds; each round ends at a
checkpoint (branch set, anchor measurement, Law V check). A candidate has a
*role* that fixes the kind of change it is:

* ``strong`` -- a real improvement: the oracle sees a gain of 4 to 9 Elo, its
  battery results improve (fork-score ACCEPT);
* ``modest`` -- 2 to 4 Elo, batteries slightly better (ACCEPT or MARGINAL);
* ``neutral`` -- about 0 Elo (a speed-up or simplification, sometimes merged on
  a special path without a gain test), batteries flat (MARGINAL);
* ``regression`` -- 3 to 9 Elo worse, one sub-battery drops by 6 to 10 points
  (fork-score REJECT).

The oracle measures each gain test by games drawn from the logistic model with
a draw rate (:func:`draw_games`). What the oracle measures is not the whole
truth: each round's *phase* has a transfer fraction, the share of the measured
gain that really reaches the engine's strength against fixed anchors. Healthy
rounds transfer about all of it; then the oracle starts overfitting
(``drift``: about 0.6, ``overfit``: under 0.15), and after a human review and a
recalibration the gains arrive again (``recovered``). Anchor measurements
(:func:`draw_games` against each of the six anchors' true rating) see only the true
strength, which is why Law V's R = ΔA / S falls from CONTINUE to WARNING to
HALT.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from .errors import DemoError

__all__ = [
    "ANCHORS",
    "MAX_CANDIDATES",
    "MIN_CANDIDATES",
    "PHASES",
    "ROLES",
    "AnchorModel",
    "CandidatePlan",
    "DemoConfig",
    "Phase",
    "RoundPlan",
    "artifact_digest",
    "draw_battery",
    "draw_games",
    "initial_battery",
    "key_seed",
    "plan_rounds",
    "scalars_for",
    "target_verdicts",
]

MIN_CANDIDATES: Final = 16
MAX_CANDIDATES: Final = 100_000
ROLES: Final = ("strong", "modest", "neutral", "regression")


@attrs.frozen
class DemoConfig:
    """What a demo run depends on: the seed and the number of candidate versions.

    ``checkpoints`` is 5 from 25 candidates on (two healthy rounds), else 4.
    """

    seed: int = 0
    candidates: int = 30

    def __attrs_post_init__(self) -> None:
        if type(self.seed) is not int or not 0 <= self.seed < 2**63:
            raise DemoError(f"--seed: must be an integer in [0, 2**63), got {self.seed!r}")
        if type(self.candidates) is not int or not (
            MIN_CANDIDATES <= self.candidates <= MAX_CANDIDATES
        ):
            raise DemoError(f"--candidates: must be an integer in [{MIN_CANDIDATES}, "
                            f"{MAX_CANDIDATES}], got {self.candidates!r}")

    @property
    def checkpoints(self) -> int:
        return 5 if self.candidates >= 25 else 4

    def rng(self, purpose: str) -> random.Random:
        """A generator for one purpose, derived from the seed (independent streams)."""
        digest = hashlib.sha256(f"cladelog-demo:{self.seed}:{purpose}".encode()).digest()
        return random.Random(int.from_bytes(digest[:16], "big"))


@attrs.frozen
class Phase:
    """A round's regime: the share of the oracle's measured gain that is real."""

    name: str
    transfer_low: float
    transfer_high: float
    expected_verdict: str
    description: str


PHASES: Final[Mapping[str, Phase]] = {
    "healthy": Phase("healthy", 0.92, 1.08, "CONTINUE",
                     "the oracle's gains arrive against the anchors"),
    "drift": Phase("drift", 0.55, 0.62, "WARNING",
                   "the oracle starts to overfit: part of its gains does not arrive"),
    "overfit": Phase("overfit", 0.05, 0.14, "HALT",
                     "the oracle overfits: its gains no longer arrive"),
    "recovered": Phase("recovered", 0.95, 1.08, "CONTINUE",
                       "after review and recalibration the gains arrive again"),
}


@attrs.frozen
class CandidatePlan:
    """One candidate version: its name, role and the gain the oracle will see."""

    name: str
    role: str
    oracle_gain: float
    special_path: str | None = None


@attrs.frozen
class RoundPlan:
    """One round of candidates ending at checkpoint ``index`` (1-based)."""

    index: int
    phase: Phase
    transfer: float
    candidates: tuple[CandidatePlan, ...]

    @property
    def branch_set_id(self) -> str:
        return f"checkpoint-{self.index}"


def _phase_names(checkpoints: int) -> list[str]:
    return ["healthy"] * (checkpoints - 3) + ["drift", "overfit", "recovered"]


def _gain(rng: random.Random, role: str) -> float:
    low, high = {"strong": (4.0, 9.0), "modest": (2.0, 4.0), "neutral": (-1.0, 1.0),
                 "regression": (-9.0, -3.0)}[role]
    return round(rng.uniform(low, high), 3)


#: The largest round whose drawn roles keep the base weights (a 400-candidate demo's).
ROUND_CAP: Final = 80


def _role_weights(size: int) -> list[float]:
    """The weights of the drawn roles of a round of ``size`` candidates.

    Up to :data:`ROUND_CAP` candidates: strong 0.4, modest 0.25, neutral 0.15,
    regression 0.2. A larger round draws as many strong and modest candidates as a
    round of ``ROUND_CAP`` would (the rest neutral or regressions, in the same
    proportion), so the engine's true strength moves as much per round at any size:
    otherwise 10,000 candidates would carry it thousands of Elo past the fixed anchors,
    where the anchor games are all wins and Law V has nothing left to measure.
    """
    if size <= ROUND_CAP:
        return [0.4, 0.25, 0.15, 0.2]
    k = (ROUND_CAP - 4) / (size - 4)
    rest = 0.65 * (1.0 - k)
    return [0.4 * k, 0.25 * k, 0.15 + rest * 0.15 / 0.35, 0.2 + rest * 0.2 / 0.35]


def plan_rounds(config: DemoConfig) -> tuple[RoundPlan, ...]:
    """Split the candidates into rounds and give each a role and an oracle gain.

    Every round has at least four branches and holds a ``strong``, a second
    ``strong`` or ``modest`` (``strong`` in the recovered round), a ``neutral``
    and a ``regression`` candidate, so each branch set shows ACCEPT, MARGINAL and
    REJECT; the rest are drawn.
    Neutral candidates of even rounds are merged on a special path.
    """
    rng = config.rng("plan")
    n = config.checkpoints
    sizes = [config.candidates // n + (1 if i < config.candidates % n else 0) for i in range(n)]
    rounds: list[RoundPlan] = []
    number = 0
    for index, (size, phase_name) in enumerate(zip(sizes, _phase_names(n), strict=True), 1):
        second = rng.choice(["strong", "modest"])
        if phase_name == "recovered":
            # two real improvements after the review, so that the claimed gain of the last
            # window is large enough that undoing the reverted change (its small true gain
            # leaves with it) cannot move R out of CONTINUE
            second = "strong"
        roles = ["strong", second, "neutral", "regression"]
        roles += rng.choices(ROLES, weights=_role_weights(size), k=size - len(roles))
        rng.shuffle(roles)
        plans = []
        for role in roles:
            number += 1
            special = None
            if role == "neutral" and (index % 2 == 0 or rng.random() < 0.3):
                special = rng.choice(["speed", "simplification"])
            plans.append(CandidatePlan(f"c{number:02d}", role, _gain(rng, role), special))
        phase = PHASES[phase_name]
        transfer = round(rng.uniform(phase.transfer_low, phase.transfer_high), 4)
        rounds.append(RoundPlan(index, phase, transfer, tuple(plans)))
    return tuple(rounds)


def artifact_digest(seed: int, name: str) -> str:
    """A stand-in build digest of a version (``sha256:<hex>``), fixed by seed and name."""
    return "sha256:" + hashlib.sha256(f"lumen:{seed}:{name}".encode()).hexdigest()


def key_seed(seed: int, role: str) -> bytes:
    """32 bytes from which the demo derives a signing key (deterministic per seed)."""
    return hashlib.sha256(f"cladelog-demo-key:{seed}:{role}".encode()).digest()


def _expected_score(elo: float) -> float:
    return 1.0 / (1.0 + float(10.0 ** (-elo / 400.0)))


def _binomial(rng: random.Random, n: int, p: float) -> int:
    """A binomial draw by the normal approximation (n is in the thousands here)."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    value = round(n * p + math.sqrt(n * p * (1.0 - p)) * rng.gauss(0.0, 1.0))
    return max(0, min(n, value))


def draw_games(rng: random.Random, elo: float, games: int, draw_rate: float) -> list[int]:
    """``[losses, draws, wins]`` of ``games`` games at a true Elo difference ``elo``.

    The logistic model gives the expected score s; draws take ``draw_rate``
    (capped so that both win and loss probabilities stay positive), wins
    ``s - draws/2`` and losses the rest. Multinomial counts are drawn as a win
    binomial, then a draw binomial among the remaining games.
    """
    s = _expected_score(elo)
    d = min(draw_rate, 2.0 * min(s, 1.0 - s) * 0.98)
    p_win = s - d / 2.0
    wins = _binomial(rng, games, p_win)
    draws = _binomial(rng, games - wins, d / (1.0 - p_win))
    return [games - wins - draws, draws, wins]


@attrs.frozen
class AnchorModel:
    """A fixed reference engine: its true strength and its published rating."""

    name: str
    true_rating: float
    rating_uncertainty: float


#: The fixed anchor set of Law V: six external engines, as the Law V seed says ("a fixed
#: anchor set of 6 external engines"), spread around the engine's strength over the demo
#: (3040 at the start, about 3100 at the end).
ANCHORS: Final = (
    AnchorModel("anchor-alpha", 2990.0, 6.0),
    AnchorModel("anchor-bravo", 3020.0, 8.0),
    AnchorModel("anchor-charlie", 3055.0, 5.0),
    AnchorModel("anchor-delta", 3085.0, 10.0),
    AnchorModel("anchor-echo", 2965.0, 7.0),
    AnchorModel("anchor-foxtrot", 3110.0, 9.0),
)


def _rate(value: float) -> float:
    return round(min(0.999, max(0.001, value)), 4)


def initial_battery(rng: random.Random, name: str) -> dict[str, Any]:
    """The battery results of the first main version (rates between 0.55 and 0.85)."""
    from cladelog.fork_score import RATE_KEYS

    batteries: dict[str, Any] = {}
    for battery, subs in RATE_KEYS.items():
        batteries[battery] = {sub: {key: _rate(rng.uniform(0.55, 0.85))}
                              for sub, key in subs.items()}
    return {"organism_id": name, "batteries": batteries}


_SHIFT: Final = {"strong": (0.03, 0.012), "modest": (0.012, 0.006),
                 "neutral": (0.004, 0.003), "regression": (-0.01, 0.008)}


def draw_battery(rng: random.Random, parent: Mapping[str, Any], role: str,
                 name: str) -> dict[str, Any]:
    """A child's battery results: the parent's rates shifted as its role suggests.

    A ``regression`` also loses 6 to 10 points on one sub-battery, which
    fork-score flags as a hard regression.
    """
    mean, spread = _SHIFT[role]
    batteries: dict[str, Any] = {}
    cells: list[tuple[str, str, str]] = []
    for battery, subs in parent["batteries"].items():
        batteries[battery] = {}
        for sub, metrics in subs.items():
            batteries[battery][sub] = {}
            for key, value in metrics.items():
                batteries[battery][sub][key] = _rate(value + rng.gauss(mean, spread))
                cells.append((battery, sub, key))
    if role == "regression":
        battery, sub, key = rng.choice(cells)
        old = parent["batteries"][battery][sub][key]
        batteries[battery][sub][key] = _rate(old - rng.uniform(0.06, 0.10))
    return {"organism_id": name, "batteries": batteries}


def scalars_for(rng: random.Random, role: str) -> dict[str, float]:
    """The caller scalars of a scoring: what the change costs and its self-model gain."""
    cost = {"strong": 0.03, "modest": 0.02, "neutral": 0.006, "regression": 0.03}[role]
    return {"capital_delta": round(rng.uniform(0.0, cost), 4),
            "selfmodel_calibration_gain": round(rng.uniform(-0.004, 0.01), 4)}


def target_verdicts(role: str) -> Sequence[str]:
    """The fork-score verdicts the demo accepts for a role (it redraws otherwise)."""
    return {"strong": ("ACCEPT",), "modest": ("ACCEPT", "MARGINAL"), "neutral": ("MARGINAL",),
            "regression": ("REJECT",)}[role]
