"""The receipts verification facade: a receipt's signature and inclusion, and the one
error type (with core's error as its cause) that the facade reports."""

from __future__ import annotations

import pytest
from cladelog.core.canonical import canonical_bytes
from cladelog.core.errors import InputError
from cladelog.core.errors import VerificationError as CoreVerificationError
from cladelog.core.transparency import (
    PAYLOAD_TYPE_INTOTO,
    Ed25519Signer,
    MerkleTree,
    format_checkpoint,
    format_consistency_proof,
    format_tlog_proof,
    generate_key,
    leaf_hash,
    make_statement,
    parse_signer_key,
    sign_envelope,
    sign_note,
)
from cladelog.receipts.verify import (
    VerificationError,
    verify_consistency_proof,
    verify_inclusion_proof,
    verify_receipt,
)

ORIGIN = "register.cladelog.example/main"
LOG_SKEY, LOG_VKEY = generate_key(ORIGIN, bytes(range(100, 132)))
ORACLE_SKEY, ORACLE_VKEY = generate_key("oracle.cladelog.example", bytes(range(32)))
LOG = parse_signer_key(LOG_SKEY)
ORACLE = parse_signer_key(ORACLE_SKEY)


def _checkpoint(tree: MerkleTree, size: int, signer: Ed25519Signer = LOG) -> str:
    return sign_note(format_checkpoint(ORIGIN, size, tree.root(size)), signer)


# -- facade: receipts -----------------------------------------------------------------------


def _receipts(n: int) -> list[dict[str, object]]:
    out = []
    for seq in range(n):
        statement = make_statement(
            [{"name": f"candidate-{seq}", "digest": {"sha256": f"{seq:064x}"}}],
            "https://cladelog.example/register-entry/v1",
            {"seq": seq, "verdict": "accept" if seq % 2 else "reject"},
        )
        out.append(
            sign_envelope(
                canonical_bytes(statement),
                PAYLOAD_TYPE_INTOTO,
                ORACLE.sign,
                ORACLE.verifier().key_ref,
            )
        )
    return out


def test_verify_receipt_end_to_end() -> None:
    receipts = _receipts(6)
    tree = MerkleTree()
    for env in receipts:
        tree.append(canonical_bytes(env))
    cp = _checkpoint(tree, 6)
    for seq, env in enumerate(receipts):
        text = format_tlog_proof(seq, tree.inclusion_proof(seq), cp)
        got = verify_receipt(env, text, oracle_keys=[ORACLE_VKEY], log_keys=[LOG_VKEY])
        assert got.payload.predicate["seq"] == seq
        assert got.inclusion.index == seq
        assert got.inclusion.leaf_hash == leaf_hash(canonical_bytes(env))


def test_verify_receipt_refusals() -> None:
    receipts = _receipts(3)
    tree = MerkleTree()
    for env in receipts:
        tree.append(canonical_bytes(env))
    text = format_tlog_proof(1, tree.inclusion_proof(1), _checkpoint(tree, 3))
    env = receipts[1]
    ok = {"oracle_keys": [ORACLE_VKEY], "log_keys": [LOG_VKEY]}
    verify_receipt(env, text, **ok)
    # The oracle key and the log key are not interchangeable.
    with pytest.raises(VerificationError, match="receipt"):
        verify_receipt(env, text, oracle_keys=[LOG_VKEY], log_keys=[LOG_VKEY])
    with pytest.raises(VerificationError, match="checkpoint"):
        verify_receipt(env, text, oracle_keys=[ORACLE_VKEY], log_keys=[ORACLE_VKEY])
    # Another genuine receipt is not the one at index 1.
    with pytest.raises(VerificationError, match="inclusion"):
        verify_receipt(receipts[2], text, **ok)
    # A duplicated signature still verifies, but it is a different leaf from the logged one.
    resigned = {**env, "signatures": [*env["signatures"], *env["signatures"]]}
    with pytest.raises(VerificationError, match="inclusion"):
        verify_receipt(resigned, text, **ok)
    with pytest.raises(VerificationError, match="receipt"):
        verify_receipt({"payload": 1}, text, **ok)
    # A verified envelope held in a non-dict Mapping has no canonical JSON form.
    from types import MappingProxyType

    with pytest.raises(VerificationError, match="receipt: envelope: mappingproxy"):
        verify_receipt(MappingProxyType(env), text, **ok)


def test_facade_reports_one_error_type_with_core_cause() -> None:
    tree = MerkleTree([leaf_hash(b"a"), leaf_hash(b"b"), leaf_hash(b"c")])
    good = format_tlog_proof(1, tree.inclusion_proof(1), _checkpoint(tree, 3))
    with pytest.raises(VerificationError, match="proof file: index") as bad:
        verify_inclusion_proof(good.replace("index 1", "index 01"), b"b", [LOG_VKEY])
    assert isinstance(bad.value.__cause__, InputError)
    with pytest.raises(VerificationError, match="inclusion") as failed:
        verify_inclusion_proof(good, b"c", [LOG_VKEY])
    assert isinstance(failed.value.__cause__, CoreVerificationError)
    text = format_consistency_proof(ORIGIN, 2, 3, tree.consistency_proof(2, 3),
                                    _checkpoint(tree, 2), _checkpoint(tree, 3))
    assert verify_consistency_proof(text, [LOG_VKEY]).new.size == 3
