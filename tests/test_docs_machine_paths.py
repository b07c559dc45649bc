"""No README or documentation page holds a path of one machine (a user's home, a build
folder, a temporary directory): a reader elsewhere could not follow it."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".git", ".tox", "site", "node_modules", "build", "dist", "__pycache__"}
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|tmp|Users|root)/[^\s`'\")]*")


def _skipped(name: str) -> bool:
    return name in SKIP or name.startswith((".venv", ".")) or name.endswith(".egg-info")


def documents() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not _skipped(d)]
        here = Path(folder)
        for name in files:
            path = here / name
            if (
                path.suffix in {".md", ".rst", ".txt"} and here.name != "api"
            ) or name == "mkdocs.yml":
                found.append(path)
    return found


def test_the_scan_sees_the_documents() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in documents()}
    assert {
        "README.md",
        "packages/core/docs/hooks.md",
        "examples/complexity-term/README.md",
        "docs/guides/plugin-author.md",
    } <= names


def test_no_document_holds_a_machine_path() -> None:
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {m.group(0)}"
        for p in documents()
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        for m in MACHINE_PATH.finditer(line)
    ]
    assert hits == []


def test_the_pattern_finds_what_it_is_for() -> None:
    for text in (
        "cd /work/wt/x && pytest",
        "see /home/ann/repo/README.md",
        "(/tmp/pytest-1/x)",
        "`/Users/bo/src`",
    ):
        assert MACHINE_PATH.search(text), text
    for text in ("packages/core/docs/hooks.md", "https://example.org/home/x", "~/tmp/x", "a/tmp/b"):
        assert not MACHINE_PATH.search(text), text
