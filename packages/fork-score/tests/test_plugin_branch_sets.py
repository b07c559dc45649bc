"""Branch sets: the upserting projection, density, ranking and softmax weights."""

from __future__ import annotations

import math
from typing import Any

import pytest
from cladelog.core import InputError
from cladelog.fork_score import (
    BranchSetError,
    branch_set_density,
    list_branch_sets,
    rank_branches,
    softmax_weights,
)
from fork_score_plugin_helpers import BRANCH_SCORED, payload


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["fork-score"]


def record(env: Any, data: dict[str, Any]) -> Any:
    return env.append(BRANCH_SCORED, data, stream=f"fork_score.branch_set:{data['branch_set_id']}")


def digests(result: Any) -> dict[str, str]:
    return {p.name: p.digest for p in result.projections}


def test_rescoring_a_branch_replaces_its_row_and_keeps_history(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "b1", 0.1, child_root="c1"))
    record(cladelog_env, payload("S", "b2", 0.2))
    third = record(cladelog_env, payload("S", "b1", 0.3, child_root="c1b"))
    state = cladelog_env.state("fork_score.branch_sets")
    assert sorted(state["sets"]["S"]) == ["b1", "b2"]
    row = state["sets"]["S"]["b1"]
    assert row["score"] == 0.3
    assert row["child_root"] == "c1b"
    assert row["times_scored"] == 2
    assert row["position"] == third.position
    assert row["recorded_at"] == third.recorded_at  # time comes from the event, not a clock
    assert branch_set_density(cladelog_env, "S") == 2
    # the log still holds all three scorings
    assert len(cladelog_env.events(types=[BRANCH_SCORED])) == 3


def test_density_and_digests_are_the_same_incremental_and_from_scratch(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "b1", 0.1))
    cladelog_env.replay()  # checkpoint in the middle
    record(cladelog_env, payload("S", "b2", 0.2))
    record(cladelog_env, payload("T", "b1", 0.4))
    record(cladelog_env, payload("S", "b1", 0.5))
    incremental = cladelog_env.replay()
    density_incremental = branch_set_density(cladelog_env, "S")
    scratch = cladelog_env.replay(rebuild=True)
    assert digests(incremental) == digests(scratch)
    assert branch_set_density(cladelog_env, "S") == density_incremental == 2
    assert branch_set_density(cladelog_env, "T") == 1
    assert branch_set_density(cladelog_env, "never-recorded") == 0
    again = cladelog_env.replay(rebuild=True)
    assert digests(again) == digests(scratch)


def test_ranking_and_softmax_weights_hand_computed(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "low", 0.1))
    record(cladelog_env, payload("S", "high", 0.3))
    record(cladelog_env, payload("S", "mid", 0.2, verdict="MARGINAL"))
    ranked = rank_branches(cladelog_env, "S", temperature=0.1)
    assert [b.branch_id for b in ranked] == ["high", "mid", "low"]
    assert [b.rank for b in ranked] == [1, 2, 3]
    # exponents (s - max) / T = 0, -1, -2; Z = 1 + e^-1 + e^-2 = 1.5032147244080551
    # weights: 1 / Z = 0.6652409557748219, e^-1 / Z = 0.24472847105479764,
    #          e^-2 / Z = 0.09003057317038046
    expected = [0.6652409557748219, 0.24472847105479764, 0.09003057317038046]
    assert [b.weight for b in ranked] == pytest.approx(expected, rel=1e-12)
    assert math.fsum(b.weight for b in ranked) == pytest.approx(1.0, rel=1e-15)


def test_default_temperature_is_the_setting(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "a", 0.1))
    record(cladelog_env, payload("S", "b", 0.05))
    ranked = rank_branches(cladelog_env, "S")
    # default 0.05: exponents 0 and -1 -> e / (e + 1) = 0.7310585786300049
    assert [b.weight for b in ranked] == pytest.approx(
        [0.7310585786300049, 0.2689414213699951], rel=1e-12
    )


class TestTemperatureSetting:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"fork-score": {"softmax_temperature": 0.1}}

    def test_setting_is_used(self, cladelog_env: Any) -> None:
        record(cladelog_env, payload("S", "a", 0.3))
        record(cladelog_env, payload("S", "b", 0.1))
        # 0.1: exponents 0 and -2 -> 1 / (1 + e^-2) = 0.8807970779778823
        weights = [b.weight for b in rank_branches(cladelog_env, "S")]
        assert weights == pytest.approx([0.8807970779778823, 0.11920292202211769], rel=1e-12)


def test_ties_are_ranked_by_branch_id_with_equal_weights(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "zeta", 0.2))
    record(cladelog_env, payload("S", "alpha", 0.2))
    ranked = rank_branches(cladelog_env, "S", temperature=0.05)
    assert [b.branch_id for b in ranked] == ["alpha", "zeta"]
    assert [b.weight for b in ranked] == [0.5, 0.5]


def test_softmax_is_stable_for_huge_scores_and_tiny_temperatures() -> None:
    # a naive exp(1000 / 0.001) overflows; shifted by the maximum: exp(0), exp(-1000) = 0
    assert softmax_weights([1000.0, 999.0], 0.001) == [1.0, 0.0]
    assert softmax_weights([-1e300, 1e300], 1e-300) == [0.0, 1.0]
    assert softmax_weights([], 1.0) == []
    # equal scores -> uniform
    assert softmax_weights([3.0, 3.0, 3.0, 3.0], 0.5) == [0.25, 0.25, 0.25, 0.25]


