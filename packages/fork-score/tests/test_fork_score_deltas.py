"""Battery deltas, the 5pp boundary, missing data, the efficiency bonus and hard flags."""

from __future__ import annotations

import pytest
from cladelog.fork_score import INFINITE_BONUS_CAP, Verdict, score
from cladelog.fork_score.deltas import EFFICIENCY_DAMPING, is_hard_regression
from fork_score_docs import make_doc, with_metrics
from hypothesis import given, settings
from hypothesis import strategies as st

# ---------------------------------------------------------------- the 5pp boundary


def test_exactly_five_points_is_a_regression() -> None:
    result = score(make_doc(0.80), make_doc(0.80, {"5S.syntax": 0.75}))
    # 0.80 - 0.75 = 0.05 exactly in decimal, and the floor is 0.05: it counts
    assert result.flags == ["REGRESSION_5S:syntax"]
    assert result.verdict is Verdict.REJECT


def test_just_under_five_points_is_not_a_regression() -> None:
    result = score(make_doc(0.80), make_doc(0.80, {"5S.syntax": 0.7500001}))
    # 0.80 - 0.7500001 = 0.0499999 < 0.05
    assert result.flags == []


def test_boundary_is_exact_where_binary_subtraction_is_not() -> None:
    # In binary floats 0.70 - 0.65 = 0.04999999999999993 (< 0.05), but the
    # decimal drop is exactly 0.05, so the flag fires.
    assert 0.70 - 0.65 < 0.05
    result = score(make_doc(0.70), make_doc(0.70, {"5T.time": 0.65}))
    assert result.flags == ["REGRESSION_5T:time"]


@pytest.mark.parametrize(
    ("parent", "child", "floor", "expected"),
    [
        (0.80, 0.75, 0.05, True),
        (0.80, 0.7500001, 0.05, False),
        (0.30, 0.20, 0.10, True),  # 0.1 drop against a 0.1 floor
        (0.30, 0.2000001, 0.10, False),
        (0.5, 0.5, 0.05, False),
        (0.5, 0.9, 0.05, False),  # improvements never flag
        (1.0, 0.0, 1.0, True),
    ],
)
def test_is_hard_regression(parent: float, child: float, floor: float, expected: bool) -> None:
    assert is_hard_regression(parent, child, floor) is expected


def test_hard_regression_floor_is_a_parameter() -> None:
    parent, child = make_doc(0.80), make_doc(0.80, {"5S.syntax": 0.75})
    assert score(parent, child, hard_regression_floor=0.06).flags == []
    assert score(parent, child, hard_regression_floor=0.05).flags == ["REGRESSION_5S:syntax"]


def test_every_battery_has_its_regression_flag_in_table_order() -> None:
    child = make_doc(
        0.5,
        {"5F.feedback-loop": 0.1, "5S.semiotics": 0.4, "5T.triangulation": 0.2, "5S.syntax": 0.3},
    )
    result = score(make_doc(0.5), child)
    assert result.flags == [
        "REGRESSION_5S:syntax",
        "REGRESSION_5S:semiotics",
        "REGRESSION_5T:triangulation",
        "REGRESSION_5F:feedback-loop",
    ]


def test_seed_example_positive_mean_still_flags_the_one_drop() -> None:
    # 4 of 5 sub-batteries improve by 10pp and 1 drops by 8pp:
    # delta_5S = (4 * 0.10 - 0.08) / 5 = 0.32 / 5 = 0.064 > 0, so the penalty is 0
    child = make_doc(
        0.5,
        {
            "5S.syntax": 0.6,
            "5S.semantics": 0.6,
            "5S.syllogism": 0.6,
            "5S.synthesis": 0.6,
            "5S.semiotics": 0.42,
        },
    )
    result = score(make_doc(0.5), child)
    assert result.deltas["5S"].delta == pytest.approx(0.064)
    assert result.term_values["regression_penalty"] == 0.0
    assert result.score == pytest.approx(0.064)  # alpha = 1, everything else 0
    assert result.flags == ["REGRESSION_5S:semiotics"]
    assert result.verdict is Verdict.REJECT  # the hard flag wins over a score >= 0.05


# ---------------------------------------------------------------- missing data


def test_missing_in_child_only_is_a_hard_flag() -> None:
    result = score(make_doc(0.5), make_doc(0.6, {"5T.time": None}))
    # every other rate rose by 0.1, so the score is high, but a dropped metric rejects
    assert result.flags == ["MISSING_5T_time"]
    assert result.verdict is Verdict.REJECT
    assert [(m.battery, m.sub_battery, m.absent_in) for m in result.missing] == [
        ("5T", "time", "child")
    ]
    # delta_5T is the mean over the four compared sub-batteries: 4 * 0.1 / 4 = 0.1
    assert result.deltas["5T"].rate_mean == pytest.approx(0.1)


