"""The register: the application service that records receipts, keys and checkpoints.

Every command validates its input completely against the replayed
``receipts.register`` state, then appends; a refused command appends nothing.

* :meth:`Register.record` -- a batch of receipts, all or nothing. Each must be
  signed by a registered oracle key that is not revoked at its seq, carry the
  next seq and the hash of the previous entry as ``prev``, parse strictly, and
  (unless ``on_mismatch = "record"``) have claims that agree with the
  recomputation from its games. Appended with
  ``expected_versions={"receipts.register": first seq}``.
* :meth:`Register.register_key` / :meth:`Register.revoke_key`.
* :meth:`Register.sign_checkpoint` -- signs a tlog checkpoint of the Merkle tree
  over the envelopes with the log key, after checking that the last recorded
  checkpoint is consistent with the tree (the register never signs two
  inconsistent checkpoints). The private key is passed in, never stored.
* :meth:`Register.inclusion_proof`, :meth:`Register.consistency_proof`,
  :meth:`Register.publication` -- offline material for third parties.
* :meth:`Register.verify` -- re-checks the whole register from its events.

:func:`check_receipt` is the pure core of recording.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import orjson
from cladelog.core import Head, NewEvent, Projection, RecordedEvent, replay
from cladelog.core.canonical import canonical_bytes
from cladelog.core.transparency.dsse import Verifier
from cladelog.core.transparency.merkle import MerkleTree, ProofError, verify_consistency
from cladelog.core.transparency.note import (
    Ed25519Signer,
    NoteError,
    format_checkpoint,
    open_note,
    parse_checkpoint,
    parse_signer_key,
    parse_verifier_key,
    sign_note,
)
from cladelog.core.transparency.proof import format_consistency_proof, format_tlog_proof

from .entries import MAX_COUNT, EpochChange, GainTest, Reversion, entry_hash
from .errors import (
    ClaimMismatchError,
    ReceiptInputError,
    ReceiptRefused,
    SequenceError,
    SignatureRefused,
)
from .events import (
    CHECKPOINT_SIGNED,
    CHECKPOINTS_STREAM,
    ENTRY_RECORDED,
    KEY_REGISTERED,
    KEY_REVOKED,
    KEYS_STREAM,
    REGISTER_STREAM,
)
from .projections import PROJECTION_NAME, State, _apply_own, apply, key_is_valid, latest_checkpoint
from .receipt import open_receipt, receipt_leaf
from .recompute import EPOCH_MISMATCH, recompute_entry
from .settings import ON_MISMATCH

__all__ = [
    "KEY_ROLES",
    "RECOMPUTATION_TOLERANCE",
    "PreparedEntry",
    "Register",
    "RegisterReport",
    "check_receipt",
    "load_signer_file",
    "read_receipts_json",
    "same_json",
]

KEY_ROLES = ("oracle", "log")


@attrs.frozen
class PreparedEntry:
    """A receipt that passed every check, ready to append as ``receipts.entry_recorded``."""

    seq: int
    kind: str
    entry: dict[str, Any]
    envelope: dict[str, Any]
    leaf_hash: str
    flags: tuple[str, ...]
    recomputed: dict[str, Any]
    entry_hash: str

    def event_data(self) -> dict[str, Any]:
        """The event payload (the contract of ``receipts.entry_recorded``)."""
        return {"seq": self.seq, "kind": self.kind, "entry": self.entry,
                "envelope": self.envelope, "leaf_hash": self.leaf_hash,
                "flags": list(self.flags), "recomputed": self.recomputed}


@attrs.define
class _Cursor:
    """The part of the register state a batch of receipts advances."""

    size: int
    head: str
    epochs: dict[str, int]
    reverted: dict[str, int]

    @classmethod
    def of(cls, state: State) -> _Cursor:
        return cls(state["size"], state["head"], dict(state["epochs"]), dict(state["reverted"]))


@functools.lru_cache(maxsize=256)
def _verifier(vkey: str) -> Verifier:
    """The verify function of a registered key (cached: keys are re-read for every receipt)."""
    return parse_verifier_key(vkey).verify


def _oracle_verifiers(keys: Mapping[str, Any], seq: int) -> dict[str, Verifier]:
    out: dict[str, Verifier] = {}
    for ref, key in keys.items():
        if key["role"] == "oracle" and (key["revoked_from"] is None or seq < key["revoked_from"]):
            out[ref] = _verifier(key["vkey"])
    return out


def _why_untrusted(envelope: Mapping[str, Any], keys: Mapping[str, Any], seq: int) -> str | None:
    sigs = envelope.get("signatures")
    for sig in sigs if isinstance(sigs, list) else ():
        ref = sig.get("keyid") if isinstance(sig, dict) else None
        key = keys.get(ref) if isinstance(ref, str) else None
        if key is None:
            continue
        if key["role"] != "oracle":
            return f"key {ref} is registered as a {key['role']} key, not an oracle key"
        if key["revoked_from"] is not None and seq >= key["revoked_from"]:
            return f"signed by key {ref}, revoked from seq {key['revoked_from']}"
    return None


def _mismatch_detail(recomputed: dict[str, Any], doc: dict[str, Any]) -> str:
    parts = []
    for i, (st, claim) in enumerate(zip(recomputed.get("stages", []), doc.get("stages", []),
                                        strict=False)):
        if not st["flags"]:
            continue
        bits = [f"claimed elo {claim['elo']:.2f} +- {claim['half_width']:.2f}, "
                f"recomputed {st['elo']:.2f} +- {st['half_width']:.2f}"]
        if "nelo" in claim:
            bits.append(f"nelo {claim['nelo']:.2f} vs {st['nelo']:.2f}")
        if "llr" in st:
            bits.append(f"llr {claim['criterion']['llr']:.2f} vs {st['llr']:.2f} "
                        f"(bounds {st['llr_lower_bound']:.2f}, {st['llr_upper_bound']:.2f})")
        bits.append(f"pass {str(claim['pass']).lower()} vs {str(st['pass']).lower()}")
        parts.append(f"stages[{i}] ({st['name']}): " + "; ".join(bits))
    return "; ".join(parts)


def check_receipt(envelope: object, state: State, cursor: _Cursor | None = None, *,
                  on_mismatch: str = "refuse", where: str = "receipt") -> PreparedEntry:
    """Check one receipt against the register ``state`` (pure); return it ready to append.

    ``cursor`` carries a batch forward (next seq, head, epochs, reversions) and is
    advanced on success. Raises :class:`SignatureRefused`,
    :class:`ClaimMismatchError`, :class:`SequenceError` or another
    :class:`ReceiptInputError`; messages start with ``where``.
    """
    cur = cursor if cursor is not None else _Cursor.of(state)
    seq = cur.size
    keys = state["keys"]
    try:
        opened = open_receipt(envelope, _oracle_verifiers(keys, seq), where=where)
    except SignatureRefused as exc:
        reason = _why_untrusted(envelope, keys, seq) if isinstance(envelope, dict) else None
        if reason is not None and "no signature by a trusted keyid" in str(exc):
            raise SignatureRefused(f"{where}: {reason}") from None
        raise
    entry, doc = opened.entry, opened.doc
    if entry.seq != seq:
        what = "is already recorded (duplicate)" if entry.seq < seq else "would leave a gap"
        raise SequenceError(f"{where}: entry.seq: {entry.seq} {what}; the next seq is {seq}")
    if entry.prev != cur.head:
        raise SequenceError(f"{where}: entry.prev: {entry.prev[:16]}... is not the hash of entry "
                            f"{seq - 1} ({cur.head[:16]}...)")
    if isinstance(entry, Reversion) and str(entry.reverts) in cur.reverted:
        raise ReceiptInputError(f"{where}: entry.reverts: seq {entry.reverts} is already reverted "
                                f"by seq {cur.reverted[str(entry.reverts)]}")
    if isinstance(entry, EpochChange):
        current = cur.epochs.get(entry.oracle.name)
        if current is not None and entry.epoch <= current:
            raise ReceiptInputError(f"{where}: entry.epoch: must be greater than the oracle's "
                                    f"current epoch {current}, got {entry.epoch}")
    recomputation = recompute_entry(entry)
    flags = list(recomputation.flags)
    if isinstance(entry, GainTest):
        current = cur.epochs.get(entry.oracle.name)
        if current is not None and current != entry.epoch:
            flags = sorted({*flags, EPOCH_MISMATCH})
    recomputed = recomputation.to_dict() | {"flags": flags}
    if flags and on_mismatch != "record":
        detail = _mismatch_detail(recomputed, doc)
        if EPOCH_MISMATCH in flags and isinstance(entry, GainTest):
            detail = "; ".join(x for x in (detail, f"epoch {entry.epoch} is not the oracle's "
                                           f"current epoch") if x)
        raise ClaimMismatchError(f"{where}: seq {seq}: {', '.join(flags)}: {detail}; refused "
                                 "(set on_mismatch = \"record\" to record it flagged)",
                                 tuple(flags))
    digest = opened.entry_hash or entry_hash(doc)
    cur.size, cur.head = seq + 1, digest
    if isinstance(entry, EpochChange):
        cur.epochs[entry.oracle.name] = entry.epoch
    if isinstance(entry, Reversion):
        cur.reverted[str(entry.reverts)] = seq
    return PreparedEntry(seq, entry.kind, doc, opened.envelope, opened.leaf_hash, tuple(flags),
                         recomputed, digest)


def load_signer_file(path: str | Path, where: str = "log key") -> Ed25519Signer:
    """Read a signed-note signer key (``PRIVATE+KEY+...``) from a file."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReceiptInputError(f"{where}: cannot read {str(path)!r} ({exc})") from None
    try:
        return parse_signer_key(text)
    except NoteError as exc:
        raise ReceiptInputError(f"{where}: {path}: {exc}") from None


