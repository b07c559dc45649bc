"""The plugin's settings, ``[settings.fork-score]`` in ``cladelog.toml``.

::

    [settings.fork-score]
    signal_floor = 0.05            # least score for ACCEPT
    hard_regression_floor = 0.05   # a rate drop of this much raises a hard flag
    softmax_temperature = 0.05     # temperature of the branch-set softmax weights
    weights_file = "weights.json"  # optional; relative to the deployment file
    gate_unscored = "block"        # gate vote on a candidate never scored: block | abstain
    hard_flag_gating = true        # false: hard flags are reported but do not force REJECT

Core reads the table (:func:`cladelog.core.config.structure_settings`): exact
TOML types, no unknown keys (with a did-you-mean), and the range checks below,
which are the fields' validators; a bad value is one
:class:`~cladelog.core.errors.ConfigError` line such as ``cladelog.toml:
[settings.fork-score] signal_floor: must be finite and >= 0, got -1.0``.

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
from typing import Any, Literal

import attrs

__all__ = [
    "DEFAULT_SOFTMAX_TEMPERATURE",
    "ForkScoreSettings",
    "check_settings",
    "weights_path",
]

#: Default softmax temperature of branch-set weights (see the module docstring).
DEFAULT_SOFTMAX_TEMPERATURE = 0.05


def _signal_floor(_: Any, __: Any, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"must be finite and >= 0, got {value!r}")


def _hard_regression_floor(_: Any, __: Any, value: float) -> None:
    if not math.isfinite(value) or not 0 < value <= 1:
        raise ValueError(f"must lie in (0, 1], got {value!r}")


def _softmax_temperature(_: Any, __: Any, value: float) -> None:
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be finite and > 0, got {value!r}")


def _weights_file(_: Any, __: Any, value: str | None) -> None:
    if value is not None and not value.strip():
        raise ValueError("must be a non-empty path")


def _gate_unscored(_: Any, __: Any, value: str) -> None:
    if value not in ("block", "abstain"):
        raise ValueError(f"must be one of 'block', 'abstain', got {value!r}")


@attrs.frozen
class ForkScoreSettings:
    """Settings of the fork-score plugin (every field has a default).

    Each range rule is the field's validator, so core's reading of the table
    (:func:`cladelog.core.config.structure_settings`) refuses a bad value when the
    deployment opens, in its one error form.
    """

    signal_floor: float = attrs.field(default=0.05, validator=_signal_floor)
    hard_regression_floor: float = attrs.field(default=0.05, validator=_hard_regression_floor)
    softmax_temperature: float = attrs.field(default=DEFAULT_SOFTMAX_TEMPERATURE,
                                             validator=_softmax_temperature)
    weights_file: str | None = attrs.field(default=None, validator=_weights_file)
    gate_unscored: Literal["block", "abstain"] = attrs.field(default="block",
                                                             validator=_gate_unscored)
    hard_flag_gating: bool = True


def check_settings(settings: ForkScoreSettings) -> None:
    """Raise ``ValueError`` naming the setting if a value is out of range.

    ``signal_floor`` must be finite and ``>= 0``, ``hard_regression_floor`` lie in
    ``(0, 1]``, ``softmax_temperature`` be finite and ``> 0``, ``weights_file`` be
    a non-empty path when given, ``gate_unscored`` be ``block`` or ``abstain``.
    These are the fields' own validators (a :class:`ForkScoreSettings` built
    normally already passed them); this re-runs them on an instance made otherwise.
    """
    for field in attrs.fields(ForkScoreSettings):
        if field.validator is not None:
            try:
                field.validator(settings, field, getattr(settings, field.name))
            except ValueError as exc:
                raise ValueError(f"[settings.fork-score] {field.name}: {exc}") from None


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
