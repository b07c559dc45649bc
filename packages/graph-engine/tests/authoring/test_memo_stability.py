"""The memo-stability gate (SPEC §1.14 memo-stability, with Q12 and Q13 followed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cladelog.graph_engine import Engine, ProviderCall
from cladelog.graph_engine.authoring import AuthoringError, MemoStabilityError
from cladelog.graph_engine.authoring._util import digest
from cladelog.graph_engine.authoring.memo_stability import (
    MemoChange,
    MemoDiff,
    aassert_memo_stable,
    assert_memo_stable,
    memo_diff,
    memo_snapshot,
    memo_surface_keys,
    memo_surface_paths,
)


def _engine() -> Engine:
    def level(call: ProviderCall) -> Any:
        return {"$$_id": call.object_id, "Level": True, "level": call.facts["raw"] * 2}

    def rescale(call: ProviderCall) -> Any:
        return {"$$_id": call.object_id, "Rescale": True, "level": 5}

    def note(call: ProviderCall) -> Any:
        return {"$$_id": call.object_id, "Note": True, "note": "hi"}

    tree = {"childConcepts": {
        "Level": {"_id": "Level", "_name": "Level", "require": ["raw"], "provider": "P::level"},
        "Consume": {"_id": "Consume", "_name": "Consume", "require": ["level"],
                    "ensure": ["$cfg.mode != 'off' && $level.toFixed"]},
        "Owned": {"_id": "Owned", "_name": "Owned", "require": ["owner:level"],
                  "assert": "$$clock:tick.length >= 0"},
    }}
    seed = {"freeNodes": [
        {"_id": "u1", "raw": 1},
        {"_id": "t1", "owner": "u1", "cfg": {"mode": "a", "deep": {"n": 1}}},
        {"_id": "clock", "tick": [1]},
    ]}
    eng = Engine(tree, seed=seed, providers={
        "P::level": level, "P::rescale": rescale, "P::note": note})
    eng.settle()
    return eng


def test_surface_keys_drop_hops_and_paths_keep_them() -> None:
    eng = _engine()
    assert memo_surface_keys(eng, "Consume") == ["level", "cfg"]
    assert memo_surface_keys(eng, "Owned") == ["level", "tick"]
    assert memo_surface_paths(eng, "Owned") == ["owner:level", "$clock:tick"]
    with pytest.raises(AuthoringError, match=r"concept\.Nope: no such concept"):
        memo_surface_keys(eng, "Nope")


def test_snapshot_projects_each_surface_off_each_object() -> None:
    eng = _engine()
    snap = memo_snapshot(eng, ["Consume", "Owned"])
    # u1: level = 1·2 = 2; t1 carries cfg; every object reaches the global clock, and t1
    # reaches its owner's level
    assert snap == {
        "u1|Consume": digest({"level": 2}),
        "t1|Consume": digest({"cfg": {"mode": "a", "deep": {"n": 1}}}),
        "u1|Owned": digest({"$clock:tick": [1]}),
        "t1|Owned": digest({"owner:level": 2, "$clock:tick": [1]}),
        "clock|Owned": digest({"$clock:tick": [1]}),
    }


def test_gate_fails_a_change_that_perturbs_an_incumbent() -> None:
    eng = _engine()
    rescale = {"_id": "Rescale", "_name": "Rescale", "require": ["Level"],
               "provider": "P::rescale"}

    def change() -> None:
        eng.add_concept(None, rescale)
        eng.settle()

    with pytest.raises(MemoStabilityError, match="memo-stability violation") as info:
        assert_memo_stable(eng, ["Consume", "Owned"], change)
    diff = info.value.diff
    assert isinstance(diff, MemoDiff) and diff.stable is False
    # u1's own level changed, and t1's Owned surface changed through the owner hop (Q13)
    assert {c.key for c in diff.changed} == {"u1|Consume", "t1|Owned"}
    assert eng.get("u1")["level"] == 5  # type: ignore[index]


def test_gate_passes_a_change_that_adds_an_isolated_fact() -> None:
    eng = _engine()
    note = {"_id": "Note", "_name": "Note", "require": ["raw"], "provider": "P::note"}

    def change() -> None:
        eng.add_concept(None, note)
        eng.settle()

    diff = assert_memo_stable(eng, ["Consume", "Owned"], change)
    assert diff.stable and diff.changed == () and diff.removed == ()
    assert eng.get("u1")["note"] == "hi"  # type: ignore[index]


def test_nested_changes_are_visible_q12() -> None:
    eng = _engine()

    def change() -> None:
        eng.mutate({"$$_id": "t1", "cfg": {"mode": "a", "deep": {"n": 2}}})
        eng.settle()

    with pytest.raises(MemoStabilityError) as info:
        assert_memo_stable(eng, ["Consume"], change)
    assert [c.key for c in info.value.diff.changed] == ["t1|Consume"]


def test_deleting_an_incumbent_is_unstable_and_bad_names_are_rejected() -> None:
    eng = _engine()

    def change() -> None:
        eng.delete_concept("Level")
        eng.settle()

    with pytest.raises(MemoStabilityError) as info:
        assert_memo_stable(eng, None, change)
    assert "u1|Level" in info.value.diff.removed
    with pytest.raises(AuthoringError, match=r"incumbents\[1\]: no such concept 'Ghost'"):
        assert_memo_stable(eng, ["Consume", "Ghost"], lambda: None)


def test_async_apply_and_memo_diff() -> None:
    eng = _engine()

    async def change() -> None:
        eng.mutate({"$$_id": "u1", "unrelated": 1})

    assert asyncio.run(aassert_memo_stable(eng, ["Consume"], change)).stable
    assert assert_memo_stable(eng, ["Consume"], change).stable  # awaitable run to completion
    d = memo_diff({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9", "d": "4"})
    assert d == MemoDiff(False, (MemoChange("b", "2", "9"),), ("c",), ("d",))
    assert memo_diff({"a": "1"}, {"a": "1", "z": "0"}).stable


def test_memo_diff_rejects_a_non_snapshot() -> None:
    with pytest.raises(AuthoringError, match="after: must be a snapshot object, got int"):
        memo_diff({"a": "1"}, 5)  # type: ignore[arg-type]
