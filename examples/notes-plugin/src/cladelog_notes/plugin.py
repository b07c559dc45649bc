"""Hook implementations of the notes example plugin."""

from __future__ import annotations

from typing import Any

import attrs
import click
from cladelog.core import (
    HELP_SETTINGS,
    PluginInfo,
    Projection,
    RecordedEvent,
    hookimpl,
    json_option,
)

from .events import NOTE_ADDED


@attrs.frozen
class NotesSettings:
    """``[settings.notes]`` in ``cladelog.toml``.

    ``default_tag``: the tag that ``cladelog notes add`` (and :func:`~cladelog_notes.add_note`)
    writes into a note given no ``--tag``. It is applied when the note is written and
    stored in the event, never read on replay: changing it affects the notes written
    afterwards and leaves the history, and every digest of it, as it was.
    """

    default_tag: str = "untagged"


PLUGIN = PluginInfo(name="notes", version="0.1.0", settings=NotesSettings,
                    description="example plugin: notes with tags")

#: the key under which the projection counts a note stored without tags (version-1
#: notes, upcast to no tags, and notes appended as raw events): a constant, not a
#: setting, so that the fold depends on the event only
UNTAGGED = "untagged"


def _apply(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    # a pure fold: the state and the event, nothing else (no settings, no clock)
    state["count"] += 1
    for tag in event.data["tags"] or [UNTAGGED]:
        state["tags"][tag] = state["tags"].get(tag, 0) + 1
    return state


INDEX = Projection(
    # version 2: version 1 counted tagless notes under the *current* default_tag setting,
    # so its state depended on the deployment's settings, not only on the log
    name="notes.index", version=2, event_types=frozenset({NOTE_ADDED.name}),
    initial={"count": 0, "tags": {}}, apply=_apply,
    summary=lambda s: f"{s['count']} note(s), {len(s['tags'])} tag(s)",
)


@hookimpl
def cladelog_configure(deployment: Any) -> None:
    # check the settings once, early; keep no state here (a projection must never read
    # settings: commands read them from the deployment when they write an event)
    if not deployment.settings("notes").default_tag.strip():
        raise deployment.config.setting_error("notes", "default_tag", "must not be empty")


@hookimpl
def cladelog_event_types() -> list[Any]:
    return [NOTE_ADDED]


@hookimpl
def cladelog_projections() -> list[Any]:
    return [INDEX]


@click.group("notes", context_settings=HELP_SETTINGS)  # -h as well as --help
def notes() -> None:
    """Write and count notes (example plugin)."""


@notes.command("add")
@click.argument("text")
@click.option("--tag", "tags", multiple=True,
              help="A tag (repeatable); none: the default_tag setting.")
@json_option()  # every command that prints a result takes --json
def add(text: str, tags: tuple[str, ...], as_json: bool) -> None:
    """Append a note."""
    from cladelog.core import echo_json, pass_deployment

    from .commands import add_note

    @pass_deployment
    def run(dep: Any) -> None:
        e = add_note(dep, text, tags)
        if as_json:
            echo_json({"position": e.position, "stream": e.stream})
        else:
            click.echo(f"note {e.position} added")

    run()


@notes.command("show")
def show() -> None:
    """Print the note index as JSON."""
    import json

    from cladelog.core import pass_deployment

    @pass_deployment
    def run(dep: Any) -> None:
        click.echo(json.dumps(dep.state("notes.index"), sort_keys=True))

    run()


@hookimpl
def cladelog_cli_commands() -> list[click.Command]:
    return [notes]
