"""cladelog.core.transparency against independent implementations that install from PyPI:
pymerkle (an RFC 9162 Merkle tree), securesystemslib (DSSE) and rfc8785 (JCS).

Each test runs both implementations on the same input and compares what they produce
or lets one verify what the other made; nothing expected is computed by our code alone.
"""

from __future__ import annotations

import base64
import warnings
from typing import Any

import pymerkle
import pytest
import rfc8785
import securesystemslib.dsse as sslib_dsse
import securesystemslib.signer as sslib_signer
from cladelog.core.canonical import canonical_bytes
from cladelog.core.transparency import (
    PAYLOAD_TYPE_INTOTO,
    MerkleTree,
    generate_key,
    key_verifiers,
    leaf_hash,
    parse_signer_key,
    parse_verifier_key,
    sign_envelope,
    sign_statement,
    verify_consistency,
    verify_envelope_bytes,
    verify_inclusion,
    verify_statement,
)
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SIZES = [*range(1, 34), 63, 64, 65, 100, 127, 128, 129, 200]


def _both(n: int) -> tuple[MerkleTree, Any]:
    ours, theirs = MerkleTree(), pymerkle.InmemoryTree(algorithm="sha256")
    for i in range(n):
        data = b"event %d" % i
        ours.append(data)
        theirs.append_entry(data)
    return ours, theirs


def test_pymerkle_agrees_on_leaf_and_root_hashes() -> None:
    ours, theirs = _both(200)
    for i in range(200):
        assert theirs.get_leaf(i + 1) == ours.leaf_hash(i) == leaf_hash(b"event %d" % i)
    for n in SIZES:
        assert theirs.get_root(n) == ours.root(n), n


@pytest.mark.parametrize("n", SIZES)
def test_pymerkle_inclusion_paths_verify_with_ours_and_are_ours(n: int) -> None:
    ours, theirs = _both(n)
    root = theirs.get_root(n)
    for index in range(n):
        proof = theirs.prove_inclusion(index + 1, n)  # pymerkle counts leaves from 1
        path = [bytes.fromhex(h) for h in proof.serialize()["path"]]
        # pymerkle's path starts with the leaf itself; the rest is the RFC 9162 audit path
        assert path[0] == ours.leaf_hash(index)
        verify_inclusion(path[0], index, n, path[1:], root)
        assert path[1:] == ours.inclusion_proof(index, n)
        pymerkle.verify_inclusion(ours.leaf_hash(index), ours.root(n), proof)


@pytest.mark.parametrize("n", [2, 3, 7, 8, 9, 31, 64, 65, 129])
def test_pymerkle_consistency_proofs_accept_our_roots(n: int) -> None:
    ours, theirs = _both(n)
    for m in range(1, n + 1):
        proof = theirs.prove_consistency(m, n)
        # pymerkle checks its proof against the two roots we computed ...
        pymerkle.verify_consistency(ours.root(m), ours.root(n), proof)
        # ... and our proof for the same sizes verifies against pymerkle's roots.
        verify_consistency(m, n, ours.consistency_proof(m, n), theirs.get_root(m),
                           theirs.get_root(n))


# -- DSSE with securesystemslib ---------------------------------------------------------------


def _sslib_pair(seed: bytes) -> tuple[Any, Any]:
    private = Ed25519PrivateKey.from_private_bytes(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        key = sslib_signer.SSlibKey.from_crypto(private.public_key(), keyid="k")
    return sslib_signer.CryptoSigner(private, key), key


def test_securesystemslib_verifies_our_envelope() -> None:
    seed = bytes(range(32, 64))
    skey, _ = generate_key("validator-1", seed)
    ours = parse_signer_key(skey)
    _, their_key = _sslib_pair(seed)
    payload_type = "application/vnd.cladelog.vote+json"
    env = sign_envelope(b'{"round":3}', payload_type, ours.sign, "k")
    theirs = sslib_dsse.Envelope.from_dict(env)
    assert theirs.payload == b'{"round":3}' and theirs.payload_type == payload_type
    assert set(theirs.verify([their_key], 1)) == {"k"}
    # and their PAE is ours, byte for byte
    assert sslib_dsse.Envelope.pae(theirs) == (
        b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type.encode(), 11, b'{"round":3}')
    )


def test_we_verify_a_securesystemslib_envelope() -> None:
    seed = bytes(range(64, 96))
    their_signer, _ = _sslib_pair(seed)
    skey, vkey = generate_key("validator-2", seed)
    verifier = parse_verifier_key(vkey)
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "block-7", "digest": {"sha256": "ab" * 32}}],
        "predicateType": "https://cladelog.example/vote/v1",
        "predicate": {"round": 3, "vote": "yes", "weight": 1.5},
    }
    payload = rfc8785.dumps(statement)
    env = sslib_dsse.Envelope(payload, PAYLOAD_TYPE_INTOTO, {})
    env.sign(their_signer)
    doc = env.to_dict()
    doc["signatures"][0]["keyid"] = verifier.key_ref  # the keyid is a hint only
    got = verify_statement(doc, key_verifiers([verifier]),
                           predicate_type="https://cladelog.example/vote/v1")
    assert got.predicate == statement["predicate"]
    assert verify_envelope_bytes(doc, key_verifiers([verifier])).payload == payload
    # a statement we sign has exactly rfc8785's bytes as payload
    ours = sign_statement(statement["subject"], statement["predicateType"],
                          statement["predicate"], parse_signer_key(skey).sign, verifier.key_ref)
    assert base64.b64decode(ours["payload"]) == payload == canonical_bytes(statement)
