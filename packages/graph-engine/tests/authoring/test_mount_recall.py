"""The mount policy and the recall index (SPEC §1.14 mount, recall)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from cladelog.graph_engine.authoring import AuthoringError
from cladelog.graph_engine.authoring.mount import (
    MountController,
    MountState,
    MountThresholds,
    WidenResult,
    classify,
)
from cladelog.graph_engine.authoring.recall import (
    RecallIndex,
    Verdict,
    cosine,
    recall_and_verify,
    token_embedding,
    verify,
)


def test_default_thresholds() -> None:
    t = MountThresholds()
    assert (t.max_deopt, t.freeze_hi, t.freeze_lo, t.inline_hi, t.inline_lo,
            t.inline_max_depth, t.widen_cap) == (3, 0.85, 0.70, 0.65, 0.50, 1, 5)


@pytest.mark.parametrize(("signals", "current", "expected"), [
    ({}, "instance", "instance"),                                            # score 0
    ({"reliability": 0.9, "read_only_frontier": True}, "instance", "frozen"),  # hit_rate ← 0.9
    ({"reliability": 0.9, "hit_rate": 0.8, "read_only_frontier": True}, "instance", "instance"),
    ({"reliability": 0.9, "hit_rate": 0.8, "read_only_frontier": True}, "frozen", "frozen"),
    ({"reliability": 0.9, "hit_rate": 0.69, "read_only_frontier": True}, "frozen", "instance"),
    ({"reliability": 0.9, "read_only_frontier": False}, "instance", "instance"),
    ({"reliability": 0.7, "read_only_frontier": True, "depth": 1}, "instance", "inline"),
    ({"reliability": 0.7, "read_only_frontier": True, "depth": 2}, "instance", "instance"),
    ({"reliability": 0.7, "read_only_frontier": True}, "instance", "instance"),  # depth 99
    ({"reliability": 0.55, "read_only_frontier": True, "depth": 0}, "inline", "inline"),
    ({"reliability": 0.55, "read_only_frontier": True, "depth": 0}, "instance", "instance"),
    ({"reliability": 1, "read_only_frontier": True, "deopt_count": 3}, "frozen", "escalate"),
])
def test_classify(signals: dict[str, Any], current: str, expected: str) -> None:
    assert classify(signals, current) == expected


def test_classify_rejects_bad_signals() -> None:
    with pytest.raises(AuthoringError, match=r"signals\.reliability: must be a number"):
        classify({"reliability": "high"})
    with pytest.raises(AuthoringError, match="current: must be one of"):
        classify({}, "melted")


def test_controller_decide_deopt_widen_and_budgets() -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    m = MountController(sink=lambda k, d: records.append((k, d)))
    good = {"reliability": 0.9, "read_only_frontier": True}
    d = m.decide("x", {**good, "deopt_count": 99})  # the stored count wins over the signal
    assert (d.regime, d.deopt_count) == ("frozen", 0)
    assert m.record_deopt("x") == 1 and m.regime_of("x") == "frozen"
    assert m.deopt_budget("x") == 2
    assert m.record_widen("x") == WidenResult("instance", 1, "frozen")
    assert m.record_widen("x") == WidenResult("instance", 2, "instance")
    assert m.widen_budget("x") == 3
    assert m.record_deopt("x") == 2
    assert m.record_deopt("x") == 3 and m.regime_of("x") == "escalate"
    assert m.deopt_budget("x") == 0
    assert m.decide("x", good).regime == "escalate"
    assert m.state_of("x") == MountState("escalate", 3, 2)
    assert m.regime_of("unknown") == "instance"
    assert [k for k, _ in records] == ["mount.decided", "mount.deopted", "mount.widened",
                                       "mount.widened", "mount.deopted", "mount.deopted",
                                       "mount.decided"]
    assert records[-1][1]["regime"] == "escalate" and records[-1][1]["deoptCount"] == 3


def test_widen_cap_escalates() -> None:
    m = MountController(MountThresholds(widen_cap=2))
    assert m.record_widen("y").regime == "instance"
    assert m.record_widen("y") == WidenResult("escalate", 2, "instance")


@pytest.mark.parametrize("before", ["frozen", "inline", "instance", "escalate"])
def test_record_widen_names_the_regime_it_demoted_from(before: str) -> None:
    # SPEC §1.14: demotedFrom is the regime held before this widen, whatever it was
    records: list[tuple[str, dict[str, Any]]] = []
    m = MountController(sink=lambda k, d: records.append((k, d)))
    m.restore("x", MountState(before, 0, 0))
    got = m.record_widen("x")
    assert got.demoted_from == before
    assert got.regime == ("instance" if before == "frozen" else before)
    assert records[-1][0] == "mount.widened" and records[-1][1]["demotedFrom"] == before


def test_record_widen_of_an_unseen_id_demotes_from_instance() -> None:
    assert MountController().record_widen("new") == WidenResult("instance", 1, "instance")


def _sig(op: str, **content: Any) -> dict[str, Any]:
    return {"structure": {"op": op}, "content": content}


def test_token_embedding_and_cosine() -> None:
    sig = {"structure": {"op": "sum"}, "content": {"a": 1, "tags": ["x", None], "ok": True}}
    assert token_embedding(sig) == {
        "k:structure": 1, "k:op": 1, "sum": 1, "k:content": 1, "k:a": 1, "1": 1,
        "k:tags": 1, "k:0": 1, "x": 1, "k:1": 1, "k:ok": 1, "true": 1}
    # {k:structure, k:op, sum, k:content} against those plus {k:a, 1}: 4 / (2·√6)
    q = token_embedding({"structure": {"op": "sum"}, "content": {}})
    e = token_embedding(_sig("sum", a=1))
    assert cosine(q, e) == pytest.approx(4 / (2 * math.sqrt(6)))
    assert cosine({}, e) == 0.0


def test_recall_is_stable_on_ties_and_remove() -> None:
    idx = RecallIndex()
    idx.add(_sig("sum", a=1), "m1")
    idx.add(_sig("sum", a=2), "m2")   # same score as m1 against a query with a=3
    idx.add(_sig("max", a=3), "m3")
    hits = idx.recall(_sig("sum", a=3), k=3)
    assert [h.method for h in hits] == ["m1", "m2", "m3"]
    # the query has 6 tokens; each entry has 6 and shares 5 of them (m1, m2 miss "3"; m3 misses
    # "sum"): cosine 5 / (√6·√6) = 5/6 for all three, so insertion order decides
    assert hits[0].score == hits[1].score == hits[2].score == pytest.approx(5 / 6)
    idx.add(_sig("sum", a=3), "m4")
    assert [h.method for h in idx.recall(_sig("sum", a=3), k=2)] == ["m4", "m1"]
    idx.remove(_sig("sum", a=3))
    assert [h.method for h in idx.recall(_sig("sum", a=3), k=1)] == ["m1"]
    assert idx.remove({"structure": {"op": "sum"}, "content": {"a": 1}}) == 1
    assert idx.size() == 2
    assert idx.remove(_sig("nothing")) == 0
    with pytest.raises(AuthoringError, match="signature: must be an object"):
        idx.add("flat", "m")
    with pytest.raises(AuthoringError, match=r"signature\.content\.x: must be a finite number"):
        idx.add(_sig("sum", x=math.nan), "m")


def test_verify_modes() -> None:
    q = _sig("sum", a=1, b=2)
    assert verify(q, _sig("max", a=1, b=2)) == Verdict("reject")
    assert verify({"structure": {}, "content": {}}, {"structure": {}, "content": {}}) == Verdict(
        "reject")
    assert verify(q, _sig("sum", a=1, b=3, c=None)) == Verdict("partial", ("b",), ("op",))
    assert verify(q, _sig("sum", b=2, a=1)) == Verdict("full", (), ("op", "a", "b"))
    # a missing key and an explicit null canonicalize alike
    assert verify(_sig("sum", a=None), _sig("sum")).mode == "full"


def test_recall_and_verify_prefers_full_over_score() -> None:
    idx = RecallIndex()
    idx.add(_sig("sum", a=1, b=2, c=3), "partial-but-close")
    idx.add(_sig("other", a=1, b=2), "rejected")
    idx.add({"structure": {"op": "sum"}, "content": {"a": 1, "b": 2}}, "exact")
    got = recall_and_verify(idx, _sig("sum", a=1, b=2), 3)
    assert got is not None and got.hit.method == "exact" and got.verdict.mode == "full"
    only_partial = RecallIndex()
    only_partial.add(_sig("sum", a=9), "p")
    got2 = recall_and_verify(only_partial, _sig("sum", a=1))
    assert got2 is not None and got2.verdict == Verdict("partial", ("a",), ("op",))
    assert recall_and_verify(RecallIndex(), _sig("sum")) is None


def test_decide_rejects_signals_that_are_not_an_object() -> None:
    with pytest.raises(AuthoringError, match="signals: must be an object, got int"):
        MountController().decide("x", 5)  # type: ignore[arg-type]


# ---- the SPEC's camelCase signal names (audit #7) -----------------------------------------
# Expected regimes worked by hand from SPEC §1.14: score = min(reliability ?? 0,
# hitRate ?? (reliability || 0)); frozen at score ≥ 0.85 (0.70 when already frozen) on a
# read-only frontier; inline at depth ≤ 1 and score ≥ 0.65 (0.50 when already inline).

@pytest.mark.parametrize(("signals", "current", "expected"), [
    ({"reliability": 0.9, "hitRate": 0.9, "readOnlyFrontier": True}, "instance", "frozen"),
    ({"reliability": 0.9, "hitRate": 0.1, "readOnlyFrontier": True}, "instance", "instance"),
    ({"reliability": 0.9, "hitRate": 0.8, "readOnlyFrontier": True}, "frozen", "frozen"),
    ({"reliability": 0.9, "hitRate": 0.69, "readOnlyFrontier": True}, "frozen", "instance"),
    ({"reliability": 0.9}, "instance", "instance"),  # no read-only frontier
    ({"reliability": 0.7, "readOnlyFrontier": True, "depth": 1}, "instance", "inline"),
    ({"reliability": 1, "readOnlyFrontier": True, "deoptCount": 3}, "frozen", "escalate"),
    ({"reliability": 1, "readOnlyFrontier": True, "deoptCount": 2}, "instance", "frozen"),
    # the two spellings may be mixed, and may both be given when they agree
    ({"reliability": 0.9, "hit_rate": 0.1, "readOnlyFrontier": True}, "instance", "instance"),
    ({"reliability": 0.9, "hitRate": 0.9, "hit_rate": 0.9, "read_only_frontier": True},
     "instance", "frozen"),
])
def test_classify_reads_the_spec_signal_names(signals: dict[str, Any], current: str,
                                              expected: str) -> None:
    assert classify(signals, current) == expected


def test_unknown_or_conflicting_signals_are_refused() -> None:
    with pytest.raises(AuthoringError, match=r"signals\.hitrate: unknown signal"):
        classify({"reliability": 0.9, "hitrate": 0.9})
    with pytest.raises(AuthoringError, match=r"signals\.hitRate: given as hitRate and "
                                             r"hit_rate with different values"):
        classify({"hitRate": 0.9, "hit_rate": 0.1})
    with pytest.raises(AuthoringError, match=r"signals\.readOnlyFrontier: given as"):
        classify({"readOnlyFrontier": True, "read_only_frontier": False})
    with pytest.raises(AuthoringError, match=r"signals\.deoptCount: must be a number"):
        classify({"deoptCount": "3"})
    with pytest.raises(AuthoringError, match=r"signals\.depht: unknown signal"):
        MountController().decide("x", {"depht": 0})


def test_decide_keeps_the_stored_deopt_count_over_either_spelling() -> None:
    m = MountController()
    good = {"reliability": 0.9, "readOnlyFrontier": True}
    assert m.decide("x", {**good, "deoptCount": 99}).regime == "frozen"
    assert m.decide("y", {**good, "deopt_count": 99, "deoptCount": 99}).regime == "frozen"


def test_thresholds_may_be_given_as_an_object() -> None:
    # 0.8 < freezeHi 0.85 (default) but ≥ 0.75; depth defaults to 99 so never inline
    sig = {"reliability": 0.8, "readOnlyFrontier": True}
    assert classify(sig, "instance") == "instance"
    assert classify(sig, "instance", {"freezeHi": 0.75}) == "frozen"
    assert classify(sig, "instance", {"freeze_hi": 0.75}) == "frozen"
    assert classify({}, "instance", {"maxDeopt": 3}) == "instance"
    assert classify({"deoptCount": 1}, "instance", {"maxDeopt": 1}) == "escalate"
    m = MountController({"maxDeopt": 1, "widenCap": 2})
    assert m.thresholds == MountThresholds(max_deopt=1, widen_cap=2)
    assert m.record_deopt("x") == 1 and m.regime_of("x") == "escalate"
    with pytest.raises(AuthoringError, match=r"thresholds\.maxDeop: unknown threshold"):
        classify({}, "instance", {"maxDeop": 3})
    with pytest.raises(AuthoringError, match=r"thresholds\.maxDeopt: given as maxDeopt and "
                                             r"max_deopt with different values"):
        MountController({"maxDeopt": 3, "max_deopt": 4})
    with pytest.raises(AuthoringError, match=r"thresholds\.freezeHi: must be a finite number"):
        classify({}, "instance", {"freezeHi": "high"})
    with pytest.raises(AuthoringError, match=r"thresholds\.maxDeopt: must be an integer"):
        classify({}, "instance", {"maxDeopt": 2.5})
    with pytest.raises(AuthoringError, match="thresholds: must be MountThresholds or an object"):
        classify({}, "instance", [3])  # type: ignore[arg-type]
