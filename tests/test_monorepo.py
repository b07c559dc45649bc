"""The monorepo's layout rules: one namespace, independently versioned packages."""

from __future__ import annotations

import ast
import importlib
import pkgutil
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
    assert "version" not in meta and meta["dynamic"] == ["version"]  # one source: __init__
    for name in ("README.md", "CHANGELOG.md", "tests"):
        assert (pkg / name).exists(), f"{folder} lacks {name}"
    # PEP 420: the shared namespace has no __init__.py in any package
    assert not (pkg / "src" / "cladelog" / "__init__.py").exists()
    init = pkg / "src" / Path(*module.split(".")) / "__init__.py"
    assert "__all__" in init.read_text()


@pytest.mark.parametrize("folder,module", [*PACKAGES.items(), ("demo", "cladelog.demo")])
def test_one_version_source(folder: str, module: str) -> None:
    """The version is written once, as ``__version__`` in the package's ``__init__.py``:
    the build reads it there (hatch), and the installed metadata, the plugin's
    ``PluginInfo`` (which every event's meta records) and core's CLI agree with it."""
    from importlib.metadata import version

    pkg = ROOT / "packages" / folder
    hatch = tomllib.loads((pkg / "pyproject.toml").read_text())["tool"]["hatch"]["version"]
    init = pkg / hatch["path"]
    assert init == pkg / "src" / Path(*module.split(".")) / "__init__.py"
    mod = importlib.import_module(module)
    assert f'__version__ = "{mod.__version__}"' in init.read_text()
    assert version(f"cladelog-{folder}") == mod.__version__
    written = [p for p in pkg.joinpath("src").rglob("*.py")
               if f'"{mod.__version__}"' in p.read_text(encoding="utf-8") and p != init]
    # fork-score's estimator version is another thing that happens to read the same
    assert [p.name for p in written] in ([], ["events.py"]), written
    if folder != "demo":
        plugin = importlib.import_module(f"{module}.plugin") if folder != "core" else None
        if plugin is not None:
            assert plugin.PLUGIN.version == mod.__version__


def test_core_version_is_what_the_cli_and_the_event_meta_say() -> None:
    from cladelog.core import __version__
    from cladelog.core.cli import main
    from cladelog.core.deployment import CORE_VERSION
    from click.testing import CliRunner

    assert CORE_VERSION == __version__ == "0.1.0"  # the value events recorded so far hold
    assert CliRunner().invoke(main, ["--version"]).output.splitlines()[0] == \
        f"cladelog-core {__version__}"


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


#: Core's public modules besides ``cladelog.core`` itself: a plugin may import the names in
#: their ``__all__`` (documented in packages/core/README.md). ``cladelog.core.cli`` offers
#: plugins only ``main`` (to run a command in-process); its helpers are in ``cladelog.core``.
PUBLIC_CORE_MODULES = ("canonical", "strictjson", "fields", "elo", "hookspecs", "store",
                       "testing", "transparency")


def _public_core_names(module: str) -> set[str] | None:
    """The names a plugin may import from ``module``; None when the module is not public."""
    if module == "cladelog.core.cli":
        return {"main"}
    if module != "cladelog.core" and module.removeprefix("cladelog.core.").split(".")[0] \
            not in PUBLIC_CORE_MODULES:  # a public package's modules are public too
        return None
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError:  # a public module another branch adds
        return None
    names = set(mod.__all__)
    if module == "cladelog.core":
        names |= set(PUBLIC_CORE_MODULES)  # ``from cladelog.core import elo``
    elif hasattr(mod, "__path__"):  # ``from cladelog.core.transparency import merkle``
        names |= {m.name for m in pkgutil.iter_modules(mod.__path__) if m.name[0] != "_"}
    return names


#: every package but core (plugins, demo, any package added later) and the example plugins
PLUGIN_SOURCES = [p for p in sorted((ROOT / "packages").glob("*/src"))
                  if p.parent.name != "core"] + sorted((ROOT / "examples").glob("*/src"))


@pytest.mark.parametrize("src", PLUGIN_SOURCES, ids=lambda p: p.parent.name)
def test_plugins_import_only_public_core_names(src: Path) -> None:
    """Plugins import only core's public names (issue 22): nothing from a private module
    (``cladelog.core.cli``'s helpers, ``cladelog.core.lazy``, ``cladelog.core.events`` ...)
    and no name outside a public module's ``__all__``."""
    found = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("cladelog.core") and alias.name != "cladelog.core" \
                            and _public_core_names(alias.name) is None:
                        found.append(f"{where} imports {alias.name}")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and (node.module == "cladelog.core"
                         or node.module.startswith("cladelog.core.")):
                allowed = _public_core_names(node.module)
                for alias in node.names:
                    if allowed is None or alias.name not in allowed:
                        found.append(f"{where} imports {alias.name} from {node.module}")
    assert not found, "\n".join(found)


def test_the_public_import_check_sees_a_private_import() -> None:
    assert _public_core_names("cladelog.core.cli") == {"main"}
    assert _public_core_names("cladelog.core.lazy") is None
    assert _public_core_names("cladelog.core.events") is None
    assert "canonical_bytes" in (_public_core_names("cladelog.core.canonical") or ())
    assert "pass_deployment" in (_public_core_names("cladelog.core") or ())


@pytest.mark.parametrize("folder", [*PACKAGES, "demo"])
def test_runtime_dependencies_are_imported_by_the_package(folder: str) -> None:
    """A runtime dependency is one the package's own source imports; what only the tests
    import (rfc8785, say) belongs in the ``test`` extra."""
    import re

    pkg = ROOT / "packages" / folder
    meta = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    imported: set[str] = set()
    for path in pkg.joinpath("src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
    for requirement in meta["dependencies"]:
        name = re.split(r"[<>=!\[; ]", requirement, maxsplit=1)[0]
        if name.startswith("cladelog-"):
            continue
        assert name.replace("-", "_").lower() in imported, f"{folder}: {name} is not imported"
