"""``cladelog receipts ...``: the register's command line.

Exit codes (core conventions): 0 success; 1 a refusal or failed verification
(a bad, unknown or revoked signature, claims that disagree with the games, an
inconsistent checkpoint, a proof that does not verify); 2 bad input or usage.
Errors are one line, ``error: ...``; a refused command appends nothing. Heavy
modules are imported inside the command bodies so ``cladelog`` starts fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from cladelog.core import HELP_SETTINGS, echo_json, json_option

if TYPE_CHECKING:
    from cladelog.core.transparency.note import Ed25519Signer

    from .register import Register

__all__ = ["receipts"]


def _register() -> Register:
    from cladelog.core import pass_deployment

    from .register import Register

    def get(dep: Any) -> Any:
        return dep

    fetch: Any = pass_deployment(get)  # called without arguments: it supplies ``dep``
    return Register(fetch())


def _echo_json(doc: Any) -> None:
    click.echo(json.dumps(doc, sort_keys=True, ensure_ascii=False))


def _write_out(text: str, out: str | None) -> None:
    if out is None or out == "-":
        click.echo(text, nl=False)
        return
    from .errors import ReceiptInputError

    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ReceiptInputError(f"--out: cannot write {out!r} ({exc.strerror or exc})") from None
    click.echo(f"wrote {out}", err=True)


def _read_text(path: str) -> str:
    """A UTF-8 text file ('-' for stdin), with one-line errors (core's reader)."""
    from cladelog.core.strictjson import read_text

    return read_text(path)


def _vkeys(values: tuple[str, ...], option: str) -> list[str]:
    """Verifier keys given inline or as files holding one key per line.

    Every key is parsed here, so a malformed one is bad input (exit 2) naming
    ``option`` and where the key came from, never a failed verification (exit 1).
    A private signer key is refused without echoing it. Duplicates are dropped.
    """
    from cladelog.core.transparency.note import NoteError, parse_verifier_key

    from .errors import ReceiptInputError

    keys: dict[str, None] = {}

    def add(key: str, source: str) -> None:
        if key.startswith("PRIVATE+KEY+"):
            raise ReceiptInputError(f"{option}: {source} is a private signer key; give the "
                                    "public verifier key (the .vkey file)")
        try:
            keys[parse_verifier_key(key).vkey] = None
        except NoteError as exc:
            raise ReceiptInputError(f"{option}: {source}: {exc}") from None

    for value in values:
        if "+" in value and not Path(value).exists():
            inline = value.strip()
            add(inline, "the key given" if inline.startswith("PRIVATE+KEY+") else
                f"{inline!r:.80}")
            continue
        try:
            text = Path(value).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ReceiptInputError(f"{option}: {value!r} is neither a key nor a readable "
                                    f"file ({exc})") from None
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                add(line.strip(), f"{value} line {n}")
    if not keys:
        raise ReceiptInputError(f"{option}: no key given")
    return list(keys)


def _log_key_path(reg: Register, explicit: str | None) -> str:
    """The log signer key file: ``explicit``, else the setting (relative to cladelog.toml)."""
    path = explicit or reg.settings.log_key_file
    base = reg.deployment.config.path
    if path and not explicit and base is not None and not Path(path).is_absolute():
        path = str(Path(base).parent / path)
    return path


def _check_oracle_key(reg: Register, state: Any, signer: Ed25519Signer, key_file: str,
                      seq: int) -> None:
    """Refuse (exit 2) a signing key the register knows as its log key; warn when the key
    is not a registered, unrevoked oracle key (the receipt would then be refused by add).

    A key file does not say what the key is for: its role is what the register says
    (the registered keys, and the log key file of the settings).
    """
    from cladelog.core.transparency.note import parse_verifier_key

    from .errors import ReceiptInputError
    from .register import load_signer_file

    ref = signer.verifier().key_ref
    pub = signer.public_key
    for other_ref, k in state["keys"].items():
        if parse_verifier_key(k["vkey"]).public_key != pub:
            continue
        if k["role"] == "log":
            raise ReceiptInputError(
                f"--key: {key_file} is the register's log key ({other_ref}); receipts are "
                "signed by an oracle key, and one signed by the log key is never recorded")
        if other_ref != ref:
            break  # same public key under another name: not the registered keyid
        start = k["revoked_from"]
        if start is not None and seq >= start:
            click.echo(f"warning: --key: {ref} is revoked from seq {start}; 'receipts add' "
                       f"will refuse this receipt (seq {seq})", err=True)
        return
    log_path = _log_key_path(reg, None)
    if log_path:
        try:
            log_signer = load_signer_file(log_path)
        except ReceiptInputError:
            log_signer = None  # unreadable here: the checkpoint command reports that
        if log_signer is not None and log_signer.public_key == pub:
            raise ReceiptInputError(
                f"--key: {key_file} is the log key (log_key_file in [settings.receipts]); "
                "receipts are signed by an oracle key, and one signed by the log key is "
                "never recorded")
    click.echo(f"warning: --key: {ref} is not a registered oracle key; 'receipts add' will "
               "refuse this receipt until its public key is registered ('cladelog receipts "
               "key add VKEY --role oracle')", err=True)


def _verification_exit_code(exc: Exception) -> int:
    """Exit code for a :class:`VerificationError` of :mod:`.verify`: 2 when its cause is bad
    input (a proof file, checkpoint note or envelope that does not parse: core's
    ``InputError``), 1 when a signature, the origin or a Merkle proof does not verify."""
    from cladelog.core import InputError, VerificationError
    from cladelog.core.canonical import CanonicalError

    cause = exc.__cause__
    if isinstance(cause, VerificationError):
        return 1
    if isinstance(cause, InputError | CanonicalError):
        return 2
    return 1


@click.group("receipts", context_settings=HELP_SETTINGS)
def receipts() -> None:
    """Signed oracle receipts: the gap-free register, Elo/SPRT checks, Merkle proofs."""


# -- recording ---------------------------------------------------------------------------


@receipts.command("add")
@click.argument("file", metavar="FILE")
@json_option()
def add(file: str, as_json: bool) -> None:
    """Record receipts from FILE: one envelope (JSON), an array or JSONL; all or nothing."""
    from .register import read_receipts_json

    envelopes = read_receipts_json(_read_text(file), file)
    recorded = _register().record(envelopes)
    first, last = recorded[0].data["seq"], recorded[-1].data["seq"]
    if as_json:
        echo_json({"recorded": len(recorded), "first_seq": first, "last_seq": last,
                   "entries": [{"seq": e.data["seq"], "position": e.position,
                                "flags": list(e.data["flags"])} for e in recorded]})
    else:
        click.echo(f"recorded {len(recorded)} receipt(s), seq {first}..{last}")
    for e in recorded:
        if e.data["flags"]:
            click.echo(f"warning: seq {e.data['seq']} recorded with flags "
                       f"{', '.join(e.data['flags'])}", err=True)


@receipts.command("fill-claims")
@click.argument("file", metavar="ENTRY")
@click.option("--json", "as_json", is_flag=True,
              help='One JSON line: {"entry": ..., "filled": {path: value}}.')
@click.option("-o", "--out", metavar="FILE", help="Write the result here (default: stdout).")
def fill_claims_command(file: str, as_json: bool, out: str | None) -> None:
    """Compute a gain test's claims from its game counts; print the completed entry.

    Each stage's "elo" and "half_width" (and "nelo" when present), and an SPRT
    criterion's "llr", are set from the results (or pentanomial) counts, rounded
    to 0.01, the precision 'add' compares claims at; "pass" is filled when missing
    or null. They may be missing or null in ENTRY ('-': stdin). Nothing is
    recorded; 'sign' and 'add' take the result.
    """
    from cladelog.core import read_json_file

    from .recompute import fill_claims

    entry, filled = fill_claims(read_json_file(file))
    if as_json:
        text = json.dumps({"entry": entry, "filled": filled}, sort_keys=True,
                          ensure_ascii=False) + "\n"
    else:
        text = json.dumps(entry, indent=2, ensure_ascii=False) + "\n"
    _write_out(text, out)


@receipts.command("list")
@click.option("--kind", type=click.Choice(["gain_test", "special_path", "epoch_change",
                                           "reversion"]), help="Only entries of this kind.")
@click.option("--candidate", help="Only entries of this candidate (NAME or NAME@VERSION).")
@click.option("--epoch", type=click.IntRange(min=0), help="Only entries of this oracle epoch.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_(kind: str | None, candidate: str | None, epoch: int | None, as_json: bool) -> None:
    """List register entries, oldest first."""
    from cladelog.core import echo_table

    from .projections import entries_in_window

    state = _register().state()
    rows = []
    for e in entries_in_window(state, -1, state["size"] - 1):
        cand = e.get("candidate") or {}
        label = f"{cand.get('name')}@{cand.get('version')}" if cand else ""
        if kind and e["kind"] != kind:
            continue
        if candidate and candidate not in (cand.get("name"), label):
            continue
        if epoch is not None and e.get("epoch") != epoch:
            continue
        if as_json:
            _echo_json(e)
            continue
        detail = ""
        if e["kind"] == "gain_test":
            detail = " ".join(f"{s.get('name')} {s.get('elo', 0):+.2f}"
                              f"{'' if s.get('pass') else ' (fail)'}"
                              for s in e.get("stages", []))
            detail += f" epoch {e.get('epoch')} {'PASS' if e.get('pass') else 'fail'}"
        elif e["kind"] == "special_path":
            detail = str(e.get("path"))
        elif e["kind"] == "epoch_change":
            detail = f"{(e.get('oracle') or {}).get('name')} -> epoch {e.get('epoch')}"
        else:
            detail = f"reverts seq {e.get('reverts')}"
        flags = f"  [{', '.join(e['flags'])}]" if e["flags"] else ""
        rows.append((e["seq"], e["kind"], label, f"{detail}{flags}"))
    # no match prints nothing, not even the header
    echo_table(["SEQ", "KIND", "CANDIDATE", "DETAIL  [FLAGS]"], rows, right=["SEQ"])


@receipts.command("show")
@click.argument("seq", type=click.IntRange(min=0))
def show(seq: int) -> None:
    """Print the recorded event data of entry SEQ as JSON."""
    event = _register().entry_event(seq)
    _echo_json(event.data | {"position": event.position})


@receipts.command("verify")
@json_option()
@click.option("--strict", is_flag=True, help="Also fail on entries recorded with flags.")
def verify(as_json: bool, strict: bool) -> None:
    """Check every signature, the entry chain, the recomputations and the checkpoints."""
    from cladelog.core import fail

    report = _register().verify()
    ok = report.ok and not (strict and report.flagged)
    if as_json:
        _echo_json(report.to_json())
        if not ok:
            sys.exit(1)
        return
    if not report.ok:
        fail(report.failure or "verification failed", 1)
    if strict and report.flagged:
        fail(f"seq {report.flagged[0]}: recorded with mismatch flags (--strict)", 1)
    flagged = f", {len(report.flagged)} flagged" if report.flagged else ""
    click.echo(f"ok: {report.entries} entries verified{flagged}; {report.checkpoints} "
               f"checkpoint(s), the latest covers {report.covered}")


# -- keys --------------------------------------------------------------------------------


@receipts.command("keygen")
@click.argument("name")
@click.option("--out", "prefix", metavar="PREFIX",
              help="Write PREFIX.key and PREFIX.vkey (default: NAME with '/' as '_').")
@json_option()
def keygen(name: str, prefix: str | None,
           as_json: bool) -> None:
    """Write a new Ed25519 signed-note key pair: PREFIX.key (private) and PREFIX.vkey."""
    from cladelog.core.transparency.note import NoteError, generate_key, write_key_files

    from .errors import ReceiptInputError

    try:
        skey, vkey = generate_key(name)
    except NoteError as exc:
        raise ReceiptInputError(str(exc)) from None
    base = prefix or name.replace("/", "_")
    private, public = Path(f"{base}.key"), Path(f"{base}.vkey")
    write_key_files(skey, vkey, private, public)
    if as_json:
        echo_json({"name": name, "vkey": vkey, "private": str(private), "public": str(public)})
        return
    click.echo(vkey)
    click.echo(f"wrote {private} (private, keep it off the log) and {public}", err=True)


@receipts.command("sign")
@click.argument("file", metavar="ENTRY")
@click.option("--key", "key_file", required=True, metavar="FILE", help="The oracle's key file.")
@click.option("--out", metavar="FILE", help="Write the envelope here (default: stdout).")
def sign(file: str, key_file: str, out: str | None) -> None:
    """Sign an unsigned register entry (JSON) and print the receipt envelope.

    When ENTRY has neither "seq" nor "prev", they are filled with the
    register's next seq and the hash of its last entry. A key the register
    knows as its log key is refused (exit 2); a key that is not a registered,
    unrevoked oracle key signs with a warning, since 'add' would refuse it.
    """
    from cladelog.core import read_json_file

    from .errors import EntryError
    from .receipt import make_receipt
    from .register import load_signer_file

    doc = read_json_file(file)
    if not isinstance(doc, dict):
        raise EntryError(f"{file}: entry: must be a JSON object")
    signer = load_signer_file(key_file, "--key")
    reg = _register()
    state = reg.state()
    if "seq" not in doc and "prev" not in doc:
        doc = {"seq": state["size"], "prev": state["head"], **doc}
    envelope = make_receipt(doc, signer)  # validates the entry first
    _check_oracle_key(reg, state, signer, key_file, doc["seq"])
    _write_out(json.dumps(envelope, sort_keys=True) + "\n", out)


@receipts.group("key", context_settings=HELP_SETTINGS)
def key() -> None:
    """Register, revoke and list the oracle and log public keys."""


@key.command("add")
@click.argument("vkey", metavar="VKEY")
@click.option("--role", type=click.Choice(["oracle", "log"]), required=True)
@json_option()
def key_add(vkey: str, role: str, as_json: bool) -> None:
    """Register a verifier key (the key string, or a file holding it)."""
    (text,) = _vkeys((vkey,), "VKEY")[:1]
    event = _register().register_key(text, role)
    if as_json:
        echo_json({"key_ref": event.data["key_ref"], "role": role,
                   "position": event.position})
        return
    click.echo(f"registered {event.data['key_ref']} as {role} key (position {event.position})")


@key.command("revoke")
@click.argument("key_ref", metavar="NAME+KEYID")
@click.option("--from", "from_seq", type=click.IntRange(min=0), default=None,
              help="First seq whose signature is invalid (default: the next seq).")
@click.option("--reason", default="revoked", show_default=True)
@json_option()
def key_revoke(key_ref: str, from_seq: int | None, reason: str, as_json: bool) -> None:
    """Revoke a key from a register position on."""
    event = _register().revoke_key(key_ref, from_seq, reason)
    if as_json:
        echo_json({"key_ref": key_ref, "from_seq": event.data["from_seq"],
                   "position": event.position})
        return
    click.echo(f"revoked {key_ref} from seq {event.data['from_seq']}")


@key.command("list")
@json_option()
def key_list(as_json: bool) -> None:
    """List registered keys, their role and validity."""
    from cladelog.core import echo_table

    state = _register().state()
    keys = sorted(state["keys"].items())
    if as_json:
        for ref, k in keys:
            _echo_json({"key_ref": ref} | k)
        return
    echo_table(["ROLE", "KEY", "VALIDITY"], [
        (k["role"], ref,
         "valid" if k["revoked_from"] is None else f"revoked from seq {k['revoked_from']}")
        for ref, k in keys])


# -- the Merkle log ----------------------------------------------------------------------


@receipts.command("checkpoint")
@click.option("--log-key", "log_key", metavar="FILE",
              help="The log's signer key file (default: the setting log_key_file).")
@json_option()
def checkpoint(log_key: str | None, as_json: bool) -> None:
    """Sign a checkpoint of the register's Merkle tree with the log key.

    A key that is not the register's registered, unrevoked log key is bad input (exit 2),
    as a log key given to 'sign' is: the command cannot work with it.
    """
    from .errors import ReceiptInputError, SignatureRefused
    from .register import load_signer_file

    reg = _register()
    path = _log_key_path(reg, log_key)
    if not path:
        raise ReceiptInputError("--log-key: no log key file (give --log-key FILE or set "
                                "log_key_file in [settings.receipts])")
    try:
        cp, new = reg.sign_checkpoint(load_signer_file(path))
    except SignatureRefused as exc:
        raise ReceiptInputError(f"--log-key: {exc}") from None
    if as_json:
        echo_json({"signed": new, "origin": cp["origin"], "size": cp["size"],
                   "root": cp["root"]})
        return
    word = "signed" if new else "already signed"
    click.echo(f"{word}: checkpoint {cp['origin']} size {cp['size']} root {cp['root']}")


@receipts.command("prove")
@click.argument("seq", type=click.IntRange(min=0))
@click.option("--out", metavar="FILE", help="Write the proof here (default: stdout).")
def prove(seq: int, out: str | None) -> None:
    """Write a c2sp.org/tlog-proof@v1 inclusion proof of entry SEQ at the latest checkpoint."""
    _write_out(_register().inclusion_proof(seq), out)


@receipts.command("consistency")
@click.argument("old", type=click.IntRange(min=1))
@click.argument("new", type=click.IntRange(min=1))
@click.option("--out", metavar="FILE", help="Write the proof here (default: stdout).")
def consistency(old: int, new: int, out: str | None) -> None:
    """Write a consistency proof between the signed checkpoints of sizes OLD and NEW."""
    _write_out(_register().consistency_proof(old, new), out)


@receipts.command("verify-proof")
@click.argument("file", metavar="FILE")
@click.option("--log-key", "log_keys", multiple=True, required=True, metavar="VKEY",
              help="A trusted log verifier key, or a file of them (repeatable).")
@click.option("--leaf", metavar="ENVELOPE", help="The receipt envelope an inclusion proof is for.")
@click.option("--oracle-key", "oracle_keys", multiple=True, metavar="VKEY",
              help="Also check the receipt's signature against this oracle key (repeatable).")
@click.option("--origin", help="The expected checkpoint origin (default: a log key's name).")
@json_option()
def verify_proof(file: str, log_keys: tuple[str, ...], leaf: str | None,
                 oracle_keys: tuple[str, ...], origin: str | None, as_json: bool) -> None:
    """Check an inclusion or consistency proof offline, with trusted public keys only.

    Exit 1 when a signature or the proof does not verify; exit 2 for malformed
    input (a key, the proof file, its checkpoint note or the leaf envelope).
    """
    from cladelog.core import fail, read_json_file
    from cladelog.core.transparency.proof import (
        CONSISTENCY_HEADER,
        TLOG_PROOF_HEADER,
        ProofFileError,
        parse_consistency_proof,
        parse_tlog_proof,
    )

    from .errors import ReceiptInputError
    from .receipt import receipt_leaf
    from .verify import (
        VerificationError,
        verify_consistency_proof,
        verify_inclusion_proof,
        verify_receipt,
    )

    text = _read_text(file)
    keys = _vkeys(log_keys, "--log-key")
    trusted_oracles = _vkeys(oracle_keys, "--oracle-key") if oracle_keys else None
    header = text.split("\n", 1)[0]
    if header not in (CONSISTENCY_HEADER, TLOG_PROOF_HEADER):
        raise ReceiptInputError(f"{file}: line 1: not a proof file ({TLOG_PROOF_HEADER!r} "
                                f"or {CONSISTENCY_HEADER!r})")
    try:  # the file's layout first: a malformed file is bad input, not a failed proof
        (parse_consistency_proof if header == CONSISTENCY_HEADER else parse_tlog_proof)(text)
    except ProofFileError as exc:
        raise ReceiptInputError(f"{file}: {exc}") from None
    try:
        if header == CONSISTENCY_HEADER:
            c = verify_consistency_proof(text, keys, origin=origin)
            if as_json:
                echo_json({"ok": True, "proof": "consistency", "origin": c.new.origin,
                           "old_size": c.old.size, "new_size": c.new.size})
            else:
                click.echo(f"ok: {c.new.origin} size {c.new.size} extends size "
                           f"{c.old.size}")
            return
        if leaf is None:
            raise ReceiptInputError("--leaf: required to check an inclusion proof")
        envelope = read_json_file(leaf)
        if trusted_oracles is not None:
            r = verify_receipt(envelope, text, oracle_keys=trusted_oracles, log_keys=keys,
                               origin=origin)
            inc = r.inclusion
        else:
            inc = verify_inclusion_proof(text, receipt_leaf(envelope), keys, origin=origin)
    except VerificationError as exc:
        fail(str(exc), _verification_exit_code(exc))
    if as_json:
        echo_json({"ok": True, "proof": "inclusion", "entry": inc.index,
                   "origin": inc.checkpoint.origin, "size": inc.checkpoint.size})
        return
    click.echo(f"ok: entry {inc.index} is in {inc.checkpoint.origin} at size "
               f"{inc.checkpoint.size}")


@receipts.command("publish")
@click.argument("directory", metavar="DIR")
@json_option()
def publish(directory: str, as_json: bool) -> None:
    """Write the static audit layout (checkpoint, entries, proofs, keys) into DIR."""
    from .errors import ReceiptInputError

    files = _register().publication()
    root = Path(directory)
    try:
        for rel, content in sorted(files.items()):
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    except OSError as exc:
        raise ReceiptInputError(f"DIR: cannot write {directory!r} ({exc.strerror or exc})") \
            from None
    entries = sum(1 for rel in files if rel.startswith("entries/"))
    if as_json:
        echo_json({"entries": entries, "files": len(files), "directory": directory})
        return
    click.echo(f"published {entries} entries with proofs and the checkpoint to {directory}")
