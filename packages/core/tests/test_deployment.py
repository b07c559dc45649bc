"""Deployments: plugin checks, enablement in the log, validation, the gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from cladelog.core import (
    ConcurrencyError,
    ConfigError,
    Deployment,
    DeploymentConfig,
    EventType,
    InputError,
    NewEvent,
    UnknownEventTypeError,
)


def cfg(tmp_path: Path, **doc: Any) -> DeploymentConfig:
    return DeploymentConfig.from_dict({"store": "log.sqlite3", **doc},
                                      path=tmp_path / "cladelog.toml")


# -- configuration errors -------------------------------------------------------------------
def test_unknown_plugin_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown plugin 'nope' \(installed: .*notes"):
        Deployment(cfg(tmp_path, plugins=["nope"]), create=True)
    assert not (tmp_path / "log.sqlite3").exists()


def test_missing_requirement_is_named(tmp_path: Path, plugin_factory: Any) -> None:
    p = plugin_factory("needy", requires=("counter",))
    with pytest.raises(ConfigError, match="'needy' requires 'counter'"):
        Deployment(cfg(tmp_path), plugins=[p], create=True)


def test_incompatible_hookspec_version(tmp_path: Path, plugin_factory: Any) -> None:
    p = plugin_factory(hookspec_version=99)
    with pytest.raises(ConfigError, match="built for core hook specs v99"):
        Deployment(cfg(tmp_path), plugins=[p], create=True)


@attrs.frozen
class Knobs:
    floor: float = 0.5
    name: str = "x"


@pytest.mark.parametrize("settings,match", [
    ({"floor": "high"}, r"^cladelog\.toml: \[settings\.counter\] floor: must be a finite "
                        r"number, got string 'high'$"),
    ({"flor": 1.0}, r"^cladelog\.toml: \[settings\.counter\] flor: unknown setting "
                    r"\(did you mean 'floor'\?\)$"),
    ({"zzz": 1.0}, r"^cladelog\.toml: \[settings\.counter\] zzz: unknown setting "
                   r"\(known: floor, name\)$"),
    ({"name": True}, r"^cladelog\.toml: \[settings\.counter\] name: must be a string, "
                     r"got boolean true$"),
])
def test_invalid_settings_name_the_key(
    tmp_path: Path, plugin_factory: Any, settings: Any, match: str
) -> None:
    p = plugin_factory(settings=Knobs)
    c = DeploymentConfig.from_dict({"store": "log.sqlite3", "plugins": ["counter"],
                                    "settings": {"counter": settings}},
                                   path=Path("cladelog.toml"))
    with pytest.raises(ConfigError, match=match):
        Deployment(c, plugins=[p], create=True)


def test_valid_settings_are_structured(tmp_path: Path, plugin_factory: Any) -> None:
    p = plugin_factory(settings=Knobs)
    c = cfg(tmp_path, plugins=["counter"], settings={"counter": {"floor": 1}})
    with Deployment(c, plugins=[p], create=True) as dep:
        assert dep.settings("counter") == Knobs(floor=1.0)


def test_settings_for_a_plugin_that_is_not_enabled(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[settings\.ghost\]: plugin 'ghost' is not enabled"):
        cfg(tmp_path, settings={"ghost": {"a": 1}})


def test_event_type_outside_the_plugin_namespace(tmp_path: Path, plugin_factory: Any) -> None:
    et = plugin_factory().cladelog_event_types()[0]
    p = plugin_factory(event_types=(attrs.evolve(et, name="core.hijack"),))
    with pytest.raises(ConfigError, match=r"outside its namespace counter"):
        Deployment(cfg(tmp_path), plugins=[p], create=True)


def test_config_file_errors(tmp_path: Path) -> None:
    f = tmp_path / "cladelog.toml"
    f.write_text("store = [", encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid TOML"):
        DeploymentConfig.load(f)
    f.write_text('store = "x"\nplugin = ["a"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"cladelog\.toml: plugin: unknown key \(did you mean "
                                          r"'plugins'\?\)$"):
        DeploymentConfig.load(f)
    with pytest.raises(ConfigError, match="no deployment file"):
        DeploymentConfig.load(tmp_path / "missing.toml")


def test_config_round_trips_through_toml(tmp_path: Path) -> None:
    c = cfg(tmp_path, plugins=["notes"], settings={"notes": {"default_tag": "a \"b\""}},
            actor="me")
    f = tmp_path / "cladelog.toml"
    f.write_text(c.to_toml("log.sqlite3"), encoding="utf-8")
    assert DeploymentConfig.load(f) == c


# -- enablement in the log ------------------------------------------------------------------
def test_enabling_and_disabling_is_recorded(tmp_path: Path, plugin_factory: Any) -> None:
    counter = plugin_factory()
    extra = plugin_factory("extra", event_types=(), projections=())
    with Deployment(cfg(tmp_path), plugins=[counter, extra], create=True) as dep:
        dep.append([NewEvent("c", "counter.counted", {"n": 1})])
        dep.append([NewEvent("c", "counter.counted", {"n": 1})])  # recorded once only
    with Deployment(cfg(tmp_path), plugins=[plugin_factory(version="2.0.0")]) as dep:
        dep.append([NewEvent("c", "counter.counted", {"n": 1})])
        kinds = [(e.type, e.data["name"], e.data["version"])
                 for e in dep.store.read(stream="core.plugins")]
        state = dep.state("core.plugins")
    assert kinds == [
        ("core.plugin_enabled", "counter", "1.0.0"),
        ("core.plugin_enabled", "extra", "1.0.0"),
        ("core.plugin_enabled", "counter", "2.0.0"),
        ("core.plugin_disabled", "extra", "1.0.0"),
    ]
    assert state["counter"]["version"] == "2.0.0" and state["counter"]["enabled"]
    assert state["extra"]["enabled"] is False


def test_meta_records_actor_and_producing_plugin(deployment: Deployment) -> None:
    [e] = deployment.append([NewEvent("c", "counter.counted", {"n": 1})], correlation_id="r1")
    assert e.meta == {"actor": "tester", "plugin": "counter", "plugin_version": "1.0.0",
                      "correlation_id": "r1"}


# -- validation -----------------------------------------------------------------------------
@pytest.mark.parametrize("data,match", [
    ({"n": "1"}, r"events\[1\]\.data\.n: invalid value for type, expected int"),
    ({"n": 1, "x": 2}, r"events\[1\]\.data: extra fields found \(x\)"),
    ({}, r"events\[1\]\.data\.n: required field missing"),
    ([1], r"events\[1\]\.data: expected an object"),
    ({"n": 2**60}, r"integer .* outside the safe range"),
])
def test_a_bad_payload_rejects_the_whole_batch(
    deployment: Deployment, data: Any, match: str
) -> None:
    deployment.append([NewEvent("c", "counter.counted", {"n": 1})])
    head = deployment.store.head()
    with pytest.raises(InputError, match=match):
        deployment.append([NewEvent("c", "counter.counted", {"n": 1}),
                           NewEvent("c", "counter.counted", data)])
    assert deployment.store.head() == head


def test_unknown_type_and_future_schema_version(deployment: Deployment) -> None:
    with pytest.raises(UnknownEventTypeError, match=r"unknown event type 'nope\.x'"):
        deployment.append([NewEvent("c", "nope.x", {})])
    with pytest.raises(UnknownEventTypeError, match=r"type: must be a string, got list"):
        deployment.append([NewEvent("c", ["counter.counted"], {"n": 1})])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="has no version 9"):
        deployment.append([NewEvent("c", "counter.counted", {"n": 1}, schema_version=9)])
    assert deployment.store.head().position == 0


@attrs.frozen
class Tick:
    t: int


def test_a_batch_of_several_types_gets_each_ones_plugin_and_checks(
    tmp_path: Path, plugin_factory: Any
) -> None:
    """A batch looks each type's encoder, plugin and meta up when the type changes: events
    of two plugins, interleaved, each carry their own plugin and version, and a bad event
    after a change of type is named by its index."""
    clock = plugin_factory("clock", version="2.5.0", event_types=(EventType("clock.ticked", Tick),),
                           projections=())
    c = cfg(tmp_path, plugins=["counter", "clock"], actor="tester")
    with Deployment(c, plugins=[plugin_factory(), clock], create=True) as dep:
        got = dep.append([NewEvent("c", "counter.counted", {"n": 1}),
                          NewEvent("c", "clock.ticked", Tick(5)),
                          NewEvent("c", "clock.ticked", {"t": 6}),
                          NewEvent("c", "counter.counted", {"n": 2})])
        assert [(e.type, e.meta["plugin"], e.meta["plugin_version"], e.data) for e in got] == [
            ("counter.counted", "counter", "1.0.0", {"n": 1, "label": ""}),
            ("clock.ticked", "clock", "2.5.0", {"t": 5}),
            ("clock.ticked", "clock", "2.5.0", {"t": 6}),
            ("counter.counted", "counter", "1.0.0", {"n": 2, "label": ""}),
        ]
        head = dep.store.head()
        with pytest.raises(InputError, match=r"^events\[2\]\.data\.t: "):
            dep.append([NewEvent("c", "clock.ticked", {"t": 1}),
                        NewEvent("c", "counter.counted", {"n": 1}),
                        NewEvent("c", "clock.ticked", {"t": "x"})])
        with pytest.raises(UnknownEventTypeError, match=r"^events\[1\]\.type: unknown"):
            dep.append([NewEvent("c", "clock.ticked", {"t": 1}),
                        NewEvent("c", "nope.x", {})])
        with pytest.raises(InputError, match=r"^events\[1\]\.schema_version: new clock"):
            dep.append([NewEvent("c", "clock.ticked", {"t": 1}),
                        NewEvent("c", "clock.ticked", {"t": 1}, schema_version=0)])
        assert dep.store.head() == head


def test_expected_version_through_the_deployment(deployment: Deployment) -> None:
    deployment.append([NewEvent("c", "counter.counted", {"n": 1})], expected_versions={"c": 0})
    with pytest.raises(ConcurrencyError, match="expected version 0, but it is at 1"):
        deployment.append([NewEvent("c", "counter.counted", {"n": 1})],
                          expected_versions={"c": 0})


def test_event_type_definitions_are_checked() -> None:
    @attrs.frozen
    class P:
        a: int

    with pytest.raises(ValueError, match="no upcaster from version"):
        EventType("x.y", P, schema_version=3, upcasters={1: dict})
    for bad in ("Bad Name", "plain", "a.", ".b", "a..b", "a.B", "a.1b", "1a.b", "a.b-c",
                "a.b\n", "ä.b"):
        with pytest.raises(ValueError, match="must look like"):
            EventType(bad, P)
    for good in ("a.b", "fork_score.branch_scored", "x1.y_2.z3"):
        assert EventType(good, P).name == good


# -- the gate -------------------------------------------------------------------------------
def test_gate_combines_votes(tmp_path: Path, plugin_factory: Any) -> None:
    def blocker(candidate: str, states: Any) -> tuple[str, str]:
        total = states["counter.totals"]["total"]
        return ("block", f"total {total} too high") if total > 5 else ("allow", "fine")

    warner = plugin_factory("warner", event_types=(), projections=(),
                            vote=lambda c, s: ("warn", f"looked at {c}"))
    with Deployment(cfg(tmp_path), plugins=[plugin_factory(vote=blocker), warner],
                    create=True) as dep:
        assert dep.gate("v1").allowed
        dep.append([NewEvent("c", "counter.counted", {"n": 9})])
        result = dep.gate("v1")
    assert not result.allowed
    assert [(v.plugin, v.decision, v.reason) for v in result.votes] == [
        ("counter", "block", "total 9 too high"), ("warner", "warn", "looked at v1")]


def test_import_checks_the_payloads_it_brings_in(tmp_path: Path, plugin_factory: Any) -> None:
    """A history written elsewhere (here by a plugin whose class accepts a string where ours
    wants an integer) must not bring in what this deployment would refuse on append."""
    from cladelog.core import InputError, NewEvent

    @attrs.frozen
    class Lenient:
        n: Any
        label: str = ""

    lenient = attrs.evolve(plugin_factory().cladelog_event_types()[0], payload=Lenient)
    src_cfg = DeploymentConfig.from_dict({"store": "a.sqlite3"}, path=tmp_path / "a.toml")
    dst_cfg = DeploymentConfig.from_dict({"store": "b.sqlite3"}, path=tmp_path / "b.toml")
    with Deployment(src_cfg, plugins=[plugin_factory(event_types=(lenient,))],
                    create=True) as src:
        src.append([NewEvent("c", "counter.counted", {"n": 1, "label": "ok"})])
        good = list(src.store.read())
        src.append([NewEvent("c", "counter.counted", {"n": "7", "label": "bad"})])
        exported = list(src.store.read())
    with Deployment(dst_cfg, plugins=[plugin_factory()], create=True) as dst:
        with pytest.raises(InputError, match=rf"event at position {len(exported)} "
                                             r"\(counter.counted\): data.n: .*expected int"):
            dst.import_events(iter(exported))  # consumed as it comes: all or nothing still
        assert dst.store.head().position == 0  # nothing imported
        assert dst.import_events(good).appended == len(good)  # the valid prefix is fine
        # events the store already holds are not checked again (they were, when they came)
        assert dst.import_events(good).already_present == len(good)


@pytest.mark.parametrize("event,problem", [
    (NewEvent("a\x00b", "counter.counted", {"n": 1}), r"event.stream: must not contain control"),
    (NewEvent("a\ud800", "counter.counted", {"n": 1}), r"event.stream: contains a lone surrogate"),
    (NewEvent("core.plugins", "counter.counted", {"n": 1}), r"event.stream: core.plugins is "
                                                            r"reserved"),
    (NewEvent("p", "core.plugin_enabled", {"name": "fake", "version": "9"}),
     r"event.type: core.plugin_enabled is written by cladelog itself"),
    (NewEvent("c", "counter.counted", {"n": 1}, meta={"plugin": "forged"}),
     r"event.meta.plugin: set by the deployment"),
    (NewEvent("c", "counter.counted", {"n": 1}, meta={"plugin_version": "9"}),
     r"event.meta.plugin_version: set by the deployment"),
    (NewEvent("c", "counter.counted", {"n": 1}, meta={"actor": 5}),
     r"event.meta.actor: must be a non-empty string"),
])
def test_append_refuses_what_would_forge_or_break_the_record(deployment: Deployment,
                                                             event: Any, problem: str) -> None:
    from cladelog.core import InputError

    deployment.append([NewEvent("c", "counter.counted", {"n": 0})])
    before = deployment.store.head()
    with pytest.raises(InputError, match=problem):
        deployment.append([event])
    assert deployment.store.head() == before


def test_a_caller_may_name_the_actor_and_keep_the_deployments_own_meta(
    deployment: Deployment,
) -> None:
    (event,) = deployment.append([NewEvent("c", "counter.counted", {"n": 1},
                                           meta={"actor": "alice", "plugin": "counter",
                                                 "ticket": "T-1"})])
    assert event.meta["actor"] == "alice" and event.meta["ticket"] == "T-1"
    assert (event.meta["plugin"], event.meta["plugin_version"]) == ("counter", "1.0.0")


def test_two_deployments_starting_at_once_record_the_plugins_once(
    tmp_path: Path, plugin_factory: Any
) -> None:
    config = cfg(tmp_path)
    with Deployment(config, plugins=[plugin_factory()], create=True) as a, \
            Deployment(config, plugins=[plugin_factory()]) as b:
        stale = b._plugin_changes()  # b looked before a recorded ...
        a.append([NewEvent("c", "counter.counted", {"n": 1})])
        b_changes = b._plugin_changes
        calls = iter([stale])

        def first_stale_then_fresh() -> Any:  # ... and appends after it did
            return next(calls, None) or b_changes()

        b._plugin_changes = first_stale_then_fresh  # type: ignore[method-assign]
        b.append([NewEvent("c", "counter.counted", {"n": 2})])
        enabled = [e for e in a.store.read(stream="core.plugins")]
        assert [e.type for e in enabled] == ["core.plugin_enabled"]  # once, not twice
        assert a.store.head().position == 3
