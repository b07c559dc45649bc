"""The event log as a transparency log: signed checkpoints, proof files, and the check
that the log extends checkpoints someone else holds.

The store keeps the Merkle tree (``store/tree.py``); the formats are
:mod:`cladelog.core.transparency`'s. This module is the application layer between them:

* :func:`sign_checkpoint` signs a C2SP checkpoint of the log (origin = the deployment's
  ``log_name``), but never one inconsistent with the last checkpoint the log records as
  signed, and records it (event ``core.checkpoint_signed``);
* :func:`inclusion_file` / :func:`consistency_file` write a ``c2sp.org/tlog-proof@v1`` /
  ``cladelog/tlog-consistency-proof@v2`` file around recorded signed checkpoints;
* :func:`check_checkpoints` proves that the log extends each given checkpoint, or says
  whether it was cut or rewritten;
* the projection ``core.tlog`` knows the latest signed and the latest witnessed size.

Event types (stream ``core.tlog``, written by cladelog itself, never appended by hand):
``core.checkpoint_signed`` ``{origin, size, root (hex), note (the signed note), key (the
public key that signed)}`` and ``core.cosignature_received`` ``{origin, size, root,
witness (the witness's public key), timestamp, note (the checkpoint with the
cosignature)}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .errors import ConfigError, InputError, VerificationError
from .events import RecordedEvent
from .projections import Projection
from .registry import EventType

if TYPE_CHECKING:
    from .deployment import Deployment
    from .transparency.note import Checkpoint, Ed25519Signer

__all__ = [
    "COSIGNATURE_RECEIVED",
    "EVENT_TYPES",
    "SIGNED",
    "STREAM",
    "TLOG_PROJECTION",
    "CheckpointSigned",
    "CheckpointVerdict",
    "CosignatureReceived",
    "check_checkpoints",
    "consistency_file",
    "inclusion_file",
    "log_name",
    "parse_checkpoint_note",
    "record_cosignature",
    "sign_checkpoint",
    "signed_checkpoints",
]

STREAM = "core.tlog"
SIGNED = "core.checkpoint_signed"
COSIGNATURE_RECEIVED = "core.cosignature_received"


@attrs.frozen
class CheckpointSigned:
    """Payload of ``core.checkpoint_signed``: a checkpoint this deployment signed."""

    origin: str
    size: int
    root: str
    note: str
    key: str


@attrs.frozen
class CosignatureReceived:
    """Payload of ``core.cosignature_received``: a witness cosigned a checkpoint."""

    origin: str
    size: int
    root: str
    witness: str
    timestamp: int
    note: str


EVENT_TYPES = (
    EventType(SIGNED, CheckpointSigned,
              description="the deployment signed a checkpoint of its log (C2SP note)"),
    EventType(COSIGNATURE_RECEIVED, CosignatureReceived,
              description="a witness cosigned one of the log's checkpoints"),
)


def _apply(state: dict[str, Any], event: RecordedEvent) -> dict[str, Any]:
    data = event.data
    if data.__class__ is not dict or data.get("size").__class__ is not int:
        return state
    if event.type == SIGNED:
        last = state.get("signed")
        if last is None or data["size"] >= last["size"]:
            state["signed"] = {"size": data["size"], "root": data.get("root"),
                               "position": event.position}
    else:
        seen = state.setdefault("witnessed", None)
        if seen is None or data["size"] > seen["size"]:
            state["witnessed"] = {"size": data["size"], "root": data.get("root"),
                                  "witnesses": [data.get("witness")]}
        elif data["size"] == seen["size"] and data.get("witness") not in seen["witnesses"]:
            seen["witnesses"] = sorted([*seen["witnesses"], data.get("witness")],
                                       key=str)
    return state


def _summary(state: dict[str, Any]) -> str:
    signed, seen = state.get("signed"), state.get("witnessed")
    parts = [f"signed to {signed['size']}" if signed else "no checkpoint signed"]
    if seen:
        parts.append(f"witnessed to {seen['size']} by {len(seen['witnesses'])}")
    return ", ".join(parts)


TLOG_PROJECTION = Projection(
    name="core.tlog",
    version=1,
    event_types=frozenset(t.name for t in EVENT_TYPES),
    initial={"signed": None, "witnessed": None},
    apply=_apply,
    summary=_summary,
    description="the latest checkpoint the deployment signed and the latest witnessed size",
)


# -- signing ------------------------------------------------------------------------------


def log_name(dep: Deployment) -> str:
    """The log's origin: ``log_name`` in the deployment file."""
    name = dep.config.log_name
    if not name:
        raise ConfigError(
            f"{dep.config.path or 'deployment'}: log_name: not set; a checkpoint names its "
            "log (e.g. log_name = \"example.org/cladelog/main\")"
        )
    return name


