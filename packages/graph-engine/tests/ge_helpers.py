"""Small builders shared by the engine tests."""

from __future__ import annotations

from typing import Any

from cladelog.graph_engine import Engine, EngineConfig, ProviderCall


def concept(cid: str, **keys: Any) -> dict[str, Any]:
    """A concept schema with ``_id = _name = cid``; ``children`` become ``childConcepts``."""
    children = keys.pop("children", None)
    out: dict[str, Any] = {"_id": cid, "_name": cid, **keys}
    if children:
        out["childConcepts"] = {c["_id"]: c for c in children}
    return out


def tree(*concepts: dict[str, Any]) -> dict[str, Any]:
    return {"childConcepts": {c["_id"]: c for c in concepts}}


def free(*objs: dict[str, Any]) -> dict[str, Any]:
    return {"freeNodes": list(objs)}


class Calls:
    """Providers built from plain functions, counting calls per name."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.providers: dict[str, Any] = {}

    def add(self, name: str, fn: Any) -> None:
        def wrapped(call: ProviderCall) -> Any:
            self.count[name] = self.count.get(name, 0) + 1
            return fn(call)

        self.providers[name] = wrapped

    def emit(self, name: str, **facts: Any) -> None:
        self.add(name, lambda call: {"$$_id": call.object_id, **facts})


def make(t: dict[str, Any], seed: dict[str, Any] | None = None, calls: Calls | None = None,
         records: list[tuple[str, dict[str, Any]]] | None = None, **config: Any) -> Engine:
    sink = (lambda k, d: records.append((k, d))) if records is not None else None
    eng = Engine(t, providers=calls.providers if calls else None, seed=seed,
                 config=EngineConfig(**config), sink=sink)
    eng.settle()
    return eng


def facts(eng: Engine, oid: str) -> dict[str, Any]:
    got = eng.get(oid)
    assert got is not None
    got.pop("_rev", None)
    return got
