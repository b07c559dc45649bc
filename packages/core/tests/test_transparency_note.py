"""Signed-note keys, notes and checkpoints: round trips, spec arithmetic, and refusals."""

from __future__ import annotations

import base64
import contextlib
import hashlib
from pathlib import Path

import pytest
from cladelog.core.transparency.note import (
    MAX_SIGNATURES,
    Checkpoint,
    Ed25519Signer,
    NoteError,
    ecdsa_verifier,
    format_checkpoint,
    generate_key,
    key_id,
    open_note,
    parse_checkpoint,
    parse_signer_key,
    parse_verifier_key,
    sign_note,
)
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given, settings
from hypothesis import strategies as st

SEED_A = bytes(range(32))
SEED_B = bytes(range(32, 64))


def _keys(name: str, seed: bytes) -> tuple[Ed25519Signer, str]:
    skey, vkey = generate_key(name, seed)
    return parse_signer_key(skey), vkey


def test_key_id_is_truncated_sha256() -> None:
    pub = b"\x07" * 32
    # SHA-256("log.example" || 0x0A || 0x01 || pub)[:4]
    want = hashlib.sha256(b"log.example\n\x01" + pub).digest()[:4]
    assert key_id("log.example", 1, pub) == want
    assert key_id("log.example", 2, pub) != want


def test_generate_key_format_and_round_trip() -> None:
    skey, vkey = generate_key("oracle.example/a", SEED_A)
    signer, verifier = parse_signer_key(skey), parse_verifier_key(vkey)
    name, hexid, b64 = vkey.split("+", 2)
    assert name == "oracle.example/a"
    raw = base64.b64decode(b64)
    assert raw[0] == 1 and len(raw) == 33
    assert bytes.fromhex(hexid) == hashlib.sha256(b"oracle.example/a\n" + raw).digest()[:4]
    assert skey == f"PRIVATE+KEY+{name}+{hexid}+" + base64.b64encode(b"\x01" + SEED_A).decode()
    assert signer.verifier() == verifier
    assert verifier.key_ref == f"{name}+{hexid}"
    assert "seed" not in repr(signer) or repr(SEED_A) not in repr(signer)
    assert SEED_A.hex() not in repr(signer)


def test_generate_key_without_seed_gives_distinct_working_keys() -> None:
    s1, v1 = generate_key("k")
    _, v2 = generate_key("k")
    assert v1 != v2
    note = sign_note("hello\n", parse_signer_key(s1))
    assert open_note(note, [parse_verifier_key(v1)]).text == "hello\n"
    with pytest.raises(NoteError):
        open_note(note, [parse_verifier_key(v2)])  # same name, other key ID: unknown


