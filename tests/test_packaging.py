"""Each package is a complete distribution: licence, metadata, type marker, versions.

The expected values come from the repository's files (the root LICENSE, each
``pyproject.toml`` read with tomllib), not from the code under test.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.cli import main
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir()
                  if (p / "pyproject.toml").is_file())
URLS = {"Homepage", "Documentation", "Changelog"}


def project(folder: str) -> dict[str, Any]:
    doc = tomllib.loads((ROOT / "packages" / folder / "pyproject.toml").read_text("utf-8"))
    return doc["project"]  # type: ignore[no-any-return]


def module_dir(folder: str) -> Path:
    return ROOT / "packages" / folder / "src" / "cladelog" / folder.replace("-", "_")


def test_the_repository_is_mit_licensed() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text


@pytest.mark.parametrize("folder", PACKAGES)
def test_every_package_carries_the_licence_and_says_so(folder: str) -> None:
    root_licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert (ROOT / "packages" / folder / "LICENSE").read_text(encoding="utf-8") == root_licence
    meta = project(folder)
    assert meta["license"] == "MIT"
    assert meta["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in meta["classifiers"])  # PEP 639


@pytest.mark.parametrize("folder", PACKAGES)
def test_every_package_has_the_metadata_an_index_shows(folder: str) -> None:
    meta = project(folder)
    assert meta["authors"] and all(a.get("name") for a in meta["authors"])
    assert set(meta["urls"]) == URLS
    assert all(url.startswith("https://") for url in meta["urls"].values())
    classifiers = meta["classifiers"]
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    # a real summary, not the placeholder "cladelog plugin: NAME"
    assert not re.fullmatch(r"cladelog plugin: [\w-]+", meta["description"])
    assert len(meta["description"]) >= 60


@pytest.mark.parametrize("folder", PACKAGES)
def test_every_package_ships_the_typed_marker(folder: str) -> None:
    assert (module_dir(folder) / "py.typed").is_file()


def test_version_lists_every_installed_cladelog_distribution() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("cladelog-core ")
    listed = dict(line.split(" ", 1) for line in lines)
    for folder in ("core", "fork-score"):  # what every environment that runs this installs
        meta = project(folder)
        # the version is dynamic (one source: the package's __version__, read by hatch)
        assert listed[meta["name"]] == importlib.metadata.version(meta["name"])
    assert all(name.startswith("cladelog-") for name in listed)
    assert result.stderr == ""


def test_shell_completion_works_as_the_docs_say() -> None:
    """docs: ``eval "$(_CLADELOG_COMPLETE=bash_source cladelog)"``; click then asks the
    program itself, with ``_CLADELOG_COMPLETE=bash_complete``, for the candidates."""
    env = {"_CLADELOG_COMPLETE": "bash_complete", "COMP_WORDS": "cladelog rep",
           "COMP_CWORD": "1"}
    result = CliRunner().invoke(main, [], env=env, prog_name="cladelog")
    assert result.exit_code == 0, result.output
    assert "plain,replay" in result.stdout.splitlines()
    script = CliRunner().invoke(main, [], env={"_CLADELOG_COMPLETE": "bash_source"},
                                prog_name="cladelog")
    assert "complete -o nosort -F" in script.stdout


MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|root|tmp|Users|opt)/")


def test_no_readme_or_doc_page_holds_a_machine_path() -> None:
    pages = [p for p in ROOT.rglob("*.md")
             if not any(part.startswith(".") or part in ("node_modules", "site")
                        for part in p.relative_to(ROOT).parts)]
    assert pages
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in pages
             for m in MACHINE_PATH.finditer(p.read_text(encoding="utf-8"))]
    assert found == []


@pytest.mark.slow
@pytest.mark.parametrize("folder", PACKAGES)
def test_each_wheel_built_from_the_repository_is_pure_and_holds_licence_and_marker(
        folder: str, tmp_path: Path) -> None:
    """CI builds every package's wheel: each is pure Python (``py3-none-any``, no compiled
    module: what each README states), with the licence and the typed marker."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
         str(ROOT / "packages" / folder)],
        capture_output=True, text=True, timeout=600, check=False)
    assert built.returncode == 0, built.stderr[-2000:]
    dist = project(folder)["name"].replace("-", "_")
    (wheel,) = tmp_path.glob(f"{dist}-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(info).decode("utf-8")
        licence = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
        assert zf.read(licence).decode("utf-8") == (ROOT / "LICENSE").read_text("utf-8")
    assert f"cladelog/{folder.replace('-', '_')}/py.typed" in names
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c"))]
    assert "License-Expression: MIT" in metadata.splitlines()
    assert "Classifier: Typing :: Typed" in metadata.splitlines()
    assert any(line.startswith("Project-URL: Documentation, https://")
               for line in metadata.splitlines())