@pytest.mark.parametrize("temperature", [0, -1.0, math.inf, math.nan, True, "1"])
def test_bad_temperature_is_refused(temperature: Any) -> None:
    with pytest.raises(BranchSetError, match=r"^temperature: must be a finite number > 0"):
        softmax_weights([0.1], temperature)


def test_read_api_accepts_a_state_or_all_states(cladelog_env: Any) -> None:
    record(cladelog_env, payload("S", "a", 0.2, parent_root="P1"))
    record(cladelog_env, payload("S", "b", 0.4, parent_root="P1"))
    record(cladelog_env, payload("R", "x", 0.1, parent_root="P2"))
    states = cladelog_env.deployment.states()
    state = states["fork_score.branch_sets"]
    assert branch_set_density(state, "S") == branch_set_density(states, "S") == 2
    assert [b.branch_id for b in rank_branches(state, "S", 1.0)] == ["b", "a"]
    summaries = list_branch_sets(states)
    assert [(s.branch_set_id, s.density, s.best_branch_id, s.best_score, s.parent_roots)
            for s in summaries] == [("R", 1, "x", 0.1, ("P2",)), ("S", 2, "b", 0.4, ("P1",))]
    assert rank_branches(state, "unknown", 1.0) == ()


@pytest.mark.parametrize("source", [None, 5, {"sets": []}, {"other": 1}])
def test_read_api_refuses_a_bad_source(source: Any) -> None:
    with pytest.raises(BranchSetError, match=r"^source: "):
        branch_set_density(source, "S")


def test_bad_set_id_type_is_refused() -> None:
    with pytest.raises(BranchSetError, match=r"^branch_set_id: must be a string"):
        branch_set_density({"sets": {}}, 5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"verdict": "MAYBE"}, "data"),
        ({"branch_id": ""}, "data"),
        ({"child_root": 7}, "child_root"),
        ({"score": "0.1"}, "score"),
        ({"flags": "REGRESSION"}, "flags"),
        ({"extra": 1}, "extra"),
    ],
)
def test_bad_payload_appends_nothing(cladelog_env: Any, change: dict[str, Any], field: str) -> None:
    before = len(cladelog_env.events())
    with pytest.raises(InputError, match=field):
        record(cladelog_env, {**payload("S", "b", 0.1), **change})
    assert len(cladelog_env.events()) == before


def test_huge_integers_are_refused_not_overflowed() -> None:
    with pytest.raises(BranchSetError, match=r"^temperature: must be a finite number > 0"):
        softmax_weights([0.1], 10**400)
    with pytest.raises(BranchSetError, match=r"^scores\[1\]: must be a finite number"):
        softmax_weights([0.1, 10**400], 1.0)
    # an integer a double holds is an ordinary number: exponents 0 and -1
    assert softmax_weights([1, 0], 1) == pytest.approx([1 / (1 + math.exp(-1)),
                                                        math.exp(-1) / (1 + math.exp(-1))])


def _row(branch: str, score: Any = 0.1) -> dict[str, Any]:
    return {"branch_id": branch, "parent_root": "P", "child_root": None, "score": score,
            "verdict": "ACCEPT", "flags": [], "weights_id": "w", "estimator_version": "0.1.0",
            "recorded_at": "2026-01-01T00:00:00Z", "position": 3, "times_scored": 1}


def test_a_well_formed_hand_made_state_is_read() -> None:
    state = {"sets": {"S": {"a": _row("a", 0.3), "b": _row("b", 0.1)}}}
    assert branch_set_density(state, "S") == 2
    assert [b.branch_id for b in rank_branches(state, "S", 1.0)] == ["a", "b"]
    assert [s.branch_set_id for s in list_branch_sets(state)] == ["S"]


@pytest.mark.parametrize(
    ("sets", "fragment"),
    [
        ({"S": [1]}, "source.sets.S: must be an object of rows, got list"),
        ({"S": {"a": 5}}, "source.sets.S.a: must be an object, got int"),
        ({"S": {"a": {k: v for k, v in _row("a").items() if k != "branch_id"}}},
         "source.sets.S.a: missing member 'branch_id'"),
        ({"S": {"a": {**_row("a"), "score": "high"}}}, "source.sets.S.a.score: wrong type str"),
        ({"S": {"a": {**_row("a"), "score": True}}}, "source.sets.S.a.score: wrong type bool"),
        ({"S": {"a": _row("a", math.nan)}}, "source.sets.S.a.score: must be finite"),
        ({"S": {"a": _row("a", 10**400)}}, "source.sets.S.a.score: must be finite"),
        ({"S": {"a": {**_row("a"), "flags": [1]}}}, "source.sets.S.a.flags: must be a list"),
        ({"S": {"a": {**_row("a"), "position": None}}},
         "source.sets.S.a.position: wrong type NoneType"),
    ],
)
def test_a_malformed_hand_made_state_names_the_row(sets: Any, fragment: str) -> None:
    state = {"sets": sets}
    for call in (lambda: branch_set_density(state, "S"), lambda: rank_branches(state, "S", 1.0),
                 lambda: list_branch_sets(state)):
        with pytest.raises(BranchSetError) as info:
            call()
        assert str(info.value).startswith(fragment)


def test_a_non_string_set_id_in_a_hand_made_state_is_refused() -> None:
    with pytest.raises(BranchSetError, match=r"^source\.sets: key 5 is not a string"):
        list_branch_sets({"sets": {"S": {}, 5: {}}})
