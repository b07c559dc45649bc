"""The scenario runner of SPEC §2: declarative providers, steps, and the expected-output format.

``run_scenario(data)`` boots an engine from a scenario dict, runs each step followed by a
settle, and returns ``{"scenario", "states", "final", "providerCalls", "nodeLinks"?}`` in the
format of the reference's expected files (objects sorted by id, keys sorted recursively,
``_rev`` removed; ``nodeLinks`` only when the graph has nodes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

from .engine import (
    Engine,
    EngineConfig,
    Provider,
    ProviderCall,
    RecordSink,
    facts_seed,
    record_run_failure,
)
from .errors import GraphEngineError, ScenarioError
from .expr import compile_expression
from .jsvalue import UNDEFINED, js_json_stringify, to_string
from .tree import PROVIDER_NAME

if TYPE_CHECKING:
    from .provider_cache import ProviderCache

__all__ = [
    "MemoryHost",
    "ProviderKind",
    "ScenarioHost",
    "build_provider",
    "generate_workload",
    "reload_seed",
    "run_scenario",
    "snapshot",
    "substitute",
]

#: Bounds of the generated workload (a scenario file must not exhaust memory).
MAX_ENTITIES: Final = 1_000_000
MAX_CONCEPTS: Final = 99

_STEP_OPS: Final = frozenset({
    "mutate", "patchConcept", "addConcept", "deleteConcept", "castConcept", "unCastConcept",
    "reload", "settle",
})
#: The keys of a scenario file (SPEC §2 and §3; ``name`` and ``description`` label it).
_TOP_KEYS: Final = ("name", "description", "conceptTree", "seed", "config", "providers",
                    "steps", "generate")
_SEED_KEYS: Final = ("nodes", "segments", "freeNodes")
#: The keys each built-in provider kind takes (besides ``kind``, ``async`` and ``cache``).
_KIND_KEYS: Final = {"emit": ("emit",), "cases": ("cases", "else"), "none": (),
                     "llm": ("replies", "defaultReply")}


# ----------------------------------------------------------------------------- substitution


def _placeholders(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, body)`` of every ``${...}`` in ``text`` (braces may nest)."""
    out: list[tuple[int, int, str]] = []
    i = text.find("${")
    while i >= 0:
        depth = 0
        j = i + 1
        end = -1
        in_quote = ""
        while j < len(text):
            ch = text[j]
            if in_quote:
                if ch == "\\":
                    j += 2
                    continue
                if ch == in_quote:
                    in_quote = ""
            elif ch in "\"'":
                in_quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = j
                    break
            j += 1
        if end < 0:
            break
        out.append((i, end + 1, text[i + 2 : end]))
        i = text.find("${", end + 1)
    return out


def _placeholder_value(body: str, call: ProviderCall) -> Any:
    if body.startswith("="):
        return call.evaluate(body[1:])
    if body == "@id":
        return call.object_id
    if body == "@concept":
        return call.concept.get("_name", call.concept_id)
    return call.get_ref(body.strip())


def _piece(value: Any) -> str:
    if value is None or value is UNDEFINED:
        return ""
    if type(value) is dict or type(value) is list:
        text = js_json_stringify(value)
        return text if type(text) is str else ""
    return to_string(value)


def substitute(value: Any, call: ProviderCall) -> Any:
    """Fill ``${=EXPR}``, ``${@id}``, ``${@concept}`` and ``${path}`` in string values.

    A string that is exactly one placeholder keeps the value's type (``undefined`` drops the
    key); otherwise pieces are concatenated with null as "" and objects as JSON.
    """
    tp = type(value)
    if tp is str:
        found = _placeholders(value)
        if not found:
            return value
        if len(found) == 1 and found[0][0] == 0 and found[0][1] == len(value):
            return _placeholder_value(found[0][2], call)
        parts: list[str] = []
        last = 0
        for start, end, body in found:
            parts.append(value[last:start])
            parts.append(_piece(_placeholder_value(body, call)))
            last = end
        parts.append(value[last:])
        return "".join(parts)
    if tp is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            filled = substitute(item, call)
            if filled is not UNDEFINED:
                out[key] = filled
        return out
    if tp is list:
        return [None if (v := substitute(item, call)) is UNDEFINED else v for item in value]
    return value


# ----------------------------------------------------------------------------- providers


