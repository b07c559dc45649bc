"""Proof file formats and the third-party verification functions, end to end."""

from __future__ import annotations

import ast
import base64
import contextlib
import sys
from pathlib import Path

import pytest
from cladelog.core.errors import InputError, VerificationError
from cladelog.core.transparency import verify as facade
from cladelog.core.transparency.merkle import MerkleTree, ProofError, leaf_hash
from cladelog.core.transparency.note import (
    Ed25519Signer,
    NoteError,
    NoteSignatureError,
    format_checkpoint,
    generate_key,
    parse_signer_key,
    sign_note,
)
from cladelog.core.transparency.proof import (
    CONSISTENCY_HEADER,
    TLOG_PROOF_HEADER,
    ProofFileError,
    format_consistency_proof,
    format_tlog_proof,
    parse_consistency_proof,
    parse_tlog_proof,
)
from cladelog.core.transparency.verify import (
    CheckpointRefused,
    load_verifiers,
    verify_consistency_proof,
    verify_inclusion_proof,
)
from hypothesis import given, settings
from hypothesis import strategies as st

ORIGIN = "register.cladelog.example/main"
LOG_SKEY, LOG_VKEY = generate_key(ORIGIN, bytes(range(100, 132)))
ORACLE_SKEY, ORACLE_VKEY = generate_key("oracle.cladelog.example", bytes(range(32)))
ROGUE_SKEY, ROGUE_VKEY = generate_key(ORIGIN, bytes(range(7, 39)))
LOG = parse_signer_key(LOG_SKEY)
ORACLE = parse_signer_key(ORACLE_SKEY)
ROGUE = parse_signer_key(ROGUE_SKEY)


def _checkpoint(
    tree: MerkleTree, size: int, signer: Ed25519Signer = LOG, origin: str = ORIGIN
) -> str:
    return sign_note(format_checkpoint(origin, size, tree.root(size)), signer)


def _tree(n: int) -> tuple[MerkleTree, list[bytes]]:
    leaves = [b"entry %d" % i for i in range(n)]
    tree = MerkleTree()
    for leaf in leaves:
        tree.append(leaf)
    return tree, leaves


# -- tlog-proof format ----------------------------------------------------------------------

SPEC_EXAMPLE = (
    "c2sp.org/tlog-proof@v1\n"
    "extra YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6kYXJ3aW4tYXJ\n"
    "index 73894\n"
    "gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=\n"
    "B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=\n"
    "EKNzoDWG8LGC0Yp9o+sv3qllpMP9uHQ9B20KNL+Q1zs=\n"
    "RoopEkOdqkYqMB4MJXrbt/hMjOxsVn0IrWjpz1ZMMes=\n"
    "AHCioX9nLjsrse6YhjRRmk1WUEirVOLLRoOQ6vfO5vk=\n"
    "\n"
    "example.com/fancylog\n"
    "109482\n"
    "sFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=\n"
    "\n"
    "\u2014 example.com/fancylog hI2DJw[...]1roloI=\n"
    "\u2014 witness1.example mJirIklj[...]qY9v2B/5bg==\n"
)


def test_parse_spec_example_layout() -> None:
    # The C2SP tlog-proof example (its signatures are elided, so it only parses).
    p = parse_tlog_proof(SPEC_EXAMPLE)
    assert p.index == 73894
    assert len(p.proof) == 5
    assert p.proof[0] == base64.b64decode("gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=")
    assert p.extra == base64.b64decode("YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6kYXJ3aW4tYXJ")
    assert p.checkpoint.startswith("example.com/fancylog\n109482\n")
    assert format_tlog_proof(p.index, p.proof, p.checkpoint, p.extra) == SPEC_EXAMPLE


