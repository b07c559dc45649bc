"""Recording receipts through the register: signatures, keys, sequence, claims, replay."""

from __future__ import annotations

import base64
import datetime
import json
import math
from typing import Any

import pytest
from cladelog.core import ConcurrencyError, InputError, NewEvent
from cladelog.core.canonical import canonical_bytes
from cladelog.receipts import (
    ClaimMismatchError,
    ReceiptInputError,
    Register,
    SequenceError,
    SignatureRefused,
    entries_in_window,
    make_receipt,
    parse_verifier_key,
)
from cladelog.receipts.dsse import PAYLOAD_TYPE_INTOTO, pae
from cladelog.receipts.register import read_receipts_json
from hypothesis import given, settings
from hypothesis import strategies as st
from receipts_helpers import Chain, Keys, gain_test, register_events, stage


def _refused(env: Any, reg: Register, envelopes: list[Any], exc: type, match: str) -> None:
    before = len(env.events())
    with pytest.raises(exc, match=match):
        reg.record(envelopes)
    assert len(env.events()) == before, "a refused command must append nothing"


def test_record_appends_the_contract_event(cladelog_env: Any, reg: Register,
                                           chain: Chain) -> None:
    env0 = chain.next()
    recorded = reg.record([env0])
    (event,) = register_events(cladelog_env)
    assert event.type == "receipts.entry_recorded" and event.stream == "receipts.register"
    assert event.stream_version == 1 and recorded[0].position == event.position
    data = event.data
    signed = json.loads(base64.b64decode(env0["payload"]))["predicate"]
    assert data["entry"] == signed and data["seq"] == 0 and data["kind"] == "gain_test"
    assert data["envelope"] == env0 and data["flags"] == []
    assert [s["name"] for s in data["entry"]["stages"]] == ["short", "long"]
    assert all({"elo", "half_width", "pass"} <= set(s) for s in data["entry"]["stages"])
    import hashlib

    assert data["leaf_hash"] == hashlib.sha256(b"\x00" + canonical_bytes(env0)).hexdigest()
    assert data["recomputed"]["stages"][0]["model"] == "trinomial"
    assert data["recomputed"]["stages"][0]["interval_method"]


