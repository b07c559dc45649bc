"""The documented hash of an event, recomputed independently of cladelog's encoder.

The worked example of docs/events.md is read from the page itself: each body is built
from exactly the members the page states (no value is supplied here), compared with the
body the page prints, and hashed to the digest the page prints.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.events import GENESIS_HASH, chain_hash, encode_body

DOCS = Path(__file__).resolve().parents[1] / "docs" / "events.md"

# The body exactly as docs/events.md prints it (keys sorted, no spaces, 1.5e-7 in ES6 form).
DOC_BODY_1 = (
    '{"data":{"score":1.5e-7,"tags":["x"],"text":"Grüße"},'
    '"meta":{"actor":"alice","plugin":"notes","plugin_version":"0.1.0"},'
    '"position":1,"prev_hash":"' + "0" * 64 + '",'
    '"recorded_at":"2026-01-01T00:00:00.000000Z","schema_version":2,'
    '"stream":"demo","stream_version":1,"type":"notes.note_added"}'
)
DOC_HASH_1 = "e02a823a641c2bb34d9e11fd563bca969d00ab79f3bbfa4f535d34b912524e27"
DOC_HASH_2 = "13c7b55d08901d87830c2701becb4112648e62f375be2fa4e1dd1ae68543cf41"

BODY_MEMBERS = {"data", "meta", "position", "prev_hash", "recorded_at", "schema_version",
                "stream", "stream_version", "type"}


def worked_events() -> list[dict[str, Any]]:
    """Each ``### Event N`` of the page's worked example: the members its table states
    (values parsed as JSON), the canonical body it prints and the hash it prints."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("\n## Worked example\n", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### Event (\d+)$", section, flags=re.MULTILINE)[1:]
    events = []
    for number, part in zip(parts[::2], parts[1::2], strict=True):
        rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", part, flags=re.MULTILINE)
        bodies = re.findall(r"^```\n(\{.*\})\n```$", part, flags=re.MULTILINE)
        digests = re.findall(r"^    ([0-9a-f]{64})$", part, flags=re.MULTILINE)
        assert len(bodies) == 1 and len(digests) == 1, f"event {number}: one body, one hash"
        events.append({"number": int(number), "members": {m: json.loads(v) for m, v in rows},
                       "row_names": [m for m, _ in rows], "body": bodies[0],
                       "hash": digests[0]})
    return events


WORKED = worked_events()


def test_the_page_has_both_worked_events() -> None:
    assert [e["number"] for e in WORKED] == [1, 2]
    assert [e["hash"] for e in WORKED] == [DOC_HASH_1, DOC_HASH_2]
    assert WORKED[0]["body"] == DOC_BODY_1


@pytest.mark.parametrize("event", WORKED, ids=lambda e: f"event{e['number']}")
def test_the_page_states_every_member_of_the_body(event: dict[str, Any]) -> None:
    assert sorted(event["row_names"]) == sorted(BODY_MEMBERS)  # each exactly once
    assert sorted(json.loads(event["body"])) == sorted(BODY_MEMBERS)


@pytest.mark.parametrize("event", WORKED, ids=lambda e: f"event{e['number']}")
def test_the_stated_members_encode_to_the_printed_body_and_hash(event: dict[str, Any]) -> None:
    body = encode_body(**event["members"])
    assert body.decode("utf-8") == event["body"]
    prev = event["members"]["prev_hash"]
    # independently of cladelog: SHA-256 over the previous hash's raw bytes and the body
    independent = hashlib.sha256(bytes.fromhex(prev) + event["body"].encode("utf-8"))
    assert independent.hexdigest() == event["hash"] == chain_hash(prev, body)


def test_the_worked_events_form_a_chain() -> None:
    first, second = (e["members"] for e in WORKED)
    assert first["prev_hash"] == GENESIS_HASH and first["position"] == 1
    assert second["prev_hash"] == WORKED[0]["hash"] and second["position"] == 2
    assert (first["stream"], first["stream_version"]) == ("demo", 1)
    assert (second["stream"], second["stream_version"]) == ("demo", 2)


def test_worked_example_digest_is_sha256_of_zero_prev_and_body() -> None:
    independent = hashlib.sha256(bytes(32) + DOC_BODY_1.encode("utf-8")).hexdigest()
    assert independent == DOC_HASH_1