def test_tlog_proof_round_trip_without_extra() -> None:
    tree, _ = _tree(5)
    cp = _checkpoint(tree, 5)
    text = format_tlog_proof(2, tree.inclusion_proof(2), cp)
    lines = text.split("\n")
    assert lines[0] == TLOG_PROOF_HEADER and lines[1] == "index 2"
    assert lines[2] == base64.b64encode(tree.inclusion_proof(2)[0]).decode()
    parsed = parse_tlog_proof(text)
    assert (parsed.index, list(parsed.proof), parsed.checkpoint, parsed.extra) == (
        2,
        tree.inclusion_proof(2),
        cp,
        None,
    )
    # A one-leaf tree has an empty audit path: the index line is followed by the blank line.
    one, _ = _tree(1)
    assert format_tlog_proof(0, [], _checkpoint(one, 1)).startswith(
        f"{TLOG_PROOF_HEADER}\nindex 0\n\n"
    )


CP = "o\n1\n" + base64.b64encode(b"\x00" * 32).decode() + "\n\n\u2014 o AAAAAAA=\n"
H = base64.b64encode(b"\x11" * 32).decode()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("c2sp.org/tlog-proof@v2\nindex 0\n\n" + CP, "line 1"),
        (TLOG_PROOF_HEADER + "\n\n" + CP, "index"),
        (TLOG_PROOF_HEADER + "\nindex 01\n\n" + CP, "index"),
        (TLOG_PROOF_HEADER + "\nindex -1\n\n" + CP, "index"),
        (TLOG_PROOF_HEADER + "\nindex 18446744073709551616\n\n" + CP, "index"),
        (TLOG_PROOF_HEADER + "\nindex 1\n" + H[:-4] + "\n\n" + CP, r"proof\[0\]: must be 32"),
        (TLOG_PROOF_HEADER + "\nindex 1\n" + H + "\n" + CP, r"proof\[1\]"),
        (TLOG_PROOF_HEADER + "\nindex 1\n" + H, "missing the empty line"),
        (TLOG_PROOF_HEADER + "\nextra %%\nindex 1\n\n" + CP, "extra: not valid base64"),
        (TLOG_PROOF_HEADER + "\nindex 1\n\n", "checkpoint: not a signed note"),
        (TLOG_PROOF_HEADER + "\nindex 1\n\no\n1\nx\n\n", "no signature lines"),
        (TLOG_PROOF_HEADER + "\nindex 1\n\n" + CP.replace("o\n", "o\r\n", 1), "control"),
        (TLOG_PROOF_HEADER + "\nindex 1\n" + (H + "\n") * 129 + "\n" + CP, "more than 128"),
    ],
)
def test_parse_tlog_proof_refusals(text: str, fragment: str) -> None:
    with pytest.raises(ProofFileError, match=fragment):
        parse_tlog_proof(text)


def test_format_tlog_proof_refusals() -> None:
    with pytest.raises(ProofFileError, match="index"):
        format_tlog_proof(-1, [], CP)
    with pytest.raises(ProofFileError, match=r"proof\[0\]"):
        format_tlog_proof(0, [b"short"], CP)
    with pytest.raises(ProofFileError, match="checkpoint"):
        format_tlog_proof(0, [], "not a note")
    with pytest.raises(ProofFileError, match="proof file"):
        parse_tlog_proof(b"bytes")  # type: ignore[arg-type]


def _consistency(tree: MerkleTree, old: int, new: int, origin: str = ORIGIN) -> str:
    return format_consistency_proof(
        origin, old, new, tree.consistency_proof(old, new),
        _checkpoint(tree, old), _checkpoint(tree, new),
    )