def signed_checkpoints(dep: Deployment) -> list[dict[str, Any]]:
    """The checkpoints the log records as signed, in order (their event data)."""
    return [dict(e.data) for e in dep.store.read(types=[SIGNED])]


def _record(dep: Deployment, type_: str, data: dict[str, Any]) -> RecordedEvent:
    from .store.base import PreparedEvent

    meta = dep._meta("core", None)
    return dep.store.append([PreparedEvent(STREAM, type_, 1, data, meta)], clock=dep.clock)[0]


def sign_checkpoint(dep: Deployment, signer: Ed25519Signer, size: int | None = None
                    ) -> tuple[str, RecordedEvent]:
    """Sign (and record) the checkpoint of the first ``size`` events (default: all).

    Refused (:class:`VerificationError`) if the log's tree is not consistent with the
    last checkpoint the log records as signed; refused (:class:`InputError`) if the key
    is not named after the log's origin.
    """
    from .transparency.merkle import ProofError
    from .transparency.note import format_checkpoint, sign_note

    origin = log_name(dep)
    if signer.name != origin:
        raise InputError(f"--key: the key is named {signer.name!r}, but the log's origin "
                         f"(log_name) is {origin!r}; a log signs with a key named after "
                         f"its origin ('cladelog keygen {origin}')")
    store = dep.store
    head = store.head().position
    n = head if size is None else size
    if n < 1 or n > head:
        raise InputError(f"size: {n} is not in 1..{head} (the log's size)")
    signed = signed_checkpoints(dep)
    try:
        root = _checked_root(store, n, signed[-1] if signed else None, origin)
    except ProofError as exc:
        raise VerificationError(f"checkpoint: {exc}; refusing to sign") from None
    note = sign_note(format_checkpoint(origin, n, root), signer)
    event = _record(dep, SIGNED, {"origin": origin, "size": n, "root": root.hex(),
                                  "note": note, "key": signer.verifier().vkey})
    return note, event


