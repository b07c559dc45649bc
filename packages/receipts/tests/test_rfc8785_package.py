"""The bytes the register signs, hashes and logs equal those of the ``rfc8785`` package.

The home-made encoder (``cladelog.core.canonical``) must agree with the reference
package on the documents this plugin actually produces: statements, envelopes and
entries with non-integral, integral and tiny floats and non-ASCII text.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
import rfc8785
from cladelog.receipts import entry_hash, make_receipt, receipt_leaf
from cladelog.receipts.entries import GENESIS_PREV
from receipts_helpers import Keys, gain_test, stage


def _documents() -> list[dict[str, Any]]:
    floaty = gain_test(0, GENESIS_PREV)
    floaty["stages"][0]["criterion"]["threshold"] = 2.0  # an integral float
    floaty["stages"][1]["criterion"]["threshold"] = 0.00001  # below 1e-4: exponent form
    floaty["candidate"]["name"] = "moteur-\u00e9t\u00e9-\U0001f600"  # non-ASCII, astral
    paired = gain_test(1, "a" * 64)
    paired["stages"][0] = stage("short", (30, 40, 30)) | {"pentanomial": [5, 10, 20, 10, 5]}
    special = {"seq": 2, "prev": "b" * 64, "kind": "special_path",
               "candidate": {"name": "engine", "version": "2.0", "digest": "sha256:x"},
               "path": "speed", "reason": "30% faster at equal strength\n\u2014 \u00a7 4.2"}
    return [floaty, paired, special]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_signed_hashed_and_logged_bytes_match_rfc8785(index: int) -> None:
    keys = Keys()
    entry = _documents()[index]
    envelope = make_receipt(entry, keys.oracle)
    payload = base64.b64decode(envelope["payload"])
    statement = json.loads(payload)
    assert payload == rfc8785.dumps(statement)
    assert statement["predicate"] == entry
    assert receipt_leaf(envelope) == rfc8785.dumps(envelope)
    assert entry_hash(entry) == hashlib.sha256(rfc8785.dumps(entry)).hexdigest()
    assert statement["subject"][0]["digest"]["sha256"] == entry_hash(entry)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_opened_entry_hash_is_the_reference_hash_read_off_the_payload(
        index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # open_receipt takes the entry's hash from the verified payload's bytes instead of
    # re-encoding the entry; it must be the reference package's hash of the entry, and
    # must not come from the re-encoding fallback (which this test makes fail loudly).
    from cladelog.receipts import receipt as receipt_module
    from cladelog.receipts.receipt import open_receipt

    keys = Keys()
    entry = _documents()[index]
    envelope = make_receipt(entry, keys.oracle)
    verifier = keys.oracle.verifier()

    def refuse(doc: object) -> str:
        raise AssertionError("entry re-encoded")

    monkeypatch.setattr(receipt_module, "entry_hash", refuse)
    opened = open_receipt(envelope, {verifier.key_ref: verifier.verify})
    assert opened.entry_hash == hashlib.sha256(rfc8785.dumps(entry)).hexdigest()