def test_consistency_file_round_trip() -> None:
    tree, _ = _tree(9)
    old, new = _checkpoint(tree, 3), _checkpoint(tree, 9)
    proof = tree.consistency_proof(3, 9)
    text = format_consistency_proof(ORIGIN, 3, 9, proof, old, new)
    # The documented layout, line by line.
    lines = text.split("\n")
    assert lines[:4] == [CONSISTENCY_HEADER, f"origin {ORIGIN}", "old 3", "new 9"]
    assert lines[4 : 4 + len(proof)] == [base64.b64encode(h).decode() for h in proof]
    assert lines[4 + len(proof)] == ""
    assert text.endswith("\n\n" + new)
    assert "\n".join(lines[5 + len(proof) :]) == old + "\n" + new
    parsed = parse_consistency_proof(text)
    assert (parsed.origin, parsed.old_size, parsed.new_size) == (ORIGIN, 3, 9)
    assert (list(parsed.proof), parsed.old_checkpoint, parsed.new_checkpoint) == (proof, old, new)
    # Equal sizes: no hash lines at all.
    same = format_consistency_proof(ORIGIN, 9, 9, [], new, new)
    assert same.startswith(f"{CONSISTENCY_HEADER}\norigin {ORIGIN}\nold 9\nnew 9\n\n")
    assert parse_consistency_proof(same).proof == ()


def test_format_consistency_refusals() -> None:
    for args, fragment in [
        (("", 1, 2), "origin"),
        (("a\nb", 1, 2), "origin"),
        ((ORIGIN, 0, 2), "old_size"),
        ((ORIGIN, 3, 2), "larger"),
        ((ORIGIN, 1, True), "new_size"),
    ]:
        with pytest.raises(ProofFileError, match=fragment):
            format_consistency_proof(*args, [], CP, CP)  # type: ignore[arg-type]


