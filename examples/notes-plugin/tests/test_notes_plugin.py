"""The example plugin, tested as a plugin author would: through cladelog_env."""

from __future__ import annotations

import json

import pytest
from cladelog.core import InputError


@pytest.fixture
def cladelog_plugins() -> list[str]:
    return ["notes"]


def test_projection_counts_notes_and_tags(cladelog_env):  # type: ignore[no-untyped-def]
    cladelog_env.append("notes.note_added", {"text": "a", "tags": ["x"]}, stream="notes")
    cladelog_env.append("notes.note_added", {"text": "b"}, stream="notes")
    assert cladelog_env.state("notes.index") == {"count": 2, "tags": {"x": 1, "untagged": 1}}


def test_bad_payload_names_the_field_and_appends_nothing(cladelog_env):  # type: ignore[no-untyped-def]
    before = len(cladelog_env.events())
    with pytest.raises(InputError, match=r"data\.text"):
        cladelog_env.append("notes.note_added", {"text": 5})
    assert len(cladelog_env.events()) == before


def test_cli_command_appends_and_shows(cladelog_env):  # type: ignore[no-untyped-def]
    r = cladelog_env.cli("notes", "add", "hello", "--tag", "t1")
    assert r.exit_code == 0, r.output
    r = cladelog_env.cli("notes", "show")
    assert json.loads(r.output) == {"count": 1, "tags": {"t1": 1}}
    r = cladelog_env.cli("notes", "add", "  ")
    assert r.exit_code == 2


class TestSettings:
    @pytest.fixture
    def cladelog_settings(self):  # type: ignore[no-untyped-def]
        return {"notes": {"default_tag": "misc"}}

    def test_default_tag_is_written_into_the_event(self, cladelog_env):  # type: ignore[no-untyped-def]
        from cladelog_notes import add_note

        assert cladelog_env.cli("notes", "add", "a").exit_code == 0
        assert add_note(cladelog_env.deployment, "b").data["tags"] == ["misc"]
        assert add_note(cladelog_env.deployment, "c", ["t"]).data["tags"] == ["t"]
        assert [e.data["tags"] for e in cladelog_env.events(types={"notes.note_added"})] == \
               [["misc"], ["misc"], ["t"]]
        assert cladelog_env.state("notes.index")["tags"] == {"misc": 2, "t": 1}

    def test_the_projection_does_not_read_the_setting(self, cladelog_env):  # type: ignore[no-untyped-def]
        # a note stored without tags (a raw event, or a version-1 note) counts as
        # "untagged" whatever the deployment's default_tag: the fold reads the event only
        cladelog_env.append("notes.note_added", {"text": "a"})
        assert cladelog_env.state("notes.index")["tags"] == {"untagged": 1}


def test_blank_default_tag_is_refused(tmp_path):  # type: ignore[no-untyped-def]
    from cladelog.core import ConfigError
    from cladelog.core.testing import CladelogEnv

    with pytest.raises(ConfigError, match=r"\[settings\.notes\] default_tag: must not be empty"):
        CladelogEnv(tmp_path, ["notes"], settings={"notes": {"default_tag": " "}})


def test_add_note_refuses_blank_text_and_appends_nothing(cladelog_env):  # type: ignore[no-untyped-def]
    from cladelog_notes import add_note

    before = len(cladelog_env.events())
    with pytest.raises(InputError, match="text: must not be empty"):
        add_note(cladelog_env.deployment, " \t")
    assert len(cladelog_env.events()) == before
