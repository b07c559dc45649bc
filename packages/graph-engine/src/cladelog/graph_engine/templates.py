"""Mutation templates (SPEC §1.10): resolve a template into fully resolved items.

Resolution is pure: it reads existing facts through a lookup function and returns plain JSON,
``[{"id": ..., "create": "node"|"segment"|"free"|None, "set": [[key, value], ...]}, ...]``,
already in application order (nodes first, then everything else). The engine applies those
items through one function, live and on replay, so the event log carries exactly these items.

Differences from the reference: ids are deterministic (Q10, ``~<rev>.<n>``), only the exact
keys ``_id``/``_incoming``/``_outgoing`` are special (Q11), two ``{__push}`` to the same key
are both kept (§0-15), and ``$$key`` external references are rejected (Q22).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Final

from .errors import TemplateError
from .jsvalue import UNDEFINED, to_fact_value, truthy
from .paths import FactView, resolve

__all__ = ["MAX_TEMPLATE_ITEMS", "is_push", "resolve_template"]

MAX_TEMPLATE_ITEMS: Final = 100_000
_SKIP: Final = frozenset({"_id", "$_id", "$$_id", "_parent"})


def is_push(value: Any) -> bool:
    """True for a ``{"__push": x}`` write (a dict whose ``__push`` member is defined)."""
    return type(value) is dict and "__push" in value


class _Pending:
    __slots__ = ("create", "first", "id", "pairs", "refs")

    def __init__(self, oid: str, create: bool) -> None:
        self.id = oid
        self.create = create
        self.pairs: list[list[Any]] = []
        self.first: dict[str, int] = {}
        self.refs: list[list[Any]] = []

    def put(self, key: str, value: Any, pairs: list[list[Any]] | None = None) -> None:
        target = self.pairs if pairs is None else pairs
        index = {k: i for i, (k, _) in enumerate(target)} if pairs is not None else self.first
        if key in index:
            if is_push(value):
                target.append([key, value])  # §0-15: both pushes are kept
                return
            pos = index[key]
            target[pos] = [key, value]
            # a plain value replaces every earlier write of the key
            for i in range(len(target) - 1, pos, -1):
                if target[i][0] == key:
                    del target[i]
            return
        if pairs is None:
            self.first[key] = len(target)
        target.append([key, value])

    def view(self, base: FactView | None) -> dict[str, Any]:
        out: dict[str, Any] = dict(base) if base is not None else {"_id": self.id}
        for key, value in self.pairs:
            if is_push(value):
                current = out.get(key)
                out[key] = (list(current) if type(current) is list else []) + [value["__push"]]
            else:
                out[key] = value
        return out


def _fact(value: Any, path: str) -> Any:
    try:
        if is_push(value):
            return {"__push": to_fact_value(value["__push"], f"{path}.__push")}
        return to_fact_value(value, path)
    except TypeError as exc:
        raise TemplateError(str(exc)) from None


def resolve_template(
    template: Any,
    target: str | None,
    rev: int,
    lookup: Callable[[str], FactView | None],
    kind_of: Callable[[str], str | None],
    path: str = "template",
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Resolve ``template`` aimed at ``target`` into application-ordered items.

    ``lookup(id)`` gives an existing object's facts, ``kind_of(id)`` its kind (``node``,
    ``segment``, ``free``) or None when it does not exist. Raises :class:`TemplateError`.
    A ``$_id`` that resolves to no object id is ignored, as in the reference: the item
    takes its ``_id`` or, without one, becomes a new free object with a fresh id (SPEC
    §1.10 rules 3 and 5); a line is added to ``warnings`` when given.
    """
    if type(template) is dict:
        queue: deque[tuple[Any, str | None, str]] = deque([(template, None, path)])
    elif type(template) is list:
        queue = deque((item, None, f"{path}[{i}]") for i, item in enumerate(template))
    else:
        raise TemplateError(f"{path}: a template must be an object or a list of objects")
    aliases: dict[str, str] = {}
    tokens: dict[str, str] = {}
    pending: dict[str, _Pending] = {}
    deferred: list[tuple[str, str, str, bool, str]] = []  # (id, key, path|token, is_token, p)
    counter = [0]

    def fresh() -> str:
        while True:
            counter[0] += 1
            candidate = f"~{rev}.{counter[0]}"
            if candidate not in pending and kind_of(candidate) is None:
                return candidate

    def overlay(oid: str) -> FactView | None:
        base = lookup(oid)
        rec = pending.get(oid)
        if rec is None:
            return base
        return rec.view(base)

    def scope() -> dict[str, str]:
        sc = dict(aliases)
        if target is not None:
            sc["_parent"] = target
        return sc

    def as_id(value: Any) -> str | None:
        if type(value) is dict:
            value = value.get("_id")
        return value if type(value) is str else None

    processed = 0
    while queue:
        item, preset, ipath = queue.popleft()
        processed += 1
        if processed > MAX_TEMPLATE_ITEMS:
            raise TemplateError(f"{path}: more than {MAX_TEMPLATE_ITEMS} items")
        if type(item) is not dict:
            raise TemplateError(f"{ipath}: a template item must be an object")
        resolved: str | None = None
        if "$$_id" in item:
            literal = item["$$_id"]
            if type(literal) is not str or literal == "":
                raise TemplateError(f"{ipath}.$$_id: must be a non-empty string")
            resolved = literal
        elif "$_id" in item:
            ref = item["$_id"]
            if type(ref) is not str:
                raise TemplateError(f"{ipath}.$_id: must be a path string")
            resolved = as_id(
                aliases[ref] if ref in aliases else resolve(ref, None, overlay, None, scope())
            )
            if resolved is None and warnings is not None:
                warnings.append(f"{ipath}.$_id: {ref!r} does not resolve to an object id; "
                                f"the item names a new object")
        local = item.get("_id")
        if local is not None and type(local) is not str:
            raise TemplateError(f"{ipath}._id: must be a string")
        if resolved is not None:
            oid = resolved
            if local is not None:
                aliases[local] = oid
        elif local is not None:
            if local in aliases:
                oid = aliases[local]
            elif kind_of(local) is None and local not in pending:
                oid = local
                aliases[local] = oid
            else:
                oid = fresh()
                aliases[local] = oid
        elif preset is not None:
            oid = fresh()
        else:
            oid = fresh()
        if preset is not None:
            tokens[preset] = oid
        rec = pending.get(oid)
        if rec is None:
            rec = _Pending(oid, kind_of(oid) is None)
            pending[oid] = rec
        value: Any
        for key, value in item.items():
            if key in _SKIP:
                continue
            kpath = f"{ipath}.{key}"
            if key == "_incoming" or key == "_outgoing":
                nested = value if type(value) is list else [value]
                queue.extend((sub, None, f"{kpath}[{i}]") for i, sub in enumerate(nested))
            elif key.startswith("$$"):
                raise TemplateError(f"{kpath}: external references ($$key) are not supported")
            elif key.startswith("$"):
                name = key[1:]
                if name == "":
                    continue
                if type(value) is str:
                    deferred.append((oid, name, value, False, kpath))
                elif type(value) is dict:
                    token = f"#{len(tokens) + len(deferred)}:{kpath}"
                    tokens[token] = ""
                    queue.append((value, token, kpath))
                    deferred.append((oid, name, token, True, kpath))
            elif value is UNDEFINED:
                continue
            else:
                rec.put(key, _fact(value, kpath))
    for oid, name, ref, is_token, kpath in deferred:
        if is_token:
            value = tokens.get(ref) or UNDEFINED
        elif ref in aliases:
            value = aliases[ref]
        else:
            value = resolve(ref, None, overlay, None, scope())
            if type(value) is dict and (ref == "_parent" or ref.endswith(":")):
                value = value.get("_id", UNDEFINED)
        if value is UNDEFINED:
            continue
        pending[oid].put(name, _fact(value, kpath), pending[oid].refs)
    target_facts = lookup(target) if target is not None else None
    first: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for rec in pending.values():
        writes = rec.pairs + rec.refs
        kind = kind_of(rec.id)
        create: str | None = None
        if rec.create:
            merged = rec.view(None)
            create = "node" if truthy(merged.get("Node")) else (
                "segment" if truthy(merged.get("Segment")) else "free"
            )
            if "_origin" not in rec.first:
                origin: Any = UNDEFINED
                if target_facts is not None and truthy(target_facts.get("_keepOrigin")):
                    origin = target_facts.get("_origin", UNDEFINED)
                elif target is not None:
                    origin = target
                if origin is not UNDEFINED:
                    writes = [["_origin", origin], *writes]
        out = {"id": rec.id, "create": create, "set": writes}
        if create == "node" or (create is None and kind == "node"):
            first.append(out)
        else:
            rest.append(out)
    return first + rest
