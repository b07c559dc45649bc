"""The monorepo's layout rules: one namespace, independently versioned packages."""

from __future__ import annotations

import ast
import importlib
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "core": "cladelog.core",
    "fork-score": "cladelog.fork_score",
    "receipts": "cladelog.receipts",
    "lawv": "cladelog.lawv",
    "graph-engine": "cladelog.graph_engine",
    "consensus": "cladelog.consensus",
}


@pytest.mark.parametrize("folder,module", PACKAGES.items())
def test_package_layout(folder: str, module: str) -> None:
    pkg = ROOT / "packages" / folder
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    assert meta["name"] == f"cladelog-{folder}"
    assert meta["version"].count(".") == 2
    for name in ("README.md", "CHANGELOG.md", "tests"):
        assert (pkg / name).exists(), f"{folder} lacks {name}"
    # PEP 420: the shared namespace has no __init__.py in any package
    assert not (pkg / "src" / "cladelog" / "__init__.py").exists()
    init = pkg / "src" / Path(*module.split(".")) / "__init__.py"
    assert "__all__" in init.read_text()


@pytest.mark.parametrize("module", PACKAGES.values())
def test_public_names_resolve(module: str) -> None:
    mod = importlib.import_module(module)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{module}.{name}"


@pytest.mark.parametrize("folder,module", [(f, m) for f, m in PACKAGES.items() if f != "core"])
def test_plugins_import_no_other_plugin(folder: str, module: str) -> None:
    """The dependency rule, checked on the source (import-linter checks it in lint too)."""
    others = {m for m in PACKAGES.values() if m not in (module, "cladelog.core")}
    src = ROOT / "packages" / folder / "src"
    for path in src.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                assert not any(name == o or name.startswith(o + ".") for o in others), (
                    f"{path.relative_to(ROOT)} imports {name}")