def test_missing_in_parent_only_is_left_out_of_the_mean() -> None:
    parent = make_doc(0.5, {"5S.semiotics": None})
    child = make_doc(0.6, {"5S.semiotics": 1.0})
    result = score(parent, child)
    # 5S mean over the 4 compared: (4 * 0.1) / 4 = 0.1 -- not (4 * 0.1 + 1.0) / 5
    assert result.deltas["5S"].rate_mean == pytest.approx(0.1)
    assert result.flags == []
    assert [m.to_dict() for m in result.missing] == [
        {"battery": "5S", "sub_battery": "semiotics", "absent_in": "parent"}
    ]


def test_missing_in_both_is_left_out_and_listed() -> None:
    parent = make_doc(0.5, {"5F.formulate": None})
    child = make_doc(0.5, {"5F.formulate": None, "5F.function": 0.9})
    result = score(parent, child)
    # 5F mean over the 4 compared: (0.9 - 0.5) / 4 = 0.1
    assert result.deltas["5F"].rate_mean == pytest.approx(0.1)
    assert result.flags == []
    assert [(m.sub_battery, m.absent_in) for m in result.missing] == [("formulate", "both")]


def test_battery_with_nothing_to_compare_has_zero_delta() -> None:
    parent = make_doc(0.5)
    child = make_doc(0.5)
    del parent["batteries"]["5T"]
    del child["batteries"]["5T"]
    result = score(parent, child)
    assert result.deltas["5T"].delta == 0.0
    assert len(result.missing) == 5
    assert result.flags == []


def test_whole_battery_dropped_by_child_flags_every_sub_battery() -> None:
    child = make_doc(0.5)
    del child["batteries"]["5F"]
    result = score(make_doc(0.5), child)
    assert result.flags == [
        "MISSING_5F_function",
        "MISSING_5F_finetuning",
        "MISSING_5F_falsification",
        "MISSING_5F_formulate",
        "MISSING_5F_feedback-loop",
    ]


# ---------------------------------------------------------------- efficiency bonus


def eff(family: str, mean: float, inf: int, neg: int) -> dict[str, object]:
    return {
        f"{family}_mean_finite": mean,
        f"{family}_infinite_count": inf,
        f"{family}_neg_infinite_count": neg,
    }


def test_constants_are_the_seed_values() -> None:
    assert EFFICIENCY_DAMPING == 0.1
    assert INFINITE_BONUS_CAP == 1.0


def test_mean_finite_bonus_is_damped() -> None:
    parent = with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_mean_finite=2.0)
    child = with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_mean_finite=3.5)
    result = score(parent, child)
    # 0.1 * (3.5 - 2.0) = 0.15; rates unchanged so delta_5F = 0.15 = score (gamma = 1)
    assert result.deltas["5F"].efficiency_bonus == pytest.approx(0.15)
    assert result.deltas["5F"].rate_mean == 0.0
    assert result.score == pytest.approx(0.15)
    assert result.verdict is Verdict.ACCEPT


def test_infinite_bonus_is_capped() -> None:
    parent = with_metrics(make_doc(0.5), "5F.finetuning", **eff("adaptation_efficiency", 1, 0, 0))
    child = with_metrics(make_doc(0.5), "5F.finetuning", **eff("adaptation_efficiency", 1, 7, 0))
    result = score(parent, child)
    # increase 7 - 0 = 7, capped at 1.0; mean unchanged -> bonus 1.0
    assert result.deltas["5F"].efficiency_bonus == 1.0
    assert result.score == pytest.approx(1.0)


def test_infinite_count_increase_of_one_reaches_the_cap() -> None:
    parent = with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_infinite_count=2)
    child = with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_infinite_count=3)
    # increase 3 - 2 = 1 -> min(1, 1.0) = 1.0
    assert score(parent, child).deltas["5F"].efficiency_bonus == 1.0


def test_infinite_count_decrease_earns_nothing() -> None:
    parent = with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_infinite_count=4)
    child = with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_infinite_count=1)
    # a decrease (4 -> 1) earns nothing and costs nothing
    assert score(parent, child).deltas["5F"].efficiency_bonus == 0.0


def test_cap_applies_per_family() -> None:
    parent = with_metrics(
        with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_infinite_count=0),
        "5F.feedback-loop",
        feedback_efficiency_infinite_count=0,
    )
    child = with_metrics(
        with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_infinite_count=3),
        "5F.feedback-loop",
        feedback_efficiency_infinite_count=2,
    )
    result = score(parent, child)
    # min(3, 1.0) + min(2, 1.0) = 2.0
    assert result.deltas["5F"].efficiency_bonus == 2.0
    assert result.deltas["5F"].delta == 2.0


