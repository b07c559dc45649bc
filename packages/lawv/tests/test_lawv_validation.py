"""Malformed input is refused with LawVInputError naming the field path."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cladelog.lawv import LawVInputError, evaluate, parse_contract
from lawv_helpers import contract, gain, measurement

OLD = measurement("old", [-35.2, 10.0, -140.0], [9.8, 15.0, 6.0])
NEW = measurement("new", [-20.0, 25.0, -131.0], [8.0, 25.0, 4.0])


def _contract_with(path: list[Any], value: Any) -> dict[str, Any]:
    doc = contract()
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["anchors", 2, "rating_uncertainty"], -1.0,
         "contract.anchors[2].rating_uncertainty: must be a finite number >= 0, got -1.0"),
        (["anchors", 2, "rating_uncertainty"], float("nan"),
         "contract.anchors[2].rating_uncertainty: must be a finite number >= 0, got nan"),
        (["anchors", 0, "rating"], float("inf"), "contract.anchors[0].rating: must be a finite"),
        (["anchors", 0, "rating"], "3000", "contract.anchors[0].rating: must be a finite"),
        (["anchors", 0, "rating"], True, "contract.anchors[0].rating: must be a finite"),
        (["anchors", 0, "rating"], 10**400, "contract.anchors[0].rating: must be a finite"),
        (["anchors", 0, "rating"], 5e6, "contract.anchors[0].rating: must have magnitude"),
        (["anchors", 1, "name"], "", "contract.anchors[1].name: must be a non-empty string"),
        (["anchors", 1, "name"], "alpha", "contract.anchors[1].name: duplicates"),
        (["anchors", 1, "hash"], KeyError, "contract.anchors[1].hash: is required"),
        (["anchors", 1, "colour"], "red", "contract.anchors[1].colour: is not a known field"),
        (["anchors", 1], [1, 2], "contract.anchors[1]: must be an object"),
        (["anchors"], [], "contract.anchors: must hold at least one anchor"),
        (["anchors"], {"a": 1}, "contract.anchors: must be an array"),
        (["version"], 0, "contract.version: must be an integer in [1, "),
        (["version"], 7.0, "contract.version: must be an integer"),
        (["date"], "16.10.2026", "contract.date: must be a date YYYY-MM-DD"),
        (["date"], "2026-02-30", "contract.date: must be a date YYYY-MM-DD"),
        (["date"], "2026-W42-1", "contract.date: must be a date YYYY-MM-DD"),
        (["T"], -1, "contract.T: must be a finite number >= 0"),
        (["T"], KeyError, "contract.T: is required"),
        (["transfer_band"], None, "contract.transfer_band: must be a finite number >= 0"),
        (["halt_below"], 0.8, "contract.halt_below: must be <= warn_below (0.75), got 0.8"),
        (["mc_samples"], 0, "contract.mc_samples: must be an integer in [1, 1000000]"),
        (["mc_samples"], 10**7, "contract.mc_samples: must be an integer in [1, 1000000]"),
        (["mc_samples"], 100.0, "contract.mc_samples: must be an integer"),
        (["extra"], 1, "contract.extra: is not a known field"),
    ],
)
def test_contract_errors_name_the_path(path: list[Any], value: Any, message: str) -> None:
    with pytest.raises(LawVInputError) as info:
        evaluate(_contract_with(path, value), OLD, NEW, [])
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_contract_must_be_an_object() -> None:
    with pytest.raises(LawVInputError, match=r"^contract: must be an object"):
        evaluate([], OLD, NEW, [])  # type: ignore[arg-type]
    with pytest.raises(LawVInputError, match=r"^contract: object keys must be strings"):
        parse_contract({1: 2})


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda m: m.pop("id"), "new.id: is required"),
        (lambda m: m.update(version=""), "new.version: must be a non-empty string"),
        (lambda m: m.update(anchors=None), "new.anchors: must be an array"),
        (lambda m: m["anchors"][1].update(delta="x"), "new.anchors[1].delta: must be a finite"),
        (lambda m: m["anchors"][1].update(uncertainty=-2),
         "new.anchors[1].uncertainty: must be a finite number >= 0"),
        (lambda m: m["anchors"][1].update(ndelta=float("nan")), "new.anchors[1].ndelta:"),
        (lambda m: m["anchors"][1].update(name="alpha"), "new.anchors[1].name: duplicates"),
        (lambda m: m["anchors"][0].update(extra=1), "new.anchors[0].extra: is not a known"),
        (lambda m: m.update(when="today"), "new.when: is not a known field"),
        (lambda m: m["anchors"][2].pop("rating"), "new.anchors[2].rating: is required"),
    ],
)
def test_measurement_errors_name_the_path(mutate: Any, message: str) -> None:
    new = copy.deepcopy(NEW)
    mutate(new)
    with pytest.raises(LawVInputError) as info:
        evaluate(contract(), OLD, new, [])
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ("abc", "entries: must be an array of register entries"),
        ({"seq": 1}, "entries: must be an array of register entries"),
        (None, "entries: must be an array of register entries"),
        ([1], "entries[0]: must be an object"),
        ([{"kind": "gain_test"}], "entries[0].seq: is required"),
        ([{"seq": -1, "kind": "special_path"}], "entries[0].seq: must be an integer"),
        ([{"seq": True, "kind": "special_path"}], "entries[0].seq: must be an integer"),
        ([{"seq": 1, "kind": "merge"}], "entries[0].kind: must be one of gain_test"),
        ([{"seq": 1, "kind": "gain_test"}], "entries[0].stages: is required for a gain test"),
        ([{"seq": 1, "kind": "gain_test", "stages": []}], "entries[0].stages: a gain test needs"),
        ([{"seq": 1, "kind": "reversion"}], "entries[0].reverts: is required"),
        ([{"seq": 1, "kind": "reversion", "reverts": 1}], "entries[0].reverts: must name an"),
        ([gain(1, 2.0), {**gain(2, 1.0), "stages": [{"name": "long", "elo": 1.0}]}],
         "entries[1].stages[0].pass: is required"),
        ([{**gain(1, 1.0), "stages": [{"name": "long", "elo": 1.0, "pass": "yes"}]}],
         "entries[0].stages[0].pass: must be true or false"),
        ([gain(1, float("inf"))], "entries[0].stages[1].elo: must be a finite number"),
        ([gain(1, 1.0, nelo="1")], "entries[0].stages[1].nelo: must be a finite number"),
        ([gain(1, 1.0, half_width=-1)], "entries[0].stages[1].half_width: must be a finite"),
        ([{**gain(1, 1.0), "stages": [{"name": "short", "elo": 1, "pass": True}] * 2}],
         "entries[0].stages[1].name: duplicates"),
    ],
)
def test_entry_errors_name_the_path(entries: Any, message: str) -> None:
    with pytest.raises(LawVInputError) as info:
        evaluate(contract(), OLD, NEW, entries)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ((3, 1), "window: first_seq 3 must be <= last_seq 1"),
        ((1,), "window: must be [first_seq, last_seq]"),
        ("1-3", "window: must be an array"),
        ((1, 2.0), "window[1]: must be an integer"),
    ],
)
def test_window_errors(window: Any, message: str) -> None:
    with pytest.raises(LawVInputError) as info:
        evaluate(contract(), OLD, NEW, [gain(1, 2.0)], window=window)
    assert str(info.value).startswith(message)


def test_hostile_repr_does_not_escape() -> None:
    class Nasty:
        def __repr__(self) -> str:
            raise RuntimeError("boom")

    with pytest.raises(LawVInputError,
                       match=r"^contract\.T: must be a finite number >= 0, got Nasty$"):
        evaluate(_contract_with(["T"], Nasty()), OLD, NEW, [])


def test_deep_nesting_is_refused_cleanly() -> None:
    deep: Any = 1.0
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(LawVInputError, match=r"^contract\.T: must be a finite number"):
        evaluate(_contract_with(["T"], deep), OLD, NEW, [])
    with pytest.raises(LawVInputError, match=r"^entries\[0\]\.stages\[1\]\.elo:"):
        evaluate(contract(), OLD, NEW, [gain(1, deep)])


def test_parsed_instances_are_revalidated() -> None:
    import attrs

    parsed = parse_contract(contract())
    broken = attrs.evolve(parsed, mc_samples=0)
    with pytest.raises(LawVInputError, match=r"^contract\.mc_samples:"):
        evaluate(broken, OLD, NEW, [])
