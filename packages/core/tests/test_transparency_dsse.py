"""DSSE envelopes around in-toto Statements: PAE, signing, and verification order and refusals."""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any

import pytest
from cladelog.core.transparency.dsse import (
    PAYLOAD_TYPE_INTOTO,
    STATEMENT_TYPE_V1,
    EnvelopeError,
    make_statement,
    pae,
    sign_envelope,
    verify_envelope,
    verify_envelope_bytes,
)
from cladelog.core.transparency.note import Ed25519Signer, generate_key, parse_signer_key
from hypothesis import given, settings
from hypothesis import strategies as st

ORACLE = parse_signer_key(generate_key("oracle.example", bytes(range(32)))[0])
OTHER = parse_signer_key(generate_key("other.example", bytes(range(1, 33)))[0])
KEYID = ORACLE.verifier().key_ref
VERIFIERS = {KEYID: ORACLE.verifier().verify}

SUBJECT = [{"name": "candidate-7", "digest": {"sha256": "ab" * 32}}]
PREDICATE = {"seq": 3, "verdict": "accept", "score": 0.5}


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _statement_bytes() -> bytes:
    # Canonical form written out by hand (keys sorted, no spaces):
    return (
        b'{"_type":"https://in-toto.io/Statement/v1",'
        b'"predicate":{"score":0.5,"seq":3,"verdict":"accept"},'
        b'"predicateType":"https://cladelog.example/register-entry/v1",'
        b'"subject":[{"digest":{"sha256":"' + b"ab" * 32 + b'"},"name":"candidate-7"}]}'
    )


def _envelope(payload: bytes | None = None, signer: Ed25519Signer = ORACLE) -> dict[str, Any]:
    return sign_envelope(
        _statement_bytes() if payload is None else payload,
        PAYLOAD_TYPE_INTOTO,
        signer.sign,
        signer.verifier().key_ref,
    )


def test_pae_layout() -> None:
    # "DSSEv1" SP len(type)=3 SP "a/b" SP len(body)=5 SP body
    assert pae("a/b", b"hello") == b"DSSEv1 3 a/b 5 hello"
    assert pae("", b"") == b"DSSEv1 0  0 "
    # Lengths count UTF-8 bytes: "\u00e9" is 2 bytes.
    assert pae("\u00e9", b"\x00\xff") == b"DSSEv1 2 \xc3\xa9 2 \x00\xff"
    with pytest.raises(EnvelopeError):
        pae(1, b"")  # type: ignore[arg-type]


def test_make_statement_shape() -> None:
    st_ = make_statement(SUBJECT, "https://cladelog.example/register-entry/v1", PREDICATE)
    assert st_ == {
        "_type": STATEMENT_TYPE_V1,
        "subject": SUBJECT,
        "predicateType": "https://cladelog.example/register-entry/v1",
        "predicate": PREDICATE,
    }
    assert STATEMENT_TYPE_V1 == "https://in-toto.io/Statement/v1"
    with pytest.raises(EnvelopeError, match="subject"):
        make_statement([], "t", {})
    with pytest.raises(EnvelopeError, match=r"subject\[0\].digest"):
        make_statement([{"name": "x", "digest": {}}], "t", {})
    with pytest.raises(EnvelopeError, match="predicateType"):
        make_statement(SUBJECT, "", {})


def test_sign_and_verify_round_trip() -> None:
    env = _envelope()
    assert set(env) == {"payload", "payloadType", "signatures"}
    assert env["payloadType"] == "application/vnd.in-toto+json"
    assert base64.b64decode(env["payload"]) == _statement_bytes()
    sig = base64.b64decode(env["signatures"][0]["sig"])
    # The signature covers PAE, not the JSON or the raw payload.
    assert ORACLE.verifier().verify(pae(PAYLOAD_TYPE_INTOTO, _statement_bytes()), sig)
    assert not ORACLE.verifier().verify(_statement_bytes(), sig)
    got = verify_envelope(env, VERIFIERS)
    assert got.payload == _statement_bytes()
    assert got.keyids == (KEYID,)
    assert got.statement["predicate"] == PREDICATE
    assert got.predicate == PREDICATE