def test_efficiency_key_missing_on_one_side_contributes_nothing() -> None:
    parent = with_metrics(make_doc(0.5), "5F.feedback-loop", feedback_efficiency_mean_finite=1.0)
    child = with_metrics(make_doc(0.5), "5F.feedback-loop", feedback_efficiency_infinite_count=9)
    result = score(parent, child)
    assert result.deltas["5F"].efficiency_bonus == 0.0
    # neither is a neg_infinite_count, so no flag; both are listed in missing
    assert result.flags == []
    assert [m.to_dict() for m in result.missing] == [
        {"battery": "5F", "sub_battery": "feedback-loop", "absent_in": "child",
         "metric": "feedback_efficiency_mean_finite"},
        {"battery": "5F", "sub_battery": "feedback-loop", "absent_in": "parent",
         "metric": "feedback_efficiency_infinite_count"},
    ]


def test_efficiency_keys_absent_on_both_sides_are_not_listed() -> None:
    # efficiency metrics are optional extras: a document without them is the norm
    assert score(make_doc(0.5), make_doc(0.5)).missing == []


@pytest.mark.parametrize(
    ("family", "carrier"),
    [("adaptation_efficiency", "finetuning"), ("feedback_efficiency", "feedback-loop")],
)
def test_dropping_neg_infinite_count_is_a_hard_flag(family: str, carrier: str) -> None:
    # The audit's case (cdropneg.json): the parent reports 0 -inf buckets, the child
    # stops reporting the count while its mean rises 2.0 -> 3.0 and +inf count 0 -> 5.
    parent = with_metrics(make_doc(0.5), f"5F.{carrier}", **eff(family, 2.0, 0, 0))
    child_metrics = eff(family, 3.0, 5, 0)
    del child_metrics[f"{family}_neg_infinite_count"]
    child = with_metrics(make_doc(0.5), f"5F.{carrier}", **child_metrics)
    result = score(parent, child)
    # the score itself is unchanged: 0.1 * (3.0 - 2.0) + min(5, 1.0) = 1.1 ...
    assert result.score == pytest.approx(1.1)
    # ... but a child must not hide a -inf regression by dropping the count
    assert result.flags == [f"MISSING_5F_{family}_neg_infinite_count"]
    assert result.verdict is Verdict.REJECT
    assert [m.to_dict() for m in result.missing] == [
        {"battery": "5F", "sub_battery": carrier, "absent_in": "child",
         "metric": f"{family}_neg_infinite_count"},
    ]


def test_neg_infinite_count_only_in_the_child_is_listed_not_flagged() -> None:
    child = with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_neg_infinite_count=4)
    result = score(make_doc(0.5), child)
    # nothing to compare against, so no increase can be shown: listed, no flag
    assert result.flags == []
    assert [m.to_dict() for m in result.missing] == [
        {"battery": "5F", "sub_battery": "finetuning", "absent_in": "parent",
         "metric": "adaptation_efficiency_neg_infinite_count"},
    ]
    assert result.verdict is Verdict.MARGINAL  # score 0: nothing changed


def test_dropping_the_whole_carrier_sub_battery_flags_both() -> None:
    parent = with_metrics(make_doc(0.5), "5F.finetuning", **eff("adaptation_efficiency", 2.0, 1, 0))
    child = make_doc(0.5, {"5F.finetuning": None})
    result = score(parent, child)
    assert result.flags == [
        "MISSING_5F_finetuning",
        "MISSING_5F_adaptation_efficiency_neg_infinite_count",
    ]
    assert [(m.sub_battery, m.absent_in, m.metric) for m in result.missing] == [
        ("finetuning", "child", None),
        ("finetuning", "child", "adaptation_efficiency_mean_finite"),
        ("finetuning", "child", "adaptation_efficiency_infinite_count"),
        ("finetuning", "child", "adaptation_efficiency_neg_infinite_count"),
    ]


def test_bonus_never_masks_a_rate_regression() -> None:
    # All five 5F rates drop by 4pp (no hard flag); the efficiency bonus is big.
    parent = with_metrics(
        make_doc(0.5),
        "5F.finetuning",
        adaptation_efficiency_mean_finite=0.0,
        adaptation_efficiency_infinite_count=0,
    )
    child = with_metrics(
        make_doc(
            0.5,
            {
                f"5F.{s}": 0.46
                for s in ("function", "finetuning", "falsification", "formulate", "feedback-loop")
            },
        ),
        "5F.finetuning",
        adaptation_efficiency_mean_finite=5.0,
        adaptation_efficiency_infinite_count=1,
    )
    result = score(parent, child)
    # rate mean = -0.04; bonus = 0.1 * 5.0 + min(1, 1.0) = 1.5; delta_5F = 1.46
    assert result.deltas["5F"].rate_mean == pytest.approx(-0.04)
    assert result.deltas["5F"].delta == pytest.approx(1.46)
    # the penalty uses the rate mean: 0.04, times eta = 2 -> -0.08
    assert result.term_values["regression_penalty"] == pytest.approx(0.04)
    assert result.breakdown["minus_eta_x_regression_penalty"] == pytest.approx(-0.08)
    # score = 1.46 - 0.08 = 1.38
    assert result.score == pytest.approx(1.38)
    assert result.flags == []