def test_forged_signature_is_refused(cladelog_env: Any, reg: Register, chain: Chain) -> None:
    env0 = chain.next()
    sig = bytearray(base64.b64decode(env0["signatures"][0]["sig"]))
    sig[0] ^= 1
    env0["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    _refused(cladelog_env, reg, [env0], SignatureRefused, "does not verify")


def test_unknown_key_is_refused(cladelog_env: Any, reg: Register, keys: Keys,
                                chain: Chain) -> None:
    _refused(cladelog_env, reg, [chain.next(signer=keys.other)], SignatureRefused,
             r"no signature by a trusted keyid \(got \['rogue\.example\+")


def test_log_key_cannot_sign_receipts(cladelog_env: Any, reg: Register, keys: Keys,
                                      chain: Chain) -> None:
    _refused(cladelog_env, reg, [chain.next(signer=keys.log)], SignatureRefused,
             "registered as a log key, not an oracle key")


def test_revoked_key_from_a_position_on(cladelog_env: Any, reg: Register, keys: Keys,
                                        chain: Chain) -> None:
    reg.record([chain.next()])
    reg.revoke_key(keys.oracle.verifier().key_ref, 1, "leaked")
    _refused(cladelog_env, reg, [chain.next()], SignatureRefused,
             r"revoked from seq 1")
    assert reg.verify().ok  # seq 0 was signed before the revocation point


def test_retroactive_revocation_fails_verify(reg: Register, keys: Keys, chain: Chain) -> None:
    reg.record([chain.next(), chain.next()])
    reg.revoke_key(keys.oracle.verifier().key_ref, 1, "leaked earlier than we knew")
    report = reg.verify()
    assert not report.ok and report.failure is not None
    assert report.failure.startswith("seq 1 ") and "revoked from seq 1" in report.failure
    assert "appended" not in report.failure  # verify never appends: it does not say so


def test_refused_recordings_say_nothing_was_appended(cladelog_env: Any, reg: Register,
                                                     keys: Keys, chain: Chain) -> None:
    env0 = chain.next()
    sig = bytearray(base64.b64decode(env0["signatures"][0]["sig"]))
    sig[0] ^= 1
    env0["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    _refused(cladelog_env, reg, [env0], SignatureRefused, r"does not verify; nothing was "
             r"appended$")
    chain.seq, chain.prev = 0, "0" * 64
    _refused(cladelog_env, reg, [chain.next(signer=keys.log)], SignatureRefused,
             r"registered as a log key, not an oracle key; nothing was appended$")
    # checking alone (prepare appends nothing) does not claim it
    with pytest.raises(SignatureRefused) as info:
        reg.prepare([env0])
    assert "appended" not in str(info.value)


def test_sequence_gap_and_duplicate(cladelog_env: Any, reg: Register, chain: Chain) -> None:
    first = chain.next()
    reg.record([first])
    _refused(cladelog_env, reg, [first], SequenceError, r"0 is already recorded \(duplicate\)")
    chain.next()  # seq 1 is skipped
    _refused(cladelog_env, reg, [chain.next()], SequenceError, r"2 would leave a gap")


def test_wrong_prev_is_refused(cladelog_env: Any, reg: Register, keys: Keys,
                               chain: Chain) -> None:
    reg.record([chain.next()])
    bad = make_receipt(gain_test(1, "cd" * 32), keys.oracle)
    _refused(cladelog_env, reg, [bad], SequenceError, r"entry\.prev: .* is not the hash of entry 0")


def test_batch_is_all_or_nothing(cladelog_env: Any, reg: Register, keys: Keys,
                                 chain: Chain) -> None:
    good = [chain.next(), chain.next()]
    bad = chain.next(signer=keys.other)
    _refused(cladelog_env, reg, [*good, bad], SignatureRefused, r"^receipts\[2\]:")
    assert len(reg.record(good)) == 2


def test_payload_tampered_after_signing(cladelog_env: Any, reg: Register, chain: Chain) -> None:
    env0 = chain.next()
    stmt = json.loads(base64.b64decode(env0["payload"]))
    stmt["predicate"]["stages"][0]["elo"] = 500
    env0["payload"] = base64.b64encode(canonical_bytes(stmt)).decode()
    _refused(cladelog_env, reg, [env0], SignatureRefused, "does not verify")


def test_non_canonical_payload_is_refused_even_when_validly_signed(
        cladelog_env: Any, reg: Register, keys: Keys, chain: Chain) -> None:
    env0 = chain.next()
    stmt = json.loads(base64.b64decode(env0["payload"]))
    body = json.dumps(stmt, indent=1).encode()  # same JSON value, not RFC 8785 bytes
    sig = keys.oracle.sign(pae(PAYLOAD_TYPE_INTOTO, body))
    env0["payload"] = base64.b64encode(body).decode()
    env0["signatures"][0]["sig"] = base64.b64encode(sig).decode()
    _refused(cladelog_env, reg, [env0], ReceiptInputError, "not in RFC 8785 canonical form")


def test_claim_mismatch_is_refused_by_default(cladelog_env: Any, reg: Register,
                                              chain: Chain) -> None:
    doc = gain_test(0, chain.prev)
    doc["stages"][0]["elo"] = 80.0  # independent value is 120.41
    with pytest.raises(ClaimMismatchError, match="ELO_MISMATCH") as info:
        reg.record([chain.next(doc)])
    assert info.value.flags == ("ELO_MISMATCH",)
    assert register_events(cladelog_env) == []


class TestRecordSetting:
    @pytest.fixture
    def cladelog_settings(self) -> dict[str, dict[str, Any]]:
        return {"receipts": {"on_mismatch": "record"}}

    def test_mismatch_is_recorded_with_its_flags(self, cladelog_env: Any, reg: Register,
                                                 chain: Chain) -> None:
        doc = gain_test(0, chain.prev)
        doc["stages"][1]["pass"] = not doc["stages"][1]["pass"]
        doc["stages"][0]["criterion"] = {"type": "sprt", "elo0": 0, "elo1": 5, "alpha": 0.05,
                                         "beta": 0.05, "model": "logistic", "llr": 42.0}
        doc["stages"][0]["pass"] = True
        reg.record([chain.next(doc)])
        (event,) = register_events(cladelog_env)
        assert event.data["flags"] == ["LLR_MISMATCH", "STAGE_VERDICT_MISMATCH"]
        assert event.data["recomputed"]["flags"] == event.data["flags"]
        report = reg.verify()
        assert report.ok and report.flagged == (0,)


def test_epoch_change_and_epoch_mismatch(cladelog_env: Any, reg: Register, chain: Chain) -> None:
    reg.record([chain.next()])
    change = chain.entry("epoch_change", oracle={"name": "arena", "version": "4"}, epoch=1,
                         reason="new opening book")
    reg.record([chain.next(change)])
    stale = gain_test(chain.seq, chain.prev, epoch=0)
    with pytest.raises(ClaimMismatchError, match="EPOCH_MISMATCH"):
        reg.record([make_receipt(stale, chain.keys.oracle)])
    back = chain.entry("epoch_change", oracle={"name": "arena", "version": "4"}, epoch=1,
                       reason="again")
    _refused(cladelog_env, reg, [make_receipt(back, chain.keys.oracle)], ReceiptInputError,
             r"entry\.epoch: must be greater than the oracle's current epoch 1")
    reg.record([chain.next(epoch=1)])
    assert reg.state()["epochs"] == {"arena": 1}


def test_reversion_names_an_entry_and_cannot_repeat(cladelog_env: Any, reg: Register,
                                                    chain: Chain) -> None:
    reg.record([chain.next(), chain.next()])
    rev = chain.entry("reversion", reverts=0, reason="regressed in production")
    reg.record([chain.next(rev)])
    again = chain.entry("reversion", reverts=0, reason="twice")
    _refused(cladelog_env, reg, [make_receipt(again, chain.keys.oracle)], ReceiptInputError,
             r"seq 0 is already reverted by seq 2")
    state = reg.state()
    assert state["reverted"] == {"0": 2} and state["size"] == 3
    assert register_events(cladelog_env)[2].data["entry"]["reverts"] == 0


def test_window_read_function(reg: Register, chain: Chain) -> None:
    reg.record([chain.next() for _ in range(5)])
    state = reg.state()
    assert [e["seq"] for e in entries_in_window(state, 1, 3)] == [2, 3]
    assert [e["seq"] for e in entries_in_window(state, -1, 99)] == [0, 1, 2, 3, 4]
    assert entries_in_window(state, 4, 4) == []
    with pytest.raises(ReceiptInputError, match=r"window: need -1 <= i <= j"):
        entries_in_window(state, 3, 1)


def test_concurrent_writer_cannot_record_the_same_seq(cladelog_env: Any, reg: Register,
                                                      chain: Chain) -> None:
    from cladelog.core import Deployment

    other = Deployment(cladelog_env.config)
    try:
        first = chain.next()
        reg.record([first])
        # a writer that prepared seq 0 against the empty register appends with
        # expected version 0 and loses
        data = register_events(cladelog_env)[0].data
        with pytest.raises(ConcurrencyError):
            other.append([NewEvent("receipts.register", "receipts.entry_recorded", data)],
                         expected_versions={"receipts.register": 0})
    finally:
        other.close()
    assert len(register_events(cladelog_env)) == 1


def test_keys_must_differ_and_register_once(reg: Register, keys: Keys) -> None:
    with pytest.raises(ReceiptInputError, match="already registered"):
        reg.register_key(keys.oracle_vkey, "log")
    with pytest.raises(ReceiptInputError, match="role: must be oracle or log"):
        reg.register_key(keys.other_vkey, "admin")
    with pytest.raises(ReceiptInputError, match=r"vkey"):
        reg.register_key("not+a+key", "oracle")


def test_replay_from_scratch_gives_identical_digests(cladelog_env: Any, reg: Register,
                                                     keys: Keys, chain: Chain) -> None:
    reg.record([chain.next() for _ in range(4)])
    reg.sign_checkpoint(keys.log)
    reg.revoke_key(keys.oracle.verifier().key_ref, reason="rotated")
    incremental = {p.name: p.digest for p in cladelog_env.replay().projections}
    rebuilt = {p.name: p.digest for p in cladelog_env.replay(rebuild=True).projections}
    assert incremental == rebuilt
    again = {p.name: p.digest for p in cladelog_env.replay(rebuild=True).projections}
    assert again == rebuilt and "receipts.register" in rebuilt


def test_raw_appended_entry_out_of_order_is_an_anomaly(cladelog_env: Any, reg: Register,
                                                       chain: Chain) -> None:
    reg.record([chain.next()])
    data = register_events(cladelog_env)[0].data
    cladelog_env.append("receipts.entry_recorded", data | {"seq": 7},
                        stream="receipts.register")
    state = reg.state()
    assert state["size"] == 1 and "seq 7 is not the next seq 1" in state["anomalies"][0]["reason"]
    report = reg.verify()
    assert not report.ok and report.failure is not None and report.failure.startswith("seq 7")


def test_cached_state_matches_a_full_replay(cladelog_env: Any, reg: Register, keys: Keys,
                                            chain: Chain) -> None:
    # the register folds new events into its cached state; a rebuild from position 0
    # through core must give the same state after batches, a raw append and a revocation
    reg.record([chain.next() for _ in range(3)])
    assert reg.state()["size"] == 3
    reg.record([chain.next(), chain.next()])
    data = register_events(cladelog_env)[0].data
    cladelog_env.append("receipts.entry_recorded", data | {"seq": 9},
                        stream="receipts.register")
    reg.revoke_key(keys.oracle.verifier().key_ref, reason="rotated")
    cached = reg.state()
    rebuilt = next(p.state for p in cladelog_env.replay(rebuild=True).projections
                   if p.name == "receipts.register")
    assert cached == rebuilt
    assert cached["size"] == 5 and len(cached["anomalies"]) == 1
    assert cached["keys"][keys.oracle.verifier().key_ref]["revoked_from"] == 5


def test_another_writer_is_seen_by_a_register_with_a_cached_state(
        cladelog_env: Any, reg: Register, chain: Chain) -> None:
    from cladelog.core import Deployment

    reg.record([chain.next()])
    assert reg.state()["size"] == 1
    other = Deployment(cladelog_env.config)
    try:
        Register(other).record([chain.next()])
    finally:
        other.close()
    assert reg.state()["size"] == 2
    reg.record([chain.next()])  # seq 2 links to the other writer's seq 1
    assert reg.state()["size"] == 3 and reg.verify().ok


def test_verify_tells_a_boolean_from_a_number(cladelog_env: Any, reg: Register,
                                              chain: Chain) -> None:
    # JSON true and 1 differ (canonical "true" vs "1"), though Python's True == 1
    reg.record([chain.next()])
    (prepared,) = reg.prepare([chain.next()])
    data = prepared.event_data()
    flag = data["entry"]["stages"][0]["pass"]
    assert type(flag) is bool
    data["entry"]["stages"][0]["pass"] = int(flag)
    cladelog_env.append("receipts.entry_recorded", data, stream="receipts.register")
    report = reg.verify()
    assert not report.ok and report.failure is not None
    assert report.failure.startswith("seq 1 (position") and "differs from the signed" in \
        report.failure


@pytest.mark.parametrize(("a", "b", "same"), [
    (20, 20.0, True),            # both encode as 20
    (0.5, 0.5, True),
    (True, 1, False),            # true vs 1
    (False, 0, False),
    (None, 0, False),
    ("1", 1, False),
    ([1, 2], (1, 2), True),
    ([1, 2], [2, 1], False),
    ({"a": 1}, {"a": 1.0}, True),
    ({"a": 1}, {"a": 1, "b": None}, False),
    ({"a": [True]}, {"a": [1]}, False),
    ({"a": 1}, [("a", 1)], False),
])
def test_same_json_is_canonical_equality(a: Any, b: Any, same: bool) -> None:
    from cladelog.receipts.register import same_json

    assert same_json(a, b) is same and same_json(b, a) is same
    assert same is (canonical_bytes(a) == canonical_bytes(b))


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": 1}', [{"a": 1}]),
    ('[{"a": 1}, {"b": 2}]', [{"a": 1}, {"b": 2}]),
    ('{"a": 1}\n\n{"b": 2}\n', [{"a": 1}, {"b": 2}]),
    ('{\n  "a": 1\n}\n', [{"a": 1}]),
])
def test_read_receipts_json_reads_an_object_an_array_or_jsonl(text: str,
                                                             expected: list[Any]) -> None:
    assert read_receipts_json(text, "f") == expected