def _checked_root(store: Any, n: int, last: dict[str, Any] | None, origin: str) -> bytes:
    """The root of the first ``n`` events, established from the events themselves, not
    only from the stored tree; raises ProofError when the log does not extend ``last``
    (the last checkpoint signed) or the stored tree is not the events'.

    Without ``last`` the whole log is verified (chain and tree: the first checkpoint). With
    it: the chain hash of event ``last.size`` must be that tree's last leaf (it commits to
    every event before it), and the events after it are walked (chain checked) from that
    tree's peaks, each new node compared with the stored one. O(log n + new events).
    """
    from .store.base import Head, verify_rows
    from .store.tree import TreeWalk, chain_leaf
    from .transparency.merkle import (
        ProofError,
        peak_nodes,
        root_from_peaks,
        verify_consistency,
        verify_inclusion,
    )

    if last is None:
        report = store.verify(roots_at=[n])
        if not report.ok:
            raise ProofError(f"the log does not verify (position {report.position}: "
                             f"{report.reason})")
        return bytes(report.roots[n])
    if last["origin"] != origin:
        raise ProofError(f"the last checkpoint signed names origin {last['origin']!r}, "
                         f"not {origin!r}")
    m, rm = int(last["size"]), bytes.fromhex(last["root"])
    where = f"the log is not consistent with the last checkpoint signed (size {m})"
    hash_m = store.hash_at(m)
    if hash_m is None:
        raise ProofError(f"{where}: the log holds {store.head().position} event(s); it "
                         "was cut")
    try:
        verify_inclusion(chain_leaf(hash_m), m - 1, m, store.inclusion_proof(m, m), rm)
    except ProofError:
        raise ProofError(f"{where}: event {m} is not the one it signed; the log was "
                         "rewritten") from None
    if n < m:  # an earlier size: a prefix of the tree just checked
        root = store.tree_root(n)
        verify_consistency(n, m, store.consistency_proof(n, m), root, rm)
        verify_inclusion(chain_leaf(store.hash_at(n)), n - 1, m, store.inclusion_proof(n, m),
                         rm)
        return bytes(root)
    wanted = peak_nodes(m)
    got = store.tree_nodes(wanted)
    peaks = [got[node] for node in wanted]
    if root_from_peaks(peaks) != rm:
        raise ProofError(f"{where}: the stored tree's peaks do not give its root")
    walk = TreeWalk((), store.tree_ranges, start=(m, peaks))
    report = verify_rows(walk.rows(store.read_rows(m + 1, n)), start=Head(m, hash_m))
    if not report.ok:
        raise ProofError(f"{where}: position {report.position}: {report.reason}")
    if walk.failure is not None:
        raise ProofError(f"{where}: position {walk.failure[0]}: {walk.failure[1]}")
    return walk.root()


def record_cosignature(dep: Deployment, note: str, witness_vkey: str, timestamp: int
                       ) -> RecordedEvent:
    """Record that a witness cosigned ``note`` (already verified by the caller)."""
    from .transparency.note import parse_checkpoint

    text = note[: note.index("\n\n") + 1]
    cp = parse_checkpoint(text)
    return _record(dep, COSIGNATURE_RECEIVED, {
        "origin": cp.origin, "size": cp.size, "root": cp.root_hash.hex(),
        "witness": witness_vkey, "timestamp": timestamp, "note": note})


def _checkpoint_of_size(dep: Deployment, size: int, what: str,
                        signer: Ed25519Signer | None) -> str:
    found = [c for c in signed_checkpoints(dep) if c["size"] == size]
    if found:
        return str(found[-1]["note"])
    if signer is not None:
        return sign_checkpoint(dep, signer, size)[0]
    sizes = sorted({c["size"] for c in signed_checkpoints(dep)})
    raise InputError(f"{what}: no signed checkpoint of size {size} (signed sizes: "
                     f"{sizes or 'none'}); give --key to sign one")


def inclusion_file(dep: Deployment, position: int, size: int | None = None,
                   signer: Ed25519Signer | None = None) -> str:
    """A ``c2sp.org/tlog-proof@v1`` file: the event at ``position`` is leaf ``position - 1``
    of the log at a signed checkpoint (of ``size``, default the latest signed one)."""
    from .transparency.proof import format_tlog_proof

    head = dep.store.head().position
    if type(position) is not int or not 1 <= position <= head:
        raise InputError(f"POSITION: {position} is not in 1..{head}")
    if size is None:
        signed = signed_checkpoints(dep)
        if signed and signed[-1]["size"] >= position:
            size, note = int(signed[-1]["size"]), str(signed[-1]["note"])
        elif signer is not None:
            note = sign_checkpoint(dep, signer, head)[0]
            size = head
        else:
            raise InputError(f"POSITION: no signed checkpoint covers position {position} "
                             "(run 'cladelog checkpoint --key FILE', or give --key)")
    else:
        if size < position:
            raise InputError(f"--size: {size} does not cover position {position}")
        note = _checkpoint_of_size(dep, size, "--size", signer)
    proof = dep.store.inclusion_proof(position, size)
    return format_tlog_proof(position - 1, proof, note)