def test_verifiers_must_be_a_mapping() -> None:
    with pytest.raises(EnvelopeError, match="verifiers"):
        verify_envelope(_envelope(), [ORACLE.verifier().verify])  # type: ignore[arg-type]


def test_unknown_keyid_is_refused() -> None:
    env = _envelope(signer=OTHER)
    with pytest.raises(EnvelopeError, match="no signature by a trusted keyid"):
        verify_envelope(env, VERIFIERS)


def test_unknown_extra_signature_is_ignored_but_bad_known_one_rejects() -> None:
    env = _envelope()
    other = _envelope(signer=OTHER)["signatures"][0]
    assert verify_envelope(
        {**env, "signatures": [other, *env["signatures"]]}, VERIFIERS
    ).keyids == (KEYID,)
    # OTHER's signature relabelled with the oracle's keyid must fail, even next to a good one.
    forged = {"keyid": KEYID, "sig": other["sig"]}
    with pytest.raises(EnvelopeError, match=r"signatures\[1\].*does not verify"):
        verify_envelope({**env, "signatures": [*env["signatures"], forged]}, VERIFIERS)


def test_signature_checked_before_payload_is_parsed() -> None:
    env = _envelope(payload=b"{not json")
    env["signatures"][0]["sig"] = _b64(b"\x00" * 64)
    with pytest.raises(EnvelopeError, match="does not verify"):
        verify_envelope(env, VERIFIERS)


def test_tampering_is_detected() -> None:
    env = _envelope()
    tampered = _statement_bytes().replace(b'"seq":3', b'"seq":4')
    with pytest.raises(EnvelopeError, match="does not verify"):
        verify_envelope({**env, "payload": _b64(tampered)}, VERIFIERS)
    with pytest.raises(EnvelopeError, match="payloadType"):
        verify_envelope({**env, "payloadType": "application/json"}, VERIFIERS)
    # Changing the type and re-pointing verification at it still breaks the PAE signature.
    with pytest.raises(EnvelopeError, match="does not verify"):
        verify_envelope_bytes({**env, "payloadType": "application/json"}, VERIFIERS)


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda e: [1], "envelope: must be an object"),
        (lambda e: {**e, "extra": 1}, "unexpected members"),
        (lambda e: {**e, "payload": "not base64!"}, "envelope.payload: not valid base64"),
        (lambda e: {**e, "payload": "QR=="}, "envelope.payload: not canonical"),
        (lambda e: {**e, "payload": "QQ"}, "envelope.payload: not valid base64"),
        (lambda e: {**e, "payload": "-_8="}, "envelope.payload: not valid base64"),
        (lambda e: {**e, "payload": 5}, "envelope.payload: must be a base64 string"),
        (lambda e: {**e, "payloadType": None}, "payloadType: must be a string"),
        (lambda e: {**e, "signatures": []}, "signatures: must be a non-empty list"),
        (lambda e: {**e, "signatures": {}}, "signatures: must be a non-empty list"),
        (lambda e: {**e, "signatures": ["x"]}, r"signatures\[0\]: must be an object"),
        (lambda e: {**e, "signatures": [{"keyid": 1, "sig": "AA=="}]}, "keyid: must be a string"),
        (lambda e: {**e, "signatures": [{"keyid": KEYID, "sig": "A"}]}, r"signatures\[0\].sig"),
        (lambda e: {**e, "signatures": [{"keyid": KEYID}]}, r"signatures\[0\].sig"),
        (
            lambda e: {**e, "signatures": [{**e["signatures"][0], "cert": "x"}]},
            "unexpected members",
        ),
    ],
)
def test_malformed_envelopes(mutate: Any, fragment: str) -> None:
    with pytest.raises(EnvelopeError, match=fragment):
        verify_envelope(mutate(_envelope()), VERIFIERS)


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        (b'{"b":1,"a":2}', "not in RFC 8785 canonical form"),
        (b'{"a": 1}', "not in RFC 8785 canonical form"),
        (b'{"a":1.0}', "not in RFC 8785 canonical form"),
        (b'{"a":"\\u0041"}', "not in RFC 8785 canonical form"),
        (b'{"a":1,"a":1}', "duplicate member 'a'"),
        (b'{"a":NaN}', "NaN is not valid JSON"),
        (b'{"a":-Infinity}', "-Infinity is not valid JSON"),
        (b'{"a":1e999}', "out of range for a double"),
        (b'{"a":9007199254740993}', "safe range"),
        (b'{"a":"\\ud800"}', "lone surrogate"),
        (b"\xff\xfe", "not valid UTF-8"),
        (b'"\xc3\xa9"', "statement: must be a JSON object"),
        ('{"a":1}'.encode("utf-16"), "not valid UTF-8"),
        (b"[" * 100 + b"]" * 100, "nested deeper"),
        (b"[" * 100_000 + b"]" * 100_000, "nested"),
        (b"{not json", "not valid JSON"),
        (b'{"_type":"https://in-toto.io/Statement/v0.1"}', "statement._type"),
        (b'{"_type":"https://in-toto.io/Statement/v1","subject":[]}', "statement.subject"),
        (
            b'{"_type":"https://in-toto.io/Statement/v1","predicateType":"t",'
            b'"subject":[{"digest":{"sha256":"00"}}]}',
            None,
        ),
        (
            b'{"_type":"https://in-toto.io/Statement/v1","predicate":[],"predicateType":"t",'
            b'"subject":[{"digest":{"sha256":"00"}}]}',
            "statement.predicate",
        ),
    ],
)
def test_payload_must_be_canonical_statement(payload: bytes, fragment: str | None) -> None:
    env = _envelope(payload=payload)
    if fragment is None:
        assert verify_envelope(env, VERIFIERS).predicate == {}
        return
    with pytest.raises(EnvelopeError, match=fragment):
        verify_envelope(env, VERIFIERS)


