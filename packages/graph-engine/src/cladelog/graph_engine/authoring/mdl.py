"""A static, corpus-level MDL admission objective for mined chains (SPEC §1.14, ``mdl``).

Two-part code length ``L = L(library) + L(corpus | library)`` (all logarithms base 2).
Promoting a chain ``A → … → B`` (length ℓ, co-firing ``count``) to one abstract concept:

- ``encodeBits = schemaBits(M)``: describing the new concept;
- ``savedBits = count·(ℓ−1)·log2(max(2, N))``: each co-firing names one concept, not ℓ;
- ``taxBits = R·(log2(N+1) − log2(max(2, N)))``: one more symbol makes every record dearer;
- ``ΔL = encodeBits + taxBits − savedBits``; admitted iff ``ΔL < 0``.

MDL only ranks and pre-prunes: it cannot prove a refactor sound, so compose it in front of an
authority gate with :func:`compose_gates` (the first reject wins).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence, Sized
from typing import Any

import attrs

from ..jsvalue import truthy
from ..refs import iter_concepts, ref_key_of, refs_of, template_keys
from ._util import resolve_sync
from .errors import AuthoringError

__all__ = [
    "DEFAULT_STRUCT_CONST",
    "Alphabet",
    "GateVerdict",
    "MdlGain",
    "RankedChain",
    "alphabet_size",
    "as_alphabet",
    "compose_gates",
    "concept_count_of",
    "corpus_bits",
    "make_mdl_gate",
    "mdl_gain",
    "rank_candidates",
    "run_gate",
    "schema_bits",
    "symbols_of",
]

DEFAULT_STRUCT_CONST = 4.0


@attrs.frozen
class Alphabet:
    """Σ as sets of names; ``concept_names=None`` means "every concept of the tree"."""

    known_facts: tuple[str, ...] = ()
    concept_names: tuple[str, ...] | None = None
    palette: tuple[str, ...] = ()


AlphabetLike = Alphabet | Mapping[str, Any] | int | float | None

_ALPHABET_KEYS = {"knownFacts": "known_facts", "known_facts": "known_facts",
                  "conceptNames": "concept_names", "concept_names": "concept_names",
                  "palette": "palette"}


def as_alphabet(value: Any) -> Alphabet | float | None:
    """An :class:`Alphabet` from the reference's ``{knownFacts, conceptNames, palette}``
    object (snake_case keys work too); a number or None is returned unchanged."""
    if not isinstance(value, Mapping):
        return value if value is None or isinstance(value, Alphabet) else _number(
            value, "alphabet")
    fields: dict[str, tuple[str, ...]] = {}
    for key, names in value.items():
        target = _ALPHABET_KEYS.get(key)
        if target is None:
            raise AuthoringError(f"alphabet.{key}: unknown key (knownFacts, conceptNames, "
                                 "palette)")
        if names is None and target == "concept_names":
            continue
        if isinstance(names, str) or not isinstance(names, list | tuple) or not all(
                isinstance(n, str) for n in names):
            raise AuthoringError(f"alphabet.{key}: must be a list of names")
        fields[target] = tuple(names)
    return Alphabet(**fields)


@attrs.frozen
class MdlGain:
    """The MDL accounting of one candidate (bits)."""

    delta_l: float
    encode_bits: float
    saved_bits: float
    tax_bits: float
    admit: bool
    count: float
    ell: float
    n: int
    r: int


@attrs.frozen
class RankedChain:
    """A mined chain with its MDL record."""

    chain: Mapping[str, Any]
    mdl: MdlGain


@attrs.frozen
class GateVerdict:
    """A gate's answer: admit or not, why, and the MDL record when it judged."""

    admit: bool
    reason: str | None = None
    mdl: MdlGain | None = None


def _schema_of(schema: Any) -> Mapping[str, Any]:
    if isinstance(schema, Mapping):
        inner = schema.get("_schema")
        return inner if isinstance(inner, Mapping) else schema
    return {}


def symbols_of(schema: Any) -> int:
    """Require keys + ensure/assert references + template keys + 1 for a provider.

    A provider counts when ``provider`` is truthy in JavaScript's sense, as in the reference:
    ``[]`` and ``{}`` count, ``""``, ``0``, ``false`` and null do not."""
    s = _schema_of(schema)
    reqs = [ref_key_of(r).key for r in refs_of(s.get("require"), False)]
    ens = refs_of(s.get("ensure"), True) + refs_of(s.get("assert"), True)
    tpl = template_keys(s.get("applyMutations"))
    prov = 1 if truthy(s.get("provider")) else 0
    return len(reqs) + len(ens) + len(tpl) + prov


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise AuthoringError(f"{path}: must be a finite number, got {value!r}")
    return value


def alphabet_size(alphabet: AlphabetLike) -> float:
    """``max(2, a)`` for a number, ``max(2, |known ∪ concepts ∪ palette|)`` for a set; 2 if None."""
    alphabet = as_alphabet(alphabet)
    if alphabet is None:
        return 2
    if isinstance(alphabet, Alphabet):
        names = set(alphabet.known_facts) | set(alphabet.concept_names or ()) | set(
            alphabet.palette)
        return max(2, len(names))
    return max(2, _number(alphabet, "alphabet"))


def schema_bits(concept: Any, alphabet: AlphabetLike,
                struct_const: float = DEFAULT_STRUCT_CONST) -> float:
    """``symbols_of(concept)·log2|Σ| + struct_const``."""
    const = _number(struct_const, "struct_const")
    return symbols_of(concept) * math.log2(alphabet_size(alphabet)) + const


def corpus_bits(records: Sized, concept_count: int) -> float:
    """``R·log2(max(2, N))``: R records, each naming one of N concepts."""
    return len(records) * math.log2(max(2, concept_count))


