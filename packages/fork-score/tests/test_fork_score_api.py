"""The package's public surface."""

from __future__ import annotations

import importlib

import cladelog.fork_score as pkg
import pytest


def test_every_exported_name_resolves() -> None:
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None, name


def test_all_matches_the_lazy_table() -> None:
    assert sorted(pkg.__all__) == sorted([*pkg._EXPORTS, "__version__"])
    assert len(set(pkg.__all__)) == len(pkg.__all__)


def test_score_is_the_function() -> None:
    assert callable(pkg.score)
    assert pkg.score is importlib.import_module("cladelog.fork_score.scoring").score


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = pkg.no_such_name


def test_every_public_module_declares_all() -> None:
    for name in (
        "batteries", "cli", "deltas", "errors", "jsonio",
        "result", "scoring", "terms", "weights",
    ):  # fmt: skip
        module = importlib.import_module(f"cladelog.fork_score.{name}")
        assert isinstance(module.__all__, list), name
        for exported in module.__all__:
            assert hasattr(module, exported), f"{name}.{exported}"
