"""Reference paths (SPEC §1.3) and mutation templates (SPEC §1.10, Q10, Q11, §0-15, Q22)."""

from __future__ import annotations

from typing import Any

import pytest
from cladelog.graph_engine import UNDEFINED, TemplateError
from cladelog.graph_engine.paths import resolve, satisfies_require
from cladelog.graph_engine.templates import resolve_template

OBJS: dict[str, dict[str, Any]] = {
    "a": {"_id": "a", "label": "A", "n": 0, "owner": "b", "xs": [1, 2], "d": {"k": {"z": 1}}},
    "b": {"_id": "b", "level": 4, "name": "bee"},
    "clock": {"_id": "clock", "tick": 9},
    "s": {"_id": "s", "originNode": "a", "targetNode": "b", "_origin": "root",
          "_keepOrigin": True},
}


def lookup(oid: str) -> dict[str, Any] | None:
    return OBJS.get(oid)


def kind_of(oid: str) -> str | None:
    return {"a": "node", "b": "node", "s": "segment"}.get(oid, "free" if oid in OBJS else None)


@pytest.mark.parametrize(
    ("path", "expected"),
    [("label", "A"), ("owner:level", 4), ("$clock:tick", 9), ("$clock", "clock"),
     ("$nothing", UNDEFINED), ("xs.length", 2), ("label.length", 1), ("d.k.z", 1),
     ("n.x", UNDEFINED),  # a falsy intermediate part gives undefined
     ("missing:level", UNDEFINED), ("owner:", OBJS["b"]), ("$clock.tick", 9)],
)
def test_resolution(path: str, expected: Any) -> None:
    assert resolve(path, "a", lookup) == expected


def test_reads_record_every_key_on_the_path() -> None:
    reads: list[tuple[str, str]] = []
    resolve("owner:level", "a", lookup, reads)
    assert reads == [("a", "owner"), ("b", "level")]


@pytest.mark.parametrize(("value", "ok"), [(False, True), (0, True), ("", True), ([], True),
                                          (None, False), (UNDEFINED, False),
                                          (float("nan"), False)])
def test_require_satisfaction(value: Any, ok: bool) -> None:
    assert satisfies_require(value) is ok


def res(tpl: Any, target: str | None = "a", rev: int = 5) -> list[dict[str, Any]]:
    return resolve_template(tpl, target, rev, lookup, kind_of)


def test_parent_update_and_reference_keys_come_last() -> None:
    items = res({"$_id": "_parent", "$who": "_parent:owner:name", "x": 1})
    assert items == [{"id": "a", "create": None, "set": [["x", 1], ["who", "bee"]]}]


def test_new_objects_get_deterministic_ids_and_origin() -> None:
    items = res([{"v": 1}, {"v": 2}])
    # Q10: ids from the revision and the item's place; _origin is the target id
    assert [i["id"] for i in items] == ["~5.1", "~5.2"]
    assert items[0] == {"id": "~5.1", "create": "free", "set": [["_origin", "a"], ["v", 1]]}


def test_keep_origin_propagates_the_targets_origin() -> None:
    items = res({"_id": "new", "v": 1}, target="s")
    assert items[0]["set"][0] == ["_origin", "root"]


def test_host_mutation_without_target_has_no_origin() -> None:
    items = res({"$$_id": "fresh", "v": 1}, target=None)
    assert items == [{"id": "fresh", "create": "free", "set": [["v", 1]]}]


def test_plain_id_colliding_with_an_existing_object_gets_a_fresh_alias() -> None:
    items = res([{"_id": "a", "v": 1}, {"$_id": "a", "w": 2}])
    # the existing "a" is not touched: "_id" names a new local object (reference rule 3)
    assert [i["id"] for i in items] == ["~5.1"]
    assert items[0]["set"][-2:] == [["v", 1], ["w", 2]]


def test_nodes_are_applied_first_and_kinds_come_from_flags() -> None:
    items = res([{"_id": "seg", "Segment": True, "$originNode": "n1"},
                 {"_id": "n1", "Node": True}], target=None)
    assert [(i["id"], i["create"]) for i in items] == [("n1", "node"), ("seg", "segment")]
    assert items[1]["set"] == [["Segment", True], ["originNode", "n1"]]


def test_nested_item_key_receives_the_child_id() -> None:
    items = res({"$_id": "_parent", "$child": {"_id": "kid", "v": 1}})
    assert items[0]["set"] == [["child", "kid"]]
    assert items[1]["id"] == "kid"


def test_incoming_outgoing_queue_nested_items() -> None:
    items = res({"$_id": "_parent", "_outgoing": [{"_id": "o1", "v": 1}]})
    assert [i["id"] for i in items] == ["a", "o1"]


def test_only_exact_special_keys_are_special_q11() -> None:
    items = res({"$_id": "_parent", "user_id": 3, "x_incoming_y": 4})
    assert items[0]["set"] == [["user_id", 3], ["x_incoming_y", 4]]


def test_two_pushes_to_one_key_are_both_kept() -> None:
    items = res([{"$_id": "_parent", "log": {"__push": 1}}, {"$_id": "_parent",
                                                             "log": {"__push": 2}}])
    assert items[0]["set"] == [["log", {"__push": 1}], ["log", {"__push": 2}]]


def test_plain_value_last_write_wins_at_first_position() -> None:
    items = res([{"$_id": "_parent", "x": 1, "y": 1}, {"$_id": "_parent", "x": 2}])
    assert items[0]["set"] == [["x", 2], ["y", 1]]


def test_external_references_are_rejected_q22() -> None:
    with pytest.raises(TemplateError, match=r"template\.\$\$rec: external references"):
        res({"$_id": "_parent", "$$rec": "db:42"})


@pytest.mark.parametrize(
    ("tpl", "message"),
    [(5, "must be an object or a list"), ([5], r"template\[0\]: a template item"),
     ({"$$_id": 3}, r"\$\$_id: must be a non-empty string"),
     ({"v": {1, 2}}, "not a JSON value")],
)
def test_bad_templates(tpl: Any, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        res(tpl)


def test_unresolved_dollar_id_names_a_new_free_object() -> None:
    # SPEC §1.10: a $_id that resolves to nothing is no id at all; the item becomes a new
    # free object with a fresh id (rule 5), or takes its plain _id (rule 3); the reference
    # does the same (with a random id, Q10: a deterministic one here)
    warnings: list[str] = []
    items = resolve_template([{"$_id": "_parent", "A": True},
                              {"$_id": "_parent:parentSeg", "answeredBy": {"__push": "a"}},
                              {"$_id": "nowhere:x", "_id": "k", "v": 1},
                              {"$_id": "k", "w": 2}], "a", 5, lookup, kind_of,
                             warnings=warnings)
    assert items == [
        {"id": "a", "create": None, "set": [["A", True]]},
        {"id": "~5.1", "create": "free",
         "set": [["_origin", "a"], ["answeredBy", {"__push": "a"}]]},
        {"id": "k", "create": "free", "set": [["_origin", "a"], ["v", 1], ["w", 2]]},
    ]
    assert len(warnings) == 2 and "template[1].$_id: '_parent:parentSeg' does not resolve" \
        in warnings[0]
    assert res({"$_id": "nowhere:x", "v": 1})[0]["id"] == "~5.1"  # no warnings list: silent
