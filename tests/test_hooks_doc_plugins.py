"""The hook reference names the plugins' own hook specs with their full signatures."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from cladelog.consensus import hookspecs as consensus_hookspecs
from cladelog.fork_score import hookspecs as fork_score_hookspecs

HOOKS_MD = Path(__file__).resolve().parents[1] / "packages" / "core" / "docs" / "hooks.md"


@pytest.mark.parametrize(
    "fn",
    [fork_score_hookspecs.fork_score_terms, consensus_hookspecs.consensus_audit],
    ids=lambda f: f.__name__,
)
def test_each_plugin_hook_spec_is_in_the_reference_with_its_signature(fn: object) -> None:
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    params = ", ".join(f"{p.name}: {p.annotation}" for p in sig.parameters.values())
    text = f"`{fn.__name__}({params}) -> {sig.return_annotation}`"  # type: ignore[attr-defined]
    assert text in HOOKS_MD.read_text(encoding="utf-8")
