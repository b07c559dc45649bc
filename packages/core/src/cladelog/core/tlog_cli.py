"""The transparency-log commands of ``cladelog``: keygen, checkpoint, prove, consistency,
verify-proof, and the ``--checkpoint`` check of ``cladelog verify``.

Exit codes as everywhere: 0 ok, 1 a signature, proof or checkpoint that does not verify
(or a log that does not extend a checkpoint), 2 bad input (one ``error:`` line naming the
file or option).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from .errors import CladelogError, InputError
from .output import HELP_SETTINGS, echo_json, json_option

if TYPE_CHECKING:
    from .deployment import Deployment
    from .transparency.note import Ed25519Signer, NoteVerifier

__all__ = ["COMMANDS", "verify_checkpoints"]

_MAX_FILE = 8 << 20  # a proof file, note or key file is a few KB


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_MAX_FILE + 1)
    except OSError as exc:
        raise InputError(f"{what}: cannot read {path!r} ({exc.strerror or exc})") from None
    if len(raw) > _MAX_FILE:
        raise InputError(f"{what}: {path!r} is larger than {_MAX_FILE} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: {path!r} is not valid UTF-8 (byte {exc.start})") from None


def _named(exc: CladelogError, where: str) -> CladelogError:
    """The same error class, its message prefixed with the file or option."""
    return type(exc)(f"{where}: {exc}")


def _signer(path: str) -> Ed25519Signer:
    from .transparency.note import NoteError, parse_signer_key

    text = _read_text(path, "--key").strip()
    try:
        return parse_signer_key(text)
    except NoteError as exc:
        raise _named(exc, f"--key: {path}") from None


def _verifier_keys(values: tuple[str, ...], option: str) -> list[NoteVerifier]:
    """Verifier key strings, or files holding them (one per line)."""
    from .transparency.note import NoteError, parse_verifier_key

    out: list[NoteVerifier] = []
    for value in values:
        if value.startswith("PRIVATE+KEY+"):
            raise InputError(f"{option}: a private key was given; give the public key")
        lines = [value] if "+" in value and not os.path.exists(value) else \
            [x.strip() for x in _read_text(value, option).splitlines() if x.strip()]
        if not lines:
            raise InputError(f"{option}: {value} holds no key")
        for line in lines:
            if line.startswith("PRIVATE+KEY+"):
                raise InputError(f"{option}: {value} holds a private key; give the public key")
            try:
                out.append(parse_verifier_key(line))
            except NoteError as exc:
                raise _named(exc, f"{option}: {value}") from None
    return out


def _write(text: str, out: str | None) -> None:
    if out is None:
        click.echo(text, nl=False)
        return
    from pathlib import Path  # not at import: the cladelog command starts without pathlib

    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out: cannot write {out!r} ({exc.strerror or exc})") from None
    click.echo(f"wrote {out}", err=True)


# -- keys ---------------------------------------------------------------------------------


@click.command("keygen")
@click.argument("name")
@click.option("--witness", is_flag=True,
              help="A witness key (cosignature/v1, type 0x04) instead of a log key.")
@click.option("--out", "prefix", metavar="PREFIX",
              help="Write PREFIX.key and PREFIX.pub (default: NAME, '/' as '_').")
@json_option()
def keygen(name: str, witness: bool, prefix: str | None,
           as_json: bool) -> None:
    """Write a new Ed25519 signed-note key pair: NAME.key (private) and NAME.pub.

    A log's key is named after its origin (log_name in cladelog.toml).
    """
    from .transparency.note import (
        NoteError,
        generate_cosigner_key,
        generate_key,
        write_key_files,
    )

    try:
        skey, vkey = (generate_cosigner_key if witness else generate_key)(name)
    except NoteError as exc:
        raise _named(exc, "NAME") from None
    from pathlib import Path

    base = prefix or name.replace("/", "_")
    private, public = Path(f"{base}.key"), Path(f"{base}.pub")
    write_key_files(skey, vkey, private, public)
    if as_json:
        echo_json({"name": name, "vkey": vkey, "private": str(private), "public": str(public)})
        return
    click.echo(vkey)
    click.echo(f"wrote {private} (private: keep it off the log) and {public}", err=True)


# -- checkpoints and proofs --------------------------------------------------------------


def _dep() -> Deployment:
    from .cli import _state

    return _state(click.get_current_context()).deployment()


@click.command("checkpoint")
@click.option("--key", "key_file", metavar="FILE",
              help="Sign with this private key (named after log_name) and record it.")
@click.option("--size", type=int, default=None, help="Of the first N events (default: all).")
@click.option("--out", metavar="FILE", help="Write the checkpoint here (default: stdout).")
def checkpoint(key_file: str | None, size: int | None, out: str | None) -> None:
    """Print the log's C2SP checkpoint; with --key sign it, after checking that the log is
    consistent with the last checkpoint signed (never two inconsistent ones)."""
    from . import tlog
    from .transparency.note import format_checkpoint

    dep = _dep()
    if key_file is None:
        head = dep.store.head().position
        n = head if size is None else size
        if not 0 <= n <= head:
            raise InputError(f"--size: {n} is not in 0..{head}")
        _write(format_checkpoint(tlog.log_name(dep), n, dep.store.tree_root(n)), out)
        return
    note, event = tlog.sign_checkpoint(dep, _signer(key_file), size)
    _write(note, out)
    click.echo(f"recorded at position {event.position}", err=True)


@click.command("prove")
@click.argument("position", type=int)
@click.option("--size", type=int, default=None,
              help="At the signed checkpoint of N events (default: the latest signed).")
@click.option("--key", "key_file", metavar="FILE",
              help="Sign (and record) the checkpoint needed if none is recorded.")
@click.option("--out", metavar="FILE", help="Write the proof here (default: stdout).")
def prove(position: int, size: int | None, key_file: str | None, out: str | None) -> None:
    """Write a c2sp.org/tlog-proof@v1 inclusion proof for the event at POSITION."""
    from . import tlog

    dep = _dep()
    signer = _signer(key_file) if key_file else None
    _write(tlog.inclusion_file(dep, position, size, signer), out)


@click.command("consistency")
@click.argument("old", type=int)
@click.argument("new", type=int)
@click.option("--key", "key_file", metavar="FILE",
              help="Sign (and record) the checkpoints needed if none is recorded.")
@click.option("--out", metavar="FILE", help="Write the proof here (default: stdout).")
def consistency(old: int, new: int, key_file: str | None, out: str | None) -> None:
    """Write a consistency proof between the signed checkpoints of sizes OLD and NEW."""
    from . import tlog

    dep = _dep()
    signer = _signer(key_file) if key_file else None
    _write(tlog.consistency_file(dep, old, new, signer), out)


# -- offline verification -----------------------------------------------------------------


def _event_leaf(path: str) -> tuple[int, bytes]:
    """``(position, chain hash)`` of one exported event (a line of ``cladelog export``),
    its hash recomputed from its content."""
    from .events import chain_hash
    from .store.base import event_from_json
    from .strictjson import loads_strict

    where = f"--event: {path}"
    text = _read_text(path, "--event").strip()
    try:
        event = event_from_json(loads_strict(text, where), where)
    except InputError as exc:
        raise exc if str(exc).startswith(where) else _named(exc, where) from None
    again = chain_hash(event.prev_hash, event.body)
    if again != event.hash:
        from .errors import VerificationError

        raise VerificationError(f"{where}: its content hashes to {again}, not the hash it "
                                f"names ({event.hash})")
    try:
        return event.position, bytes.fromhex(event.hash)
    except ValueError:
        raise InputError(f"{where}.hash: not 64 hex digits") from None


@click.command("verify-proof")
@click.argument("file", metavar="FILE")
@click.option("--key", "keys", multiple=True, required=True, metavar="VKEY",
              help="A trusted log public key, or a file of them (repeatable).")
@click.option("--event", "event_file", metavar="FILE",
              help="The proven event: one line of 'cladelog export' (inclusion proofs).")
@click.option("--hash", "chain", metavar="HEX",
              help="The proven event's chain hash, instead of --event.")
@click.option("--origin", help="The expected origin (default: the name of a signing key).")
@json_option()
def verify_proof(file: str, keys: tuple[str, ...], event_file: str | None, chain: str | None,
                 origin: str | None, as_json: bool) -> None:
    """Check an inclusion or consistency proof offline, with trusted public keys only."""
    from .transparency import verify as tv
    from .transparency.proof import (
        CONSISTENCY_HEADER,
        TLOG_PROOF_HEADER,
        ProofFileError,
        parse_consistency_proof,
        parse_tlog_proof,
    )

    text = _read_text(file, "FILE")
    trusted = _verifier_keys(keys, "--key")
    header = text.split("\n", 1)[0]
    if header not in (TLOG_PROOF_HEADER, CONSISTENCY_HEADER):
        raise InputError(f"{file}: line 1: not a proof file ({TLOG_PROOF_HEADER!r} or "
                         f"{CONSISTENCY_HEADER!r})")
    try:
        if header == CONSISTENCY_HEADER:
            parse_consistency_proof(text)
            c = tv.verify_consistency_proof(text, trusted, origin=origin)
            if as_json:
                echo_json({"ok": True, "proof": "consistency", "origin": c.new.origin,
                           "old_size": c.old.size, "new_size": c.new.size})
            else:
                click.echo(f"ok: {c.new.origin} at size {c.new.size} extends size "
                           f"{c.old.size}")
            return
        parsed = parse_tlog_proof(text)
    except ProofFileError as exc:
        raise _named(exc, file) from None
    except CladelogError as exc:
        raise _named(exc, file) from None
    if (event_file is None) == (chain is None):
        raise InputError("--event: give the proven event (--event FILE or --hash HEX)")
    if event_file is not None:
        position, leaf = _event_leaf(event_file)
        if position != parsed.index + 1:
            from .errors import VerificationError

            raise VerificationError(f"{file}: the proof is for position {parsed.index + 1}, "
                                    f"the event is at position {position}")
    else:
        assert chain is not None
        try:
            leaf = bytes.fromhex(chain)
        except ValueError:
            leaf = b""
        if len(leaf) != 32:
            raise InputError("--hash: must be 64 hex digits (an event's chain hash)")
    try:
        inc = tv.verify_inclusion_proof(text, leaf, trusted, origin=origin)
    except CladelogError as exc:
        raise _named(exc, file) from None
    if as_json:
        echo_json({"ok": True, "proof": "inclusion", "position": inc.index + 1,
                   "origin": inc.checkpoint.origin, "size": inc.checkpoint.size})
        return
    click.echo(f"ok: position {inc.index + 1} is in {inc.checkpoint.origin} at size "
               f"{inc.checkpoint.size}")


# -- static tiles -------------------------------------------------------------------------


@click.command("publish")
@click.argument("directory", metavar="DIR")
@json_option()
def publish(directory: str, as_json: bool) -> None:
    """Write the log at its latest signed checkpoint in the C2SP tlog-tiles layout (and the
    events' export lines beside the entry bundles) into DIR; only new tiles are written."""
    from . import tlog

    got = tlog.publish(_dep(), directory)
    if as_json:
        echo_json(dict(got) | {"directory": directory})
        return
    click.echo(f"published size {got['size']} to {directory}: {got['tiles']} hash tile(s), "
               f"{got['entries']} entry bundle(s), {got['events']} event bundle(s) written, "
               f"{got['skipped']} already there")


# -- witnesses ----------------------------------------------------------------------------


@click.group("witness", context_settings=HELP_SETTINGS)
def witness() -> None:
    """Act as a witness of a log (cosign its checkpoints), or record cosignatures."""


@witness.command("cosign")
@click.argument("checkpoint_file", metavar="CHECKPOINT")
@click.option("--key", "key_file", required=True, metavar="FILE",
              help="The witness's private key (cladelog keygen NAME --witness), or an "
              "Ed25519 key (e.g. a consensus validator's), which cosigns as its 0x04 form.")
@click.option("--state", "state_dir", required=True, metavar="DIR",
              help="Where the witness keeps the last checkpoint it cosigned per origin.")
@click.option("--log-key", "log_keys", multiple=True, required=True, metavar="VKEY",
              help="The log's public key, or a file of them (repeatable).")
@click.option("--proof", "proof_file", metavar="FILE",
              help="A consistency proof from the size this witness last cosigned.")
@click.option("--out", metavar="FILE", help="Write the cosigned checkpoint here.")
def witness_cosign(checkpoint_file: str, key_file: str, state_dir: str,
                   log_keys: tuple[str, ...], proof_file: str | None, out: str | None) -> None:
    """Cosign CHECKPOINT (cosignature/v1) if it extends the last one this witness cosigned
    for its origin; otherwise exit 1 with the reason (rolled back, inconsistent)."""
    import time

    from . import tlog
    from .transparency.note import NoteError, as_cosigner_key

    try:
        cosigner = as_cosigner_key(_read_text(key_file, "--key").strip())
    except NoteError as exc:
        raise _named(exc, f"--key: {key_file}") from None
    trusted = _verifier_keys(log_keys, "--log-key")
    note = _read_text(checkpoint_file, "CHECKPOINT")
    proof = _read_text(proof_file, "--proof") if proof_file else None
    try:
        cosigned = tlog.witness_cosign(note, trusted, cosigner, state_dir, proof_text=proof,
                                       timestamp=int(time.time()))
    except CladelogError as exc:
        raise _named(exc, checkpoint_file) from None
    _write(cosigned, out)


@witness.command("add")
@click.argument("cosigned_file", metavar="COSIGNED")
@click.option("--key", "keys", multiple=True, required=True, metavar="VKEY",
              help="The log's public key, or a file of them.")
@click.option("--witnesses", "witness_keys", multiple=True, required=True, metavar="VKEY",
              help="Witness public keys, or files of them (repeatable).")
@json_option()
def witness_add(cosigned_file: str, keys: tuple[str, ...],
                witness_keys: tuple[str, ...], as_json: bool) -> None:
    """Record in the log the witnesses' cosignatures of one of its checkpoints."""
    from . import tlog
    from .transparency.note import CosignatureVerifier, split_note
    from .transparency.verify import verify_cosignatures

    dep = _dep()
    note = _read_text(cosigned_file, "COSIGNED")
    witnesses = _witness_keys(witness_keys)
    try:
        got = verify_cosignatures(note, _verifier_keys(keys, "--key"), witnesses, 1,
                                  origin=tlog.log_name(dep))
    except CladelogError as exc:
        raise _named(exc, cosigned_file) from None
    _, sigs = split_note(note)
    recorded = []
    for name, ts in zip(got.witnesses, got.timestamps, strict=True):
        w = next(v for v in witnesses if v.name == name and any(
            s.name == name and s.key_id == v.key_id for s in sigs))
        assert isinstance(w, CosignatureVerifier)  # the one whose cosignature verified
        event = tlog.record_cosignature(dep, note, w.vkey, ts)
        recorded.append({"witness": name, "size": got.checkpoint.size,
                         "position": event.position})
        if not as_json:
            click.echo(f"recorded the cosignature of {name} (size {got.checkpoint.size}) "
                       f"at position {event.position}")
    if as_json:
        echo_json({"recorded": recorded})


def _witness_keys(values: tuple[str, ...]) -> list[Any]:
    from .transparency.note import NoteError, as_cosigner_verifier

    out = []
    for value in values:
        lines = [value] if "+" in value and not os.path.exists(value) else \
            [x.strip() for x in _read_text(value, "--witnesses").splitlines() if x.strip()]
        if not lines:
            raise InputError(f"--witnesses: {value} holds no key")
        for line in lines:
            try:
                out.append(as_cosigner_verifier(line))
            except NoteError as exc:
                raise _named(exc, f"--witnesses: {value}") from None
    return out


# -- verify --checkpoint -----------------------------------------------------------------


def verify_checkpoints(dep: Deployment, files: tuple[str, ...], keys: tuple[str, ...],
                       quick: bool, as_json: bool, witness_keys: tuple[str, ...] = (),
                       quorum: int | None = None) -> None:
    """``cladelog verify --checkpoint FILE...``: exit 1 naming the first checkpoint the log
    does not extend (cut or rewritten), after the chain itself. With ``--witnesses`` and
    ``--quorum K`` each checkpoint also needs K valid cosignatures from those witnesses."""
    from . import tlog
    from .cli import EXIT_FAILED, _echo_json, fail
    from .transparency.verify import verify_cosignatures

    trusted = _verifier_keys(keys, "--key") if keys else None
    witnesses = _witness_keys(witness_keys) if witness_keys else None
    if (witnesses is None) != (quorum is None):
        raise InputError("--quorum: --witnesses and --quorum go together")
    if witnesses is not None and trusted is None:
        raise InputError("--witnesses: give the log's public key too (--key)")
    checkpoints = []
    for path in files:
        text = _read_text(path, "--checkpoint")
        try:
            cp, _signed = tlog.parse_checkpoint_note(text, trusted)
            if witnesses is not None:
                assert trusted is not None and quorum is not None
                verify_cosignatures(text, trusted, witnesses, quorum)
        except CladelogError as exc:
            raise _named(exc, f"--checkpoint: {path}") from None
        checkpoints.append((path, cp))
    verdicts, report = tlog.check_checkpoints(dep, checkpoints, quick=quick)
    first = next((v for v in verdicts if not v.ok), None)
    chain_bad = report is not None and not report.ok
    if as_json:
        _echo_json({
            "ok": first is None and not chain_bad,
            "checkpoints": [{"file": v.name, "origin": v.checkpoint.origin,
                             "size": v.checkpoint.size, "verdict": v.verdict,
                             "detail": v.detail} for v in verdicts],
            "chain": None if report is None else {"ok": report.ok, "position": report.position,
                                                  "reason": report.reason},
            "signatures_checked": trusted is not None, "quick": quick,
        })
    if first is not None:
        fail(f"checkpoint {first.name} (size {first.checkpoint.size}): not extended: "
             f"{first.detail}", EXIT_FAILED)
    if chain_bad:
        assert report is not None
        fail(f"position {report.position}: {report.reason}", EXIT_FAILED)
    if as_json:
        return
    for v in verdicts:
        click.echo(f"ok: {v.name}: {v.detail}")
    if trusted is None:
        click.echo("note: the checkpoints' signatures were not checked (give --key)")
    if quick:
        click.echo("note: --quick checked the stored tree only (O(log n) rows); 'cladelog "
                   "verify' checks that the events are that tree")


COMMANDS = (keygen, checkpoint, prove, consistency, verify_proof, witness, publish)