def test_generic_payload_types_skip_json_parsing() -> None:
    env = sign_envelope(b"\x00\x01binary", "application/octet-stream", ORACLE.sign, KEYID)
    got = verify_envelope_bytes(env, VERIFIERS, payload_type="application/octet-stream")
    assert got.payload == b"\x00\x01binary"
    with pytest.raises(EnvelopeError, match="payloadType"):
        verify_envelope(env, VERIFIERS)


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.binary(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        ),
        max_leaves=12,
    )
)
def test_hostile_envelopes_only_raise_envelope_error(value: Any) -> None:
    candidates = [value]
    if isinstance(value, dict):
        candidates.append({**_envelope(), **value})
    for env in candidates:
        with contextlib.suppress(EnvelopeError):
            verify_envelope(env, VERIFIERS)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_hostile_signed_payloads_only_raise_envelope_error(payload: bytes) -> None:
    with contextlib.suppress(EnvelopeError):
        verify_envelope(_envelope(payload=payload), VERIFIERS)


def test_envelope_json_round_trip_is_stable() -> None:
    env = _envelope()
    again = json.loads(json.dumps(env))
    assert verify_envelope(again, VERIFIERS).payload == _statement_bytes()


_PREDICATE_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(-(2.0**53) + 1, 2.0**53 - 1) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(_PREDICATE_VALUES)
def test_a_signed_canonical_statement_parses_to_what_json_reads(value: Any) -> None:
    """Any canonical statement (written by the third-party rfc8785 encoder) verifies, and its
    predicate is what the standard library's parser reads from the bytes, types included
    (1 stays an int, 1.5 a float, true a bool)."""
    import rfc8785

    statement = {"_type": STATEMENT_TYPE_V1, "subject": SUBJECT, "predicateType": "t",
                 "predicate": {"v": value}}
    payload = rfc8785.dumps(statement)
    got = verify_envelope(_envelope(payload=payload), VERIFIERS).statement
    expected = json.loads(payload)

    def typed(v: Any) -> Any:  # == alone would let True equal 1 and 1 equal 1.0
        if isinstance(v, dict):
            return {k: typed(x) for k, x in v.items()}
        if isinstance(v, list):
            return [typed(x) for x in v]
        return (type(v).__name__, v)

    assert typed(got) == typed(expected)