def _check_substitutions(value: Any, where: str, depth: int = 0) -> None:
    """Compile every ``${=EXPR}`` in the string values of an emitted template, so that a
    syntax error is an error at load, naming the value's path (not a silent ``undefined``
    at run time)."""
    if depth > 64:
        raise ScenarioError(f"{where}: template nested too deeply")
    tp = type(value)
    if tp is str:
        for _, _, body in _placeholders(value):
            if body.startswith("="):
                try:
                    compile_expression(body[1:], where)
                except GraphEngineError as exc:
                    raise ScenarioError(str(exc)) from None
    elif tp is dict:
        for key, item in value.items():
            _check_substitutions(item, f"{where}.{key}", depth + 1)
    elif tp is list:
        for i, item in enumerate(value):
            _check_substitutions(item, f"{where}[{i}]", depth + 1)


def _check_spec(name: str, spec: dict[str, Any], kind: Any) -> None:
    """The shape of a built-in provider spec: its name, known keys, ``emit`` present,
    ``async`` and ``cache`` booleans, substitutions that compile."""
    where = f"providers.{name}"
    if not PROVIDER_NAME.fullmatch(name):
        raise ScenarioError(f"{where}: a provider is named 'Ns::fn' (two non-empty parts "
                            f"without spaces or colons)")
    if kind not in _KIND_KEYS:
        raise ScenarioError(f"{where}.kind: unknown provider kind {kind!r}")
    allowed = ("kind", "async", "cache", *_KIND_KEYS[kind])
    for key in spec:
        if key not in allowed:
            raise ScenarioError(f"{where}.{key}: unknown key for kind {kind!r} (allowed: "
                                f"{', '.join(allowed)})")
    for key in ("async", "cache"):
        if key in spec and type(spec[key]) is not bool:
            raise ScenarioError(f"{where}.{key}: must be true or false, got {spec[key]!r}")
    if kind == "emit":
        if "emit" not in spec:
            raise ScenarioError(f"{where}.emit: required (the template to return)")
        _check_substitutions(spec["emit"], f"{where}.emit")
    elif kind == "cases":
        cases = spec.get("cases")
        if type(cases) is list:
            for i, case in enumerate(cases):
                if type(case) is dict:
                    for key in case:
                        if key not in ("when", "emit"):
                            raise ScenarioError(f"{where}.cases[{i}].{key}: unknown key "
                                                f"(allowed: when, emit)")
                    _check_substitutions(case.get("emit"), f"{where}.cases[{i}].emit")
        _check_substitutions(spec.get("else"), f"{where}.else")


def build_provider(name: str, spec: Any, counts: dict[str, int],
                   cache: ProviderCache | None = None) -> Provider:
    """Build a declarative provider (``emit``, ``cases``, ``none``, ``llm``) counting its calls.

    With ``"cache": true`` the provider is wrapped in ``cache`` (cache hits are not counted).
    The spec is checked first (:class:`ScenarioError` naming the field): the name is
    ``Ns::fn``, every key is known for the kind, ``emit`` is present for ``emit``,
    ``async``/``cache`` are booleans, and every ``${=EXPR}`` substitution compiles.
    """
    if type(spec) is not dict:
        raise ScenarioError(f"providers.{name}: must be an object")
    kind = spec.get("kind")
    if kind == "loop":
        raise ScenarioError(
            f"providers.{name}.kind: 'loop' needs the authoring package's provider kind"
        )
    _check_spec(name, spec, kind)
    if spec.get("cache") and cache is None:
        raise ScenarioError(f"providers.{name}.cache: no provider cache was given")
    is_async = bool(spec.get("async"))
    produce: Callable[[ProviderCall], Any]
    if kind == "emit":
        template = spec.get("emit")

        def produce(call: ProviderCall) -> Any:
            return substitute(template, call)
    elif kind == "cases":
        cases = spec.get("cases")
        if type(cases) is not list:
            raise ScenarioError(f"providers.{name}.cases: must be a list")
        compiled: list[tuple[Any, Any]] = []
        for i, case in enumerate(cases):
            if type(case) is not dict or "when" not in case:
                raise ScenarioError(f"providers.{name}.cases[{i}]: needs 'when' and 'emit'")
            try:
                expr = compile_expression(case["when"], f"providers.{name}.cases[{i}].when")
            except GraphEngineError as exc:
                raise ScenarioError(str(exc)) from None
            compiled.append((expr, case.get("emit")))
        fallback = spec.get("else")

        def produce(call: ProviderCall) -> Any:
            engine = call.engine
            for expr, emit in compiled:
                if expr.test(lambda p: engine.get_ref(p, call.object_id), default=False):
                    return substitute(emit, call)
            return substitute(fallback, call) if fallback is not None else None
    elif kind == "none":

        def produce(call: ProviderCall) -> Any:
            return None
    elif kind == "llm":
        from .llm import ScriptedClient, make_llm_provider

        replies = spec.get("replies", {})
        if type(replies) is not dict:
            raise ScenarioError(f"providers.{name}.replies: must be an object")
        produce = make_llm_provider(ScriptedClient(replies, spec.get("defaultReply")))
    else:  # pragma: no cover - _check_spec refused any other kind
        raise ScenarioError(f"providers.{name}.kind: unknown provider kind {kind!r}")

    def provider(call: ProviderCall) -> Any:
        counts[name] = counts.get(name, 0) + 1
        result = produce(call)
        if not is_async:
            return result

        async def later() -> Any:
            await asyncio.sleep(0)
            return result

        return later()

    if spec.get("cache"):
        assert cache is not None
        return cache.wrap(provider)
    return provider


