"""MkDocs hook: the documentation site shows the repository's own Markdown files in place.

The package READMEs, changelogs and ``packages/*/docs/*.md`` stay where they are (next
to the code they describe, and in each package's metadata); this hook adds them to the
site under their repository paths (``packages/core/docs/events.md`` is the page
``packages/core/docs/events/``), so nothing is copied and nothing is written twice.

Every page's relative links are written for the repository (they work when reading the
files in a clone or on a forge). This hook resolves each one against the page's place
in the repository and points it at the site page of the same file: ``docs/X`` is the
site's ``X``, a mirrored file is itself, a folder is its README. A link to anything the
site does not hold is left as it is, so ``mkdocs build --strict`` reports it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
DOCS = "docs"

#: The repository's Markdown files shown on the site, besides those under docs/.
MIRRORED = (
    "packages/*/README.md",
    "packages/*/CHANGELOG.md",
    "packages/*/docs/*.md",
    "examples/*/README.md",
    "benchmarks/README.md",
)

_FENCE = re.compile(r"^([ \t]*(?:```|~~~))", re.MULTILINE)
_LINK = re.compile(r"(!?\[[^\]\n]*\])\(([^()\s]+)((?:\s+\"[^\"]*\")?)\)")


def _mirrored() -> list[str]:
    return sorted({p.relative_to(ROOT).as_posix() for pattern in MIRRORED
                   for p in ROOT.glob(pattern) if p.is_file()})


def _site_path(repo_path: str, site_files: set[str]) -> str | None:
    """The site file (relative to docs_dir) showing repository file ``repo_path``."""
    if repo_path == "README.md":
        return "index.md"
    if repo_path.startswith(DOCS + "/"):
        inside = repo_path[len(DOCS) + 1:]
        return inside if inside in site_files else None
    if repo_path in site_files:
        return repo_path
    readme = posixpath.join(repo_path, "README.md")
    return readme if readme in site_files else None


def on_files(files: Files, config: Any) -> Files:
    for repo_path in _mirrored():
        files.append(File.generated(config, repo_path, abs_src_path=str(ROOT / repo_path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    src = page.file.src_uri
    site_files = {f.src_uri for f in files}
    repo_page = src if page.file.generated_by else posixpath.join(DOCS, src)
    here = posixpath.dirname(repo_page)

    def relink(match: re.Match[str]) -> str:
        label, target, title = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)
        path, hash_, fragment = target.partition("#")
        repo_target = posixpath.normpath(posixpath.join(here, path.rstrip("/")))
        site = _site_path(repo_target, site_files)
        if site is None:
            return match.group(0)  # strict mode names it
        new = posixpath.relpath(site, posixpath.dirname(src) or ".")
        return f"{label}({new}{hash_}{fragment}{title})"

    parts = _FENCE.split(markdown)
    # split keeps the fence markers: text, marker, code, marker, text, ...
    out: list[str] = []
    inside = False
    for part in parts:
        if _FENCE.fullmatch(part):
            inside = not inside
            out.append(part)
        elif inside:
            out.append(part)
        else:
            out.append(_LINK.sub(relink, part))
    return "".join(out)
