"""The decompose-and-synthesize loop (SPEC §1.14, ``loop``) as concepts plus providers.

DECOMPOSE. Every segment is a ``Task``; ``EvalComplexity`` marks it ``Atomic`` or
``NeedsSplit`` (a depth floor forces ``Atomic``); ``Expand`` turns a ``NeedsSplit`` segment
into a chain of child segments; ``Answer`` answers an ``Atomic`` one.

SYNTHESIZE, two regimes with the same bounded rollup function:

- :func:`synthesize` (with :func:`loop_concept_tree`): a deterministic post-order walk after
  the run, writing ``{answer, Synthesized: true}`` on every expanded segment;
- :func:`reactive_loop_concept_tree`: ``ReportUp`` pushes each answered segment's id onto its
  parent's ``answeredBy`` (``{__push}``), and ``Rollup`` fires exactly once per expanded
  segment when ``$answeredBy.length == $expandedInto.length``, inside stabilization.

Content is injected (sync or async functions), so the same loop runs with deterministic
functions or a model. A content function that raises, or returns something malformed,
degrades: to ``Atomic`` for eval and expand, to an ``"(error)"`` answer for answer and
rollup, with ``llmError`` carrying the message. The run itself is an ordinary graph session:
its records replay with no provider (so no content function) called.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final, Protocol

import attrs

from ..engine import Engine, Provider, ProviderCall
from ..errors import ScenarioError
from ..jsvalue import truthy
from ._util import error_text, js_string, resolve_sync
from .errors import AuthoringError

__all__ = [
    "AnswerFn",
    "EvalFn",
    "ExpandFn",
    "RollupFn",
    "SegmentView",
    "asynthesize",
    "default_rollup",
    "loop_concept_tree",
    "loop_provider_kind",
    "make_decompose_providers",
    "reactive_loop_concept_tree",
    "synthesize",
]

ERROR_ANSWER: Final = "(error)"


class Session(Protocol):
    """What :func:`synthesize` needs of a recorded session
    (:class:`cladelog.graph_engine.Session` is one): its engine, and ``settle()`` to record
    what was written. Named by its shape so that this module does not import the sessions
    module, which sits above the authoring package."""

    @property
    def engine(self) -> Engine: ...

    def settle(self) -> Any: ...


@attrs.frozen
class SegmentView:
    """What a content function sees: the segment id and a copy of its facts."""

    id: str
    facts: Mapping[str, Any]

    @property
    def label(self) -> Any:
        """The segment's ``label`` fact (None when absent)."""
        return self.facts.get("label")

    @property
    def depth(self) -> int | float:
        """The segment's ``depth`` fact, 0 when absent or not a number."""
        return _depth(self.facts)


EvalFn = Callable[[SegmentView], Any]
"""``(segment) -> bool | {"atomic": bool}`` (or an awaitable of it). As in the reference, an
object is Atomic iff its ``atomic`` is truthy (JavaScript truthiness); a Python ``bool`` is
taken as it says (a cladelog convenience, see docs/authoring.md); anything else (None, a
string, a number, a list) means NeedsSplit, as ``r && r.atomic`` does in the reference."""
ExpandFn = Callable[[SegmentView], Any]
"""``(segment) -> [{"name", "description"?} | name, ...]`` ordered sub-steps."""
AnswerFn = Callable[[SegmentView], Any]
"""``(segment) -> answer`` for an atomic segment."""
RollupFn = Callable[[SegmentView, list[Any]], Any]
"""``(segment, child answers in expandedInto order) -> bounded parent answer``."""


def _concept(cid: str, require: list[str], provider: str, **extra: Any) -> dict[str, Any]:
    return {"_id": cid, "_name": cid, "require": require, "provider": [provider], **extra}


def loop_concept_tree(namespace: str = "AI") -> dict[str, Any]:
    """A fresh copy of the decompose tree: ``Task`` → ``EvalComplexity``, ``Expand``, ``Answer``."""
    children = {
        "EvalComplexity": _concept("EvalComplexity", ["Task"], f"{namespace}::evalComplexity"),
        "Expand": _concept("Expand", ["Task", "NeedsSplit"], f"{namespace}::expand"),
        "Answer": _concept("Answer", ["Task", "Atomic"], f"{namespace}::answer"),
    }
    task = {"_id": "Task", "_name": "Task", "require": "Segment", "childConcepts": children}
    return {"childConcepts": {"Task": task}}


