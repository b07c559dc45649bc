"""The plugin module stays light: the CLI imports it on every start when lawv is enabled.

Each check runs in a fresh interpreter (``sys.executable``) and looks at which
``cladelog.lawv`` modules got imported; no timing is measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

#: What loading the plugin and asking it for its CLI group may import.
LIGHT = {
    "cladelog.lawv",
    "cladelog.lawv._fields",
    "cladelog.lawv.cli",
    "cladelog.lawv.errors",
    "cladelog.lawv.evaluate",
    "cladelog.lawv.gate",
    "cladelog.lawv.plugin",
}

#: The arithmetic and the plugin machinery, loaded only when a command needs them.
HEAVY = {
    "cladelog.lawv.absolute",
    "cladelog.lawv.claims",
    "cladelog.lawv.commands",
    "cladelog.lawv.endpoint",
    "cladelog.lawv.montecarlo",
    "cladelog.lawv.projections",
    "cladelog.lawv.report",
    "cladelog.lawv.result",
}


def _run(code: str) -> Any:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loaded_after(statements: str) -> set[str]:
    code = (f"import json, sys\n{statements}\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('cladelog.lawv'))))")
    return set(_run(code))


def test_loading_the_plugin_and_its_cli_group_imports_no_arithmetic() -> None:
    loaded = _loaded_after("import cladelog.lawv.plugin as p\np.cladelog_cli_commands()")
    assert loaded <= LIGHT, sorted(loaded - LIGHT)
    assert not loaded & HEAVY


def test_opening_a_deployment_imports_no_arithmetic_and_no_parser() -> None:
    """Core asks every enabled plugin for its event types and projections on opening."""
    loaded = _loaded_after("import cladelog.lawv.plugin as p\n"
                           "p.cladelog_event_types()\np.cladelog_projections()")
    parsers = {"cladelog.lawv.contract", "cladelog.lawv.measurement", "cladelog.lawv.register"}
    assert not loaded & (HEAVY - {"cladelog.lawv.projections"}), sorted(loaded & HEAVY)
    assert not loaded & parsers, sorted(loaded & parsers)


def test_importing_the_package_imports_no_arithmetic() -> None:
    loaded = _loaded_after("import cladelog.lawv")
    assert not loaded & HEAVY, sorted(loaded & HEAVY)


@pytest.mark.parametrize("first", ["import cladelog.lawv.evaluate",
                                   "from cladelog.lawv.evaluate import evaluate",
                                   "import cladelog.lawv.commands"])
def test_evaluate_is_the_function_whatever_is_imported_first(first: str) -> None:
    code = (f"import json\n{first}\nimport cladelog.lawv as L\n"
            "from cladelog.lawv import evaluate\n"
            "print(json.dumps([callable(evaluate), evaluate is L.evaluate,"
            " type(L.evaluate).__name__]))")
    assert _run(code) == [True, True, "function"]


def test_every_public_name_resolves_lazily() -> None:
    code = ("import json\nimport cladelog.lawv as L\n"
            "missing = [n for n in L.__all__ if getattr(L, n, None) is None]\n"
            "print(json.dumps([missing, sorted(set(L.__all__) - set(dir(L)))]))")
    assert _run(code) == [[], []]


def test_an_unknown_name_is_an_attribute_error() -> None:
    import cladelog.lawv as lawv

    with pytest.raises(AttributeError, match="no_such_name"):
        lawv.no_such_name  # noqa: B018