# ----------------------------------------------------------------------------- workload


def generate_workload(entities: int, concepts: int, seed_mod: int = 1000
                      ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Provider]]:
    """The generated benchmark workload of SPEC §3: ``(tree, seed, providers)``."""
    if not (0 <= entities <= MAX_ENTITIES and 1 <= concepts <= MAX_CONCEPTS and seed_mod >= 1):
        raise ScenarioError(f"generate: needs 0 <= entities <= {MAX_ENTITIES}, 1 <= concepts "
                            f"<= {MAX_CONCEPTS} and seedMod >= 1, got {entities}, {concepts}, "
                            f"{seed_mod}")
    roots: dict[str, Any] = {}
    by_id: dict[str, dict[str, Any]] = {}
    for k in range(1, concepts + 1):
        cid = f"G{k:02d}"
        prev = f"{k - 1:02d}"
        schema: dict[str, Any] = {
            "_id": cid,
            "_name": cid,
            "require": ["v"] if k == 1 else [f"G{prev}", f"s{prev}"],
            "provider": ["Gen::step", k],
        }
        if k % 4 == 0:
            schema["ensure"] = [f"$s{prev} % 5 != 0"]
        by_id[cid] = schema
        if k % 5 == 0 and k > 1:
            by_id[f"G{prev}"].setdefault("childConcepts", {})[cid] = schema
        else:
            roots[cid] = schema
    seed = {"freeNodes": [{"_id": f"e{i}", "v": (i * 7919) % seed_mod} for i in range(entities)]}

    def step(call: ProviderCall) -> Any:
        k = call.args[0]
        base = call.facts["v"] if k == 1 else call.facts[f"s{k - 1:02d}"]
        return {"$$_id": call.object_id, f"G{k:02d}": True, f"s{k:02d}": base + k}

    return {"childConcepts": roots}, seed, {"Gen::step": step}


# ----------------------------------------------------------------------------- runner


def _sorted(value: Any) -> Any:
    if type(value) is dict:
        return {k: _sorted(value[k]) for k in sorted(value)}
    if type(value) is list:
        return [_sorted(v) for v in value]
    return value


def snapshot(engine: Engine) -> dict[str, Any]:
    """Objects sorted by id with keys sorted recursively and ``_rev`` removed."""
    facts = engine.facts()
    out: dict[str, Any] = {}
    for oid in sorted(facts):
        record = {k: v for k, v in facts[oid].items() if k != "_rev"}
        out[oid] = _sorted(record)
    return out


