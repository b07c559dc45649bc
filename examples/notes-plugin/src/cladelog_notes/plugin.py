"""Hook implementations of the notes example plugin."""

from __future__ import annotations

from typing import Any

import attrs
import click
from cladelog.core import PluginInfo, Projection, RecordedEvent, hookimpl

from .events import NOTE_ADDED


@attrs.frozen
class NotesSettings:
    """``[settings.notes]``: the tag used when a note has none."""

    default_tag: str = "untagged"


PLUGIN = PluginInfo(name="notes", version="0.1.0", settings=NotesSettings,
                    description="example plugin: notes with tags")

_settings = NotesSettings()


def _apply(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    state["count"] += 1
    for tag in event.data["tags"] or [_settings.default_tag]:
        state["tags"][tag] = state["tags"].get(tag, 0) + 1
    return state


INDEX = Projection(
    name="notes.index", version=1, event_types=frozenset({NOTE_ADDED.name}),
    initial={"count": 0, "tags": {}}, apply=_apply,
    summary=lambda s: f"{s['count']} note(s), {len(s['tags'])} tag(s)",
)


@hookimpl
def cladelog_configure(deployment: Any) -> None:
    global _settings
    _settings = deployment.settings("notes")


@hookimpl
def cladelog_event_types() -> list[Any]:
    return [NOTE_ADDED]


@hookimpl
def cladelog_projections() -> list[Any]:
    return [INDEX]


@click.group("notes")
def notes() -> None:
    """Write and count notes (example plugin)."""


@notes.command("add")
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
def add(text: str, tags: tuple[str, ...]) -> None:
    """Append a note."""
    from cladelog.core import NewEvent
    from cladelog.core.cli import fail, pass_deployment

    if not text.strip():
        fail("text: must not be empty")

    @pass_deployment
    def run(dep: Any) -> None:
        e = dep.append([NewEvent("notes", NOTE_ADDED.name, {"text": text, "tags": list(tags)})])
        click.echo(f"note {e[-1].position} added")

    run()


@notes.command("show")
def show() -> None:
    """Print the note index as JSON."""
    import json

    from cladelog.core.cli import pass_deployment

    @pass_deployment
    def run(dep: Any) -> None:
        click.echo(json.dumps(dep.state("notes.index"), sort_keys=True))

    run()


@hookimpl
def cladelog_cli_commands() -> list[click.Command]:
    return [notes]