def test_neg_infinite_increase_is_a_hard_reject() -> None:
    parent = with_metrics(
        make_doc(0.5), "5F.feedback-loop", feedback_efficiency_neg_infinite_count=0
    )
    child = with_metrics(
        make_doc(0.9), "5F.feedback-loop", feedback_efficiency_neg_infinite_count=1
    )
    result = score(parent, child)
    assert result.score > 0.05  # every rate rose by 0.4
    assert result.flags == ["NEG_INF_REGRESSION"]
    assert result.verdict is Verdict.REJECT
    detail = result.to_dict()["deltas"]["5F"]["efficiency"]["feedback_efficiency"]
    assert detail["neg_infinite_count_increase"] == 1


def test_neg_infinite_decrease_or_same_is_fine() -> None:
    parent = with_metrics(
        make_doc(0.5), "5F.finetuning", adaptation_efficiency_neg_infinite_count=3
    )
    for count in (3, 0):
        child = with_metrics(
            make_doc(0.5), "5F.finetuning", adaptation_efficiency_neg_infinite_count=count
        )
        assert score(parent, child).flags == []


def test_flags_order_with_all_kinds() -> None:
    parent = with_metrics(
        make_doc(0.5), "5F.finetuning", adaptation_efficiency_neg_infinite_count=0
    )
    child = with_metrics(
        make_doc(0.5, {"5S.syntax": None, "5F.function": 0.1}),
        "5F.finetuning",
        adaptation_efficiency_neg_infinite_count=2,
    )
    assert score(parent, child).flags == [
        "MISSING_5S_syntax",
        "REGRESSION_5F:function",
        "NEG_INF_REGRESSION",
    ]


def test_flags_order_with_a_dropped_neg_infinite_count() -> None:
    # 5F sub-battery flags, then the dropped counts by family, then NEG_INF_REGRESSION
    parent = with_metrics(
        with_metrics(make_doc(0.5), "5F.finetuning", adaptation_efficiency_neg_infinite_count=0),
        "5F.feedback-loop",
        feedback_efficiency_neg_infinite_count=1,
    )
    child = with_metrics(
        make_doc(0.5, {"5F.function": 0.1}),  # finetuning keeps only its rate
        "5F.feedback-loop",
        feedback_efficiency_neg_infinite_count=2,
    )
    assert score(parent, child).flags == [
        "REGRESSION_5F:function",
        "MISSING_5F_adaptation_efficiency_neg_infinite_count",
        "NEG_INF_REGRESSION",
    ]


# ---------------------------------------------------------------- boundary, exhaustively


def _decimal_reference(parent: float, child: float, floor: float) -> bool:
    # The rule written out independently: the drop between the two numbers as a
    # person reads them (their shortest repr), compared in exact decimal.
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 1200
        return Decimal(repr(parent)) - Decimal(repr(child)) >= Decimal(repr(floor))


_rate = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
_floor = st.sampled_from([0.05, 0.1, 0.01, 0.25, 1.0, 0.03])
_nudge = st.sampled_from([0.0, 1e-17, -1e-17, 1e-12, -1e-12, 1e-9, -1e-9, 5e-8, -5e-8])


@settings(max_examples=400, deadline=None)
@given(parent=_rate, child=_rate, floor=_floor)
def test_is_hard_regression_matches_the_decimal_rule(
    parent: float, child: float, floor: float
) -> None:
    assert is_hard_regression(parent, child, floor) is _decimal_reference(parent, child, floor)


@settings(max_examples=400, deadline=None)
@given(parent=_rate, floor=_floor, nudge=_nudge)
def test_is_hard_regression_near_the_floor(parent: float, floor: float, nudge: float) -> None:
    # children placed right at (or within a hair of) parent - floor
    child = min(1.0, max(0.0, round(parent - floor, 6) + nudge))
    assert is_hard_regression(parent, child, floor) is _decimal_reference(parent, child, floor)


@pytest.mark.parametrize(
    ("parent", "child"),
    [(0.70, 0.65), (0.30, 0.25), (0.15, 0.10), (0.35, 0.30), (1.0, 0.95), (0.05, 0.0)],
)
def test_drops_of_exactly_five_points_fire(parent: float, child: float) -> None:
    # each pair reads as a drop of exactly 0.05
    assert is_hard_regression(parent, child, 0.05)
    assert not is_hard_regression(parent, child + 1e-7, 0.05)  # a drop of 0.0499999
