"""The ``LLM::complete`` provider (SPEC §1.12) with a pluggable model client.

The provider reads the concept's ``prompt``: ``system`` and ``user`` templates (``${path}``
is resolved from the scope object: null gives "", objects give JSON), an optional ``facts``
schema (see :mod:`.canon`), ``prose`` (the prose fact's name, default ``<name>Prose``),
``proseFrom`` (the reply key holding the prose) and ``digest`` (false: no digest fact).

It asks its :class:`ModelClient` and writes, onto the scope object (``$_id: _parent``, so a
cached template fits any object): the flag ``<name>: true``, every declared fact snapped to
its canonical value, ``<name>CanonMiss`` (the keys that did not snap, when any), the prose,
and ``<name>FactsDigest`` (the digest of the snapped facts). A reply that is a JSON object is
read as the raw facts; any other reply is prose only.

No network is reached by default: :class:`NoModelClient` refuses, and the refusal becomes a
recorded provider error. Tests and scenarios use :class:`ScriptedClient`.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Mapping
from typing import Any, Final, Protocol

from .canon import FactSpec, canon_facts, compile_fact_schema, digest
from .engine import Provider, ProviderCall
from .errors import GraphEngineError
from .jsvalue import UNDEFINED, js_json_int, js_json_stringify, js_num, to_string

__all__ = [
    "LLM_PROVIDER",
    "ModelClient",
    "NoModelClient",
    "ScriptedClient",
    "interpolate",
    "make_llm_provider",
]

LLM_PROVIDER: Final = "LLM::complete"
_PLACEHOLDER: Final = re.compile(r"\$\{([^{}]*)\}")


class ModelClient(Protocol):
    """What the provider asks: ``complete(system, user)`` returns the reply (text or a JSON
    object), or an awaitable of it. Raising makes a recorded provider error."""

    def complete(self, system: str, user: str) -> str | Mapping[str, Any] | Awaitable[Any]:
        """Answer one prompt."""


class NoModelClient:
    """The default client: no model is configured, so every call fails (no network)."""

    def complete(self, system: str, user: str) -> str:
        raise GraphEngineError("llm: no model client is configured (network access is off)")


class ScriptedClient:
    """Replies looked up by the interpolated user prompt; object replies are JSON-encoded
    (as ``JSON.stringify`` does: a number beyond 2**53 is a double).

    ``default`` answers unknown prompts (None: an unknown prompt is an error). ``calls``
    counts the prompts asked; ``asked`` lists them in order.
    """

    def __init__(self, replies: Mapping[str, Any], default: Any = None) -> None:
        if not isinstance(replies, Mapping):
            raise GraphEngineError("llm.replies: must be an object")
        self.replies = dict(replies)
        self.default = default
        self.calls = 0
        self.asked: list[str] = []

    def complete(self, system: str, user: str) -> str:
        self.calls += 1
        self.asked.append(user)
        reply = self.replies.get(user, self.default)
        if reply is None:
            raise GraphEngineError(f"llm: no scripted reply for prompt {user!r}")
        if isinstance(reply, str):
            return reply
        text = js_json_stringify(_js_numbers(reply))
        return text if type(text) is str else ""


def interpolate(template: Any, call: ProviderCall) -> str:
    """Fill ``${path}`` placeholders by reference resolution (null -> "", objects -> JSON)."""
    if template is None:
        return ""
    text = to_string(template)

    def fill(match: re.Match[str]) -> str:
        value = call.get_ref(match.group(1).strip())
        if value is None or value is UNDEFINED:
            return ""
        if type(value) in (dict, list):
            encoded = js_json_stringify(value)
            return encoded if type(encoded) is str else ""
        return to_string(value)

    return _PLACEHOLDER.sub(fill, text)


def _js_numbers(value: Any, depth: int = 0) -> Any:
    """A reply's numbers as JavaScript holds them: every number is a double, so an integer
    beyond the safe range becomes a float (as :func:`js_json_int` reads JSON text)."""
    tp = type(value)
    if tp is int:
        return js_num(value)
    if depth > 64:
        return value
    if tp is list or tp is tuple:
        return [_js_numbers(v, depth + 1) for v in value]
    if isinstance(value, Mapping):
        return {k: _js_numbers(v, depth + 1) for k, v in value.items()}
    return value


def _parse_reply(reply: Any) -> tuple[dict[str, Any], str]:
    """``(raw facts, reply text)``: the reply read as ``JSON.parse`` would (numbers are
    doubles, so 12345678901234567890 is 1.2345678901234567e19), when it is an object."""
    if isinstance(reply, Mapping):
        raw = _js_numbers(reply)
        text = js_json_stringify(raw)
        return raw, text if type(text) is str else ""
    text = to_string(reply)
    try:
        parsed = json.loads(text, parse_int=js_json_int)
    except (ValueError, RecursionError):
        return {}, text
    return (parsed, text) if type(parsed) is dict else ({}, text)


class _Compiled:
    def __init__(self, prompt: Mapping[str, Any], name: str, where: str) -> None:
        facts = prompt.get("facts")
        self.specs: dict[str, FactSpec] | None = (
            None if facts is None else compile_fact_schema(facts, f"{where}.facts"))
        prose = prompt.get("prose")
        self.prose_key = prose if type(prose) is str and prose else f"{name}Prose"
        source = prompt.get("proseFrom")
        self.prose_from = source if type(source) is str else None
        self.with_digest = prompt.get("digest") is not False


def make_llm_provider(client: ModelClient | None = None) -> Provider:
    """The ``LLM::complete`` provider asking ``client`` (default: :class:`NoModelClient`)."""
    model: ModelClient = client if client is not None else NoModelClient()
    compiled: dict[int, tuple[Mapping[str, Any], _Compiled]] = {}

    def prepare(call: ProviderCall) -> tuple[str, _Compiled, str, str]:
        concept = call.concept
        name = concept.get("_name", call.concept_id)
        prompt = concept.get("prompt")
        if not isinstance(prompt, Mapping):
            raise GraphEngineError(f"{call.concept_id}.prompt: LLM::complete needs an object")
        found = compiled.get(id(prompt))
        if found is None or found[0] is not prompt:
            found = (prompt, _Compiled(prompt, name, f"{call.concept_id}.prompt"))
            compiled[id(prompt)] = found
        return (name, found[1], interpolate(prompt.get("system"), call),
                interpolate(prompt.get("user"), call))

    def finish(name: str, spec: _Compiled, reply: Any) -> dict[str, Any]:
        raw, text = _parse_reply(reply)
        template: dict[str, Any] = {"$_id": "_parent", name: True}
        facts: dict[str, Any] = {}
        if spec.specs is not None:
            result = canon_facts(raw, spec.specs)
            facts = result.facts
            template.update(facts)
            if result.misses:
                template[f"{name}CanonMiss"] = result.misses
        if spec.prose_from is not None and spec.prose_from in raw:
            prose: Any = raw[spec.prose_from]
        elif "prose" in raw:
            prose = raw["prose"]
        else:
            prose = text
        template[spec.prose_key] = prose
        if spec.with_digest:
            template[f"{name}FactsDigest"] = digest(facts)
        return template

    def provider(call: ProviderCall) -> Any:
        name, spec, system, user = prepare(call)
        reply = model.complete(system, user)
        if inspect.isawaitable(reply):
            pending = reply

            async def later() -> Any:
                return finish(name, spec, await pending)

            return later()
        return finish(name, spec, reply)

    return provider
