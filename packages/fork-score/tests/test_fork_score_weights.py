"""Weight sets: seed defaults, overrides, strict errors and the weights id."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import attrs
import pytest
from cladelog.fork_score import (
    DEFAULT_WEIGHTS,
    JsonFileError,
    WeightsError,
    WeightSet,
    load_weights,
    score,
    weights_from_json,
)
from fork_score_docs import make_doc

# The canonical JSON (RFC 8785) of the seed defaults, written out by hand: keys
# sorted, no spaces, 1.0 written as 1 and 0.0 as 0.
SEED_DEFAULTS_CANONICAL = (
    '{"alpha":1,"beta":1,"delta":0.5,"epsilon":0.3,"eta":2,"gamma":1,'
    '"iota":0,"kappa":0,"lambda":0.5,"theta":0.5,"zeta":0}'
)


def test_defaults_are_the_seed_values() -> None:
    w = WeightSet()
    assert (w.alpha, w.beta, w.gamma, w.delta, w.epsilon, w.zeta) == (1.0, 1.0, 1.0, 0.5, 0.3, 0.0)
    assert (w.eta, w.theta, w.iota, w.kappa, w.lambda_) == (2.0, 0.5, 0.0, 0.0, 0.5)
    assert w.extra == ()
    assert w == DEFAULT_WEIGHTS


def test_weight_set_is_frozen() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        WeightSet().alpha = 3.0  # type: ignore[misc]


def test_weights_id_of_the_defaults() -> None:
    expected = hashlib.sha256(SEED_DEFAULTS_CANONICAL.encode()).hexdigest()
    assert WeightSet().weights_id == expected
    assert score(make_doc(0.5), make_doc(0.5)).weights_id == expected


def test_weights_id_ignores_int_versus_float_and_tracks_values() -> None:
    assert WeightSet(alpha=1).weights_id == WeightSet(alpha=1.0).weights_id
    changed = '{"alpha":1.5' + SEED_DEFAULTS_CANONICAL[len('{"alpha":1') :]
    assert WeightSet(alpha=1.5).weights_id == hashlib.sha256(changed.encode()).hexdigest()


def test_weights_id_includes_extra_weights() -> None:
    with_extra = WeightSet(extra={"mu": 0.25})
    # "mu" sorts between "lambda" and "theta"
    canonical = SEED_DEFAULTS_CANONICAL.replace('"lambda":0.5,', '"lambda":0.5,"mu":0.25,')
    assert with_extra.weights_id == hashlib.sha256(canonical.encode()).hexdigest()


def test_load_weights_overrides_and_lambda_maps_to_lambda_() -> None:
    w = load_weights({"alpha": 1.5, "eta": 5.0, "lambda": 1})
    assert (w.alpha, w.eta, w.lambda_) == (1.5, 5.0, 1.0)
    assert w.beta == 1.0  # untouched weights keep their defaults
    assert w.to_json_dict()["lambda"] == 1.0


def test_override_changes_the_score() -> None:
    result = score(make_doc(0.5), make_doc(0.5), {"lambda": 2.0}, memory_invalidation_count=3)
    # -lambda * count = -2.0 * 3 = -6.0
    assert result.breakdown["minus_lambda_x_memory_invalidation"] == -6.0
    assert result.weights.lambda_ == 2.0


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ({"lamda": 1.0}, "weights.lamda: unknown weight (did you mean 'lambda'?)"),
        ({"lambda_": 1.0}, "weights.lambda_: unknown weight (the JSON name is 'lambda')"),
        ({"eta": -1.0}, "weights.eta: must be non-negative, got -1.0"),
        ({"alpha": "1.0"}, "weights.alpha: must be a non-negative number, got str"),
        ({"alpha": True}, "weights.alpha: must be a non-negative number, got bool"),
        ({"alpha": None}, "weights.alpha: must be a non-negative number, got NoneType"),
        ({"beta": math.nan}, "weights.beta: must be finite, got nan"),
        ({"beta": math.inf}, "weights.beta: must be finite, got inf"),
        ({"mu": 1.0}, "weights.mu: unknown weight"),
    ],
)
def test_bad_weights(mapping: dict[str, Any], expected: str) -> None:
    with pytest.raises(WeightsError) as info:
        load_weights(mapping)
    assert str(info.value).startswith(expected)


def test_bad_weight_set_construction() -> None:
    with pytest.raises(WeightsError, match=r"^weights\.lambda: must be non-negative"):
        WeightSet(lambda_=-0.1)
    with pytest.raises(WeightsError, match=r"^weights\.theta: must be finite"):
        WeightSet(theta=math.inf)
    with pytest.raises(WeightsError, match=r"^weights\.alpha: is a built-in weight"):
        WeightSet(extra={"alpha": 1.0})


def test_weights_must_be_an_object() -> None:
    with pytest.raises(WeightsError, match=r"^weights: must be an object, got list"):
        load_weights([("alpha", 1.0)])  # type: ignore[arg-type]


def test_bad_weights_argument_type() -> None:
    with pytest.raises(WeightsError, match=r"^weights: must be a WeightSet"):
        score(make_doc(0.5), make_doc(0.5), 3.0)  # type: ignore[arg-type]


def test_weights_from_json(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"alpha": 1.5, "eta": 5.0, "lambda": 1.0}), encoding="utf-8")
    w = weights_from_json(path)
    assert (w.alpha, w.eta, w.lambda_) == (1.5, 5.0, 1.0)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"alpha": NaN}', "invalid JSON (NaN is not valid JSON)"),
        ('{"alpha": 1e400}', "invalid JSON (number 1e400 is out of range for a double)"),
        ('{"alpha": 1, "alpha": 2}', "invalid JSON (duplicate member 'alpha')"),
        ('{"alpha": ', "invalid JSON (Expecting value"),
        ("[" * 100000, "invalid JSON"),
    ],
)
def test_weights_file_syntax_errors(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "w.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(JsonFileError) as info:
        weights_from_json(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert fragment in message
    assert "\n" not in message


def test_weights_file_content_error(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text('{"lamda": 1.0}', encoding="utf-8")
    with pytest.raises(WeightsError, match=r"^weights\.lamda: unknown weight"):
        weights_from_json(path)


def test_weights_file_missing(tmp_path: Path) -> None:
    with pytest.raises(JsonFileError, match="cannot read"):
        weights_from_json(tmp_path / "absent.json")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (None, "path: must be a file path, got NoneType"),
        (3, "path: must be a file path, got int"),
        ("w\x00.json", "w\\x00.json: cannot read (not a valid file name)"),
    ],
)
def test_weights_file_bad_path(path: Any, expected: str) -> None:
    with pytest.raises(JsonFileError) as info:
        weights_from_json(path)
    assert str(info.value) == expected


def test_weights_file_with_a_control_character_is_named_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "we\nird.json"
    with pytest.raises(JsonFileError) as info:
        weights_from_json(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.endswith("we\\nird.json: cannot read (No such file or directory)")
