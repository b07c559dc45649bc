"""Witness cosignatures (c2sp.org/tlog-cosignature, cosignature/v1), the witness quorum
check, and the key/statement API other packages build on.

Expected bytes are built here from the spec's text (key ID formula, signed message
layout, timestamp encoding) and checked with `cryptography` directly, not with the
code under test.
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from cladelog.core.errors import InputError, VerificationError
from cladelog.core.transparency import (
    CheckpointRefused,
    CosignatureVerifier,
    EnvelopeError,
    EnvelopeSignatureError,
    MerkleTree,
    NoteError,
    NoteSignatureError,
    as_cosigner_key,
    as_cosigner_verifier,
    format_checkpoint,
    generate_cosigner_key,
    generate_key,
    key_verifiers,
    open_note,
    parse_cosigner_key,
    parse_cosigner_verifier_key,
    parse_signer_key,
    parse_statement,
    parse_verifier_key,
    sign_envelope,
    sign_note,
    sign_statement,
    verifier_key,
    verify_cosignatures,
    verify_envelope_bytes,
    verify_statement,
    witness_cosignatures,
)
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ORIGIN = "log.cladelog.example/main"
LOG_SKEY, LOG_VKEY = generate_key(ORIGIN, bytes(range(100, 132)))
LOG = parse_signer_key(LOG_SKEY)
W_SEEDS = [bytes([i]) * 32 for i in (1, 2, 3)]
WITNESSES = [generate_cosigner_key(f"witness{i}.example", s) for i, s in enumerate(W_SEEDS)]


def _checkpoint(size: int = 5) -> str:
    tree = MerkleTree([hashlib.sha256(b"%d" % i).digest() for i in range(size)])
    return sign_note(format_checkpoint(ORIGIN, size, tree.root()), LOG)


def _cosign(note: str, index: int, timestamp: int) -> str:
    """Add witness ``index``'s cosignature line to a signed note."""
    w = parse_cosigner_key(WITNESSES[index][0]).at(timestamp)
    text = note[: note.index("\n\n") + 1]
    line = sign_note(text, w).split("\n\n", 1)[1]
    return note + line


