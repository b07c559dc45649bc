"""The plugin's settings, ``[settings.fork-score]`` in ``cladelog.toml``.

::

    [settings.fork-score]
    signal_floor = 0.05            # least score for ACCEPT
    hard_regression_floor = 0.05   # a rate drop of this much raises a hard flag
    softmax_temperature = 0.05     # temperature of the branch-set softmax weights
    weights_file = "weights.json"  # optional; relative to the deployment file
    gate_unscored = "block"        # gate vote on a candidate never scored: block | abstain
    hard_flag_gating = true        # false: hard flags are reported but do not force REJECT

Core structures the table strictly (exact JSON types, no unknown keys); the
range checks below run when the deployment is configured and refuse a bad
value with a one-line :class:`~cladelog.core.errors.ConfigError`.

Why the softmax temperature defaults to 0.05: it equals the default signal
floor, so a branch that beats another by exactly one signal floor (the least
difference the verdict treats as a real improvement) gets ``e`` (about 2.72)
times its weight; a difference well under the floor leaves the weights close
to uniform, and a difference of several floors makes the better branch
dominate.

``hard_flag_gating = false`` is the seed's Phase 1b switch: hard flags
(``REGRESSION_...``, ``NEG_INF_REGRESSION``, ``MISSING_...``) are still computed,
reported and recorded, but no longer force REJECT; the soft RegressionPenalty
stays in the score, so a negative score is still REJECT. The setting is part of
the reported ``weights_id``, recorded in every ``fork_score.branch_scored`` event
(``hard_flag_gating``), and ``cladelog gate`` says when it is off.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import attrs

__all__ = [
    "DEFAULT_SOFTMAX_TEMPERATURE",
    "ForkScoreSettings",
    "check_settings",
    "weights_path",
]

#: Default softmax temperature of branch-set weights (see the module docstring).
DEFAULT_SOFTMAX_TEMPERATURE = 0.05


@attrs.frozen
class ForkScoreSettings:
    """Settings of the fork-score plugin (every field has a default)."""

    signal_floor: float = 0.05
    hard_regression_floor: float = 0.05
    softmax_temperature: float = DEFAULT_SOFTMAX_TEMPERATURE
    weights_file: str | None = None
    gate_unscored: str = "block"
    hard_flag_gating: bool = True


def check_settings(settings: ForkScoreSettings) -> None:
    """Raise ``ValueError`` naming the setting if a value is out of range.

    ``signal_floor`` must be finite and ``>= 0``, ``hard_regression_floor`` lie in
    ``(0, 1]``, ``softmax_temperature`` be finite and ``> 0``, ``weights_file`` be
    a non-empty path when given, ``gate_unscored`` be ``block`` or ``abstain``.
    """
    prefix = "settings.fork-score"
    if not math.isfinite(settings.signal_floor) or settings.signal_floor < 0:
        raise ValueError(f"{prefix}.signal_floor: must be finite and >= 0, "
                         f"got {settings.signal_floor!r}")
    hard = settings.hard_regression_floor
    if not math.isfinite(hard) or not 0 < hard <= 1:
        raise ValueError(f"{prefix}.hard_regression_floor: must lie in (0, 1], got {hard!r}")
    temp = settings.softmax_temperature
    if not math.isfinite(temp) or temp <= 0:
        raise ValueError(f"{prefix}.softmax_temperature: must be finite and > 0, got {temp!r}")
    if settings.weights_file is not None and not settings.weights_file.strip():
        raise ValueError(f"{prefix}.weights_file: must be a non-empty path")
    if settings.gate_unscored not in ("block", "abstain"):
        raise ValueError(f"{prefix}.gate_unscored: must be 'block' or 'abstain', "
                         f"got {settings.gate_unscored!r}")


def weights_path(settings: ForkScoreSettings, config_path: Any) -> Path | None:
    """The weights file a deployment names, resolved against the deployment file's folder.

    ``config_path`` is the deployment file's path (or ``None``, then the path is
    taken relative to the working directory).
    """
    if settings.weights_file is None:
        return None
    path = Path(settings.weights_file)
    if not path.is_absolute() and config_path is not None:
        path = Path(config_path).parent / path
    return path
