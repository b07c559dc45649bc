"""The one reference parser (``refs.py``) and the users that must agree with it."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from cladelog.graph_engine import Engine, ProviderCall, compile_expression
from cladelog.graph_engine.provider_cache import ProviderCache
from ge_helpers import concept, free, tree
from hypothesis import given, settings
from hypothesis import strategies as st


def _run_cached(schema: dict[str, Any], objects: list[dict[str, Any]]) -> tuple[ProviderCache,
                                                                               list[str]]:
    """Settle ``objects`` under one cached provider; the objects the provider really ran for."""
    cache = ProviderCache()
    ran: list[str] = []

    def tag(call: ProviderCall) -> Any:
        ran.append(call.object_id)
        return {"$_id": "_parent", "Tag": True}

    eng = Engine(tree(schema), providers={"P::tag": cache.wrap(tag)}, seed=free(*objects))
    eng.settle()
    assert all(eng.get(o["_id"])["Tag"] is True for o in objects)  # type: ignore[index]
    return cache, ran


def test_cache_key_ignores_a_reference_inside_a_string_literal() -> None:
    # "$name == '$x'" reads name only: two objects that differ in x share one key
    schema = concept("Tag", require=["name"], provider="P::tag",
                     **{"assert": ["$name == '$x'"]})
    cache, ran = _run_cached(schema, [{"_id": "o1", "name": "$x", "x": 1},
                                      {"_id": "o2", "name": "$x", "x": 2}])
    assert ran == ["o1"]
    assert (cache.stats.misses, cache.stats.hits, cache.stats.stores) == (1, 1, 1)


def test_cache_key_ignores_a_dollar_inside_an_identifier() -> None:
    # "a$b" is one identifier, not a reference to b: the surface is `ready` alone
    schema = concept("Tag", require=["ready"], provider="P::tag", **{"assert": ["!a$b"]})
    cache, ran = _run_cached(schema, [{"_id": "o1", "ready": True, "b": 1},
                                      {"_id": "o2", "ready": True, "b": 2}])
    assert ran == ["o1"]
    assert (cache.stats.misses, cache.stats.hits) == (1, 1)


def test_cache_key_still_changes_with_a_fact_the_expression_reads() -> None:
    schema = concept("Tag", require=["name"], provider="P::tag",
                     **{"assert": ["$name == '$x' || $n > 0"]})
    cache, ran = _run_cached(schema, [{"_id": "o1", "name": "a", "n": 1},
                                      {"_id": "o2", "name": "a", "n": 2}])
    assert ran == ["o1", "o2"]
    assert (cache.stats.misses, cache.stats.hits) == (2, 0)


def test_an_expression_that_reads_nothing_bypasses_the_cache() -> None:
    schema = concept("Tag", provider="P::tag", **{"assert": ["a$b > 1 || 'x' == \"$y\" || 1"]})
    cache, ran = _run_cached(schema, [{"_id": "o1", "b": 5, "y": 1}])
    assert ran == ["o1"] and cache.stats.bypass == 1 and cache.stats.misses == 0


# the parser, stated by examples worked out by hand from SPEC §1.5 ---------------------------

@pytest.mark.parametrize(("source", "paths"), [
    ("$name == '$x'", ["name"]),
    ("a$b > 1", []),
    ("$a$b", ["a$b"]),
    ("$$$x", []),
    ("$$clock:tick.length > 0 && $x.y", ["$clock:tick.length", "x.y"]),
    ('"it\\"s $x" + $y', ["y"]),
    ("'a \\' $q' == $r", ["r"]),
    ("$1 + $_ok", ["_ok"]),
    ("f($a, [$b, 'c $d'])", ["a", "b"]),
])
def test_ref_tokens_by_example(source: str, paths: list[str]) -> None:
    from cladelog.graph_engine.refs import ref_tokens, refs_of

    assert refs_of(source, True) == paths
    for start, end, token in ref_tokens(source):
        assert source[start:end] == token


_PIECES = st.sampled_from([
    "$a", "$$g:b", "$c.length", "$d.e.f", "x$y", "$a$b", "'$s'", '"$t \\" $u"', "'\\'$v'",
    "1", "0.5", "true", "null", "Math", " ", "(", ")", "[", "]", ",", "+", "-", "!", "&&",
    "||", "==", "===", ">", "?", ":", ".", "$", "$$", "$1", "in",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=12))
def test_the_parser_lists_what_the_compiled_expression_reads(pieces: list[str]) -> None:
    """For every source that compiles, the references the compiler resolves are the
    parser's, in order (the memo surface and the validators see what evaluation reads)."""
    from cladelog.graph_engine.errors import GraphEngineError
    from cladelog.graph_engine.refs import refs_of

    source = "".join(pieces)
    try:
        compiled = compile_expression(source, "t")
    except GraphEngineError:
        return
    assert list(compiled.refs) == refs_of(source, True)


def test_validate_tree_does_not_load_the_authoring_package() -> None:
    # the low-level validator sits below `authoring` (import-linter contract); running it
    # must not import the authoring modules (no cycle authoring -> ... -> validate)
    code = (
        "import sys\n"
        "from cladelog.graph_engine.validate import validate_tree\n"
        "r = validate_tree({'childConcepts': {'A': {'_id': 'A', '_name': 'A',"
        " 'ensure': ['!$A']}}}, known_facts=['z'])\n"
        "assert [i.kind for i in r.warnings] == ['unstratified-cycle'], r\n"
        "bad = sorted(m for m in sys.modules if m.startswith('cladelog.graph_engine.authoring'))\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