def _raw_pub(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def test_cosigner_key_format_follows_the_spec() -> None:
    skey, vkey = WITNESSES[0]
    name, hexid, b64 = vkey.split("+")
    pub = _raw_pub(W_SEEDS[0])
    assert base64.b64decode(b64) == b"\x04" + pub
    assert bytes.fromhex(hexid) == hashlib.sha256(name.encode() + b"\n\x04" + pub).digest()[:4]
    assert skey == f"PRIVATE+KEY+{name}+{hexid}+" + base64.b64encode(b"\x04" + W_SEEDS[0]).decode()
    assert verifier_key(skey) == vkey and verifier_key(LOG_SKEY) == LOG_VKEY
    # the two key types are not interchangeable
    with pytest.raises(NoteError, match="unsupported algorithm 0x04"):
        parse_verifier_key(vkey)
    with pytest.raises(NoteError, match="unsupported algorithm 0x01"):
        parse_cosigner_verifier_key(LOG_VKEY)
    with pytest.raises(NoteError, match="unsupported algorithm 0x01"):
        parse_cosigner_key(LOG_SKEY)
    with pytest.raises(NoteError, match="skey"):
        verifier_key("PRIVATE+KEY+x+00000000+AQ==")


def test_cosignature_bytes_are_timestamp_then_signature_of_the_spec_message() -> None:
    note = _cosign(_checkpoint(), 0, 1679315147)
    line = note.rstrip("\n").split("\n")[-1]
    assert line.startswith("\u2014 witness0.example ")
    raw = base64.b64decode(line.split(" ")[2])
    kid = hashlib.sha256(b"witness0.example\n\x04" + _raw_pub(W_SEEDS[0])).digest()[:4]
    assert raw[:4] == kid and len(raw) == 4 + 8 + 64
    assert raw[4:12] == (1679315147).to_bytes(8, "big")
    body = note[: note.index("\n\n") + 1]
    message = b"cosignature/v1\ntime 1679315147\n" + body.encode()
    Ed25519PrivateKey.from_private_bytes(W_SEEDS[0]).public_key().verify(raw[12:], message)
    assert CosignatureVerifier.timestamp(raw[4:]) == 1679315147


def test_open_note_checks_cosignatures_of_trusted_witnesses() -> None:
    note = _cosign(_cosign(_checkpoint(), 0, 10), 1, 20)
    w0, w1 = (parse_cosigner_verifier_key(v) for _, v in WITNESSES[:2])
    opened = open_note(note, [LOG.verifier(), w0, w1])
    assert opened.verified_names == (ORIGIN, "witness0.example", "witness1.example")
    # a cosignature over another time does not verify: the time is signed
    raw = bytearray(base64.b64decode(note.rstrip("\n").split("\n")[-1].split(" ")[2]))
    raw[11] ^= 1
    forged = note[: note.rstrip("\n").rindex("\n") + 1] + (
        "\u2014 witness1.example " + base64.b64encode(bytes(raw)).decode() + "\n"
    )
    with pytest.raises(NoteSignatureError, match="does not verify"):
        open_note(forged, [LOG.verifier(), w1])
    # a plain Ed25519 note signature by the same key pair is not a cosignature: its
    # key ID is computed with type 0x01, so a 0x04 verifier does not even consider it
    body = note[: note.index("\n\n") + 1]
    plain = sign_note(body, parse_signer_key(generate_key("witness2.example", W_SEEDS[2])[0]))
    w2 = parse_cosigner_verifier_key(WITNESSES[2][1])
    with pytest.raises(NoteSignatureError, match="no signature by a trusted key"):
        open_note(plain, [w2])


def test_quorum_counts_distinct_trusted_witnesses() -> None:
    vkeys = [v for _, v in WITNESSES]
    note = _cosign(_cosign(_checkpoint(), 0, 10), 2, 30)
    got = verify_cosignatures(note, [LOG_VKEY], vkeys, 2)
    assert got.witnesses == ("witness0.example", "witness2.example")
    assert got.timestamps == (10, 30) and got.checkpoint.size == 5
    with pytest.raises(CheckpointRefused, match=r"2 valid witness cosignature.*quorum is 3"):
        verify_cosignatures(note, [LOG_VKEY], vkeys, 3)
    # the same witness twice counts once
    twice = _cosign(_cosign(_checkpoint(), 0, 10), 0, 11)
    with pytest.raises(CheckpointRefused, match="1 valid"):
        verify_cosignatures(twice, [LOG_VKEY], vkeys, 2)
    # witnesses do not stand in for the log's own signature
    only_w = _cosign(_checkpoint(), 0, 1)
    only_w = only_w[: only_w.index("\n\n") + 2] + only_w.rstrip("\n").split("\n")[-1] + "\n"
    with pytest.raises(NoteSignatureError, match="no signature by a trusted key"):
        verify_cosignatures(only_w, [LOG_VKEY], vkeys, 1)
    for bad, fragment in [(0, "quorum"), (4, "more than the 3"), (True, "quorum")]:
        with pytest.raises(NoteError, match=fragment):
            verify_cosignatures(note, [LOG_VKEY], vkeys, bad)  # type: ignore[arg-type]
    with pytest.raises(NoteError, match="duplicate witness"):
        verify_cosignatures(note, [LOG_VKEY], [vkeys[0], vkeys[0]], 1)
    with pytest.raises(NoteError, match=r"witnesses\[0\]"):
        verify_cosignatures(note, [LOG_VKEY], ["not+a+key"], 1)
    # an Ed25519 (0x01) key stands for its 0x04 form: the log's own 0x01 signature
    # line (another key ID) is not a cosignature by it
    with pytest.raises(CheckpointRefused, match="0 valid"):
        verify_cosignatures(note, [LOG_VKEY], [LOG_VKEY], 1)


def test_cosigner_timestamp_range() -> None:
    w = parse_cosigner_key(WITNESSES[0][0])
    with pytest.raises(NoteError, match="timestamp"):
        w.at(2**63)
    with pytest.raises(NoteError, match="timestamp"):
        w.at(-1)
    assert w.at(2**63 - 1).timestamp == 2**63 - 1
    assert repr(W_SEEDS[0]) not in repr(w) and "seed" not in repr(w)


# -- the API other packages sign with -----------------------------------------------------


def test_keys_sign_and_verify_notes_and_any_payload_type() -> None:
    skey, vkey = generate_key("validator-1.example")
    signer, verifier = parse_signer_key(skey), parse_verifier_key(vkey)
    # name+hash (the base64 key that follows may itself hold a "+")
    assert signer.key_ref == verifier.key_ref == "+".join(vkey.split("+", 2)[:2])
    assert open_note(sign_note("vote 3\n", signer), [verifier]).text == "vote 3\n"
    ptype = "application/vnd.cladelog.vote+json"
    env = sign_envelope(b"{}", ptype, signer.sign, signer.key_ref)
    assert verify_envelope_bytes(env, key_verifiers([verifier]), payload_type=ptype).keyids == (
        signer.key_ref,
    )
    with pytest.raises(EnvelopeError, match="payloadType: expected"):
        verify_envelope_bytes(env, key_verifiers([verifier]), payload_type="other")
    other = parse_verifier_key(generate_key("validator-1.example")[1])
    with pytest.raises(EnvelopeSignatureError, match="no signature by a trusted keyid"):
        verify_envelope_bytes(env, key_verifiers([other]))
    bad = {**env, "signatures": [{"keyid": signer.key_ref, "sig": env["signatures"][0]["sig"]
                                  [::-1]}]}
    with pytest.raises((EnvelopeError, EnvelopeSignatureError)):
        verify_envelope_bytes(bad, key_verifiers([verifier]))


def test_statements_with_a_predicate_type() -> None:
    skey, vkey = generate_key("validator-2.example", bytes(range(32)))
    signer, verifier = parse_signer_key(skey), parse_verifier_key(vkey)
    subject = [{"name": "proposal-9", "digest": {"sha256": "cd" * 32}}]
    env = sign_statement(subject, "https://cladelog.example/vote/v1", {"yes": True},
                         signer.sign, signer.key_ref)
    got = verify_statement(env, key_verifiers([verifier]),
                           predicate_type="https://cladelog.example/vote/v1")
    assert got.predicate == {"yes": True} and got.statement["subject"] == subject
    with pytest.raises(EnvelopeError, match="predicateType: expected"):
        verify_statement(env, key_verifiers([verifier]), predicate_type="https://other/v1")
    assert parse_statement(got.payload)["predicateType"] == "https://cladelog.example/vote/v1"
    with pytest.raises(EnvelopeError, match="canonical"):
        parse_statement(got.payload.replace(b'"_type"', b' "_type"', 1))
    with pytest.raises(EnvelopeError, match="payload: must be bytes"):
        parse_statement("text")  # type: ignore[arg-type]


def test_error_classes_map_to_exit_codes() -> None:
    assert issubclass(NoteError, InputError) and issubclass(EnvelopeError, InputError)
    assert issubclass(NoteSignatureError, VerificationError)
    assert issubclass(EnvelopeSignatureError, VerificationError)
    assert issubclass(CheckpointRefused, VerificationError)


# -- one Ed25519 key as a validator's signing key and as a witness key ------------------


def test_an_ed25519_key_cosigns_as_its_0x04_form() -> None:
    seed = bytes(range(7, 39))
    skey, vkey = generate_key("validator-7.example", seed)
    pub = _raw_pub(seed)
    # the spec's key ID formula with type 0x04, computed here from the raw key
    kid = hashlib.sha256(b"validator-7.example\n\x04" + pub).digest()[:4]
    expected_vkey = ("validator-7.example+" + kid.hex() + "+"
                     + base64.b64encode(b"\x04" + pub).decode())
    assert as_cosigner_verifier(vkey).vkey == expected_vkey
    cosigner = as_cosigner_key(skey)
    assert cosigner.verifier().vkey == expected_vkey
    assert cosigner.skey == ("PRIVATE+KEY+validator-7.example+" + kid.hex() + "+"
                             + base64.b64encode(b"\x04" + seed).decode())
    # a 0x04 key passes through; anything else is the 0x04 parse error
    assert as_cosigner_key(WITNESSES[0][0]).skey == WITNESSES[0][0]
    assert as_cosigner_verifier(WITNESSES[0][1]).vkey == WITNESSES[0][1]
    with pytest.raises(NoteError, match="vkey"):
        as_cosigner_verifier("x+00000000+AQ==")
    # its cosignature is the spec's bytes, checked with cryptography directly
    note = _checkpoint()
    body = note[: note.index("\n\n") + 1]
    cosigned = sign_note(body, cosigner.at(1700000000))
    raw = base64.b64decode(cosigned.rstrip("\n").split("\n")[-1].split(" ")[2])
    assert raw[:4] == kid and raw[4:12] == (1700000000).to_bytes(8, "big")
    Ed25519PrivateKey.from_private_bytes(seed).public_key().verify(
        raw[12:], b"cosignature/v1\ntime 1700000000\n" + body.encode())
    merged = note + cosigned.rstrip("\n").split("\n")[-1] + "\n"
    assert verify_cosignatures(merged, [LOG_VKEY], [vkey], 1).witnesses == (
        "validator-7.example",)


def test_witness_cosignatures_counts_without_a_quorum() -> None:
    vkeys = [v for _, v in WITNESSES]
    plain = _checkpoint()
    got = witness_cosignatures(plain, vkeys)
    assert got.witnesses == () and got.checkpoint.size == 5
    note = _cosign(_cosign(plain, 0, 10), 2, 30)
    got = witness_cosignatures(note, vkeys)
    assert got.witnesses == ("witness0.example", "witness2.example")
    assert got.timestamps == (10, 30)
    # a cosignature line of a given key that does not verify rejects the note
    raw = bytearray(base64.b64decode(note.rstrip("\n").split("\n")[-1].split(" ")[2]))
    raw[-1] ^= 1
    forged = note[: note.rstrip("\n").rindex("\n") + 1] + (
        "\u2014 witness2.example " + base64.b64encode(bytes(raw)).decode() + "\n")
    with pytest.raises(NoteSignatureError, match="does not verify"):
        witness_cosignatures(forged, vkeys)
    with pytest.raises(NoteError, match="checkpoint"):
        witness_cosignatures("not a note\n", vkeys)