@pytest.mark.parametrize(
    ("vkey", "fragment"),
    [
        ("onlyname", "expected 3"),
        ("a+b", "expected 3"),
        ("+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "name: must not be empty"),
        ("Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "spaces"),
        ("PeterNeumann+c74f20a+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "8 hex"),
        ("PeterNeumann+c74f20ag+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "8 hex"),
        ("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10T", "base64"),
        ("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq_LDE4izWy10TW", "base64"),
        ("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "does not match"),
        ("PeterNeumann+c74f20a3+", "empty"),
        ("PeterNeumann+c74f20a3+AQ==", "32 bytes"),
    ],
)
def test_parse_verifier_key_refusals(vkey: str, fragment: str) -> None:
    with pytest.raises(NoteError, match=fragment):
        parse_verifier_key(vkey)


def test_parse_verifier_key_wrong_type() -> None:
    with pytest.raises(NoteError, match="must be a string"):
        parse_verifier_key(b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda s: s.replace("PRIVATE+KEY+", "PRIVATE+KEX+"), "PRIVATE"),
        (lambda s: s.removeprefix("PRIVATE+"), "expected 5"),
        (
            lambda s: s.rsplit("+", 1)[0] + "+" + base64.b64encode(b"\x01" + SEED_B).decode(),
            "does not match",
        ),
        (lambda s: s.rsplit("+", 1)[0] + "+" + base64.b64encode(b"\x02" + SEED_A).decode(), "0x02"),
    ],
)
def test_parse_signer_key_refusals(mutate: object, fragment: str) -> None:
    skey, _ = generate_key("k.example", SEED_A)
    with pytest.raises(NoteError, match=fragment):
        parse_signer_key(mutate(skey))  # type: ignore[operator]


def test_sign_and_open_with_several_signers() -> None:
    a, va = _keys("log.example", SEED_A)
    b, vb = _keys("witness.example", SEED_B)
    note = sign_note("line one\n\nline three\n", a, b)
    text, sigs = note.split("\n\n\u2014 ", 1)[0], note.count("\u2014 ")
    assert sigs == 2
    assert note.startswith("line one\n\nline three\n\n\u2014 log.example ")
    # The signature is base64(key ID || Ed25519(text)), checked with cryptography directly.
    line = note.splitlines()[4]
    raw = base64.b64decode(line.split(" ")[2])
    assert raw[:4] == parse_verifier_key(va).key_id
    pub = parse_verifier_key(va).public_key
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    Ed25519PublicKey.from_public_bytes(pub).verify(raw[4:], b"line one\n\nline three\n")
    assert text == "line one\n\nline three"
    both = open_note(note, [parse_verifier_key(va), parse_verifier_key(vb)])
    assert both.text == "line one\n\nline three\n"
    assert both.verified_names == ("log.example", "witness.example")
    only_b = open_note(note, [parse_verifier_key(vb)])
    assert only_b.verified_names == ("witness.example",)
    assert len(only_b.signatures) == 2
    assert open_note(note.encode(), [parse_verifier_key(va)]).verified_names == ("log.example",)


def test_known_key_with_bad_signature_rejects_whole_note() -> None:
    a, va = _keys("log.example", SEED_A)
    b, vb = _keys("witness.example", SEED_B)
    good = sign_note("text\n", a)
    forged_b = sign_note("other\n", b).split("\n\n", 1)[1]  # b's signature of other text
    note = good + forged_b
    assert open_note(note, [parse_verifier_key(va)]).verified_names == ("log.example",)
    with pytest.raises(NoteError, match=r"signatures\[1\].*does not verify"):
        open_note(note, [parse_verifier_key(va), parse_verifier_key(vb)])


def test_unknown_signers_only_is_refused() -> None:
    a, _ = _keys("log.example", SEED_A)
    _, vb = _keys("log.example", SEED_B)  # same name, different key
    with pytest.raises(NoteError, match="no signature by a trusted key"):
        open_note(sign_note("t\n", a), [parse_verifier_key(vb)])


def test_non_key_objects_are_refused() -> None:
    a, _ = _keys("a", SEED_A)
    with pytest.raises(NoteError, match=r"verifiers\[0\]"):
        open_note(sign_note("t\n", a), ["a+00000000+AA=="])  # type: ignore[list-item]
    with pytest.raises(NoteError, match=r"signers\[0\]"):
        sign_note("t\n", object())  # type: ignore[arg-type]


def test_duplicate_verifiers_are_refused() -> None:
    a, va = _keys("log.example", SEED_A)
    v = parse_verifier_key(va)
    with pytest.raises(NoteError, match="duplicate key"):
        open_note(sign_note("t\n", a), [v, v])


def _sig_line(signer: Ed25519Signer, text: str) -> str:
    return sign_note(text, signer).split("\n\n")[-1]


@pytest.mark.parametrize(
    ("note", "fragment"),
    [
        ("no newline at the end", "must end with a newline"),
        ("text\n\u2014 log.example AAAA\n", "no blank line"),
        ("text\n\n", "no signature lines"),
        ("te\rxt\n\n\u2014 a AAAAAAA=\n", "control character U\\+000D"),
        ("te\x00xt\n\n\u2014 a AAAAAAA=\n", "control character U\\+0000"),
        ("text\ud800\n\n\u2014 a AAAAAAA=\n", "not valid UTF-8"),
        ("text\n\n- a AAAAAAA=\n", "em dash"),
        ("text\n\n\u2014 a b AAAAAAA=\n", "name"),
        ("text\n\n\u2014 a+b AAAAAAA=\n", "must not contain"),
        ("text\n\n\u2014 a AAAA\n", "4-byte key ID"),
        ("text\n\n\u2014 a AAAAA\n", "base64"),
        ("text\n\n\u2014 a AAAAAAB=\n", "canonical"),
    ],
)
def test_malformed_notes(note: str, fragment: str) -> None:
    _, va = _keys("a", SEED_A)
    with pytest.raises(NoteError, match=fragment):
        open_note(note, [parse_verifier_key(va)])


def test_note_bytes_must_be_utf8() -> None:
    with pytest.raises(NoteError, match="UTF-8"):
        open_note(b"\xff\n\n\xe2\x80\x94 a AAAAAAA=\n", [])


def test_signature_count_limit() -> None:
    a, va = _keys("a", SEED_A)
    note = sign_note("t\n", a)
    extra = "\u2014 other AAAAAAA=\n" * MAX_SIGNATURES
    with pytest.raises(NoteError, match=f"more than {MAX_SIGNATURES}"):
        open_note(note + extra, [parse_verifier_key(va)])
    # 16 signatures must be accepted (signed-note spec minimum).
    assert open_note(note + "\u2014 other AAAAAAA=\n" * 15, [parse_verifier_key(va)]).text == "t\n"


def test_sign_note_refusals() -> None:
    a, _ = _keys("a", SEED_A)
    with pytest.raises(NoteError, match="newline"):
        sign_note("no newline", a)
    with pytest.raises(NoteError, match="control"):
        sign_note("tab\there\n", a)
    with pytest.raises(NoteError, match="at least one signer"):
        sign_note("ok\n")


def test_ecdsa_note_verifier_round_trip() -> None:
    priv = ec.derive_private_key(123456789, ec.SECP256R1())
    der = priv.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    v = ecdsa_verifier("ecdsa.example", der)
    assert v.key_id == hashlib.sha256(der).digest()[:4]

    class _Signer:
        name = "ecdsa.example"
        key_id = v.key_id

        def sign(self, message: bytes) -> bytes:
            from cryptography.hazmat.primitives import hashes

            return priv.sign(message, ec.ECDSA(hashes.SHA256()))

    note = sign_note("ecdsa text\n", _Signer())
    assert open_note(note, [v]).text == "ecdsa text\n"
    with pytest.raises(NoteError, match="P-256"):
        ecdsa_verifier(
            "x",
            ec.derive_private_key(5, ec.SECP384R1())
            .public_key()
            .public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        )
    with pytest.raises(NoteError, match="DER"):
        ecdsa_verifier("x", b"not der")


# -- checkpoints ----------------------------------------------------------------------------


def test_checkpoint_format_and_parse() -> None:
    root = bytes(range(32))
    text = format_checkpoint("log.example/1", 42, root, ["ext one", "ext two"])
    b64 = base64.b64encode(root).decode()
    assert text == f"log.example/1\n42\n{b64}\next one\next two\n"
    assert parse_checkpoint(text) == Checkpoint("log.example/1", 42, root, ("ext one", "ext two"))
    assert format_checkpoint("o", 0, root) == f"o\n0\n{b64}\n"
    assert parse_checkpoint(format_checkpoint("o", 0, root)).size == 0


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("o\n1\n", "at least 3 lines"),
        ("o\n01\n{r}\n", "leading zeros"),
        ("o\n+1\n{r}\n", "decimal"),
        ("o\n 1\n{r}\n", "decimal"),
        ("o\n1_0\n{r}\n", "decimal"),
        ("o\n\u0661\n{r}\n", "decimal"),
        ("o\n-1\n{r}\n", "decimal"),
        ("o\n18446744073709551616\n{r}\n", "2\\*\\*64-1"),
        ("o\n1\nAAAA\n", "32 bytes"),
        ("o\n1\n{r}\n\next\n", "must not be empty"),
        ("\n1\n{r}\n", "must not be empty"),
        ("o\n1\n{r}", "newline"),
    ],
)
def test_checkpoint_refusals(text: str, fragment: str) -> None:
    r = base64.b64encode(b"\x01" * 32).decode()
    with pytest.raises(NoteError, match=fragment):
        parse_checkpoint(text.replace("{r}", r))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("", 1, b"\x00" * 32), "origin: must not be empty"),
        (("a\nb", 1, b"\x00" * 32), "origin"),
        (("o", -1, b"\x00" * 32), "size"),
        (("o", True, b"\x00" * 32), "size"),
        (("o", 1, b"\x00" * 31), "root"),
        (("o", 1, b"\x00" * 32, [""]), r"extensions\[0\]"),
    ],
)
def test_format_checkpoint_refusals(args: tuple[object, ...], fragment: str) -> None:
    with pytest.raises(NoteError, match=fragment):
        format_checkpoint(*args)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_open_note_never_crashes(text: str) -> None:
    _, va = _keys("a", SEED_A)
    with contextlib.suppress(NoteError):
        open_note(text, [parse_verifier_key(va)])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_parse_checkpoint_and_keys_never_crash(text: str) -> None:
    for fn in (parse_checkpoint, parse_verifier_key, parse_signer_key):
        with contextlib.suppress(NoteError):
            fn(text)