def _names(tree: Any) -> list[str]:
    return [str(c["_name"]) for c, _ in iter_concepts(tree) if c.get("_name")]


def concept_count_of(tree: Any) -> int:
    """N: the number of concepts with a ``_name``."""
    return len(_names(tree))


def _concept_named(tree: Any, name: Any) -> Mapping[str, Any] | None:
    found = None
    for c, _ in iter_concepts(tree):
        if c.get("_name") == name:
            found = c  # the last one wins, as in a pre-order overwrite
    return found


def mdl_gain(chain: Mapping[str, Any], tree: Any, records: Sized,
             alphabet: AlphabetLike = None, abstract_schema: Any = None,
             struct_const: float = DEFAULT_STRUCT_CONST) -> MdlGain:
    """The MDL gain of promoting ``chain`` (``{from, to, count, length=2}``) to one concept.

    ``N`` counts the tree's named concepts, ``R = len(records)``. Without
    ``abstract_schema`` the new concept is estimated as the inlined ``from`` + ``to``.
    """
    if not isinstance(chain, Mapping):
        raise AuthoringError(f"chain: must be an object, got {type(chain).__name__}")
    if not isinstance(records, Sized):
        raise AuthoringError("records: must be a sized collection")
    count = _number(chain.get("count") or 0, "chain.count")
    ell = _number(chain.get("length") or 2, "chain.length")
    const = _number(struct_const, "struct_const")
    names = _names(tree)
    n = len(names)
    r = len(records)
    alphabet = as_alphabet(alphabet)
    if isinstance(alphabet, Alphabet) and alphabet.concept_names is None:
        alphabet = attrs.evolve(alphabet, concept_names=tuple(names))
    log_sigma = math.log2(alphabet_size(alphabet))
    if abstract_schema is not None:
        encode = symbols_of(abstract_schema) * log_sigma + const
    else:
        syms = symbols_of(_concept_named(tree, chain.get("from"))) + symbols_of(
            _concept_named(tree, chain.get("to")))
        encode = syms * log_sigma + const
    saved = count * (ell - 1) * math.log2(max(2, n))
    tax = r * (math.log2(n + 1) - math.log2(max(2, n)))
    delta = encode + tax - saved
    return MdlGain(delta_l=delta, encode_bits=encode, saved_bits=saved, tax_bits=tax,
                   admit=delta < 0, count=count, ell=ell, n=n, r=r)


def rank_candidates(chains: Iterable[Mapping[str, Any]], tree: Any, records: Sized,
                    alphabet: AlphabetLike = None,
                    struct_const: float = DEFAULT_STRUCT_CONST) -> list[RankedChain]:
    """The chains sorted by ascending ΔL (best refactor first; stable on ties)."""
    ranked = [RankedChain(chain, mdl_gain(chain, tree, records, alphabet,
                                          struct_const=struct_const)) for chain in chains]
    return sorted(ranked, key=lambda rc: rc.mdl.delta_l)


Gate = Callable[[Any, Mapping[str, Any]], Any]


def make_mdl_gate(tree: Any, records: Sequence[Any], alphabet: AlphabetLike = None,
                  struct_const: float = DEFAULT_STRUCT_CONST,
                  chain_of: Callable[[Mapping[str, Any]], Any] | None = None
                  ) -> Callable[[Any, Mapping[str, Any]], GateVerdict]:
    """A cheap pre-filter gate ``(graph, proposal) -> GateVerdict``.

    It abstains (admits) for any op other than ``add`` and when the proposal carries no
    mined chain (read by ``chain_of``, default ``proposal["chain"]``); otherwise it
    rejects when ΔL ≥ 0, judging ``proposal["schema"]`` as the abstract concept.
    """
    read_chain = chain_of or (lambda proposal: proposal.get("chain"))

    def gate(graph: Any, proposal: Mapping[str, Any]) -> GateVerdict:
        if not isinstance(proposal, Mapping):
            raise AuthoringError(f"proposal: must be an object, got {type(proposal).__name__}")
        if (proposal.get("op") or "add") != "add":
            return GateVerdict(admit=True)
        chain = read_chain(proposal)
        if not chain:
            return GateVerdict(admit=True, reason="mdl-abstain (no mined chain on proposal)")
        g = mdl_gain(chain, tree, records, alphabet, proposal.get("schema"), struct_const)
        reason = None if g.admit else f"mdl-reject (ΔL={g.delta_l:.2f} ≥ 0)"
        return GateVerdict(admit=g.admit, reason=reason, mdl=g)

    return gate


def _admits(verdict: Any) -> bool:
    if verdict is None or verdict is False:
        return False
    if isinstance(verdict, Mapping):
        return bool(verdict.get("admit"))
    return bool(getattr(verdict, "admit", False))


def compose_gates(*gates: Gate) -> Callable[[Any, Mapping[str, Any]], Awaitable[Any]]:
    """A short-circuiting AND of gates (sync or async), run in order; the first reject wins,
    else the last verdict is returned. The composite is async."""
    for i, g in enumerate(gates):
        if not callable(g):
            raise AuthoringError(f"gates[{i}]: must be callable")

    async def gate(graph: Any, proposal: Mapping[str, Any]) -> Any:
        last: Any = GateVerdict(admit=True)
        for g in gates:
            last = g(graph, proposal)
            if inspect.isawaitable(last):
                last = await last
            if not _admits(last):
                return last
        return last

    return gate


def run_gate(gate: Callable[[Any, Mapping[str, Any]], Any], graph: Any,
             proposal: Mapping[str, Any]) -> Any:
    """Run a (possibly async) gate to completion from synchronous code."""
    return resolve_sync(gate(graph, proposal), "run_gate")