def consistency_file(dep: Deployment, old: int, new: int,
                     signer: Ed25519Signer | None = None) -> str:
    """A ``cladelog/tlog-consistency-proof@v2`` file between the signed checkpoints of
    sizes ``old`` and ``new``."""
    from .transparency.proof import format_consistency_proof

    head = dep.store.head().position
    for what, value in (("OLD", old), ("NEW", new)):
        if not 1 <= value <= head:
            raise InputError(f"{what}: {value} is not in 1..{head}")
    if old > new:
        raise InputError(f"OLD: {old} is larger than NEW {new}")
    a = _checkpoint_of_size(dep, old, "OLD", signer)
    b = _checkpoint_of_size(dep, new, "NEW", signer)
    proof = dep.store.consistency_proof(old, new) if old != new else []
    return format_consistency_proof(log_name(dep), old, new, proof, a, b)


# -- does the log extend a checkpoint? ---------------------------------------------------


@attrs.frozen
class CheckpointVerdict:
    """Whether the log extends one checkpoint: ``"extended"``, ``"cut"`` (the log holds
    fewer events than the checkpoint) or ``"rewritten"`` (its first ``size`` events have
    another root), with a one-line explanation."""

    name: str
    checkpoint: Checkpoint
    verdict: str
    detail: str

    @property
    def ok(self) -> bool:
        return self.verdict == "extended"


def check_checkpoints(
    dep: Deployment,
    checkpoints: Sequence[tuple[str, Checkpoint]],
    *,
    quick: bool = False,
) -> tuple[list[CheckpointVerdict], Any]:
    """Judge each ``(name, checkpoint)`` against the log.

    The full check (default) walks the whole chain once, as ``verify`` does, recomputing
    the tree from the events' chain hashes: it catches a rewrite whatever was done to the
    stored tree. ``quick`` reads only O(log n) rows of the stored tree (a consistency
    proof from each checkpoint to the head, checked with RFC 9162's verifier): it proves
    the *stored tree* extends the checkpoint; that the events are that tree is what the
    full check (or an earlier ``verify``) establishes. Returns the verdicts and the
    chain's VerifyReport (None when quick).
    """
    from .transparency.merkle import ProofError, verify_consistency

    origin = dep.config.log_name
    store = dep.store
    head = store.head().position
    report = None
    roots: dict[int, bytes] = {}
    if not quick:
        report = store.verify(roots_at=[cp.size for _, cp in checkpoints])
        head = report.head.position if not report.ok else head
        roots = dict(report.roots)
    out = []
    for name, cp in checkpoints:
        if origin and cp.origin != origin:
            out.append(CheckpointVerdict(name, cp, "foreign",
                                         f"origin {cp.origin!r} is not this log's ({origin!r})"))
            continue
        if cp.size > head:
            out.append(CheckpointVerdict(
                name, cp, "cut", f"the log was cut: it holds {head} event(s), the checkpoint "
                                 f"{cp.size}"))
            continue
        if cp.size == 0:
            out.append(CheckpointVerdict(name, cp, "extended", "the empty log"))
            continue
        if quick:
            try:
                verify_consistency(cp.size, head, store.consistency_proof(cp.size)
                                   if cp.size != head else [], cp.root_hash,
                                   store.tree_root(head))
                ok = True
            except ProofError:
                ok = False
            got = store.tree_root(cp.size) if not ok else cp.root_hash
        else:
            got = roots.get(cp.size, b"")
            ok = got == cp.root_hash
        if ok:
            out.append(CheckpointVerdict(name, cp, "extended",
                                         f"the log ({head} events) extends size {cp.size}"))
        else:
            out.append(CheckpointVerdict(
                name, cp, "rewritten",
                f"the log was rewritten: its first {cp.size} event(s) have root "
                f"{got.hex() or '?'}, the checkpoint {cp.root_hash.hex()}"))
    return out, report


def parse_checkpoint_note(text: str, keys: Iterable[Any] | None) -> tuple[Checkpoint, bool]:
    """A checkpoint note's body: verified with ``keys`` when given (True), else only
    parsed (False: the signatures were not checked)."""
    from .transparency.note import open_note, parse_checkpoint, split_note

    if keys is not None:
        opened = open_note(text, list(keys))
        return parse_checkpoint(opened.text), True
    body, _ = split_note(text)
    return parse_checkpoint(body), False