@pytest.mark.parametrize(("text", "match"), [
    ("  \n", r"^f: empty file$"),
    ('{"a": 1}\n{"b": NaN}\n', r"^f:2: invalid JSON \(NaN is not valid JSON\)$"),
    ('{"a": 1}\n{"b": 2}\n{"c": 1, "c": 2}\n', r"^f:3: invalid JSON \(duplicate member 'c'\)$"),
    ('[{"a": 1}]\n[{"b": 2}]\n', r"^f: invalid JSON \(Extra data"),
    ('{"a": 1} {"b": 2}', r"^f: invalid JSON \(Extra data"),
    ('{"a": 1e999}', r"^f: invalid JSON \(number 1e999 is out of range for a double\)$"),
])
def test_read_receipts_json_is_strict(text: str, match: str) -> None:
    with pytest.raises(InputError, match=match):  # core's JSONInputError, or ReceiptInputError
        read_receipts_json(text, "f")


def _fresh_state(env: Any) -> bytes:
    return canonical_bytes(Register(env.deployment).state())


def test_the_state_after_recording_equals_a_fresh_replay(cladelog_env: Any, reg: Register,
                                                         chain: Chain) -> None:
    for size in (1, 3, 2):
        reg.record([chain.next() for _ in range(size)])
        assert canonical_bytes(reg.state()) == _fresh_state(cladelog_env)
    assert reg.state()["size"] == 6


