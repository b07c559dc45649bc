"""``cladelog consensus ...``: keys, policy, stake, proposals, votes, epochs, challenges,
evidence, status and the simulation.

Exit codes: 0 ok, 1 a verification failure (``verify-certificate``), 2 bad input or
usage with one line ``error: <field>: <problem>`` on stderr and nothing appended.
Only click is imported at start-up; everything else inside the command bodies.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click
from cladelog.core import HELP_SETTINGS, human_number, json_option, pass_deployment

if TYPE_CHECKING:
    from cladelog.core import Deployment

__all__ = ["consensus"]


def _echo_json(doc: Any) -> None:
    click.echo(json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=2))


def _consequences(out: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """What an append brought about (a candidate finalized, a validator slashed, ...)."""
    return [{"event": event_type.split(".", 1)[1],
             "subject": data.get("candidate") or data.get("validator") or None}
            for event_type, data in out]


def _echo_result(as_json: bool, doc: dict[str, Any], line: str) -> None:
    """A command's result: ``doc`` as JSON with --json, else ``line`` and the
    consequences listed in ``doc``, one a line."""
    if as_json:
        from cladelog.core import echo_json

        echo_json(doc)
        return
    click.echo(line)
    for c in doc.get("consequences", ()):
        click.echo(f"  {c['event']} {c['subject'] or ''}".rstrip())


@click.group("consensus", context_settings=HELP_SETTINGS)
def consensus() -> None:
    """Independent validators: stake, signed votes, >2/3 finality, challenges, slashing."""


# -- keys and policy -----------------------------------------------------------------------


@consensus.command("keygen")
@click.argument("name")
@click.option("--out", "out_dir", default=".", metavar="DIR",
              help="Directory for NAME.key (private), NAME.pub and NAME.witness.pub "
              "(default: .).")
@json_option()
def keygen(name: str, out_dir: str, as_json: bool) -> None:
    """Make an Ed25519 validator key named NAME (the validator id).

    The same key signs the validator's statements and, as a witness of the log, cosigns
    its checkpoints (cladelog witness cosign --key NAME.key). NAME.witness.pub is its
    cosignature/v1 verifier key, for witness tools that want that form."""
    from pathlib import Path

    from cladelog.consensus.errors import ConsensusInputError
    from cladelog.consensus.policy import check_id
    from cladelog.consensus.signing import generate_key
    from cladelog.core import fail
    from cladelog.core.transparency import as_cosigner_verifier, write_key_files

    try:
        check_id(name, "NAME")
    except ConsensusInputError as exc:
        fail(str(exc))
    folder = Path(out_dir)
    if not folder.is_dir():
        fail(f"--out: {out_dir} is not a directory")
    witness_pub = folder / f"{name}.witness.pub"
    if witness_pub.exists():
        fail(f"NAME: {witness_pub} already exists; refusing to overwrite a key")
    skey, vkey = generate_key(name)
    write_key_files(skey, vkey, folder / f"{name}.key", folder / f"{name}.pub", field="NAME")
    witness_vkey = as_cosigner_verifier(vkey).vkey
    try:
        with open(witness_pub, "x", encoding="utf-8") as handle:
            handle.write(witness_vkey + "\n")
    except OSError as exc:
        fail(f"NAME: cannot write {witness_pub} ({exc.strerror})")
    _echo_result(as_json, {"name": name, "vkey": vkey, "witness_vkey": witness_vkey,
                           "private": str(folder / f"{name}.key"),
                           "public": str(folder / f"{name}.pub"),
                           "witness_public": str(witness_pub)},
                 f"{vkey}\nwitness: {witness_vkey}")


@consensus.group("policy", context_settings=HELP_SETTINGS)
def policy() -> None:
    """Set the consensus policy (versioned; applies from the next proposal on)."""


@policy.command("set")
@click.argument("file", metavar="FILE")
@json_option()
@pass_deployment
def policy_set(dep: Deployment, file: str, as_json: bool) -> None:
    """Set a new policy version from a JSON FILE (see the README for the fields)."""
    from cladelog.consensus.commands import append_inputs
    from cladelog.consensus.policy import parse_policy
    from cladelog.core import read_json_file

    doc = parse_policy(read_json_file(file), "policy").to_dict()
    out = append_inputs(dep, [("consensus.policy_set", {"policy": doc})])
    _echo_result(as_json, {"policy_version": doc["version"], "consequences": _consequences(out)},
                 f"policy v{doc['version']} set")


# -- signed statements ---------------------------------------------------------------------


def _sign(dep: Deployment, key: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    from cladelog.consensus.commands import current_ledger
    from cladelog.consensus.signing import load_signer, sign_statement

    signer = load_signer(key)
    predicate = {"kind": kind, "validator": signer.name, "epoch": current_ledger(dep).epoch,
                 **fields}
    return sign_statement(predicate, signer)


def _append_or_write(dep: Deployment, envelope: dict[str, Any], out: str | None,
                     as_json: bool) -> None:
    _echo_result(as_json, *_append_or_write_doc(dep, envelope, out))


def _append_or_write_doc(dep: Deployment, envelope: dict[str, Any], out: str | None
                         ) -> tuple[dict[str, Any], str]:
    from cladelog.consensus.commands import append_inputs, input_for_envelope

    if out is not None:
        _write_json(out, envelope)
        return {"appended": False, "written": out}, f"signed statement written to {out}"
    consequences = append_inputs(dep, [input_for_envelope(envelope)])
    return {"appended": True, "consequences": _consequences(consequences)}, "appended"


def _write_json(path: str, doc: Any) -> None:
    from pathlib import Path

    from cladelog.core import fail

    try:
        Path(path).write_text(json.dumps(doc, sort_keys=True, indent=2) + "\n")
    except OSError as exc:
        fail(f"--out: cannot write {path}: {exc.strerror}")


_KEY = click.option("--key", required=True, metavar="FILE", help="The validator's private key.")
_OUT = click.option("--out", metavar="FILE",
                    help="Write the signed statement to FILE instead of appending it.")
_JSON = json_option()


@consensus.command("bond")
@_KEY
@click.option("--stake", required=True, type=int, help="Stake, in the smallest unit.")
@_OUT
@_JSON
@pass_deployment
def bond(dep: Deployment, key: str, stake: int, out: str | None, as_json: bool) -> None:
    """Bond stake as a validator (activates at once)."""
    from cladelog.consensus.signing import load_signer

    signer = load_signer(key)
    _append_or_write(dep, _sign(dep, key, "bond", {"key": signer.public_key, "stake": stake}),
                     out, as_json)


@consensus.command("unbond")
@_KEY
@_OUT
@_JSON
@pass_deployment
def unbond(dep: Deployment, key: str, out: str | None, as_json: bool) -> None:
    """Ask to unbond the whole stake (completes after the unbonding period)."""
    _append_or_write(dep, _sign(dep, key, "unbond", {}), out, as_json)


@consensus.command("unjail")
@_KEY
@_OUT
@_JSON
@pass_deployment
def unjail(dep: Deployment, key: str, out: str | None, as_json: bool) -> None:
    """Ask to leave jail once the jail period has passed."""
    _append_or_write(dep, _sign(dep, key, "unjail", {}), out, as_json)


@consensus.command("propose")
@_KEY
@click.option("--candidate", required=True, help="The candidate id C(M').")
@click.option("--parent", default="genesis", show_default=True,
              help="The finalized (or open) parent candidate, or genesis.")
@click.option("--inputs", "inputs_file", required=True, metavar="FILE",
              help="The audit inputs document (its digest is the eval digest).")
@click.option("--receipts-checkpoint", required=True,
              help="The receipts register checkpoint the gains refer to.")
@click.option("--coverage-diff", required=True, help="SHA-256 of the frontier-coverage diff.")
@click.option("--metric-delta", required=True, type=float, help="The signed metric delta.")
@_OUT
@_JSON
@pass_deployment
def propose(dep: Deployment, key: str, candidate: str, parent: str, inputs_file: str,
            receipts_checkpoint: str, coverage_diff: str, metric_delta: float,
            out: str | None, as_json: bool) -> None:
    """Propose a candidate to the validators."""
    from cladelog.consensus.commands import load_audit_inputs

    _, digest = load_audit_inputs(inputs_file)
    fields = {"candidate": candidate, "parent": parent, "eval_digest": digest,
              "receipts_checkpoint": receipts_checkpoint, "coverage_diff": coverage_diff,
              "metric_delta": metric_delta}
    _append_or_write(dep, _sign(dep, key, "propose", fields), out, as_json)


@consensus.command("vote")
@click.argument("proposal")
@_KEY
@click.option("--inputs", "inputs_path", default=".", show_default=True, metavar="FILE|DIR",
              help="The audit inputs (a file, or a directory holding <eval digest>.json).")
@click.option("--out", metavar="FILE", help="Vote file (default: vote-PROPOSAL-NAME.json).")
@click.option("--submit", is_flag=True, help="Append the vote too (else only the file).")
@_JSON
@pass_deployment
def vote(dep: Deployment, proposal: str, key: str, inputs_path: str, out: str | None,
         submit: bool, as_json: bool) -> None:
    """Audit PROPOSAL (re-run ForkScore on its inputs) and sign the vote.

    The vote is accept when the audit's verdict is ACCEPT with no hard flag, reject
    otherwise; the vote records the audit result.
    """
    from cladelog.consensus.commands import current_ledger, load_audit_inputs, run_audit
    from cladelog.consensus.signing import load_signer

    record = current_ledger(dep).proposal(proposal)
    document, _ = load_audit_inputs(inputs_path, record["eval_digest"])
    audit = run_audit(dep, document)
    decision = "accept" if audit["verdict"] == "ACCEPT" and not audit["hard_flags"] else "reject"
    envelope = _sign(dep, key, "vote", {"proposal": proposal, "decision": decision,
                                        "audit": audit})
    name = load_signer(key).name
    doc: dict[str, Any] = {"appended": False}
    if submit:
        doc, line = _append_or_write_doc(dep, envelope, None)
        if not as_json:
            _echo_result(False, doc, line)
    path = out or f"vote-{proposal}-{name}.json"
    _write_json(path, envelope)
    _echo_result(as_json, doc | {"decision": decision, "verdict": audit["verdict"],
                                 "written": path},
                 f"{decision} ({audit['verdict']}) signed to {path}")


@consensus.command("submit")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@_JSON
@pass_deployment
def submit(dep: Deployment, files: tuple[str, ...], as_json: bool) -> None:
    """Append signed statements (votes, proposals, bonds...) and evidence pairs
    ({"first", "second"}) made elsewhere, in order; all of them or none."""
    from cladelog.consensus.commands import append_inputs, input_for_envelope
    from cladelog.core import read_json_file

    inputs = []
    for f in files:
        doc = read_json_file(f)
        if isinstance(doc, dict) and set(doc) == {"first", "second"}:
            inputs.append(("consensus.evidence_submitted", doc))
        else:
            inputs.append(input_for_envelope(doc, f))
    consequences = append_inputs(dep, inputs)
    _echo_result(as_json, {"appended": len(inputs), "consequences": _consequences(consequences)},
                 f"appended {len(inputs)} statement(s)")


@consensus.command("evidence")
@click.argument("file", metavar="FILE")
@_JSON
@pass_deployment
def evidence(dep: Deployment, file: str, as_json: bool) -> None:
    """Submit equivocation evidence: FILE holds {"first": envelope, "second": envelope}."""
    from cladelog.consensus.commands import append_inputs
    from cladelog.consensus.errors import ConsensusInputError
    from cladelog.core import read_json_file

    doc = read_json_file(file)
    if not isinstance(doc, dict) or set(doc) != {"first", "second"}:
        raise ConsensusInputError(f"{file}: must be an object with exactly first, second")
    consequences = append_inputs(dep, [("consensus.evidence_submitted", doc)])
    _echo_result(as_json, {"recorded": True, "consequences": _consequences(consequences)},
                 "evidence recorded")


# -- epochs and challenges -----------------------------------------------------------------


@consensus.command("tick")
@_JSON
@pass_deployment
def tick(dep: Deployment, as_json: bool) -> None:
    """Close the current epoch (windows close, candidates settle, unbondings complete)."""
    from cladelog.consensus.commands import append_inputs, current_ledger

    epoch = current_ledger(dep).epoch
    consequences = append_inputs(dep, [("consensus.epoch_closed", {"epoch": epoch})])
    _echo_result(as_json, {"closed_epoch": epoch, "consequences": _consequences(consequences)},
                 f"epoch {epoch} closed")


@consensus.command("challenge")
@click.argument("candidate")
@click.option("--inputs", "inputs_file", required=True, metavar="FILE",
              help="The audit inputs whose digest is the proposal's eval digest.")
@click.option("--claim", type=click.Choice(["reject", "hard_flag"]), default="reject",
              show_default=True, help="What the inputs are claimed to give.")
@click.option("--challenger", default="anonymous", show_default=True, help="Who challenges.")
@_JSON
@pass_deployment
def challenge(dep: Deployment, candidate: str, inputs_file: str, claim: str,
              challenger: str, as_json: bool) -> None:
    """Challenge a finalized candidate: re-run the audit; if it gives REJECT or a hard
    flag the candidate is overturned and its accepting validators are slashed."""
    from cladelog.consensus.commands import (
        append_inputs,
        current_ledger,
        load_audit_inputs,
        run_audit,
    )

    record = current_ledger(dep).proposal(candidate)
    document, digest = load_audit_inputs(inputs_file, record["eval_digest"])
    audit = run_audit(dep, document)
    data = {"candidate": candidate, "challenger": challenger, "claim": claim,
            "inputs_digest": digest, "audit": audit}
    consequences = append_inputs(dep, [("consensus.challenge_opened", data)])
    confirmed = any(t == "consensus.candidate_overturned" for t, _ in consequences)
    _echo_result(as_json, {"candidate": candidate, "confirmed": confirmed,
                           "verdict": audit["verdict"],
                           "consequences": _consequences(consequences)},
                 f"challenge {'confirmed' if confirmed else 'failed'} ({audit['verdict']})")


# -- reading -------------------------------------------------------------------------------


@consensus.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_deployment
def status(dep: Deployment, as_json: bool) -> None:
    """The validator table: state, stake, power, votes, misses, slashes."""
    from cladelog.consensus.commands import current_ledger, tally_rows

    ledger = current_ledger(dep)
    rows = list(tally_rows(ledger))
    if as_json:
        _echo_json({"epoch": ledger.epoch, "policy": ledger.state["policy"],
                    "validators": rows})
        return
    policy = ledger.state["policy"]
    click.echo(f"epoch {ledger.epoch}, policy "
               f"{'none' if policy is None else 'v' + str(policy['version'])}")
    click.echo(f"{'validator':<20} {'state':<10} {'stake':>12} {'power':>10} {'votes':>6} "
               f"{'misses':>6} {'slashed':>10}")
    for row in rows:
        note = ""
        if row["jailed_until"] is not None:
            note = f"  jailed until the end of epoch {row['jailed_until']}"
        elif row["unbond_earliest"] is not None:
            note = f"  unbonding, at the earliest at the end of epoch {row['unbond_earliest']}"
        click.echo(f"{row['validator']:<20} {row['state']:<10} {row['stake']:>12} "
                   f"{row['power']:>10} {row['votes']:>6} {row['misses']:>6} "
                   f"{row['slashed']:>10}{note}")


@consensus.command("show")
@click.argument("proposal")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_deployment
def show(dep: Deployment, proposal: str, as_json: bool) -> None:
    """One proposal: parent, outcome, frozen set, tally, votes, missing power, ζ."""
    from cladelog.consensus.commands import current_ledger

    record = current_ledger(dep).proposal(proposal)
    if as_json:
        _echo_json(record)
        return
    click.echo(f"{record['candidate']} (parent {record['parent']}): {record['outcome']}"
               + (f" ({record['reason']})" if record["reason"] else ""))
    click.echo(f"  opened in epoch {record['opened']}, voting window "
               f"{record['voting_window']}, policy v{record['policy_version']}")
    click.echo(f"  accept {record['accept_power']} / reject {record['reject_power']} of "
               f"{record['total_power']} power (more than 2/3 needed)")
    for vid, v in sorted(record["votes"].items()):
        click.echo(f"  {vid}: {v['decision']} (power {record['frozen'][vid]}, "
                   f"epoch {v['epoch']})")
    if record["missing"] is not None:
        missing = record["missing"]
        click.echo(f"  did not vote: {', '.join(missing['validators']) or 'nobody'} "
                   f"(power {missing['power']}, stake {missing['stake']})")
    if record["zeta"] is not None:
        click.echo(f"  zeta {human_number(record['zeta'])}")


# -- simulation ----------------------------------------------------------------------------


@consensus.command("simulate")
@click.option("--validators", "n", required=True, type=int, help="Number of validators N.")
@click.option("--byzantine", "f", default=0, show_default=True, type=int,
              help="How many are Byzantine.")
@click.option("--offline", "g", default=0, show_default=True, type=int,
              help="How many are offline.")
@click.option("--epochs", "e", default=10, show_default=True, type=int, help="Epochs to run.")
@click.option("--seed", "s", default=0, show_default=True, type=int, help="Random seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@pass_deployment
def simulate(dep: Deployment, n: int, f: int, g: int, e: int, s: int, as_json: bool) -> None:
    """Run honest, offline and Byzantine validators on this (empty) log, signing every
    statement, and print what was finalized, overturned and slashed."""
    from cladelog.consensus.commands import current_ledger, run_audit
    from cladelog.consensus.errors import ConsensusInputError
    from cladelog.consensus.simulate import LogSink, SimConfig, run, sim_signers

    config = SimConfig(n, f, g, e, s)
    config.check()
    ledger = current_ledger(dep)
    if ledger.state["policy"] is not None or ledger.state["validators"]:
        raise ConsensusInputError("simulate: the log already holds consensus events; "
                                  "simulate on a fresh deployment")
    sink = LogSink(dep, sim_signers(config))
    report = run(config, sink, lambda doc: run_audit(dep, doc))
    if as_json:
        _echo_json(report)
        return
    outcomes: dict[str, int] = {}
    for p in report["proposals"]:
        outcomes[p["outcome"]] = outcomes.get(p["outcome"], 0) + 1
    click.echo(f"{n} validators ({f} byzantine, {g} offline), {e} epochs, seed {s}")
    click.echo("proposals: " + (", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
                                or "none"))
    for v in report["validators"]:
        if v["slashes"]:
            what = ", ".join(f"{x['offense']} -{x['amount']}" for x in v["slashes"])
            click.echo(f"slashed: {v['validator']} ({v['role']}): {what}")
    for c in report["conflicting_finalizations"]:
        click.echo(f"conflicting quorum: {' vs '.join(c['candidates'])}; double signers "
                   f"{c['double_signer_power']}/{c['total_power']} power, all slashed")


# -- certificates --------------------------------------------------------------------------


@consensus.command("certificate")
@click.argument("candidate")
@click.option("--out", metavar="FILE", help="Where to write it (default: CANDIDATE.cert.json).")
@_JSON
@pass_deployment
def certificate(dep: Deployment, candidate: str, out: str | None, as_json: bool) -> None:
    """Write the finality certificate of a finalized CANDIDATE: policy, frozen set with
    powers, the proposal, the signed accepts and each one's inclusion proof in the log's
    Merkle tree (checked offline by verify-certificate)."""
    import base64
    import hashlib

    from cladelog.consensus.certificate import build_certificate, merge_cosignatures
    from cladelog.consensus.commands import current_ledger

    ledger = current_ledger(dep)
    record = ledger.proposal(candidate)
    wanted = {v["digest"] for v in record["votes"].values() if v["decision"] == "accept"}
    proposal_event = policy_event = opened_event = None
    votes = []
    for event in dep.store.read(types=("consensus.proposed", "consensus.voted",
                                       "consensus.policy_set", "consensus.proposal_opened")):
        if event.type == "consensus.proposal_opened":
            if proposal_event is not None and opened_event is None \
                    and event.position == proposal_event.position + 1:
                opened_event = event
            continue
        if event.type == "consensus.policy_set":
            policy = event.data.get("policy")
            if isinstance(policy, dict) and policy.get("version") == \
                    record["policy_version"] and policy_event is None:
                policy_event = event
            continue
        envelope = event.data["envelope"]
        try:
            payload = base64.b64decode(envelope["payload"])
        except (KeyError, TypeError, ValueError):
            continue  # a malformed hand-appended event (the projection ignored it)
        digest = hashlib.sha256(payload).hexdigest()
        if event.type == "consensus.voted" and digest in wanted:
            votes.append(event)
            wanted.discard(digest)
        elif event.type == "consensus.proposed" and proposal_event is None:
            try:
                predicate = json.loads(payload)["predicate"]
            except (KeyError, TypeError, ValueError):
                continue
            if predicate.get("candidate") == candidate:
                proposal_event = event  # the first one: later copies were refused
    last = max((e.position for e in votes), default=0)
    checkpoint = None  # the latest signed checkpoint of the log that covers every vote
    for event in dep.store.read(types=("core.checkpoint_signed",)):
        if isinstance(event.data, dict) and type(event.data.get("size")) is int \
                and event.data["size"] >= last and isinstance(event.data.get("note"), str):
            checkpoint = event.data
    if checkpoint is not None:  # add the witnesses' cosignatures of that checkpoint
        cosigned = [e.data["note"] for e in dep.store.read(types=("core.cosignature_received",))
                    if isinstance(e.data, dict) and e.data.get("size") == checkpoint["size"]
                    and isinstance(e.data.get("note"), str)]
        checkpoint = {**checkpoint, "note": merge_cosignatures(checkpoint["note"], cosigned)}
    doc = build_certificate(record, proposal_event, policy_event, votes, dep.store,
                            checkpoint, opened_event=opened_event)
    path = out or f"{candidate}.cert.json"
    _write_json(path, doc)
    signed = "a signed checkpoint" if checkpoint is not None else "the head (no signed " \
        "checkpoint covers the votes; run cladelog checkpoint --key)"
    _echo_result(as_json, {"candidate": candidate, "accepts": len(votes),
                           "signed_checkpoint": checkpoint is not None,
                           "size": doc["log"]["size"], "written": path},
                 f"certificate of {candidate} ({len(votes)} signed accepts, proofs at "
                 f"{signed}, size {doc['log']['size']}) written to {path}")


@consensus.command("verify-certificate")
@click.argument("file", metavar="FILE")
@click.option("--trusted-keys", required=True, metavar="FILE",
              help="Validator verifier keys, one per line (the .pub files concatenated).")
@click.option("--root", metavar="HEX", help="The log root you trust (e.g. from a witnessed "
              "checkpoint); the certificate's must equal it.")
@click.option("--log-key", "log_keys", multiple=True, metavar="FILE",
              help="The log's public key (cladelog keygen); the certificate's checkpoint "
              "must be signed by it.")
@click.option("--witness-key", "witness_keys", multiple=True, metavar="FILE",
              help="A witness's public key (cladelog keygen --witness, or a validator's "
              ".pub: one key signs and cosigns).")
@click.option("--witness-quorum", type=int, default=None,
              help="How many of the witness keys must have cosigned (default: all).")
@click.option("--require-cosigned", is_flag=True,
              help="Fail unless frozen validators holding more than 2/3 of the power "
              "cosigned the certificate's checkpoint (keys from --trusted-keys).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def verify_certificate(file: str, trusted_keys: str, root: str | None,
                       log_keys: tuple[str, ...], witness_keys: tuple[str, ...],
                       witness_quorum: int | None, require_cosigned: bool,
                       as_json: bool) -> None:
    """Check a finality certificate offline (no log needed). Exit 1 if it does not verify."""
    from pathlib import Path

    from cladelog.consensus.certificate import parse_trusted_keys
    from cladelog.consensus.certificate import verify_certificate as verify
    from cladelog.consensus.errors import CertificateError
    from cladelog.core import fail, read_json_file

    try:
        text = Path(trusted_keys).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"--trusted-keys: cannot read {trusted_keys} ({exc})")
    keys = []
    for key_file in log_keys:
        try:
            keys.append(Path(key_file).read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"--log-key: cannot read {key_file} ({exc})")
    witnesses = []
    for key_file in witness_keys:
        try:
            witnesses.append(Path(key_file).read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError) as exc:
            fail(f"--witness-key: cannot read {key_file} ({exc})")
    quorum = len(witnesses) if witness_quorum is None else witness_quorum
    if witnesses and not 1 <= quorum <= len(witnesses):
        fail(f"--witness-quorum: must be in 1..{len(witnesses)}, got {quorum}")
    try:
        summary = verify(read_json_file(file), parse_trusted_keys(text), root, keys,
                         witnesses, quorum, require_cosigned=require_cosigned)
    except CertificateError as exc:
        fail(f"{file}: does not verify: {exc}", 1)
    if as_json:
        _echo_json(summary)
        return
    click.echo(f"{summary['candidate']}: finalized by {summary['accept_power']} of "
               f"{summary['total_power']} power ({len(summary['voters'])} validators); votes "
               f"included in the log of {summary['log_size']} events, root "
               f"{summary['log_root']}"
               + (f", checkpoint of {summary['checkpoint_origin']} signed by the log key"
                  if summary["checkpoint_origin"] else "")
               + f"; checkpoint cosigned by {len(summary['cosigned_by'])} frozen validators "
               f"holding {summary['cosigned_power']} of {summary['total_power']} power")
