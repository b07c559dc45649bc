"""The documentation site's sources: what `mkdocs build --strict` (tox -e docs) cannot see.

The build itself checks every link, anchor, nav entry and API reference; these tests pin
what it would not notice: the README's two commands staying visible and in the site,
every package having an API page, and every package page being in the nav.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir()
                  if (p / "pyproject.toml").is_file())
MAIN_JOB = ("python3 -m venv .venv && .venv/bin/pip install -r requirements-dev.txt "
            "&& .venv/bin/cladelog demo")


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def section(text: str, name: str) -> str:
    start = f"<!-- --8<-- [start:{name}] -->"
    end = f"<!-- --8<-- [end:{name}] -->"
    assert start in text and end in text, name
    return text.split(start, 1)[1].split(end, 1)[0]


def test_the_readme_quickstart_holds_the_two_commands_ci_runs() -> None:
    quickstart = section(readme(), "quickstart")
    commands = [line.strip() for line in quickstart.splitlines() if line.startswith("    ")]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (ci_command,) = [line for line in ci.splitlines() if line.startswith("python3 -m venv")]
    assert commands == [MAIN_JOB, ci_command]


def test_the_getting_started_page_includes_the_readme_sections() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for name in ("intro", "quickstart", "demo"):
        section(readme(), name)
        assert f'--8<-- "README.md:{name}"' in index


def test_the_readme_stays_short_and_links_the_site() -> None:
    text = readme()
    assert len(text.splitlines()) < 120
    for guide in ("operator", "integrator", "plugin-author"):
        assert f"](docs/guides/{guide}.md)" in text
        assert (ROOT / "docs" / "guides" / f"{guide}.md").is_file()
    assert "mkdocs" in text.lower()


@pytest.mark.parametrize("folder", PACKAGES)
def test_every_package_has_an_api_page_and_its_pages_in_the_nav(folder: str) -> None:
    module = "cladelog." + folder.replace("-", "_")
    api = ROOT / "docs" / "api" / f"{folder}.md"
    assert re.search(rf"^::: {re.escape(module)}$", api.read_text(encoding="utf-8"), re.M)
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert f"api/{folder}.md" in nav
    assert f"packages/{folder}/README.md" in nav
    assert f"packages/{folder}/CHANGELOG.md" in nav
    for page in sorted((ROOT / "packages" / folder / "docs").glob("*.md")):
        assert page.relative_to(ROOT).as_posix() in nav


@pytest.mark.parametrize("folder", PACKAGES)
def test_each_package_metadata_points_at_its_site_pages(folder: str) -> None:
    import tomllib

    site = re.search(r"^site_url: (\S+)$", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M)
    assert site is not None
    urls = tomllib.loads((ROOT / "packages" / folder / "pyproject.toml").read_text("utf-8"))[
        "project"]["urls"]
    # README.md is the folder's index page; CHANGELOG.md is the page CHANGELOG/
    assert urls["Documentation"] == f"{site.group(1)}packages/{folder}/"
    assert urls["Changelog"] == f"{site.group(1)}packages/{folder}/CHANGELOG/"