HEAD = CONSISTENCY_HEADER + "\norigin o\nold 1\nnew 2\n"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("other\n" + H + "\n\n" + CP + "\n" + CP, "line 1"),
        ("cladelog/tlog-consistency-proof@v1\n" + H + "\n\n" + CP + "\n" + CP, "line 1"),
        (CONSISTENCY_HEADER + "\n" + H + "\n\n" + CP + "\n" + CP, "line 2: must be 'origin"),
        (CONSISTENCY_HEADER + "\norigin \nold 1\nnew 2\n\n" + CP + "\n" + CP, "origin"),
        (CONSISTENCY_HEADER + "\norigin o\nnew 2\nold 1\n\n" + CP + "\n" + CP, "line 3"),
        (CONSISTENCY_HEADER + "\norigin o\nold 01\nnew 2\n\n" + CP + "\n" + CP, "old"),
        (CONSISTENCY_HEADER + "\norigin o\nold 0\nnew 2\n\n" + CP + "\n" + CP, "empty tree"),
        (CONSISTENCY_HEADER + "\norigin o\nold 3\nnew 2\n\n" + CP + "\n" + CP, "larger"),
        (CONSISTENCY_HEADER + "\norigin o\nold 1\n", "line 4"),
        (HEAD + H + "\n\n" + CP, "two signed checkpoints"),
        (HEAD + H + "\n\n" + CP + "\n", "new_checkpoint"),
        (HEAD + H, "missing the empty line"),
    ],
)
def test_parse_consistency_refusals(text: str, fragment: str) -> None:
    with pytest.raises(ProofFileError, match=fragment):
        parse_consistency_proof(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parsers_never_crash(text: str) -> None:
    for fn in (parse_tlog_proof, parse_consistency_proof):
        with contextlib.suppress(ProofFileError):
            fn(text)
    for prefix in (TLOG_PROOF_HEADER + "\n", CONSISTENCY_HEADER + "\n"):
        for fn in (parse_tlog_proof, parse_consistency_proof):
            with contextlib.suppress(ProofFileError):
                fn(prefix + text)


# -- facade: inclusion ----------------------------------------------------------------------


def test_verify_inclusion_every_index_of_a_small_log() -> None:
    tree, leaves = _tree(13)
    cp = _checkpoint(tree, 13)
    for i, leaf in enumerate(leaves):
        got = verify_inclusion_proof(
            format_tlog_proof(i, tree.inclusion_proof(i), cp), leaf, [LOG_VKEY]
        )
        assert (got.index, got.checkpoint.size, got.leaf_hash) == (i, 13, leaf_hash(leaf))
        assert got.signers == (ORIGIN,)
        assert got.checkpoint.root_hash == tree.root()


def test_verify_inclusion_refusals() -> None:
    tree, leaves = _tree(6)
    cp = _checkpoint(tree, 6)
    good = format_tlog_proof(4, tree.inclusion_proof(4), cp)
    verify_inclusion_proof(good, leaves[4], LOG_VKEY)
    cases: list[tuple[str, object, list[str], str | None, str]] = [
        (good, leaves[3], [LOG_VKEY], None, "inclusion"),
        (
            format_tlog_proof(3, tree.inclusion_proof(4), cp),
            leaves[4],
            [LOG_VKEY],
            None,
            "inclusion",
        ),
        (good, leaves[4], [ORACLE_VKEY], None, "no signature by a trusted key"),
        (good, leaves[4], [ROGUE_VKEY], None, "no signature by a trusted key"),
        (good, leaves[4], [], None, "at least one trusted key"),
        (good, leaves[4], ["garbage"], None, r"log_keys\[0\]"),
        (good, leaves[4], [LOG_VKEY], "other.origin", "origin: expected"),
        (good.replace("index 4", "index 04"), leaves[4], [LOG_VKEY], None, "index"),
        (good, "text", [LOG_VKEY], None, "leaf: must be bytes"),
    ]
    for text, leaf, keys, origin, fragment in cases:
        with pytest.raises((InputError, VerificationError), match=fragment):
            verify_inclusion_proof(text, leaf, keys, origin=origin)  # type: ignore[arg-type]
    with pytest.raises(ProofError, match="inclusion"):
        verify_inclusion_proof(good, leaves[3], [LOG_VKEY])
    with pytest.raises(NoteSignatureError, match="no signature by a trusted key"):
        verify_inclusion_proof(good, leaves[4], [ROGUE_VKEY])
    with pytest.raises(ProofFileError, match="index"):
        verify_inclusion_proof(good.replace("index 4", "index 04"), leaves[4], [LOG_VKEY])


def test_checkpoint_for_a_different_size_or_forged_root_fails() -> None:
    tree, leaves = _tree(8)
    # A proof for size 8 against a (validly signed) checkpoint of size 7.
    text = format_tlog_proof(2, tree.inclusion_proof(2, 8), _checkpoint(tree, 7))
    with pytest.raises(VerificationError, match="inclusion"):
        verify_inclusion_proof(text, leaves[2], [LOG_VKEY])
    # A checkpoint whose body was edited after signing.
    cp = _checkpoint(tree, 8).replace("\n8\n", "\n9\n", 1)
    with pytest.raises(VerificationError, match="does not verify"):
        verify_inclusion_proof(
            format_tlog_proof(2, tree.inclusion_proof(2), cp), leaves[2], [LOG_VKEY]
        )


def test_origin_must_name_a_signer_unless_given() -> None:
    tree, leaves = _tree(4)
    cp = _checkpoint(tree, 4, origin="some other origin")
    text = format_tlog_proof(1, tree.inclusion_proof(1), cp)
    with pytest.raises(VerificationError, match="not the name of a key that signed it"):
        verify_inclusion_proof(text, leaves[1], [LOG_VKEY])
    assert (
        verify_inclusion_proof(text, leaves[1], [LOG_VKEY], origin="some other origin").index == 1
    )


def test_extra_data_is_returned_but_not_trusted() -> None:
    tree, leaves = _tree(3)
    text = format_tlog_proof(0, tree.inclusion_proof(0), _checkpoint(tree, 3), extra=b"hint")
    assert verify_inclusion_proof(text, leaves[0], [LOG_VKEY]).extra == b"hint"


# -- facade: consistency --------------------------------------------------------------------


def test_verify_consistency_between_signed_checkpoints() -> None:
    tree, _ = _tree(21)
    for old in (1, 2, 7, 8, 20, 21):
        got = verify_consistency_proof(_consistency(tree, old, 21), [LOG_VKEY])
        assert (got.old.size, got.new.size) == (old, 21)
        assert got.signers == (ORIGIN,)


def test_verify_consistency_refusals() -> None:
    tree, _ = _tree(10)
    other, _ = _tree(0)
    for i in range(10):
        other.append(b"forked %d" % i if i >= 4 else b"entry %d" % i)
    proof = tree.consistency_proof(4, 10)
    old, new = _checkpoint(tree, 4), _checkpoint(tree, 10)
    forked_new = _checkpoint(other, 10)
    def f(p: list[bytes], a: str, b: str, sizes: tuple[int, int] = (4, 10)) -> str:
        return format_consistency_proof(ORIGIN, *sizes, p, a, b)

    cases: list[tuple[str, list[str], type[Exception], str]] = [
        (f(proof, new, old, (10, 10)), [LOG_VKEY], CheckpointRefused, "new: the file says"),
        (f(proof, new, old), [LOG_VKEY], CheckpointRefused, "old: the file says size 4"),
        (f(proof, old, forked_new), [LOG_VKEY], ProofError, "consistency"),
        (f(proof[:-1], old, new), [LOG_VKEY], ProofError, "consistency"),
        (f(proof, old, _checkpoint(tree, 9)), [LOG_VKEY], CheckpointRefused, "new: the file"),
        (f(proof, old, new), [ROGUE_VKEY], NoteSignatureError, "old_checkpoint"),
        (
            f(proof, old, _checkpoint(tree, 10, origin="elsewhere")),
            [LOG_VKEY],
            CheckpointRefused,
            "new_checkpoint.origin",
        ),
        (
            format_consistency_proof("elsewhere", 4, 10, proof, old, new),
            [LOG_VKEY],
            CheckpointRefused,
            "old_checkpoint.origin",
        ),
        (f(proof, old, _checkpoint(tree, 10, signer=ROGUE)), [LOG_VKEY], NoteSignatureError,
         "new_checkpoint"),
        (f(proof, old, new), ["garbage"], NoteError, r"log_keys\[0\]"),
        (f(proof, old, new).replace("old 4", "old 04"), [LOG_VKEY], ProofFileError, "old"),
    ]
    for text, keys, cls, fragment in cases:
        with pytest.raises(cls, match=fragment):
            verify_consistency_proof(text, keys)
    with pytest.raises(CheckpointRefused, match="origin: expected"):
        verify_consistency_proof(f(proof, old, new), [LOG_VKEY], origin="other")


def test_failures_and_bad_input_are_told_apart() -> None:
    # Bad input is an InputError (exit 2), a proof that fails a VerificationError (exit 1).
    for cls in (ProofFileError, NoteError):
        assert issubclass(cls, InputError) and not issubclass(cls, VerificationError)
    for cls in (ProofError, NoteSignatureError, CheckpointRefused):
        assert issubclass(cls, VerificationError)


def test_load_verifiers_accepts_strings_and_objects() -> None:
    v = LOG.verifier()
    assert load_verifiers(LOG_VKEY) == (v,)
    assert load_verifiers([LOG_VKEY, v]) == (v, v)
    with pytest.raises(NoteError, match="iterable"):
        load_verifiers(5)  # type: ignore[arg-type]
    with pytest.raises(NoteError, match=r"keys\[0\]"):
        load_verifiers([5])  # type: ignore[list-item]


# -- the verifier can be lifted out ---------------------------------------------------------

VERIFIER_MODULES = ("merkle", "dsse", "note", "proof", "verify")


@pytest.mark.parametrize("module", VERIFIER_MODULES)
def test_verifier_modules_import_only_stdlib_cryptography_and_core_basics(module: str) -> None:
    # A third party lifts these out with core's errors, canonical and strictjson: no store,
    # no plugin machinery, no clock.
    path = Path(facade.__file__).parent / f"{module}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 1:  # a sibling verifier module
                assert node.module in VERIFIER_MODULES, f"{module}: from .{node.module}"
                continue
            if node.level == 2:  # core itself: its error tree, canonical encoding, JSON reader
                assert node.module in ("errors", "canonical", "strictjson"), (
                    f"{module}: from ..{node.module}"
                )
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top == "cryptography", f"{module}: {name}"
