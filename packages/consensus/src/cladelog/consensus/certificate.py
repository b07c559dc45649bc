"""Finality certificates: a self-contained proof that a candidate was finalized.

A certificate (``cladelog consensus certificate CANDIDATE``) is one JSON object::

    {"format": "cladelog-consensus-certificate/v2",
     "candidate": C, "parent": P, "eval_digest": HEX, "opened": E,
     "policy": {"version", "weighting", "cap", "voting_window", "challenge_window"},
     "validators": {ID: {"stake": N, "power": N}},   # the frozen set
     "proposal": ENVELOPE,                             # the proposer's signed statement
     "votes": [ENVELOPE, ...],                         # signed accepts reaching quorum
     "log": {"size": N, "root": HEX,                  # RFC 9162 root of the log
             "checkpoint": NOTE | null,               # the log's signed checkpoint with
                                                      # its recorded cosignatures
             "entries": [{"event": {...}, "proof": [HEX, ...]}],   # one per vote
             "proposal": {"event", "proof"},          # consensus.proposed
             "opened": {"event", "proof"},            # consensus.proposal_opened
             "policy": {"event", "proof"}}}           # consensus.policy_set

Each ``log.*.event`` is a recorded event (position, stream, stream_version, type,
schema_version, data, meta, recorded_at, prev_hash, hash) and ``proof`` its RFC 9162
inclusion proof in the log's tree of ``size`` events (core's store tree: leaf
``position - 1``, leaf bytes the chain hash).

:func:`verify_certificate` checks it offline against trusted validator keys (no
store; a third party can lift this module out with core's public functions):

1. the powers follow from the stakes under the frozen weighting and cap (rule 1);
2. the proposal is signed by a trusted key and names this candidate, parent and
   eval digest;
3. every vote is signed by a trusted key of a frozen validator, accepts this
   candidate, was signed inside the voting window, and no validator counts twice;
4. ``3 x accepting power > 2 x total power``;
5. every vote is the data of a ``consensus.voted`` event whose chain hash recomputes
   from its body and whose inclusion proof leads to ``log.root`` (and to the root the
   caller trusts, when given: ``--root``); so is the proposal (``consensus.proposed``);
6. the event right after the proposal is ``consensus.proposal_opened``, the log's record
   of what the proposal froze: this candidate, the epoch it opened in, the policy
   version, the total power and the canonical digest of ``{opened, policy,
   validators}`` (:func:`~cladelog.consensus.ledger.frozen_digest`), all equal to the
   certificate's; and the stated policy parameters are those of the logged
   ``consensus.policy_set`` event of that version, logged before the proposal;
7. with the log's public key (``--log-key``): ``log.checkpoint`` is a C2SP checkpoint
   signed by it for exactly that size and root;
8. the frozen validators whose ``cosignature/v1`` of that checkpoint verifies under
   their trusted key (one Ed25519 key signs votes and cosigns; core's
   ``as_cosigner_verifier``) are counted with their power; ``require_cosigned`` asks for
   more than two thirds of it; other witness keys (``--witness-key``) with a quorum
   can be asked for too.

Bad input (not a certificate) raises :class:`ConsensusInputError` (exit 2); a
certificate that does not verify raises :class:`CertificateError` (exit 1). What a
certificate proves and what it does not: ``docs/certificate.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cladelog.consensus.errors import CertificateError, ConsensusInputError
from cladelog.consensus.ledger import frozen_digest, frozen_terms

__all__ = ["FORMAT", "build_certificate", "merge_cosignatures", "parse_trusted_keys",
           "verify_certificate"]

FORMAT = "cladelog-consensus-certificate/v2"
_KEYS = frozenset({"format", "candidate", "parent", "eval_digest", "opened", "policy",
                   "validators", "proposal", "votes", "log"})


def build_certificate(proposal: Mapping[str, Any], proposal_event: Any, policy_event: Any,
                      vote_events: Iterable[Any], log: Any,
                      checkpoint: Mapping[str, Any] | None = None, *,
                      opened_event: Any = None) -> dict[str, Any]:
    """A certificate from a finalized proposal record (ledger state), the recorded
    ``consensus.proposed`` event of the proposal, the ``consensus.policy_set`` event of
    the policy version it froze, the recorded ``consensus.voted`` events of its counted
    accepts, and the store (``log``: ``head()``, ``tree_root(size)``,
    ``inclusion_proof(position, size)``).

    ``checkpoint``: the data of a ``core.checkpoint_signed`` event (``size``, ``note``)
    covering every vote; the proofs are then made at its size and its signed note is
    embedded (``log.checkpoint``); otherwise at the current head, unsigned.
    ``opened_event``: the ``consensus.proposal_opened`` event recorded right after the
    proposal (the log's record of the frozen set and parameters)."""
    if proposal["outcome"] not in ("finalized", "settled"):
        raise ConsensusInputError(f"candidate: {proposal['candidate']!r} is "
                                  f"{proposal['outcome']}, not finalized")
    if proposal_event is None or policy_event is None or opened_event is None:
        raise ConsensusInputError("log: the proposal's consensus.proposed or "
                                  "consensus.proposal_opened event, or its policy's "
                                  "consensus.policy_set event, is not in the log")
    events = sorted(vote_events, key=lambda e: e.position)
    size = log.head().position if checkpoint is None else int(checkpoint["size"])

    def entry(e: Any) -> dict[str, Any]:
        return {"event": {"position": e.position, "stream": e.stream,
                          "stream_version": e.stream_version, "type": e.type,
                          "schema_version": e.schema_version, "data": e.data,
                          "meta": dict(e.meta), "recorded_at": e.recorded_at,
                          "prev_hash": e.prev_hash, "hash": e.hash},
                "proof": [h.hex() for h in log.inclusion_proof(e.position, size)]}

    if events and events[-1].position > size:
        raise ConsensusInputError(f"checkpoint: size {size} does not cover the last vote "
                                  f"(position {events[-1].position}); sign a newer one")
    entries = [entry(e) for e in events]
    terms = frozen_terms(dict(proposal))
    return {
        "format": FORMAT,
        "candidate": proposal["candidate"], "parent": proposal["parent"],
        "eval_digest": proposal["eval_digest"], "opened": terms["opened"],
        "policy": terms["policy"], "validators": terms["validators"],
        "proposal": dict(proposal_event.data["envelope"]),
        "votes": [e.data["envelope"] for e in events],
        "log": {"size": size, "root": log.tree_root(size).hex(), "entries": entries,
                "proposal": entry(proposal_event), "opened": entry(opened_event),
                "policy": entry(policy_event),
                "checkpoint": None if checkpoint is None else str(checkpoint["note"])},
    }


def merge_cosignatures(note: str, cosigned: Iterable[str]) -> str:
    """The log's signed checkpoint ``note`` with the signature lines of every cosigned copy
    of it added (witness cosignatures, ``core.cosignature_received``); copies of another
    text are skipped."""
    text, _, lines = note.partition("\n\n")
    merged = [line for line in lines.splitlines() if line]
    for other in cosigned:
        other_text, _, other_lines = other.partition("\n\n")
        if other_text != text:
            continue
        merged += [line for line in other_lines.splitlines() if line and line not in merged]
    return text + "\n\n" + "".join(line + "\n" for line in merged)


def _check_checkpoint(log: dict[str, Any], size: int, log_root: str,
                      log_keys: Sequence[str], witness_keys: Sequence[str] = (),
                      quorum: int = 0) -> str | None:
    """The signed checkpoint, when the caller gave the log's keys: signed by one of them,
    for exactly ``size`` and ``log_root``, and cosigned by at least ``quorum`` of
    ``witness_keys`` when given. Returns its origin (None without keys)."""
    from cladelog.core import transparency as t

    note = log.get("checkpoint")
    if witness_keys and not log_keys:
        raise ConsensusInputError("--witness-key: needs --log-key (witnesses cosign the "
                                  "log's signed checkpoint)")
    if not log_keys:
        return None
    if not isinstance(note, str):
        raise CertificateError("certificate.log.checkpoint: no signed checkpoint (the log "
                               "key was given)")
    try:
        verifiers = [t.parse_verifier_key(k) for k in log_keys]
    except t.NoteError as exc:
        raise ConsensusInputError(f"--log-key: {exc}") from None
    try:
        opened = t.open_note(note, verifiers)
        checkpoint = t.parse_checkpoint(opened.text)
    except t.NoteError as exc:
        raise CertificateError(f"certificate.log.checkpoint: {exc}") from None
    if checkpoint.size != size or checkpoint.root_hash.hex() != log_root:
        raise CertificateError("certificate.log.checkpoint: signs another size or root "
                               "than the proofs use")
    if witness_keys:
        try:
            t.verify_cosignatures(note, verifiers, list(witness_keys), quorum,
                                  where="certificate.log.checkpoint")
        except t.CheckpointRefused as exc:
            raise CertificateError(str(exc)) from None
        except t.NoteError as exc:
            if "quorum" in str(exc) or "witness" in str(exc).split(":")[0]:
                raise ConsensusInputError(f"--witness-key: {exc}") from None
            raise CertificateError(str(exc)) from None
    return checkpoint.origin


def _validator_cosigners(log: dict[str, Any], size: int, log_root: str,
                         trusted: Mapping[str, str], powers: Mapping[str, int]) -> list[str]:
    """The frozen validators whose ``cosignature/v1`` of the embedded checkpoint verifies
    under the ``cosignature/v1`` form of their trusted Ed25519 key (one key for both jobs,
    :func:`cladelog.core.transparency.as_cosigner_verifier`). The checkpoint they cosigned
    must be of exactly the certificate's size and root."""
    from cladelog.core import transparency as t

    note = log.get("checkpoint")
    keys = [trusted[v] for v in sorted(powers) if v in trusted]
    if not isinstance(note, str) or not keys:
        return []
    try:
        got = t.witness_cosignatures(note, keys, where="certificate.log.checkpoint")
    except t.NoteError as exc:  # a malformed note, or a validator's cosignature that fails
        raise CertificateError(str(exc)) from None
    if got.witnesses and (got.checkpoint.size != size
                          or got.checkpoint.root_hash.hex() != log_root):
        raise CertificateError("certificate.log.checkpoint: the validators cosigned another "
                               "size or root than the proofs use")
    return sorted(got.witnesses)


_EVENT_FIELDS = ("position", "stream", "stream_version", "type", "schema_version", "data",
                 "meta", "recorded_at", "prev_hash")


def _included_event(entry: Any, where: str, size: int, log_root: str) -> dict[str, Any]:
    """The event of a log entry ``{event, proof}``: its chain hash recomputes from it and
    its inclusion proof leads to ``log_root`` at ``size``."""
    from cladelog.core import chain_hash, encode_body
    from cladelog.core import transparency as t

    event = entry.get("event") if isinstance(entry, dict) else None
    proof = entry.get("proof") if isinstance(entry, dict) else None
    if not isinstance(event, dict) or not isinstance(proof, list) \
            or not all(isinstance(h, str) for h in proof):
        raise ConsensusInputError(f"{where}: needs an event object and a proof list")
    try:
        body = encode_body(**{k: event[k] for k in _EVENT_FIELDS})
        recomputed = chain_hash(event["prev_hash"], body)
        leaf = t.leaf_hash(bytes.fromhex(event["hash"]))
        hashes = [bytes.fromhex(h) for h in proof]
        trusted_root = bytes.fromhex(log_root)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConsensusInputError(f"{where}: malformed event or proof ({exc})") from None
    if recomputed != event["hash"]:
        raise CertificateError(f"{where}: the event's hash does not recompute from it")
    try:
        t.verify_inclusion(leaf, event["position"] - 1, size, hashes, trusted_root)
    except t.ProofError as exc:
        raise CertificateError(f"{where}.proof: {exc}") from None
    return event


def _check_log(cert: dict[str, Any], total: int, root: str | None,
               log_keys: Sequence[str] = (), witness_keys: Sequence[str] = (),
               quorum: int = 0) -> tuple[int, str, str | None]:
    """Every vote is a logged ``consensus.voted`` event included under ``log.root``; the
    proposal and the policy version it names are logged events before it."""
    log = cert["log"]
    if not isinstance(log, dict) or not isinstance(log.get("entries"), list):
        raise ConsensusInputError("certificate.log: must be an object with entries")
    size, log_root = log.get("size"), log.get("root")
    if type(size) is not int or size < 1 or not isinstance(log_root, str):
        raise ConsensusInputError("certificate.log: needs size >= 1 and root")
    if root is not None and root != log_root:
        raise CertificateError(f"certificate.log.root: {log_root[:16]}... is not the "
                               f"trusted root {root[:16]}...")
    origin = _check_checkpoint(log, size, log_root, log_keys, witness_keys, quorum)
    if len(log["entries"]) != len(cert["votes"]):
        raise CertificateError("certificate.log.entries: one entry per vote is needed")
    for index, (entry, vote) in enumerate(zip(log["entries"], cert["votes"], strict=True)):
        where = f"certificate.log.entries[{index}]"
        event = _included_event(entry, where, size, log_root)
        if event["type"] != "consensus.voted" or event["data"] != {"envelope": vote}:
            raise CertificateError(f"{where}: is not the consensus.voted event of vote "
                                   f"{index}")
    proposed = _included_event(log.get("proposal"), "certificate.log.proposal", size,
                               log_root)
    if proposed["type"] != "consensus.proposed" \
            or proposed["data"] != {"envelope": cert["proposal"]}:
        raise CertificateError("certificate.log.proposal: is not the consensus.proposed "
                               "event of the proposal")
    opened = _included_event(log.get("opened"), "certificate.log.opened", size, log_root)
    expected = {"candidate": cert["candidate"], "epoch": cert["opened"],
                "policy_version": cert["policy"].get("version"), "total_power": total,
                "frozen_digest": frozen_digest(cert)}
    if opened["type"] != "consensus.proposal_opened" \
            or opened["position"] != proposed["position"] + 1 \
            or opened["stream"] != proposed["stream"]:
        raise CertificateError("certificate.log.opened: is not the consensus.proposal_opened "
                               "event recorded right after the proposal")
    if opened["data"] != expected:
        raise CertificateError("certificate.log.opened: the log recorded another frozen set, "
                               "total power or policy version for this proposal than the "
                               "certificate states")
    policy_event = _included_event(log.get("policy"), "certificate.log.policy", size,
                                   log_root)
    policy = policy_event["data"].get("policy") if isinstance(policy_event["data"], dict) \
        else None
    if policy_event["type"] != "consensus.policy_set" or not isinstance(policy, dict) \
            or policy_event["position"] >= proposed["position"]:
        raise CertificateError("certificate.log.policy: is not a consensus.policy_set event "
                               "logged before the proposal")
    stated = cert["policy"]
    for field in ("version", "weighting", "cap", "voting_window", "challenge_window"):
        if policy.get(field) != stated.get(field):
            raise CertificateError(f"certificate.policy.{field}: differs from the logged "
                                   f"policy version {policy.get('version')}")
    return size, log_root, origin


def parse_trusted_keys(text: str) -> dict[str, str]:
    """``{validator id: verifier key}`` from one verifier key per line (``#`` comments)."""
    from cladelog.core import transparency as t

    keys: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            key = t.parse_verifier_key(line)
        except t.NoteError as exc:
            raise ConsensusInputError(f"--trusted-keys: line {number}: {exc}") from None
        if key.name in keys and keys[key.name] != line:
            raise ConsensusInputError(f"--trusted-keys: line {number}: a second key for "
                                      f"{key.name!r}")
        keys[key.name] = line
    if not keys:
        raise ConsensusInputError("--trusted-keys: no verifier key in the file")
    return keys


def _shape(doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ConsensusInputError(f"certificate: not a {FORMAT} document")
    missing = sorted(_KEYS - set(doc))
    if missing:
        raise ConsensusInputError(f"certificate.{missing[0]}: missing")
    if not isinstance(doc["validators"], dict) or not isinstance(doc["votes"], list):
        raise ConsensusInputError("certificate: validators must be an object, votes a list")
    if not isinstance(doc["policy"], dict) or type(doc["opened"]) is not int:
        raise ConsensusInputError("certificate: policy must be an object, opened an integer")
    return doc


def verify_certificate(doc: Any, trusted: Mapping[str, str], root: str | None = None,
                       log_keys: Sequence[str] = (), witness_keys: Sequence[str] = (),
                       quorum: int = 0, *, require_cosigned: bool = False) -> dict[str, Any]:
    """Check a certificate (see the module docstring); ``root`` (hex), when given, is the
    log root the caller trusts; ``log_keys`` (verifier key strings), when given, must
    have signed the embedded checkpoint of that size and root, and at least ``quorum``
    of ``witness_keys`` (witness verifier keys, e.g. the validators') must have cosigned
    it. The frozen validators that cosigned the embedded checkpoint with their trusted
    keys are counted (``cosigned_by``, ``cosigned_power``); ``require_cosigned`` asks
    that they hold more than two thirds of the frozen power. Return ``{candidate,
    parent, accept_power, total_power, voters, log_size, log_root, checkpoint_origin,
    cosigned_by, cosigned_power}``."""
    from cladelog.consensus.policy import MAX_INT, WEIGHTINGS, parse_fraction
    from cladelog.consensus.power import frozen_powers, quorum_reached
    from cladelog.consensus.signing import open_with_keys

    cert = _shape(doc)
    policy = cert["policy"]
    cap = None if policy.get("cap") is None else parse_fraction(policy["cap"],
                                                                "certificate.policy.cap")
    stakes: dict[str, int] = {}
    listed: dict[str, int] = {}
    for vid, row in cert["validators"].items():
        values = [row.get(k) if isinstance(row, dict) else None for k in ("stake", "power")]
        if not all(type(x) is int and 0 <= x <= MAX_INT for x in values):
            raise ConsensusInputError(f"certificate.validators.{vid}: needs integer stake and "
                                      "power in [0, 2^53-1]")
        stakes[vid], listed[vid] = values[0], values[1]  # type: ignore[assignment]
    window, weighting = policy.get("voting_window"), policy.get("weighting")
    if type(window) is not int or window < 1 or weighting not in WEIGHTINGS:
        raise ConsensusInputError("certificate.policy: needs voting_window >= 1 and weighting "
                                  f"one of {', '.join(WEIGHTINGS)}")
    if frozen_powers(stakes, weighting, cap) != listed:
        raise CertificateError("certificate.validators: the powers do not follow from the "
                               "stakes under the frozen weighting and cap")
    total = sum(listed.values())
    try:
        proposal, _ = open_with_keys(cert["proposal"], trusted, "certificate.proposal")
    except ConsensusInputError as exc:
        raise CertificateError(str(exc)) from None
    for field in ("candidate", "parent", "eval_digest"):
        if proposal.get(field) != cert[field]:
            raise CertificateError(f"certificate.proposal: its {field} is not the "
                                   f"certificate's {cert[field]!r}")
    if proposal.get("kind") != "propose" or proposal["epoch"] != cert["opened"]:
        raise CertificateError("certificate.proposal: not the proposal statement of the "
                               "epoch it opened in")
    first, last = cert["opened"], cert["opened"] + window - 1
    accept = 0
    voters: list[str] = []
    for index, envelope in enumerate(cert["votes"]):
        where = f"certificate.votes[{index}]"
        try:
            vote, _ = open_with_keys(envelope, trusted, where)
        except ConsensusInputError as exc:
            raise CertificateError(str(exc)) from None
        vid = vote["validator"]
        if vote["kind"] != "vote" or vote["proposal"] != cert["candidate"] \
                or vote["decision"] != "accept":
            raise CertificateError(f"{where}: not an accept of {cert['candidate']!r}")
        if vid not in listed:
            raise CertificateError(f"{where}: {vid!r} is not in the frozen validator set")
        if vid in voters:
            raise CertificateError(f"{where}: {vid!r} is counted twice")
        if not first <= vote["epoch"] <= last:
            raise CertificateError(f"{where}: signed in epoch {vote['epoch']}, outside the "
                                   f"voting window {first}..{last}")
        voters.append(vid)
        accept += listed[vid]
    if not quorum_reached(accept, total):
        raise CertificateError(f"certificate: accepting power {accept} of {total} is not "
                               "more than two thirds")
    size, log_root, origin = _check_log(cert, total, root, log_keys, witness_keys, quorum)
    cosigners = _validator_cosigners(cert["log"], size, log_root, trusted, listed)
    cosigned = sum(listed[v] for v in cosigners)
    if require_cosigned and not quorum_reached(cosigned, total):
        raise CertificateError(f"certificate.log.checkpoint: validators holding {cosigned} of "
                               f"{total} power cosigned it, not more than two thirds")
    return {"candidate": cert["candidate"], "parent": cert["parent"],
            "accept_power": accept, "total_power": total, "voters": voters,
            "log_size": size, "log_root": log_root, "checkpoint_origin": origin,
            "cosigned_by": cosigners, "cosigned_power": cosigned}