def _require(step: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in step:
        raise ScenarioError(f"{where}.{key}: required")
    return step[key]


_STEP_KEYS: Final = {
    "mutate": ("template",),
    "patchConcept": ("concept", "updates"),
    "addConcept": ("schema",),
    "deleteConcept": ("concept",),
    "castConcept": ("target", "concept"),
    "unCastConcept": ("target", "concept"),
    "reload": (),
    "settle": (),
}
_STEP_OPTIONAL: Final = {"mutate": ("target",), "addConcept": ("parent",)}


def _check_steps(steps: Any) -> list[dict[str, Any]]:
    """Validate the shape of every step before anything runs."""
    if type(steps) is not list:
        raise ScenarioError("scenario.steps: must be a list")
    for i, step in enumerate(steps):
        where = f"scenario.steps[{i}]"
        if type(step) is not dict or step.get("op") not in _STEP_OPS:
            raise ScenarioError(f"{where}.op: must be one of {sorted(_STEP_OPS)}")
        op = step["op"]
        for key in _STEP_KEYS[op]:
            _require(step, key, where)
        allowed = ("op", *_STEP_KEYS[op], *_STEP_OPTIONAL.get(op, ()))
        for key in step:
            if key not in allowed:
                raise ScenarioError(f"{where}.{key}: unknown key for op {op!r} (allowed: "
                                    f"{', '.join(allowed)})")
    return steps


def _check_top(data: Mapping[str, Any]) -> None:
    for key in data:
        if key not in _TOP_KEYS:
            raise ScenarioError(f"scenario.{key}: unknown key (allowed: "
                                f"{', '.join(_TOP_KEYS)})")
    seed = data.get("seed")
    if type(seed) is dict:
        for key in seed:
            if key not in _SEED_KEYS:
                raise ScenarioError(f"scenario.seed.{key}: unknown key (allowed: "
                                    f"{', '.join(_SEED_KEYS)})")


#: The engine's name of each step op, as its error messages start (``cast.target: ...``).
_OP_PREFIXES: Final = ("mutate.", "template", "cast.", "uncast.", "add_concept.",
                       "patch_concept.", "delete_concept.")


def _step_failure(index: int, op: str, exc: GraphEngineError) -> str:
    """One line naming the step: ``steps[3].cast.target: unknown object 'nope'``."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if text.startswith(_OP_PREFIXES):
        return f"steps[{index}].{text}"
    return f"steps[{index}] ({op}): {text}"


def reload_seed(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """The facts of every object as a seed (``_rev`` dropped; kind from ``Node``/``Segment``)."""
    return facts_seed(engine)


#: A scenario provider kind: ``kind(key, spec, counts) -> {"Ns::fn": provider}``.
ProviderKind = Callable[[str, Any, dict[str, int]], Mapping[str, Provider]]


class ScenarioHost(Protocol):
    """Where a scenario's engine lives: in memory (default) or a recorded session."""

    def boot(self, tree: Mapping[str, Any], providers: Mapping[str, Provider],
             seed: Mapping[str, Any], config: EngineConfig) -> Engine:
        """Create the engine (nothing settled yet)."""

    def settle(self, engine: Engine) -> None:
        """Settle the engine (and record what it did)."""

    def reload(self, engine: Engine) -> Engine:
        """A fresh engine booted on the current facts and live tree."""


class MemoryHost:
    """The in-memory :class:`ScenarioHost`; records go to ``sink`` when given."""

    def __init__(self, sink: RecordSink | None = None) -> None:
        self.sink = sink
        self.providers: Mapping[str, Provider] = {}

    def boot(self, tree: Mapping[str, Any], providers: Mapping[str, Provider],
             seed: Mapping[str, Any], config: EngineConfig) -> Engine:
        self.providers = providers
        return Engine(tree, providers=providers, seed=seed, config=config, sink=self.sink)

    def settle(self, engine: Engine) -> None:
        engine.settle()

    def reload(self, engine: Engine) -> Engine:
        return Engine(engine.export_tree(), providers=self.providers, seed=reload_seed(engine),
                      config=engine.config, sink=self.sink)


def _int_field(gen: Mapping[str, Any], key: str, default: int) -> int:
    value = gen.get(key, default)
    if type(value) is not int:
        raise ScenarioError(f"scenario.generate.{key}: must be an integer, got {value!r}")
    return value


def run_scenario(
    data: Mapping[str, Any],
    *,
    sink: RecordSink | None = None,
    host: ScenarioHost | None = None,
    extra_providers: Mapping[str, Provider] | None = None,
    provider_kinds: Mapping[str, ProviderKind] | None = None,
) -> dict[str, Any]:
    """Run a scenario (SPEC §2) and return the expected-output format.

    ``host`` decides where the engine lives (default: in memory, records to ``sink``);
    ``extra_providers`` are added to the scenario's declarative ones (which win on a clash);
    ``provider_kinds`` adds provider kinds: ``kind(key, spec, counts)`` returns the providers
    a spec of that kind registers (the authoring package's ``loop``, for instance).
    The scenario's shape is checked before anything runs.
    """
    if not isinstance(data, Mapping):
        raise ScenarioError("scenario: must be an object")
    _check_top(data)
    counts: dict[str, int] = {}
    providers: dict[str, Provider] = dict(extra_providers or {})
    specs = data.get("providers") or {}
    if type(specs) is not dict:
        raise ScenarioError("scenario.providers: must be an object")
    kinds = dict(provider_kinds or {})
    cache: ProviderCache | None = None
    if any(type(spec) is dict and spec.get("cache") for spec in specs.values()):
        from .provider_cache import ProviderCache

        cache = ProviderCache()
    for name, spec in specs.items():
        kind = spec.get("kind") if type(spec) is dict else None
        if type(kind) is str and kind in kinds:
            providers.update(kinds[kind](name, spec, counts))
        else:
            providers[name] = build_provider(name, spec, counts, cache)
    config_data = data.get("config") or {}
    if type(config_data) is not dict:
        raise ScenarioError("scenario.config: must be an object")
    try:
        config = EngineConfig.from_json(config_data)
    except ScenarioError:
        raise
    except GraphEngineError as exc:
        raise ScenarioError(f"scenario.{exc}") from None
    steps = _check_steps(data.get("steps") or [])
    if "generate" in data:
        gen = data["generate"]
        if type(gen) is not dict:
            raise ScenarioError("scenario.generate: must be an object")
        tree, seed, gen_providers = generate_workload(
            _int_field(gen, "entities", 0), _int_field(gen, "concepts", 1),
            _int_field(gen, "seedMod", 1000),
        )
        for name, fn in gen_providers.items():
            providers[name] = _counting(name, fn, counts)
    else:
        tree = _require(data, "conceptTree", "scenario")
        seed = data.get("seed") or {}
    runner = host if host is not None else MemoryHost(sink)
    engine = runner.boot(tree, providers, seed, config)
    runner.settle(engine)
    states = [{"after": "boot", "objects": snapshot(engine)}]
    for i, step in enumerate(steps, 1):
        op = step["op"]
        try:
            engine = _run_step(engine, runner, step, f"steps[{i - 1}]")
        except GraphEngineError as exc:
            # a refused step: recorded as a ``run_failed`` record after what the run did so
            # far (a replay then shows the run failed there), and raised naming the step
            message = _step_failure(i - 1, op, exc)
            record_run_failure(engine, {"step": i - 1, "op": op, "message": message})
            flush = getattr(runner, "flush", None)
            if callable(flush):
                flush(engine)
            raise ScenarioError(message) from None
        runner.settle(engine)
        states.append({"after": f"step{i}:{op}", "objects": snapshot(engine)})
    result: dict[str, Any] = {
        "scenario": data.get("name", ""),
        "states": states,
        "final": states[-1]["objects"],
        "providerCalls": {k: counts[k] for k in sorted(counts)},
    }
    links = engine.node_links()
    if links:
        result["nodeLinks"] = {k: links[k] for k in sorted(links)}
    if cache is not None:
        result["cacheStats"] = cache.stats.to_json()
    return result


def _run_step(engine: Engine, runner: ScenarioHost, step: Mapping[str, Any],
              where: str) -> Engine:
    op = step["op"]
    if op == "mutate":
        engine.mutate(_require(step, "template", where), step.get("target"))
    elif op == "patchConcept":
        engine.patch_concept(_require(step, "concept", where), _require(step, "updates", where))
    elif op == "addConcept":
        engine.add_concept(step.get("parent"), _require(step, "schema", where))
    elif op == "deleteConcept":
        engine.delete_concept(_require(step, "concept", where))
    elif op == "castConcept":
        engine.cast(_require(step, "target", where), _require(step, "concept", where))
    elif op == "unCastConcept":
        engine.uncast(_require(step, "target", where), _require(step, "concept", where))
    elif op == "reload":
        engine = runner.reload(engine)
    return engine


def _counting(name: str, fn: Provider, counts: dict[str, int]) -> Provider:
    def provider(call: ProviderCall) -> Any:
        counts[name] = counts.get(name, 0) + 1
        return fn(call)

    return provider
