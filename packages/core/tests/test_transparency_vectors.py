"""Every public test vector in tests/vectors/ (see SOURCES.md there), run through
cladelog.core.transparency (the RFC 8785 file is test_canonical.py's).

Expected values are the vectors' own; nothing here is computed by the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.core.canonical import canonical_bytes
from cladelog.core.transparency.dsse import EnvelopeError, pae, sign_envelope, verify_envelope_bytes
from cladelog.core.transparency.merkle import (
    EMPTY_ROOT,
    MerkleTree,
    ProofError,
    leaf_hash,
    node_hash,
    root_from_leaves,
    verify_consistency,
    verify_inclusion,
)
from cladelog.core.transparency.note import (
    Ed25519Verifier,
    NoteError,
    ecdsa_verifier,
    ed25519_verify,
    key_id,
    open_note,
    parse_checkpoint,
    parse_signer_key,
    parse_verifier_key,
    sign_note,
)
from cladelog.core.transparency.proof import format_tlog_proof
from cladelog.core.transparency.verify import verify_inclusion_proof
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

VECTORS = Path(__file__).parent / "vectors"


def _load(name: str) -> Any:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def _b64(s: str | None) -> bytes:
    return base64.b64decode(s or "")


def test_every_vector_file_is_exercised() -> None:
    # A new vector file must come with a test; this list is the contract.
    assert sorted(p.name for p in VECTORS.glob("*.json")) == sorted(
        [
            "dsse_vectors.json",
            "ed25519_rfc8032_sign_vectors.json",
            "ed25519_wycheproof.json",
            "jcs_rfc8785_vectors.json",  # run by test_canonical.py
            "merkle_consistency_probes.json",
            "merkle_inclusion_probes.json",
            "merkle_rfc6962_reference_tree.json",
            "signed_note_vectors.json",
            "sigstore_rekor_receipts.json",
        ]
    )


# -- RFC 6962 reference tree ---------------------------------------------------------------

TREE = _load("merkle_rfc6962_reference_tree.json")


def test_reference_tree_roots_for_every_size() -> None:
    leaves = [bytes.fromhex(x) for x in TREE["leaf_inputs_hex"]]
    tree = MerkleTree()
    for data in leaves:
        tree.append(data)
    assert len(TREE["root_hashes_hex"]) == 9
    for n, want in enumerate(TREE["root_hashes_hex"]):
        assert tree.root(n).hex() == want
        assert root_from_leaves(leaf_hash(x) for x in leaves[:n]).hex() == want


def test_reference_tree_subtree_hashes() -> None:
    levels = [[bytes.fromhex(h) for h in row] for row in TREE["node_hashes_hex"]]
    leaves = [bytes.fromhex(x) for x in TREE["leaf_inputs_hex"]]
    assert [leaf_hash(x) for x in leaves] == levels[0]
    for k in range(1, len(levels)):
        assert [
            node_hash(levels[k - 1][2 * i], levels[k - 1][2 * i + 1]) for i in range(len(levels[k]))
        ] == levels[k]
    # Leaf 0's audit path in the 8-leaf tree is its sibling at each level.
    tree = MerkleTree(levels[0])
    assert tree.inclusion_proof(0) == [levels[0][1], levels[1][1], levels[2][1]]
    assert tree.inclusion_proof(5) == [levels[0][4], levels[1][3], levels[2][0]]


@pytest.mark.parametrize("vec", TREE["hasher_vectors"], ids=lambda v: v["desc"])
def test_hasher_vectors(vec: dict[str, str]) -> None:
    want = bytes.fromhex(vec["want_hex"])
    if vec["op"] == "empty_root":
        assert want == EMPTY_ROOT
        assert MerkleTree().root() == want
    elif vec["op"] == "hash_leaf":
        assert leaf_hash(vec["input_ascii"].encode()) == want
    else:
        assert vec["op"] == "hash_children"
        assert node_hash(vec["left_ascii"].encode(), vec["right_ascii"].encode()) == want


# -- inclusion and consistency probes --------------------------------------------------------

INCLUSION = _load("merkle_inclusion_probes.json")
CONSISTENCY = _load("merkle_consistency_probes.json")


def test_probe_counts() -> None:
    assert INCLUSION["count"] == len(INCLUSION["probes"]) == 98
    assert CONSISTENCY["count"] == len(CONSISTENCY["probes"]) == 98


@pytest.mark.parametrize("probe", INCLUSION["probes"], ids=lambda p: p["file"][len("testdata/") :])
def test_inclusion_probe(probe: dict[str, Any]) -> None:
    args = (
        _b64(probe["leafHash"]),
        probe["leafIdx"],
        probe["treeSize"],
        [_b64(h) for h in probe["proof"] or []],
        _b64(probe["root"]),
    )
    if probe["wantErr"]:
        with pytest.raises(ProofError):
            verify_inclusion(*args)
    else:
        verify_inclusion(*args)


@pytest.mark.parametrize(
    "probe", CONSISTENCY["probes"], ids=lambda p: p["file"][len("testdata/") :]
)
def test_consistency_probe(probe: dict[str, Any]) -> None:
    args = (
        probe["size1"],
        probe["size2"],
        [_b64(h) for h in probe["proof"] or []],
        _b64(probe["root1"]),
        _b64(probe["root2"]),
    )
    if probe["wantErr"]:
        with pytest.raises(ProofError):
            verify_consistency(*args)
    else:
        verify_consistency(*args)


def test_happy_probes_match_reference_tree() -> None:
    # The happy paths are proofs in the reference tree: our tree produces the same proofs.
    tree = MerkleTree(bytes.fromhex(x) for x in TREE["node_hashes_hex"][0])
    for p in INCLUSION["probes"]:
        if not p["wantErr"] and p["treeSize"] > 1:
            got = tree.inclusion_proof(p["leafIdx"], p["treeSize"])
            assert got == [_b64(h) for h in p["proof"]]
    for p in CONSISTENCY["probes"]:
        if not p["wantErr"] and p["size1"] < p["size2"]:
            got = tree.consistency_proof(p["size1"], p["size2"])
            assert got == [_b64(h) for h in p["proof"]]


# -- DSSE ----------------------------------------------------------------------------------

DSSE = _load("dsse_vectors.json")


@pytest.mark.parametrize("vec", DSSE["pae_examples"])
def test_dsse_pae(vec: dict[str, str]) -> None:
    got = pae(vec["payloadType"], vec["payload_utf8"].encode())
    assert got == vec["pae_ascii"].encode("ascii")


def _p256_from_vector() -> tuple[ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey]:
    ex = DSSE["signature_example"]
    priv = ec.derive_private_key(int(ex["private_key_d_dec"]), ec.SECP256R1())
    pub = ec.EllipticCurvePublicNumbers(
        int(ex["public_key_x_dec"]), int(ex["public_key_y_dec"]), ec.SECP256R1()
    ).public_key()
    return priv, pub


def _p256_raw_verifier(pub: ec.EllipticCurvePublicKey) -> Any:
    def verify(message: bytes, sig: bytes) -> bool:
        if len(sig) != 64:
            return False
        der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
        try:
            pub.verify(der, message, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return False
        return True

    return verify


def test_dsse_ecdsa_envelope_verifies_with_pluggable_verifier() -> None:
    ex = DSSE["signature_example"]
    priv, pub = _p256_from_vector()
    assert priv.public_key().public_numbers() == pub.public_numbers()
    env = ex["envelope"]
    keyid = env["signatures"][0]["keyid"]
    got = verify_envelope_bytes(env, {keyid: _p256_raw_verifier(pub)})
    assert got.payload == b"hello world"
    assert got.payload_type == "http://example.com/HelloWorld"
    assert got.keyids == (keyid,)
    # Flipping one signature bit or one payload byte must fail.
    sig = bytearray(_b64(env["signatures"][0]["sig"]))
    sig[10] ^= 1
    bad = {**env, "signatures": [{"keyid": keyid, "sig": base64.b64encode(sig).decode()}]}
    with pytest.raises(EnvelopeError):
        verify_envelope_bytes(bad, {keyid: _p256_raw_verifier(pub)})
    with pytest.raises(EnvelopeError):
        verify_envelope_bytes(
            {**env, "payload": base64.b64encode(b"hello worle").decode()},
            {keyid: _p256_raw_verifier(pub)},
        )


def test_dsse_ecdsa_envelope_resigns_byte_for_byte() -> None:
    ex = DSSE["signature_example"]
    priv, _ = _p256_from_vector()

    def sign(message: bytes) -> bytes:
        der = priv.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        r, s = decode_dss_signature(der)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    env = ex["envelope"]
    again = sign_envelope(
        _b64(env["payload"]), env["payloadType"], sign, env["signatures"][0]["keyid"]
    )
    assert again == env


# -- Ed25519 -------------------------------------------------------------------------------

RFC8032 = _load("ed25519_rfc8032_sign_vectors.json")
WYCHEPROOF = _load("ed25519_wycheproof.json")


def _skey_for(seed: bytes, pub: bytes, name: str = "vector") -> str:
    # Key ID computed here from the spec: SHA-256(name || 0x0A || 0x01 || pubkey)[:4].
    kid = hashlib.sha256(name.encode() + b"\n\x01" + pub).digest()[:4]
    return f"PRIVATE+KEY+{name}+{kid.hex()}+" + base64.b64encode(b"\x01" + seed).decode()


@pytest.mark.parametrize("i", range(len(RFC8032["vectors"])))
def test_ed25519_sign_vectors(i: int) -> None:
    vec = RFC8032["vectors"][i]
    seed, pub = bytes.fromhex(vec["seed_hex"]), bytes.fromhex(vec["public_key_hex"])
    msg, sig = bytes.fromhex(vec["message_hex"]), bytes.fromhex(vec["signature_hex"])
    signer = parse_signer_key(_skey_for(seed, pub))
    assert signer.public_key == pub
    assert signer.key_id == key_id("vector", 1, pub)
    assert signer.sign(msg) == sig
    assert ed25519_verify(pub, msg, sig)
    assert signer.verifier().verify(msg, sig)
    if msg:
        assert not ed25519_verify(pub, msg[:-1], sig)
    assert not ed25519_verify(pub, msg, bytes([sig[0] ^ 1]) + sig[1:])


def _wycheproof_cases() -> list[tuple[str, str, str, str, str]]:
    out = []
    for group in WYCHEPROOF["testGroups"]:
        pk = group["publicKey"]["pk"]
        for t in group["tests"]:
            out.append((f"tc{t['tcId']}", pk, t["msg"], t["sig"], t["result"]))
    return out


WYCHEPROOF_CASES = _wycheproof_cases()


def test_wycheproof_count() -> None:
    assert len(WYCHEPROOF_CASES) == WYCHEPROOF["numberOfTests"] == 151


@pytest.mark.parametrize(("tc", "pk", "msg", "sig", "result"), WYCHEPROOF_CASES, ids=lambda x: "")
def test_wycheproof_ed25519(tc: str, pk: str, msg: str, sig: str, result: str) -> None:
    assert result in ("valid", "invalid")
    got = ed25519_verify(bytes.fromhex(pk), bytes.fromhex(msg), bytes.fromhex(sig))
    assert got is (result == "valid"), tc


# -- signed notes --------------------------------------------------------------------------

NOTES = _load("signed_note_vectors.json")


def test_go_sumdb_note_resigns_byte_for_byte() -> None:
    g = NOTES["golang_sumdb_note"]
    signer = parse_signer_key(g["skey"])
    verifier = parse_verifier_key(g["vkey"])
    assert signer.skey == g["skey"]
    assert verifier.vkey == g["vkey"]
    assert signer.verifier() == verifier
    assert sign_note(g["text"], signer) == g["signed_note"]
    opened = open_note(g["signed_note"], [verifier])
    assert opened.text == g["text"]
    assert opened.verified_names == ("PeterNeumann",)


@pytest.mark.parametrize("bad", NOTES["golang_sumdb_note"]["bad_vkeys"], ids=lambda b: b["why"])
def test_go_sumdb_bad_vkeys(bad: dict[str, str]) -> None:
    with pytest.raises(NoteError):
        parse_verifier_key(bad["vkey"])


def test_c2sp_signed_note_example_verifies() -> None:
    ex = NOTES["c2sp_signed_note_example"]
    opened = open_note(ex["signed_note"], [parse_verifier_key(ex["vkey"])])
    assert opened.text == "This is an example message.\n"
    # One changed character in the text breaks the signature.
    with pytest.raises(NoteError, match="does not verify"):
        open_note(
            ex["signed_note"].replace("example", "exampel", 1), [parse_verifier_key(ex["vkey"])]
        )


def test_c2sp_checkpoint_example_parses() -> None:
    note = NOTES["c2sp_checkpoint_format_example_unverifiable"]["checkpoint"]
    text = note[: note.rindex("\n\n") + 1]
    cp = parse_checkpoint(text)
    assert cp.origin == "example.com/behind-the-sofa"
    assert cp.size == 20852163
    assert cp.root_hash == _b64("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
    assert cp.extensions == ()
    assert cp.text() == text
    with pytest.raises(NoteError, match="no signature by a trusted key"):
        open_note(note, [parse_verifier_key(NOTES["c2sp_signed_note_example"]["vkey"])])


# -- Sigstore Rekor receipts ----------------------------------------------------------------

REKOR = _load("sigstore_rekor_receipts.json")


def _rekor_log_verifier(case: dict[str, Any], name: str) -> Any:
    der = _b64(case["log_key"]["spki_der_b64"])
    if case["log_key"]["keyDetails"] == "PKIX_ED25519":
        key = serialization.load_der_public_key(der)
        assert isinstance(key, Ed25519PublicKey)
        raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        # v2 key ID: SHA-256(origin || 0x0A || 0x01 || raw key)[:4], computed here.
        kid = hashlib.sha256(name.encode() + b"\n\x01" + raw).digest()[:4]
        return Ed25519Verifier(name, kid, raw)
    assert case["log_key"]["keyDetails"] == "PKIX_ECDSA_P256_SHA_256"
    verifier = ecdsa_verifier(name, der)
    # v1 key ID is SHA-256(SPKI DER)[:4], which is also the first 4 bytes of the log ID.
    assert verifier.key_id == hashlib.sha256(der).digest()[:4]
    assert verifier.key_id == _b64(case["log_key"]["logId_keyId_b64"])[:4]
    return verifier


@pytest.mark.parametrize("case", REKOR["cases"], ids=lambda c: c["name"])
def test_rekor_inclusion_proof(case: dict[str, Any]) -> None:
    entry = case["tlog_entry"]
    ip = entry["inclusionProof"]
    leaf = leaf_hash(_b64(entry["canonicalizedBody"]))
    index, size = int(ip["logIndex"]), int(ip["treeSize"])
    proof = [_b64(h) for h in ip["hashes"]]
    verify_inclusion(leaf, index, size, proof, _b64(ip["rootHash"]))
    with pytest.raises(ProofError):
        verify_inclusion(leaf, index, size, proof, _b64(ip["rootHash"])[::-1])
    with pytest.raises(ProofError):
        verify_inclusion(leaf, index - 1, size, proof, _b64(ip["rootHash"]))


REKOR_WITH_CHECKPOINT = [
    c for c in REKOR["cases"] if "checkpoint" in c["tlog_entry"]["inclusionProof"]
]


def test_rekor_cases_with_checkpoints() -> None:
    assert [c["name"] for c in REKOR_WITH_CHECKPOINT] == [
        "rekor_v1_staging_hashedrekord",
        "rekor_v2_staging_dsse",
    ]


@pytest.mark.parametrize("case", REKOR_WITH_CHECKPOINT, ids=lambda c: c["name"])
def test_rekor_checkpoint_signature_and_root(case: dict[str, Any]) -> None:
    ip = case["tlog_entry"]["inclusionProof"]
    envelope = ip["checkpoint"]["envelope"]
    name = case["log_key"]["baseUrl"].removeprefix("https://")
    verifier = _rekor_log_verifier(case, name)
    opened = open_note(envelope, [verifier])
    assert opened.verified_names == (name,)
    cp = parse_checkpoint(opened.text)
    assert cp.size == int(ip["treeSize"])
    assert cp.root_hash == _b64(ip["rootHash"])
    # Witness cosignatures (other names) are present but ignored.
    assert len(opened.signatures) == (4 if "v2" in case["name"] else 1)
    # A tampered tree size invalidates the log's signature.
    tampered = envelope.replace(f"\n{ip['treeSize']}\n", f"\n{int(ip['treeSize']) + 1}\n", 1)
    with pytest.raises(NoteError, match="does not verify"):
        open_note(tampered, [verifier])


@pytest.mark.parametrize("case", REKOR_WITH_CHECKPOINT, ids=lambda c: c["name"])
def test_rekor_as_tlog_proof_through_the_facade(case: dict[str, Any]) -> None:
    entry = case["tlog_entry"]
    ip = entry["inclusionProof"]
    envelope = ip["checkpoint"]["envelope"]
    name = case["log_key"]["baseUrl"].removeprefix("https://")
    origin = envelope.split("\n", 1)[0]
    proof_file = format_tlog_proof(int(ip["logIndex"]), [_b64(h) for h in ip["hashes"]], envelope)
    body = _b64(entry["canonicalizedBody"])
    got = verify_inclusion_proof(proof_file, body, [_rekor_log_verifier(case, name)], origin=origin)
    assert got.checkpoint.size == int(ip["treeSize"])
    assert got.index == int(ip["logIndex"])
    with pytest.raises(ProofError, match="inclusion"):
        verify_inclusion_proof(
            proof_file, body + b" ", [_rekor_log_verifier(case, name)], origin=origin
        )


def _set_payload(entry: dict[str, Any]) -> bytes:
    # The SET signs the RFC 8785 JSON of these four fields (see SOURCES.md / the
    # vector's _source note); logIndex here is the global index.
    return canonical_bytes(
        {
            "body": entry["canonicalizedBody"],
            "integratedTime": int(entry["integratedTime"]),
            "logID": _b64(entry["logId"]["keyId"]).hex(),
            "logIndex": int(entry["logIndex"]),
        }
    )


REKOR_WITH_SET = [c for c in REKOR["cases"] if "inclusionPromise" in c["tlog_entry"]]


def test_rekor_cases_with_set() -> None:
    assert [c["name"] for c in REKOR_WITH_SET] == [
        "rekor_v1_staging_hashedrekord",
        "rekor_v1_production_hashedrekord",
    ]


@pytest.mark.parametrize("case", REKOR_WITH_SET, ids=lambda c: c["name"])
def test_rekor_signed_entry_timestamp(case: dict[str, Any]) -> None:
    entry = case["tlog_entry"]
    verifier = ecdsa_verifier("rekor", _b64(case["log_key"]["spki_der_b64"]))
    sig = _b64(entry["inclusionPromise"]["signedEntryTimestamp"])
    assert verifier.verify(_set_payload(entry), sig)
    shifted = {**entry, "logIndex": str(int(entry["logIndex"]) + 1)}
    assert not verifier.verify(_set_payload(shifted), sig)
