"""docs/hooks.md cannot drift: every hook spec's full signature and every public attribute of
the objects a hook sees are written there."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import attrs
import pytest
from cladelog.core import NewEvent, Projection, RecordedEvent
from cladelog.core.hookspecs import CoreHookSpecs

HOOKS_MD = Path(__file__).resolve().parents[1] / "docs" / "hooks.md"


def doc() -> str:
    return HOOKS_MD.read_text(encoding="utf-8")


def signature_text(fn: object) -> str:
    """``name(arg: annotation, ...) -> return``, as the module writes the annotations."""
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    params = ", ".join(
        f"{p.name}: {p.annotation}" for p in sig.parameters.values() if p.name != "self"
    )
    return f"{fn.__name__}({params}) -> {sig.return_annotation}"  # type: ignore[attr-defined]


HOOKS = [
    fn
    for name, fn in inspect.getmembers(CoreHookSpecs, inspect.isfunction)
    if name.startswith("cladelog_")
]


def test_there_are_hooks_to_check() -> None:
    assert len(HOOKS) == 6


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h.__name__)
def test_every_hook_has_a_heading_with_its_full_signature_and_an_example(hook: object) -> None:
    text = doc()
    heading = f"### `{signature_text(hook)}`"
    assert heading in text
    section = text[text.index(heading) :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section else section
    section = section.split("\n### ", 1)[0]
    assert "```python" in section  # an example
    assert f"def {hook.__name__}(" in section  # type: ignore[attr-defined]


def _public(cls: type) -> list[str]:
    names = set(getattr(cls, "_fields", ()))
    if attrs.has(cls):
        names |= {f.name for f in attrs.fields(cls)}
    names |= {
        n
        for n, v in vars(cls).items()
        if not n.startswith("_")
        and (callable(v) or isinstance(v, classmethod | staticmethod | property))
    }
    return sorted(names)


@pytest.mark.parametrize("cls", [RecordedEvent, NewEvent, Projection], ids=lambda c: c.__name__)
def test_every_public_attribute_is_described_in_its_section(cls: type) -> None:
    text = doc()
    heading = f"### `{cls.__name__}`\n"
    assert heading in text
    section = text[text.index(heading) + len(heading) :].split("\n### ", 1)[0]
    assert "```python" in section  # an example
    for name in _public(cls):
        assert re.search(rf"`{re.escape(name)}[`(]", section), f"{cls.__name__}.{name}"


def test_the_projection_defaults_a_reader_asks_about_are_explained() -> None:
    text = doc()
    section = text[text.index("### `Projection`") :].split("\n### ", 1)[0]
    assert "`None` means every registered type" in section
    assert "| `description` | `str` |" in section
    assert "event_types=None" in section  # in the example