def test_an_event_appended_by_someone_else_meanwhile_is_not_missed(
        cladelog_env: Any, reg: Register, chain: Chain, keys: Keys,
        monkeypatch: pytest.MonkeyPatch) -> None:
    reg.record([chain.next()])
    other = Register(cladelog_env.deployment)
    append = reg.deployment.append

    def append_after_another_writer(events: Any, **kw: Any) -> Any:
        monkeypatch.setattr(reg.deployment, "append", append)
        other.revoke_key(parse_verifier_key(keys.log_vkey).key_ref, reason="rotated")
        return append(events, **kw)

    monkeypatch.setattr(reg.deployment, "append", append_after_another_writer)
    reg.record([chain.next()])
    state = reg.state()
    assert state["size"] == 2
    assert [k["revoked_from"] for k in state["keys"].values() if k["role"] == "log"] == [1]
    assert canonical_bytes(state) == _fresh_state(cladelog_env)


_json_leaves = st.sampled_from([0, 1, 0.0, -0.0, 1.0, 20, 20.0, 0.5, True, False, None, "a", ""])
_json_values = st.recursive(
    _json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(_json_values, _json_values)
def test_same_json_agrees_with_canonical_bytes(a: Any, b: Any) -> None:
    from cladelog.receipts.register import same_json

    assert same_json(a, b) is (canonical_bytes(a) == canonical_bytes(b))
    assert same_json(a, a)


@pytest.mark.parametrize(("scale", "ok"), [
    (1 + 4e-12, True),   # what the LLR's root finder moved between versions, at most
    (1 + 1e-6, False),   # a recomputation that really differs
])
def test_verify_allows_last_digit_noise_in_the_recomputation_only(
        cladelog_env: Any, reg: Register, chain: Chain, scale: float, ok: bool) -> None:
    reg.record([chain.next(short=(120, 310, 140))])
    (prepared,) = reg.prepare([chain.next(stages=[
        stage("short", (120, 310, 150), sprt=True), stage("long", (100, 200, 300))])])
    data = prepared.event_data()
    recorded = data["recomputed"]["stages"][0]
    recorded["llr"] *= scale
    recorded["elo_upper"] *= scale
    cladelog_env.append("receipts.entry_recorded", data, stream="receipts.register")
    report = reg.verify()
    assert report.ok is ok, report.failure
    if not ok:
        assert report.failure is not None and "recorded recomputation" in report.failure


@pytest.mark.parametrize(("a", "b", "same"), [
    (1.0, 1.0 + 1e-12, True),
    (1e6, 1e6 * (1 + 5e-10), True),
    (1e-12, 0.0, True),            # absolute below 1
    (1.0, 1.0 + 1e-8, False),
    (True, 1.0, False),            # still never a boolean for a number
    ("1.0", "1.0000000000001", False),
    (2**1100, 2**1100 + 1, False),  # beyond the float range: exact equality only
])
def test_same_json_with_a_tolerance(a: Any, b: Any, same: bool) -> None:
    from cladelog.receipts.register import RECOMPUTATION_TOLERANCE, same_json

    assert same_json({"x": [a]}, {"x": [b]}, RECOMPUTATION_TOLERANCE) is same
    assert same_json(b, a, RECOMPUTATION_TOLERANCE) is same
    assert same_json(a, b) is (a == b and type(a) is type(b))


def test_a_state_held_before_recording_does_not_change_under_the_caller(
        reg: Register, chain: Chain) -> None:
    reg.record([chain.next()])
    held = reg.state()
    reg.record([chain.next()])  # as a caller that reads the seq it recorded from `held`
    assert held["size"] == 1
    assert reg.state()["size"] == 2


@pytest.mark.parametrize(("a", "b", "known"), [
    ({"a": [1.5, "x", True], "b": 2}, {"b": 2, "a": [1.5, "x", True]}, True),
    ([1, 2], (1, 2), True),
    (20, 20.0, False),             # the same JSON value, but not known from orjson's text
    (math.nan, None, False),       # orjson writes both as null
    ({"a": math.inf}, {"a": None}, False),
    ({"a": None}, {"a": None}, False),
    (True, 1, False),
    (0.1, 1 / 10, True),          # one double, one text
    (0.1, 0.30000000000000004 - 0.2, False),
    ("2026-12-02T00:00:00", datetime.datetime(2026, 12, 2), False),  # not plain JSON
])
def test_the_quick_json_comparison_is_sound(a: Any, b: Any, known: bool) -> None:
    """True only where same_json is True (the verify path falls back to it otherwise)."""
    from cladelog.receipts.register import _same_plain_json, same_json

    assert _same_plain_json(a, b) is known and _same_plain_json(b, a) is known
    if known:
        assert same_json(a, b)


@settings(max_examples=500, deadline=None)
@given(_json_values, _json_values)
def test_the_quick_json_comparison_never_says_same_where_canonical_bytes_differ(
        a: Any, b: Any) -> None:
    from cladelog.receipts.register import _same_plain_json

    if _same_plain_json(a, b):
        assert canonical_bytes(a) == canonical_bytes(b)