@attrs.frozen
class RegisterReport:
    """Result of :meth:`Register.verify`: ``failure`` names the first failing item."""

    ok: bool
    entries: int
    checkpoints: int
    covered: int
    flagged: tuple[int, ...]
    failure: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "entries": self.entries, "checkpoints": self.checkpoints,
                "covered": self.covered, "flagged": list(self.flagged), "failure": self.failure}


class _Fail(Exception):
    pass


_NUMBERS: Final = (int, float)  # not bool: type(True) is bool
_ARRAYS: Final = (list, tuple)
# leaves that are the same JSON value exactly when both have this type and are ==
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
#: How far a recorded recomputation's numbers may lie from a fresh one in
#: :meth:`Register.verify` (relative, or absolute below 1): the arithmetic may move in the
#: last digits between versions (the LLR's root finder) or machines (libm), never by this.
RECOMPUTATION_TOLERANCE: Final = 1e-9


def same_json(a: object, b: object, tolerance: float = 0.0) -> bool:
    """True iff two JSON values have the same RFC 8785 canonical form (without encoding them).

    Numbers compare by value (``20`` equals ``20.0``: both encode as ``20``), but a
    boolean never equals a number, and objects need the same keys. With ``tolerance``,
    two numbers are also the same when they differ by at most ``tolerance`` times the
    larger magnitude (or 1, whichever is larger).
    """
    ta, tb = type(a), type(b)
    if ta is not tb:
        if ta in _NUMBERS and tb in _NUMBERS:
            return a == b or _close(a, b, tolerance)  # type: ignore[arg-type]
        if ta in _ARRAYS and tb in _ARRAYS:
            return _same_items(a, b, tolerance)  # type: ignore[arg-type]
        return False
    if ta is dict:
        assert isinstance(a, dict) and isinstance(b, dict)
        if a.keys() != b.keys():
            return False
        for key, value in a.items():  # no generator: a hot path of verify
            other = b[key]
            # equal leaves of one type (most of them) without a call
            if type(value) is type(other) and type(value) in _SCALARS and value == other:
                continue
            if not same_json(value, other, tolerance):
                return False
        return True
    if ta is list or ta is tuple:
        return _same_items(a, b, tolerance)  # type: ignore[arg-type]
    if a == b:
        return True
    return ta in _NUMBERS and _close(a, b, tolerance)  # type: ignore[arg-type]