@settings(max_examples=100, deadline=None)
@given(
    st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40),
    st.integers(0, 2**64 - 1),
    st.binary(min_size=32, max_size=32),
)
def test_signed_checkpoint_round_trip(origin: str, size: int, root: bytes) -> None:
    a, va = _keys("log.example", SEED_A)
    note = sign_note(format_checkpoint(origin, size, root), a)
    assert parse_checkpoint(open_note(note, [parse_verifier_key(va)]).text) == Checkpoint(
        origin, size, root
    )


def test_key_files_are_written_once_and_the_private_one_is_private(tmp_path: Path) -> None:
    import stat

    import pytest
    from cladelog.core import InputError
    from cladelog.core.transparency import generate_key, write_key_files

    skey, vkey = generate_key("example.org/k")
    private, public = tmp_path / "k.key", tmp_path / "k.pub"
    write_key_files(skey, vkey, private, public)
    assert private.read_text() == skey + "\n" and public.read_text() == vkey + "\n"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    other, _ = generate_key("example.org/k")
    with pytest.raises(InputError, match="already exists; refusing to overwrite a key"):
        write_key_files(other, vkey, private, tmp_path / "new.pub")
    assert private.read_text() == skey + "\n" and not (tmp_path / "new.pub").exists()
    with pytest.raises(InputError, match="--out: cannot write the key files"):
        write_key_files(skey, vkey, tmp_path / "no" / "k.key", tmp_path / "no" / "k.pub")
