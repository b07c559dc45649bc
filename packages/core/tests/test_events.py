"""The documented hash of an event, recomputed independently of cladelog's encoder."""

from __future__ import annotations

import hashlib

from cladelog.core.events import GENESIS_HASH, chain_hash, encode_body

META = {"actor": "alice", "plugin": "notes", "plugin_version": "0.1.0"}

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


def test_worked_example_digest_is_sha256_of_zero_prev_and_body() -> None:
    independent = hashlib.sha256(bytes(32) + DOC_BODY_1.encode("utf-8")).hexdigest()
    assert independent == DOC_HASH_1


def test_encoder_reproduces_the_documented_body_and_hash() -> None:
    body = encode_body(
        position=1, stream="demo", stream_version=1, type="notes.note_added",
        schema_version=2, data={"text": "Grüße", "tags": ["x"], "score": 1.5e-7},
        meta=META, recorded_at="2026-01-01T00:00:00.000000Z", prev_hash=GENESIS_HASH,
    )
    assert body.decode("utf-8") == DOC_BODY_1
    assert chain_hash(GENESIS_HASH, body) == DOC_HASH_1


def test_second_event_links_to_the_first() -> None:
    body = encode_body(
        position=2, stream="demo", stream_version=2, type="notes.note_added",
        schema_version=2, data={"text": "b", "tags": []}, meta=META,
        recorded_at="2026-01-01T00:00:01.000000Z", prev_hash=DOC_HASH_1,
    )
    independent = hashlib.sha256(bytes.fromhex(DOC_HASH_1) + body).hexdigest()
    assert chain_hash(DOC_HASH_1, body) == independent == DOC_HASH_2