#: orjson's options for :func:`_same_plain_json`: sorted keys, and a TypeError for subclasses,
#: dataclasses and datetimes (which would otherwise be written like their plain values)
_PLAIN_SORTED: Final = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS
                        | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME)


def _same_plain_json(a: object, b: object) -> bool:
    """True when two plain JSON values (as a JSON parser or a ``to_dict`` gives them) are
    certainly the same JSON value: orjson writes them to the same bytes, keys sorted, and
    with no ``null`` (orjson writes NaN and the infinities as null). One text stands for
    one string, one integer and one double, a float's text always has a point or an
    exponent, so equal bytes mean equal values of equal types. False means "not known"
    (``20`` against ``20.0``, a null, anything orjson refuses): ask :func:`same_json`.
    A quick test for :meth:`Register.verify`, where the two sides are equal as a rule."""
    try:
        x = orjson.dumps(a, option=_PLAIN_SORTED)
        return b"null" not in x and x == orjson.dumps(b, option=_PLAIN_SORTED)
    except (orjson.JSONEncodeError, TypeError):
        return False


def _close(a: float, b: float, tolerance: float) -> bool:
    try:
        return tolerance > 0.0 and abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))
    except OverflowError:  # an integer beyond the float range: only exact equality counts
        return False


def _same_items(a: Sequence[object], b: Sequence[object], tolerance: float) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):  # as above
        if type(x) is type(y) and type(x) in _SCALARS and x == y:
            continue
        if not same_json(x, y, tolerance):
            return False
    return True


