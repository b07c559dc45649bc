"""``LLM::complete`` and the provider cache (SPEC §1.12), in scenarios and sessions."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace
from typing import Any

import pytest
from cladelog.graph_engine import Engine, Session, replay_session, run_scenario
from cladelog.graph_engine.llm import ScriptedClient, interpolate, make_llm_provider
from cladelog.graph_engine.provider_cache import Fidelity, ProviderCache, memo_surface
from ge_helpers import concept, tree

CLASSIFY = concept(
    "Classify", require=["text"], provider="LLM::complete",
    prompt={"system": "You classify incidents.", "user": "Classify: ${text}",
            "facts": {"severity": {"enum": ["high", "low"], "synonyms": {"high": ["severe"]}}}},
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def classify_scenario() -> dict[str, Any]:
    return {
        "name": "llm-cache",
        "conceptTree": tree(CLASSIFY),
        "seed": {"freeNodes": [{"_id": "t1", "text": "disk full"},
                               {"_id": "t2", "text": "weird noise"},
                               {"_id": "t3", "text": "disk full"}]},
        "providers": {"LLM::complete": {
            "kind": "llm", "cache": True,
            "replies": {"Classify: disk full": {"severity": "Severe", "prose": "Disk is full."},
                        "Classify: weird noise": {"severity": "purple"}}}},
        "steps": [
            {"op": "unCastConcept", "target": "t1", "concept": "Classify"},
            {"op": "mutate", "template": {"$$_id": "t2", "text": "disk full"}},
            {"op": "unCastConcept", "target": "t2", "concept": "Classify"},
        ],
    }


def test_the_reference_cache_story() -> None:
    out = run_scenario(classify_scenario())
    # five derivations: t1 miss (stored), t2 miss (CanonMiss: not stored), t3 hit (t1's key),
    # t1 re-cast hit, t2 re-cast with t1's text hit; the model is asked twice
    assert out["providerCalls"] == {"LLM::complete": 2}
    assert out["cacheStats"] == {"hits": 3, "misses": 2, "stores": 1, "calls": 5,
                                 "bypass": 0, "verified": 0, "escalated": 0, "coalesced": 0}
    boot = out["states"][0]["objects"]
    digest_high = sha('{"severity":"high"}')  # RFC 8785 of the snapped facts
    assert boot["t1"] == {"_id": "t1", "text": "disk full", "Classify": True,
                          "severity": "high", "ClassifyProse": "Disk is full.",
                          "ClassifyFactsDigest": digest_high}
    assert boot["t3"] == {**boot["t1"], "_id": "t3"}
    # a miss snaps to null, lists the key and keeps the whole reply as prose
    assert boot["t2"]["severity"] is None and boot["t2"]["ClassifyCanonMiss"] == ["severity"]
    assert boot["t2"]["ClassifyProse"] == '{"severity":"purple"}'
    assert boot["t2"]["ClassifyFactsDigest"] == sha('{"severity":null}')
    assert out["final"]["t2"]["severity"] == "high"
    assert out["final"]["t2"]["ClassifyFactsDigest"] == digest_high


def test_a_reply_without_its_string_facts_is_cached() -> None:
    # SPEC §1.12: an absent string or id fact is null without a miss, so no CanonMiss is
    # written and the provider cache stores the reply: the second object does not ask
    c = concept("C", require=["text"], provider="LLM::complete",
                prompt={"user": "${text}", "facts": {"sev": {"enum": ["high", "low"]},
                                                     "note": {"type": "string"},
                                                     "ref": {"type": "id"}, "any": {}}})
    out = run_scenario({
        "conceptTree": tree(c),
        "seed": {"freeNodes": [{"_id": "o1", "text": "q"}, {"_id": "o2", "text": "q"}]},
        "providers": {"LLM::complete": {"kind": "llm", "cache": True,
                                        "replies": {"q": {"sev": "HIGH"}}}},
    })
    for oid in ("o1", "o2"):
        facts = out["final"][oid]
        assert "CCanonMiss" not in facts
        assert (facts["sev"], facts["note"], facts["ref"], facts["any"]) == (
            "high", None, None, None)
    assert out["providerCalls"] == {"LLM::complete": 1}
    stats = out["cacheStats"]
    assert (stats["misses"], stats["stores"], stats["hits"]) == (1, 1, 1)


def test_without_cache_every_derivation_asks_the_model() -> None:
    data = classify_scenario()
    del data["providers"]["LLM::complete"]["cache"]
    out = run_scenario(data)
    assert out["providerCalls"] == {"LLM::complete": 5}
    assert "cacheStats" not in out


def test_async_misses_on_one_key_fly_once() -> None:
    out = run_scenario({
        "conceptTree": tree(concept("S", require=["k"], provider="P::s")),
        "seed": {"freeNodes": [{"_id": f"o{i}", "k": 7} for i in range(3)]},
        "providers": {"P::s": {"kind": "emit", "async": True, "cache": True,
                               "emit": {"$_id": "_parent", "S": True, "v": "${=$k * 2}"}}},
    })
    assert out["providerCalls"] == {"P::s": 1}  # the two later misses waited for the first
    stats = out["cacheStats"]
    assert (stats["misses"], stats["coalesced"], stats["hits"], stats["calls"]) == (1, 2, 2, 3)
    assert [out["final"][f"o{i}"]["v"] for i in range(3)] == [14, 14, 14]


def test_prompt_interpolation_and_prose_options() -> None:
    client = ScriptedClient({"About x: {\"a\":1} / ": {"note": "from key", "prose": "p"}})
    schema = concept("N", require=["obj"], provider="LLM::complete",
                     prompt={"user": "About ${name}: ${obj} / ${missing}",
                             "prose": "summary", "proseFrom": "note", "digest": False})
    eng = Engine(tree(schema), providers={"LLM::complete": make_llm_provider(client)},
                 seed={"freeNodes": [{"_id": "o", "name": "x", "obj": {"a": 1}}]})
    eng.settle()
    got = eng.get("o")
    assert got is not None
    assert client.asked == ['About x: {"a":1} / ']
    assert got["summary"] == "from key" and got["N"] is True
    assert "NFactsDigest" not in got and "NProse" not in got


def test_plain_text_reply_is_prose() -> None:
    client = ScriptedClient({}, default="just words")
    schema = concept("N", require=["x"], provider="LLM::complete", prompt={"user": "hi"})
    eng = Engine(tree(schema), providers={"LLM::complete": make_llm_provider(client)},
                 seed={"freeNodes": [{"_id": "o", "x": 1}]})
    eng.settle()
    got = eng.get("o")
    assert got is not None and got["NProse"] == "just words"
    assert got["NFactsDigest"] == sha("{}")


BIG_REPLY = '{"n": 12345678901234567890, "i": 12345678901234567891, "g": 99999999999999999999}'


@pytest.mark.parametrize("reply", [BIG_REPLY, {"n": 12345678901234567890,
                                               "i": 12345678901234567891,
                                               "g": 99999999999999999999}])
def test_reply_integers_beyond_2_53_are_doubles(reply: Any) -> None:
    # JSON.parse makes every number a double (node: 12345678901234567890 ===
    # 1.2345678901234567e19, Math.round(99999999999999999999 / 10) * 10 === 1e20); an
    # object reply is JSON-encoded first (SPEC §2), so it reads the same
    c = concept("C", require=["text"], provider="LLM::complete",
                prompt={"user": "${text}", "facts": {"n": {"type": "number"},
                                                     "i": {"type": "int"},
                                                     "g": {"grain": 10}}})
    out = run_scenario({
        "conceptTree": tree(c), "seed": {"freeNodes": [{"_id": "o", "text": "q"}]},
        "providers": {"LLM::complete": {"kind": "llm", "replies": {"q": reply}}},
    })
    facts = out["final"]["o"]
    assert "divergent" not in facts
    assert facts["n"] == facts["i"] == 1.2345678901234567e19 and facts["g"] == 1e20
    assert "CCanonMiss" not in facts and type(facts["n"]) is float
    # the prose is the whole reply text: an object reply as JSON.stringify writes it
    assert facts["CProse"] == (reply if type(reply) is str else (
        '{"n":12345678901234567000,"i":12345678901234567000,"g":100000000000000000000}'))
    # the facts digest is the RFC 8785 canonical JSON of the snapped facts (Q12)
    assert facts["CFactsDigest"] == sha(
        '{"g":100000000000000000000,"i":12345678901234567000,"n":12345678901234567000}')


def test_a_client_returning_an_object_with_big_integers() -> None:
    class Client:
        def complete(self, system: str, user: str) -> Any:
            return {"n": 2**64, "nested": [2**60, {"k": -(2**70)}], "prose": "p"}

    provider = make_llm_provider(Client())
    c = concept("C", require=["x"], provider="LLM::complete",
                prompt={"user": "u", "facts": {"n": {"type": "number"}}})
    eng = Engine(tree(c), providers={"LLM::complete": provider},
                 seed={"freeNodes": [{"_id": "o", "x": 1}]})
    eng.settle()
    got = eng.get("o")
    assert got is not None and "divergent" not in got
    assert got["n"] == float(2**64) and got["CProse"] == "p"


def test_no_model_client_is_a_recorded_error_not_a_crash() -> None:
    records: list[tuple[str, Any]] = []
    eng = Engine(tree(CLASSIFY), providers={"LLM::complete": make_llm_provider()},
                 seed={"freeNodes": [{"_id": "t", "text": "x"}]},
                 sink=lambda k, d: records.append((k, d)))
    eng.settle()
    errors = [d for k, d in records if k == "provider_error"]
    assert len(errors) == 1 and "no model client" in errors[0]["message"]
    got = eng.get("t")
    assert got is not None and "Classify" not in got


def test_a_bad_fact_schema_is_a_provider_error() -> None:
    bad = concept("B", require=["x"], provider="LLM::complete",
                  prompt={"user": "u", "facts": {"k": {"enum": ["a", "A"]}}})
    eng = Engine(tree(bad), providers={"LLM::complete": make_llm_provider(ScriptedClient(
        {}, default="{}"))}, seed={"freeNodes": [{"_id": "o", "x": 1}]})
    eng.settle()
    got = eng.get("o")
    assert got is not None and "normalizes like" in got["divergent"][0]["message"]


def test_interpolate_null_is_empty() -> None:
    call: Any = SimpleNamespace(get_ref=lambda p: {"a": None, "n": 1.5}.get(p))
    assert interpolate("[${a}][${n}]", call) == "[][1.5]"


# ------------------------------------------------------------------ the cache unit


def fake_call(concept_schema: dict[str, Any], refs: dict[str, Any],
              facts: dict[str, Any] | None = None) -> Any:
    from cladelog.graph_engine import UNDEFINED

    return SimpleNamespace(concept=concept_schema, concept_id=concept_schema["_id"],
                           facts=facts or {}, object_id="o",
                           get_ref=lambda path: refs.get(path, UNDEFINED))


def test_memo_surface_follows_hops() -> None:
    schema = concept("C", require=["owner:level", "kind"], ensure=["$$cfg:mode != 'off'"])
    assert memo_surface(schema) == ["owner:level", "kind", "$cfg:mode"]
    cache = ProviderCache()
    a = cache.key_of(fake_call(schema, {"owner:level": 3, "kind": "k", "$cfg:mode": "on"}))
    b = cache.key_of(fake_call(schema, {"owner:level": 4, "kind": "k", "$cfg:mode": "on"}))
    assert a is not None and b is not None and a != b  # Q13: the owner's level is in the key
    # a cross-object path that resolves to nothing bypasses the cache
    assert cache.key_of(fake_call(schema, {"kind": "k", "$cfg:mode": "on"})) is None
    # a local fact that is absent is part of the key as null
    assert cache.key_of(fake_call(schema, {"owner:level": 3, "$cfg:mode": "on"})) is not None


def test_bypasses() -> None:
    cache = ProviderCache()
    calls: list[str] = []

    def fn(call: Any) -> Any:
        calls.append(call.object_id)
        return {"$_id": "_parent", "X": True}

    schema = concept("X", require=["k"])
    wrapped = cache.wrap(fn)
    wrapped(fake_call(schema, {"k": 1}, facts={"explore": True}))
    wrapped(fake_call(concept("E"), {}))  # empty surface
    cache.wrap(fn, key_fn=lambda c: None)(fake_call(schema, {"k": 1}))
    cache.wrap(fn, key_fn=lambda c: 1 / 0)(fake_call(schema, {"k": 1}))
    assert cache.stats.bypass == 4 and len(calls) == 4 and len(cache) == 0


def test_eviction_keeps_the_newest() -> None:
    cache = ProviderCache(max=2)
    schema = concept("X", require=["k"])
    wrapped = cache.wrap(lambda call: {"$_id": "_parent", "X": True})
    for k in (1, 2, 3):
        wrapped(fake_call(schema, {"k": k}))
    assert len(cache) == 2
    wrapped(fake_call(schema, {"k": 1}))  # evicted: a miss again
    assert cache.stats.misses == 4 and cache.stats.hits == 0


def test_fidelity_gating() -> None:
    cache = ProviderCache(fidelity=Fidelity(warmup=2, threshold=0.8))
    schema = concept("X", require=["k"])
    answers = iter(["a", "b", "c", "d", "e", "f"])
    provider_calls = 0

    def fn(call: Any) -> Any:
        nonlocal provider_calls
        provider_calls += 1
        return {"$_id": "_parent", "X": next(answers)}

    wrapped = cache.wrap(fn)
    for _ in range(4):
        wrapped(fake_call(schema, {"k": 1}))
    # miss (a, stored); 2 warm-up hits re-derive (b, c) and differ from a: rate 0/2 < 0.8,
    # so the 4th call re-derives too and counts as escalated
    assert provider_calls == 4
    assert (cache.stats.verified, cache.stats.escalated, cache.stats.hits) == (3, 1, 3)


def test_bad_cache_size() -> None:
    from cladelog.graph_engine import GraphEngineError

    with pytest.raises(GraphEngineError, match=r"cache\.max"):
        ProviderCache(max=0)


# ------------------------------------------------------------------ sessions


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["graph-engine"]


def test_llm_session_replays_without_the_model(cladelog_env: Any) -> None:
    client = ScriptedClient({"Classify: disk full": {"severity": "high"}})
    session = Session(cladelog_env.deployment, "llm", tree(CLASSIFY),
                      providers={"LLM::complete": make_llm_provider(client)},
                      seed={"freeNodes": [{"_id": "t", "text": "disk full"}]})
    report = session.settle()
    assert client.calls == 1
    engine = replay_session(cladelog_env.deployment, "llm")
    assert client.calls == 1 and engine.digest() == report.digest
