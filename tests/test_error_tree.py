"""One error tree: every plugin's error class derives from core's, so core's CLI gives it
an exit code (1 for a verification failure, 2 for bad input) and one ``error:`` line; none
of them can reach the CLI as an "internal error" (exit 70)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import CladelogError, InputError, VerificationError, exit_code
from cladelog.core.cli import main
from click.testing import CliRunner


def _error_modules() -> list[str]:
    """Every ``errors`` module of every installed cladelog package but core's."""
    import cladelog

    found = []
    for info in pkgutil.walk_packages(cladelog.__path__, "cladelog."):
        if info.name.rsplit(".", 1)[-1] == "errors" and not info.name.startswith(
                "cladelog.core."):
            found.append(info.name)
    return sorted(found)


ERROR_MODULES = _error_modules()


def _error_classes() -> list[type[Exception]]:
    found = []
    for name in ERROR_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            value = getattr(module, attr)
            if inspect.isclass(value) and issubclass(value, Exception):
                found.append(value)
    return found


ERRORS = _error_classes()


def _instance(cls: type[Exception], message: str) -> Exception:
    try:
        params = list(inspect.signature(cls).parameters)
    except ValueError:  # no __init__ of its own: Exception's
        params = []
    if params[:3] == ["where", "problem", "reason"]:  # core's JSONInputError form
        where, problem = message.split(": ", 1)
        return cls(where, problem)
    if params == ["message", "flags"]:
        return cls(message, ("ELO_MISMATCH",))
    if params == ["message", "diff"]:
        return cls(message, {})
    return cls(message)


def _expected_code(cls: type[Exception]) -> int:
    # not from exit_code(): the rule as the architecture states it
    return 1 if issubclass(cls, VerificationError) else 2


def test_every_plugin_error_is_a_cladelog_error() -> None:
    assert {"cladelog.fork_score.errors", "cladelog.lawv.errors", "cladelog.graph_engine.errors",
            "cladelog.graph_engine.authoring.errors", "cladelog.receipts.errors",
            "cladelog.demo.errors", "cladelog.consensus.errors"} <= set(ERROR_MODULES)
    assert len(ERRORS) >= 20
    for cls in ERRORS:
        assert issubclass(cls, CladelogError), cls
        # bad input is still a ValueError for callers that catch that
        assert issubclass(cls, ValueError), cls
        assert exit_code(_instance(cls, "f.json: x")) == _expected_code(cls)


def test_the_bad_input_classes_are_input_errors() -> None:
    names = {cls.__name__: cls for cls in ERRORS}
    for name in ("ForkScoreError", "LawVInputError", "GraphEngineError", "AuthoringError",
                 "ReceiptInputError", "DemoError", "ReportPathError", "JsonFileError"):
        assert issubclass(names[name], InputError), name
    for name in ("ReceiptRefused", "SignatureRefused", "ClaimMismatchError",
                 "ReportVerificationError"):
        assert issubclass(names[name], VerificationError), name
        assert not issubclass(names[name], InputError), name


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLADELOG_ACTOR", "error-tree-test")
    monkeypatch.delenv("CLADELOG_CONFIG", raising=False)
    monkeypatch.delenv("CLADELOG_DEBUG", raising=False)
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(main, list(args), catch_exceptions=False, prog_name="cladelog")

    init = invoke("init", "-p", "fork-score", "-p", "lawv", "-p", "graph-engine",
                  "-p", "receipts")
    assert init.exit_code == 0, init.output
    (tmp_path / "doc.json").write_text("{}", encoding="utf-8")
    return invoke


# (command line, the module attribute the command calls, which is made to raise)
COMMANDS = {
    "fork-score": (["fork-score", "score", "--parent", "doc.json", "--child", "doc.json"],
                   "cladelog.fork_score.cli", "run_score"),
    "lawv": (["lawv", "contract", "add", "doc.json"], "cladelog.lawv.commands", "add_contract"),
    "graph-engine": (["graph", "replay", "s1"], "cladelog.graph_engine.sessions",
                     "replay_session"),
    "receipts": (["receipts", "add", "doc.json"], "cladelog.receipts.register",
                 "read_receipts_json"),
    "demo": (["report"], "cladelog.demo.report", "write_report"),
}

CASES = [
    (package, cls)
    for package, module in (("fork-score", "fork_score"), ("lawv", "lawv"),
                            ("graph-engine", "graph_engine"), ("receipts", "receipts"),
                            ("demo", "demo"))
    for cls in ERRORS if cls.__module__.startswith(f"cladelog.{module}.")
]


@pytest.mark.parametrize(("package", "cls"), CASES,
                         ids=[f"{p}-{c.__name__}" for p, c in CASES])
def test_a_plugin_error_through_its_command(deployment: Any, monkeypatch: pytest.MonkeyPatch,
                                            package: str, cls: type[Exception]) -> None:
    args, module, attr = COMMANDS[package]
    message = f"doc.json: field.x: refused by {cls.__name__}"

    def refuse(*_: Any, **__: Any) -> Any:
        raise _instance(cls, message)

    monkeypatch.setattr(importlib.import_module(module), attr, refuse)
    r = deployment(*args)
    assert r.exit_code == _expected_code(cls), r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {message}")  # demo adds a hint to a path error
    assert "internal error" not in r.output


def test_a_message_holding_a_newline_is_still_one_line(deployment: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from cladelog.graph_engine.errors import SessionError

    def refuse(*_: Any, **__: Any) -> Any:
        raise SessionError("session 'a\nb': not found")

    monkeypatch.setattr(importlib.import_module("cladelog.graph_engine.sessions"),
                        "replay_session", refuse)
    r = deployment("graph", "replay", "s1")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == ["error: session 'a b': not found"]


def test_an_exception_that_is_not_cladelogs_is_an_internal_error(
        deployment: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mapping is by class: a bare ValueError from a plugin is a bug (exit 70)."""
    def broken(*_: Any, **__: Any) -> Any:
        raise ValueError("a bug")

    monkeypatch.setattr(importlib.import_module("cladelog.graph_engine.sessions"),
                        "replay_session", broken)
    r = deployment("graph", "replay", "s1")
    assert r.exit_code == 70
    assert r.stderr.startswith("error: internal error: ValueError: a bug")