class Register:
    """The receipts register of a :class:`cladelog.core.Deployment` with the plugin enabled."""

    def __init__(self, deployment: Any, *, on_mismatch: str | None = None) -> None:
        self.deployment = deployment
        settings = deployment.settings("receipts")
        self.on_mismatch = on_mismatch or settings.on_mismatch
        if self.on_mismatch not in ON_MISMATCH:
            raise ReceiptInputError(f"on_mismatch: must be one of {', '.join(ON_MISMATCH)}, "
                                    f"got {self.on_mismatch!r}")
        self.settings = settings
        self._cached: tuple[Head, State] | None = None
        # events this register appended right after the cached head, not folded yet, with
        # the entry hashes of the receipts they record
        self._own: tuple[tuple[Head, State], tuple[RecordedEvent, ...],
                         tuple[str, ...] | None] | None = None

    # -- reading -------------------------------------------------------------------------
    def state(self) -> State:
        """The replayed ``receipts.register`` state (treat it as read-only).

        The first call replays through core (resuming from the stored checkpoint);
        later calls fold only the events appended since, checking the chain as they
        are read, so recording batch after batch costs nothing per entry already
        held. The returned object is shared with that cache: do not mutate it.
        """
        self._fold_own_events()
        store = self.deployment.store
        if self._cached is None:
            proj = self._projection()
            result = replay(store, self.deployment.registry, [proj])
            self._cached = (result.head, result.projections[0].state)
            return self._cached[1]
        head, state = self._cached
        if store.head().position > head.position:
            self._cached = None  # a failure half-way must not leave a half-folded cache
            proj = self._projection()
            registry = self.deployment.registry
            types = proj.event_types
            for event in store.read_verified(head):
                head = Head(event.position, event.hash)
                if types is not None and event.type not in types:
                    continue
                if event.type in registry and \
                        event.schema_version != registry.get(event.type).schema_version:
                    event = event._replace(data=registry.upcast(
                        event.type, event.schema_version, event.data))
                state = proj.apply(state, event)
            self._cached = (head, state)
        return state

    def _projection(self) -> Projection:
        for proj in self.deployment.projections:
            if proj.name == PROJECTION_NAME:
                found: Projection = proj
                return found
        raise ReceiptInputError(f"projection {PROJECTION_NAME!r} is not registered: enable the "
                                "receipts plugin in this deployment")

    def entry_event(self, seq: int, state: State | None = None) -> RecordedEvent:
        """The ``receipts.entry_recorded`` event of ``seq``."""
        state = state if state is not None else self.state()
        summary = state["entries"].get(str(seq)) if type(seq) is int else None
        if summary is None:
            raise ReceiptInputError(f"seq: no entry {seq!r} (the register holds {state['size']})")
        pos = summary["position"]
        event: RecordedEvent = next(iter(self.deployment.store.read(pos, pos)))
        return event

    def tree(self, state: State | None = None) -> MerkleTree:
        """The Merkle tree over the recorded envelopes, in seq order."""
        state = state if state is not None else self.state()
        return MerkleTree(bytes.fromhex(state["entries"][str(i)]["leaf_hash"])
                          for i in range(state["size"]))

    # -- recording -----------------------------------------------------------------------
    def prepare(self, envelopes: Sequence[object], state: State | None = None
                ) -> list[PreparedEntry]:
        """Check a batch of receipts in order without appending anything."""
        state = state if state is not None else self.state()
        if not isinstance(envelopes, Sequence) or isinstance(envelopes, str | bytes):
            raise ReceiptInputError("receipts: must be a list of envelopes")
        if not envelopes:
            raise ReceiptInputError("receipts: no receipt given")
        cursor = _Cursor.of(state)
        many = len(envelopes) > 1
        return [check_receipt(env, state, cursor, on_mismatch=self.on_mismatch,
                              where=f"receipts[{i}]" if many else "receipt")
                for i, env in enumerate(envelopes)]

    def record(self, envelopes: Sequence[object]) -> list[RecordedEvent]:
        """Record a batch of receipts, all or nothing; return the recorded events."""
        state = self.state()
        try:
            prepared = self.prepare(envelopes, state)
        except SignatureRefused as exc:  # said here, where an append is refused
            raise SignatureRefused(f"{exc}; nothing was appended") from None
        events = [NewEvent(REGISTER_STREAM, ENTRY_RECORDED.name, p.event_data())
                  for p in prepared]
        cached = self._cached
        recorded: list[RecordedEvent] = self.deployment.append(
            events, expected_versions={REGISTER_STREAM: state["size"]})
        self._fold_own(cached, recorded, tuple(p.entry_hash for p in prepared))
        return recorded

    def _fold_own(self, cached: tuple[Head, State] | None,
                  recorded: Sequence[RecordedEvent],
                  digests: Sequence[str] | None = None) -> None:
        """Keep the events this register just appended, for :meth:`state` to fold.

        Only when they directly follow the cached head (nothing else was appended in
        between): they are then exactly the events a re-read would return, and were
        hashed by this very append, so reading them back and re-checking their chain
        would only repeat that work. They are folded at the next :meth:`state` call, not
        here, so a state a caller got before recording does not change under it.
        ``digests`` are the entry hashes of the recorded receipts (``PreparedEntry.entry_hash``,
        one per event), which the fold then does not compute again.
        """
        self._own = None
        if cached is None or self._cached is not cached or not recorded:
            return
        head = cached[0]
        if all(e.position == head.position + i for i, e in enumerate(recorded, 1)):
            known = tuple(digests) if digests is not None and \
                len(digests) == len(recorded) else None
            self._own = (cached, tuple(recorded), known)

    def _fold_own_events(self) -> None:
        own, self._own = self._own, None
        if own is None or own[0] is not self._cached:
            return
        (_, state), recorded, digests = own
        self._cached = None  # a failure half-way must not leave a half-folded cache
        fold = self._projection().apply
        if digests is not None and fold is apply:  # the entry hashes are known: not again
            for event, digest in zip(recorded, digests, strict=True):
                state = _apply_own(state, event, digest) \
                    if event.type == ENTRY_RECORDED.name else fold(state, event)
        else:
            for event in recorded:
                state = fold(state, event)
        last = recorded[-1]
        self._cached = (Head(last.position, last.hash), state)

    # -- keys ----------------------------------------------------------------------------
    def register_key(self, vkey: str, role: str) -> RecordedEvent:
        """Register a signed-note verifier key for ``role`` (``oracle`` or ``log``)."""
        if role not in KEY_ROLES:
            raise ReceiptInputError(f"role: must be oracle or log, got {role!r}")
        try:
            key = parse_verifier_key(vkey.strip() if isinstance(vkey, str) else vkey)
        except NoteError as exc:
            raise ReceiptInputError(str(exc)) from None
        state = self.state()
        if key.key_ref in state["keys"]:
            raise ReceiptInputError(f"vkey: key {key.key_ref} is already registered "
                                    f"(as {state['keys'][key.key_ref]['role']})")
        for ref, other in state["keys"].items():
            if parse_verifier_key(other["vkey"]).public_key == key.public_key:
                raise ReceiptInputError(f"vkey: the same public key is already registered as "
                                        f"{ref} ({other['role']}); the oracle key and the log "
                                        "key must be different keys")
        data = {"key_ref": key.key_ref, "role": role, "vkey": key.vkey}
        done: list[RecordedEvent] = self.deployment.append(
            [NewEvent(KEYS_STREAM, KEY_REGISTERED.name, data)])
        return done[-1]

    def revoke_key(self, key_ref: str, from_seq: int | None = None,
                   reason: str = "revoked") -> RecordedEvent:
        """Revoke a key from ``from_seq`` on (default: the next seq)."""
        state = self.state()
        key = state["keys"].get(key_ref)
        if key is None:
            raise ReceiptInputError(f"key: {key_ref!r} is not registered")
        start = state["size"] if from_seq is None else from_seq
        if type(start) is not int or not 0 <= start <= MAX_COUNT:
            raise ReceiptInputError(f"from: must be an integer in [0, 2**53-1], got {start!r}")
        if key["revoked_from"] is not None and key["revoked_from"] <= start:
            raise ReceiptInputError(f"key: {key_ref} is already revoked from seq "
                                    f"{key['revoked_from']}")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > 1000:
            raise ReceiptInputError("reason: must be a non-empty string of at most 1000 chars")
        data = {"key_ref": key_ref, "from_seq": start, "reason": reason}
        done: list[RecordedEvent] = self.deployment.append(
            [NewEvent(KEYS_STREAM, KEY_REVOKED.name, data)])
        return done[-1]

    # -- checkpoints ---------------------------------------------------------------------
    def sign_checkpoint(self, signer: Ed25519Signer) -> tuple[dict[str, Any], bool]:
        """Sign a checkpoint of the current tree; return ``(checkpoint, newly_signed)``.

        Refuses (:class:`ReceiptRefused`) when the last recorded checkpoint is not
        consistent with the register, so two inconsistent checkpoints are never signed.
        """
        state = self.state()
        ref = f"{signer.name}+{signer.key_id.hex()}"
        size = state["size"]
        if size == 0:
            raise ReceiptInputError("checkpoint: the register is empty; nothing to sign")
        key = state["keys"].get(ref)
        if key is None or key["role"] != "log":
            raise SignatureRefused(f"log key: {ref} is not registered as a log key "
                                   "(cladelog receipts key add VKEY --role log)")
        if parse_verifier_key(key["vkey"]).public_key != signer.public_key:
            raise SignatureRefused(f"log key: {ref} does not match the registered public key")
        if not key_is_valid(state, ref, "log", size - 1):
            raise SignatureRefused(f"log key: {ref} is revoked from seq {key['revoked_from']}")
        tree = self.tree(state)
        root = tree.root()
        last = latest_checkpoint(state)
        origin = self.settings.origin or signer.name
        if last is not None:
            self._check_consistent(state, tree, last)
            if last["origin"] != origin:
                raise ReceiptInputError(f"checkpoint: origin {origin!r} differs from the "
                                        f"log's origin {last['origin']!r}")
            if last["size"] == size:
                return dict(last), False
        note = sign_note(format_checkpoint(origin, size, root), signer)
        data = {"size": size, "root": root.hex(), "origin": origin, "key_ref": ref,
                "note": note}
        done = self.deployment.append(
            [NewEvent(CHECKPOINTS_STREAM, CHECKPOINT_SIGNED.name, data)],
            expected_versions={CHECKPOINTS_STREAM: len(state["checkpoints"])})
        return data | {"position": done[-1].position}, True

    def _check_consistent(self, state: State, tree: MerkleTree, last: dict[str, Any]) -> None:
        where = f"checkpoint: the last signed checkpoint (size {last['size']}, position " \
                f"{last['position']})"
        try:
            opened = open_note(last["note"], [parse_verifier_key(k["vkey"])
                                              for k in state["keys"].values()
                                              if k["role"] == "log"])
            body = parse_checkpoint(opened.text)
        except NoteError as exc:
            raise ReceiptRefused(f"{where} does not verify ({exc}); refusing to sign") from None
        if body.size != last["size"] or body.root_hash.hex() != last["root"]:
            raise ReceiptRefused(f"{where}: its note disagrees with its event; refusing to sign")
        if body.size > tree.size:
            raise ReceiptRefused(f"{where} is larger than the register ({tree.size}); "
                                 "refusing to sign")
        try:
            if body.size > 0:
                verify_consistency(body.size, tree.size, tree.consistency_proof(body.size),
                                   body.root_hash, tree.root())
        except ProofError as exc:
            raise ReceiptRefused(f"{where} is not consistent with the register ({exc}); "
                                 "refusing to sign") from None

    def _checkpoint_at(self, state: State, size: int, name: str) -> dict[str, Any]:
        found = [c for c in state["checkpoints"] if c["size"] == size]
        if not found:
            sizes = sorted({c["size"] for c in state["checkpoints"]})
            raise ReceiptInputError(f"{name}: no signed checkpoint of size {size} "
                                    f"(signed sizes: {sizes or 'none'})")
        return dict(found[-1])

    # -- proofs --------------------------------------------------------------------------
    def inclusion_proof(self, seq: int, state: State | None = None,
                        tree: MerkleTree | None = None) -> str:
        """A ``c2sp.org/tlog-proof@v1`` for entry ``seq`` at the latest checkpoint."""
        state = state if state is not None else self.state()
        last = latest_checkpoint(state)
        if last is None:
            raise ReceiptInputError("prove: no signed checkpoint yet "
                                    "(run 'cladelog receipts checkpoint')")
        if type(seq) is not int or not 0 <= seq < last["size"]:
            raise ReceiptInputError(f"seq: {seq!r} is not covered by the latest checkpoint "
                                    f"(size {last['size']})")
        tree = tree if tree is not None else self.tree(state)
        return format_tlog_proof(seq, tree.inclusion_proof(seq, last["size"]), last["note"])

    def consistency_proof(self, old: int, new: int) -> str:
        """A consistency-proof file between the signed checkpoints of sizes ``old`` and ``new``."""
        state = self.state()
        if type(old) is not int or type(new) is not int or not 0 < old <= new:
            raise ReceiptInputError(f"sizes: need 0 < OLD <= NEW, got {old!r} {new!r}")
        a = self._checkpoint_at(state, old, "OLD")
        b = self._checkpoint_at(state, new, "NEW")
        proof = self.tree(state).consistency_proof(old, new)
        return format_consistency_proof(a["origin"], old, new, proof, a["note"], b["note"])

    def publication(self) -> dict[str, bytes]:
        """The files of the static audit layout (see ``docs/publish.md``), by relative path."""
        state = self.state()
        last = latest_checkpoint(state)
        if last is None:
            raise ReceiptInputError("publish: no signed checkpoint yet "
                                    "(run 'cladelog receipts checkpoint')")
        tree = self.tree(state)
        files: dict[str, bytes] = {"checkpoint": last["note"].encode("utf-8")}
        index = []
        for event in self.deployment.store.read(stream=REGISTER_STREAM,
                                                types=[ENTRY_RECORDED.name]):
            seq = event.data["seq"]
            summary = state["entries"].get(str(seq))
            if summary is None or summary["position"] != event.position or seq >= last["size"]:
                continue
            files[f"entries/{seq}.json"] = receipt_leaf(event.data["envelope"])
            files[f"proofs/{seq}.tlog-proof"] = self.inclusion_proof(
                seq, state, tree).encode("utf-8")
            index.append({"seq": seq, "kind": event.data["kind"],
                          "leaf_hash": event.data["leaf_hash"], "flags": event.data["flags"]})
        for role in KEY_ROLES:
            lines = sorted(k["vkey"] for k in state["keys"].values() if k["role"] == role)
            files[f"keys/{role}.vkeys"] = "".join(f"{v}\n" for v in lines).encode("utf-8")
        doc = {"format": "cladelog-receipts-publication/v1", "origin": last["origin"],
               "size": last["size"], "root": last["root"], "entries": index}
        files["index.json"] = canonical_bytes(doc)
        return files

    # -- verification --------------------------------------------------------------------
    def verify(self) -> RegisterReport:
        """Re-check every signature, the entry chain, the recomputations and the checkpoints."""
        types = [ENTRY_RECORDED.name, KEY_REGISTERED.name, KEY_REVOKED.name,
                 CHECKPOINT_SIGNED.name]
        events = list(self.deployment.store.read(types=types))
        revoked: dict[str, int] = {}
        for e in events:
            if e.type == KEY_REVOKED.name:
                ref, start = e.data["key_ref"], e.data["from_seq"]
                revoked[ref] = min(start, revoked.get(ref, start))
        state: State = {"keys": {}, "size": 0, "head": "0" * 64, "epochs": {}, "reverted": {}}
        cursor = _Cursor.of(state)
        tree = MerkleTree()
        flagged: list[int] = []
        checkpoints = 0
        covered = 0
        origin: str | None = None
        try:
            for e in events:
                if e.type == KEY_REGISTERED.name:
                    self._verify_key_event(e, state, revoked)
                elif e.type == ENTRY_RECORDED.name:
                    self._verify_entry(e, state, cursor, tree)
                    if e.data["flags"]:
                        flagged.append(e.data["seq"])
                elif e.type == CHECKPOINT_SIGNED.name:
                    origin = self._verify_checkpoint(e, state, tree, origin)
                    checkpoints += 1
                    covered = e.data["size"]
        except _Fail as exc:
            return RegisterReport(False, tree.size, checkpoints, covered, tuple(flagged), str(exc))
        return RegisterReport(True, tree.size, checkpoints, covered, tuple(flagged))

    @staticmethod
    def _verify_key_event(e: RecordedEvent, state: State, revoked: Mapping[str, int]) -> None:
        try:
            key = parse_verifier_key(e.data["vkey"])
        except NoteError as exc:
            raise _Fail(f"key at position {e.position}: {exc}") from None
        if key.key_ref != e.data["key_ref"] or e.data["role"] not in KEY_ROLES:
            raise _Fail(f"key at position {e.position}: key_ref or role does not match the key")
        state["keys"][key.key_ref] = {"role": e.data["role"], "vkey": key.vkey,
                                      "revoked_from": revoked.get(key.key_ref)}

    @staticmethod
    def _verify_entry(e: RecordedEvent, state: State, cursor: _Cursor, tree: MerkleTree) -> None:
        data = e.data
        seq = data["seq"]
        where = f"seq {seq} (position {e.position})"
        if e.stream != REGISTER_STREAM:
            raise _Fail(f"{where}: recorded on stream {e.stream!r}, not {REGISTER_STREAM!r}")
        if seq != cursor.size:
            raise _Fail(f"{where}: expected seq {cursor.size} (gap or duplicate)")
        try:
            prepared = check_receipt(data["envelope"], state, cursor, on_mismatch="record",
                                     where=where)
        except (ReceiptInputError, ReceiptRefused) as exc:
            raise _Fail(str(exc)) from None
        # both sides are plain JSON (parsed, or a recomputation's to_dict): the quick test first
        if not (_same_plain_json(prepared.entry, data["entry"])
                or same_json(prepared.entry, data["entry"])) or prepared.kind != data["kind"]:
            raise _Fail(f"{where}: the recorded entry differs from the signed one")
        if prepared.leaf_hash != data["leaf_hash"]:
            raise _Fail(f"{where}: leaf_hash does not match the envelope")
        if list(prepared.flags) != data["flags"] or \
                not (_same_plain_json(prepared.recomputed, data["recomputed"])
                     or same_json(prepared.recomputed, data["recomputed"],
                                  RECOMPUTATION_TOLERANCE)):
            raise _Fail(f"{where}: the recorded recomputation or flags differ from a fresh "
                        f"one (recorded {data['flags']}, now {list(prepared.flags)})")
        tree.append_leaf_hash(bytes.fromhex(prepared.leaf_hash))

    def _verify_checkpoint(self, e: RecordedEvent, state: State, tree: MerkleTree,
                           origin: str | None) -> str:
        data = e.data
        where = f"checkpoint at position {e.position} (size {data['size']})"
        size = data["size"]
        verifiers = [parse_verifier_key(k["vkey"]) for k in state["keys"].values()
                     if k["role"] == "log" and (k["revoked_from"] is None
                                                or size <= k["revoked_from"])]
        if not verifiers:
            raise _Fail(f"{where}: no registered, unrevoked log key")
        try:
            body = parse_checkpoint(open_note(data["note"], verifiers).text)
        except NoteError as exc:
            raise _Fail(f"{where}: {exc}") from None
        if body.size != size or body.root_hash.hex() != data["root"] or \
                body.origin != data["origin"]:
            raise _Fail(f"{where}: the signed note disagrees with the event")
        if origin is not None and body.origin != origin:
            raise _Fail(f"{where}: origin {body.origin!r} differs from {origin!r}")
        if not 0 < size <= tree.size:
            raise _Fail(f"{where}: covers {size} entries but {tree.size} were recorded before it")
        if tree.root(size) != body.root_hash:
            raise _Fail(f"{where}: root does not match the register's tree (first divergent "
                        f"entry at or before seq {size - 1})")
        return body.origin


def read_receipts_json(text: str, where: str) -> list[Any]:
    """Parse one envelope (JSON object), a JSON array of envelopes, or JSONL (core's strict
    reader, :func:`cladelog.core.loads_strict`, for every document)."""
    from cladelog.core import JSONInputError, loads_strict

    stripped = text.strip()
    if not stripped:
        raise ReceiptInputError(f"{where}: empty file")
    try:
        doc = loads_strict(stripped, where)
    except JSONInputError as exc:
        lines = [ln for ln in stripped.splitlines() if ln.strip()]
        several = (exc.reason or "").startswith("Extra data") and len(lines) > 1
        if not several or stripped.startswith("["):
            raise
        return [loads_strict(ln, f"{where}:{n}") for n, ln in enumerate(lines, 1)]
    return doc if isinstance(doc, list) else [doc]