def reactive_loop_concept_tree(namespace: str = "AI") -> dict[str, Any]:
    """The decompose tree plus ``ReportUp`` and ``Rollup`` (the ``.length`` completion gate)."""
    tree = loop_concept_tree(namespace)
    children = tree["childConcepts"]["Task"]["childConcepts"]
    children["ReportUp"] = _concept("ReportUp", ["Task", "Answered", "parentSeg"],
                                    f"{namespace}::reportUp")
    children["Rollup"] = _concept("Rollup", ["Task", "expandedInto"], f"{namespace}::rollup",
                                  ensure=["$answeredBy.length == $expandedInto.length"])
    return copy.deepcopy(tree)


# ----------------------------------------------------------------------------- content


def _depth(facts: Mapping[str, Any]) -> int | float:
    value = facts.get("depth")
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        return value
    return 0


def _is_atomic(result: Any) -> bool:
    """The reference's ``r && r.atomic`` (only an object with a truthy ``atomic`` is atomic;
    ``"yes".atomic`` or ``[].atomic`` are undefined: NeedsSplit), except that a Python bool
    is the answer itself: an eval function written in Python says ``True`` for atomic."""
    if result is True or result is False:
        return result
    return isinstance(result, Mapping) and truthy(result.get("atomic"))


def _steps(raw: Any, max_branch: int) -> list[tuple[Any, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list | tuple):
        raise AuthoringError(f"expand_fn: must return a list of steps, got {type(raw).__name__}")
    out: list[tuple[Any, Any]] = []
    for i, step in enumerate(raw[:max_branch]):
        if isinstance(step, str):
            out.append((step, None))
        elif isinstance(step, Mapping):
            out.append((step.get("name"), step.get("description")))
        else:
            raise AuthoringError(f"expand_fn[{i}]: a step must be a name or "
                                 f"{{'name', 'description'}}, got {type(step).__name__}")
    return out


def default_rollup(segment: SegmentView, answers: list[Any]) -> str:
    """The default rollup: the child answers concatenated (null as "")."""
    return "".join("" if a is None else js_string(a) for a in answers)


def _run_content(thunk: Callable[[], Any], build: Callable[[Any], Any],
                 degrade: Callable[[BaseException], Any]) -> Any:
    """Call a content function (sync or async) and turn its output into a template."""
    try:
        value = thunk()
    except Exception as exc:
        return degrade(exc)
    if inspect.isawaitable(value):
        pending = value

        async def later() -> Any:
            try:
                got = await pending
                return build(got)
            except Exception as exc:
                return degrade(exc)

        return later()
    try:
        return build(value)
    except Exception as exc:
        return degrade(exc)


def _view(call: ProviderCall) -> SegmentView:
    return SegmentView(call.object_id, dict(call.facts))


def make_decompose_providers(
    eval_fn: EvalFn | None = None,
    expand_fn: ExpandFn | None = None,
    answer_fn: AnswerFn | None = None,
    rollup_fn: RollupFn | None = None,
    max_depth: int = 2,
    max_branch: int = 4,
    namespace: str = "AI",
) -> dict[str, Provider]:
    """The loop's providers ``<namespace>::evalComplexity/expand/answer/reportUp/rollup``.

    Content functions may be sync or async. ``max_depth`` is the depth floor (a segment
    whose ``depth`` ≥ ``max_depth`` is Atomic without consulting ``eval_fn``);
    ``max_branch`` truncates the steps of ``expand_fn``; 0 means the default 4, as the
    reference reads ``opts.maxBranch || 4`` (and as the scenario ``loop`` kind does).
    """
    for name, value in (("max_depth", max_depth), ("max_branch", max_branch)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise AuthoringError(f"{name}: must be an integer >= 0, got {value!r}")
    max_branch = max_branch or 4
    ev: EvalFn = eval_fn or (lambda seg: {"atomic": True})
    ex: ExpandFn = expand_fn or (lambda seg: [])
    an: AnswerFn = answer_fn or (lambda seg: "")
    ro: RollupFn = rollup_fn or default_rollup

    def eval_complexity(call: ProviderCall) -> Any:
        if _depth(call.facts) >= max_depth:  # the depth floor
            return {"$_id": "_parent", "EvalComplexity": True, "Atomic": True}
        seg = _view(call)

        def build(result: Any) -> Any:
            flag = "Atomic" if _is_atomic(result) else "NeedsSplit"
            return {"$_id": "_parent", "EvalComplexity": True, flag: True}

        return _run_content(lambda: ev(seg), build, lambda exc: {
            "$_id": "_parent", "EvalComplexity": True, "Atomic": True,
            "llmError": error_text(exc)})

    def expand(call: ProviderCall) -> Any:
        seg = _view(call)

        def build(raw: Any) -> Any:
            steps = _steps(raw, max_branch)
            if not steps:  # nothing to split: a leaf
                return {"$_id": "_parent", "Expand": True, "Atomic": True}
            base = seg.id
            depth = _depth(seg.facts) + 1
            child_ids = [f"{base}_s{i}" for i in range(len(steps))]
            tpl: list[dict[str, Any]] = [
                {"$_id": "_parent", "Expand": True, "expandedInto": child_ids}]
            prev = seg.facts.get("originNode")
            for i, (name, description) in enumerate(steps):
                last = i == len(steps) - 1
                tnode = seg.facts.get("targetNode") if last else f"{base}_m{i}"
                if not last:
                    node: dict[str, Any] = {"_id": tnode, "Node": True}
                    if name is not None:
                        node["label"] = name
                    tpl.append(node)
                child: dict[str, Any] = {
                    "_id": child_ids[i], "Segment": True, "originNode": prev,
                    "targetNode": tnode, "depth": depth, "parentSeg": base}
                if name is not None:
                    child["label"] = name
                if description is not None:
                    child["description"] = description
                tpl.append(child)
                prev = tnode
            return tpl

        return _run_content(lambda: ex(seg), build, lambda exc: {
            "$_id": "_parent", "Expand": True, "Atomic": True, "llmError": error_text(exc)})

    def answer(call: ProviderCall) -> Any:
        seg = _view(call)
        return _run_content(
            lambda: an(seg),
            lambda a: {"$_id": "_parent", "Answer": True, "Answered": True, "answer": a},
            lambda exc: {"$_id": "_parent", "Answer": True, "Answered": True,
                         "answer": ERROR_ANSWER, "llmError": error_text(exc)})

    def report_up(call: ProviderCall) -> Any:
        return [{"$$_id": call.facts.get("parentSeg"), "answeredBy": {"__push": call.object_id}},
                {"$_id": "_parent", "ReportUp": True}]

    def rollup(call: ProviderCall) -> Any:
        seg = _view(call)
        kids = _child_answers(call.engine, seg.facts)
        return _run_content(
            lambda: ro(seg, kids),
            lambda a: {"$_id": "_parent", "Rollup": True, "Answered": True, "answer": a},
            lambda exc: {"$_id": "_parent", "Rollup": True, "Answered": True,
                         "answer": ERROR_ANSWER, "llmError": error_text(exc)})

    return {
        f"{namespace}::evalComplexity": eval_complexity,
        f"{namespace}::expand": expand,
        f"{namespace}::answer": answer,
        f"{namespace}::reportUp": report_up,
        f"{namespace}::rollup": rollup,
    }


def _kid_ids(facts: Mapping[str, Any]) -> list[str]:
    kids = facts.get("expandedInto")
    if not isinstance(kids, list):
        return []
    return [k for k in kids if isinstance(k, str)]


def _child_answers(engine: Engine, facts: Mapping[str, Any]) -> list[Any]:
    out: list[Any] = []
    for kid in _kid_ids(facts):
        got = engine.get(kid)
        out.append(None if got is None else got.get("answer"))
    return out


# ----------------------------------------------------------------------------- synthesize


def _synthesis(engine: Engine, root_id: str
               ) -> Generator[tuple[SegmentView, list[Any]], Any, Any]:
    """Post-order walk; yields ``(segment, child answers)`` and receives the rollup answer."""
    if not isinstance(root_id, str):
        raise AuthoringError(f"root_id: must be a string, got {type(root_id).__name__}")
    done: dict[str, Any] = {}
    on_path: set[str] = set()
    stack: list[tuple[str, bool]] = [(root_id, False)]
    while stack:
        sid, expanded = stack.pop()
        if sid in done:
            continue
        facts = engine.get(sid)
        if facts is None:
            done[sid] = None
            continue
        kids = _kid_ids(facts)
        if not kids:
            done[sid] = facts.get("answer")  # a leaf: answered by the Answer concept
            continue
        if not expanded:
            on_path.add(sid)
            stack.append((sid, True))
            for kid in reversed(kids):
                if kid in on_path:
                    raise AuthoringError(f"segments.{sid}.expandedInto: cycle through {kid!r}")
                if kid not in done:
                    stack.append((kid, False))
            continue
        on_path.discard(sid)
        answer = yield SegmentView(sid, facts), [done.get(k) for k in kids]
        done[sid] = answer
    return done.get(root_id)


def _write_answer(engine: Engine, seg: SegmentView, answer: Any, error: str | None) -> None:
    tpl: dict[str, Any] = {"$$_id": seg.id, "answer": answer, "Synthesized": True}
    if error is not None:
        tpl["llmError"] = error
    engine.mutate(tpl, seg.id)


def _target(graph: Any) -> tuple[Engine, Any]:
    """``(engine, owner)``: an :class:`Engine`, or a recorded session and its engine."""
    if isinstance(graph, Engine):
        return graph, graph
    engine = getattr(graph, "engine", None)
    if isinstance(engine, Engine) and callable(getattr(graph, "settle", None)):
        return engine, graph
    raise AuthoringError(f"engine: must be an Engine or a Session, got {type(graph).__name__}")


def synthesize(engine: Engine | Session, root_id: str,
               rollup_fn: RollupFn | None = None) -> Any:
    """The deterministic synthesis regime: a sequential post-order walk from ``root_id``.

    Every expanded segment gets ``{answer: rollup_fn(segment, child answers),
    Synthesized: true}`` through a host mutation, leaves keep the answer of their
    ``Answer`` concept, the engine is settled, and the root answer returned. Given a
    recorded :class:`~cladelog.graph_engine.Session`, the session is settled, so the
    answers are appended to the log. An awaitable rollup result is run to completion (use
    :func:`asynthesize` inside an event loop); a rollup that raises gives ``"(error)"``
    plus ``llmError``.
    """
    fn = rollup_fn or default_rollup
    engine, owner = _target(engine)
    walk = _synthesis(engine, root_id)
    try:
        seg, kids = next(walk)
        while True:
            try:
                answer, error = resolve_sync(fn(seg, kids), "synthesize.rollup_fn"), None
            except AuthoringError:
                raise
            except Exception as exc:
                answer, error = ERROR_ANSWER, error_text(exc)
            _write_answer(engine, seg, answer, error)
            seg, kids = walk.send(answer)
    except StopIteration as stop:
        owner.settle()
        return stop.value


async def asynthesize(engine: Engine | Session, root_id: str,
                      rollup_fn: RollupFn | None = None) -> Any:
    """:func:`synthesize` for use inside an event loop (``rollup_fn`` may be async)."""
    fn = rollup_fn or default_rollup
    engine, owner = _target(engine)
    walk = _synthesis(engine, root_id)
    try:
        seg, kids = next(walk)
        while True:
            try:
                value = fn(seg, kids)
                answer, error = (await value if inspect.isawaitable(value) else value), None
            except Exception as exc:
                answer, error = ERROR_ANSWER, error_text(exc)
            _write_answer(engine, seg, answer, error)
            seg, kids = walk.send(answer)
    except StopIteration as stop:
        await owner.asettle()
        return stop.value


# ----------------------------------------------------------------------------- scenarios


_LOOP_SPEC_KEYS: Final = ("kind", "maxDepth", "maxBranch", "split", "answerFormat",
                          "rollupFormat", "joiner", "cache")


def _fill(fmt: str, values: Mapping[str, str]) -> str:
    out = fmt
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out


def loop_provider_kind(name: str, spec: Mapping[str, Any], counts: dict[str, int]
                       ) -> dict[str, Provider]:
    """The scenario provider kind ``loop`` (SPEC §2) as providers counting calls per name.

    ``name`` is the scenario key (``"AI::*"``); ``spec`` holds ``maxDepth`` (null: 2),
    ``maxBranch`` (0 or null: 4, as the reference), ``split`` (label → child names; a label
    absent from it is atomic), ``answerFormat``, ``rollupFormat`` (``{label}``, ``{id}``,
    ``{kids}``) and ``joiner``. Any other key is a :class:`ScenarioError`, and so is
    ``cache: true`` (not supported by this kind; ``cache: false`` is accepted).
    """
    where = f"providers.{name}"
    if not isinstance(spec, Mapping):
        raise ScenarioError(f"{where}: must be an object")
    for key in spec:
        if key not in _LOOP_SPEC_KEYS:
            raise ScenarioError(f"{where}.{key}: unknown key for the loop kind (one of "
                                f"{', '.join(_LOOP_SPEC_KEYS)})")
    if spec.get("cache") not in (None, False):
        # SPEC §2's `cache: true` wraps a provider in the scenario's provider cache; a
        # provider kind is not handed that cache (scenario.ProviderKind gets the key, the spec
        # and the call counts), so a cache of our own would be missing from `cacheStats`.
        raise ScenarioError(f"{where}.cache: the loop kind does not support the provider "
                            f"cache (use false or leave it out), got {spec['cache']!r}")
    namespace = name.split("::", 1)[0]
    if not namespace:
        raise ScenarioError(f"{where}: the key must look like 'Ns::*'")
    split = spec.get("split", {})
    if not isinstance(split, Mapping) or not all(
        isinstance(v, list) and all(isinstance(c, str) for c in v) for v in split.values()
    ):
        raise ScenarioError(f"{where}.split: must map labels to lists of names")
    texts: dict[str, str] = {}
    for key, default in (("answerFormat", "{label}"), ("rollupFormat", "{label}[{kids}]"),
                         ("joiner", ",")):
        value = spec.get(key, default)
        if not isinstance(value, str):
            raise ScenarioError(f"{where}.{key}: must be a string, got {value!r}")
        texts[key] = value
    numbers: dict[str, int] = {}
    for key, fallback in (("maxDepth", 2), ("maxBranch", 4)):
        number = spec.get(key)
        if number is None:
            number = fallback
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise ScenarioError(f"{where}.{key}: must be a non-negative integer, got {number!r}")
        numbers[key] = number
    # As the reference: maxDepth is `opts.maxDepth == null ? 2 : opts.maxDepth`, so 0 stays
    # 0 (every segment is at the depth floor); maxBranch 0 means the default 4
    # (`opts.maxBranch || 4`), which make_decompose_providers decides. Null: the default.

    def label_of(seg: SegmentView) -> str:
        return "" if seg.label is None else js_string(seg.label)

    def eval_fn(seg: SegmentView) -> dict[str, bool]:
        return {"atomic": label_of(seg) not in split}

    def expand_fn(seg: SegmentView) -> list[str]:
        return list(split.get(label_of(seg), []))

    def answer_fn(seg: SegmentView) -> str:
        return _fill(texts["answerFormat"], {"label": label_of(seg), "id": seg.id})

    def rollup_fn(seg: SegmentView, kids: list[Any]) -> str:
        joined = texts["joiner"].join("" if k is None else js_string(k) for k in kids)
        return _fill(texts["rollupFormat"], {"label": label_of(seg), "id": seg.id,
                                             "kids": joined})

    try:
        made = make_decompose_providers(eval_fn, expand_fn, answer_fn, rollup_fn,
                                        max_depth=numbers["maxDepth"],
                                        max_branch=numbers["maxBranch"],
                                        namespace=namespace)
    except AuthoringError as exc:
        raise ScenarioError(f"{where}: {exc}") from None

    def counting(full: str, fn: Provider) -> Provider:
        def provider(call: ProviderCall) -> Any:
            counts[full] = counts.get(full, 0) + 1
            return fn(call)

        return provider

    return {full: counting(full, fn) for full, fn in made.items()}
