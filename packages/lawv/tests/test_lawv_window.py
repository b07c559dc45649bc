"""What counts towards S over the window, and how gaps in the register are caught."""

from __future__ import annotations

import pytest
from cladelog.lawv import evaluate
from lawv_helpers import gain, one_anchor_check, plain


def _check(entries: list[dict[str, object]], **kwargs: object):  # type: ignore[no-untyped-def]
    c, old, new = one_anchor_check(0.0, 10.0)  # dA = 10
    return evaluate(c, old, new, entries, **kwargs)  # type: ignore[arg-type]


def test_only_gain_tests_passing_both_stages_count() -> None:
    entries = [
        gain(1, 6.0, 3.0),  # counts: long 6, short 3
        plain(2, "special_path"),  # zero
        gain(3, 50.0, 9.0, short_pass=False),  # failed short stage: zero
        gain(4, 70.0, 8.0, long_pass=False),  # failed long stage: zero
        plain(5, "epoch_change"),  # zero
        gain(6, 14.0, 2.0),  # counts: long 14, short 2
    ]
    result = _check(entries, window=(1, 6))
    # S = 6 + 14 = 20, S_short = 3 + 2 = 5; R = 10/20 = 0.5 -> WARNING
    assert result.s == 20.0
    assert result.s_short == 5.0
    assert result.counted_seqs == (1, 6)
    assert result.r == 0.5
    assert result.verdict == "WARNING"


def test_reversion_subtracts_nothing() -> None:
    # seq 3 reverts seq 1; S stays 12 + 8 = 20; R = 10/20 = 0.5
    entries = [gain(1, 12.0), gain(2, 8.0), plain(3, "reversion", reverts=1)]
    result = _check(entries)
    assert result.s == 20.0
    assert result.counted_seqs == (1, 2)
    assert "reversion_in_window" in result.flags


def test_extra_fields_are_ignored() -> None:
    entries = [
        {**gain(1, 20.0), "receipt": {"sig": "..."}, "author": "x"},
        plain(2, "special_path", stages=[{"junk": True}], note="speed change"),
    ]
    result = _check(entries)
    assert result.s == 20.0
    assert result.status == "ok"


def test_special_paths_only_is_a_gap() -> None:
    result = _check([plain(1, "special_path"), plain(2, "epoch_change")])
    assert result.status == "GAP"
    assert result.verdict == "GAP"
    assert result.r is None
    assert result.s == 0.0
    assert any("no gain test" in reason for reason in result.reasons)


def test_failed_tests_only_is_a_gap() -> None:
    result = _check([gain(1, 20.0, long_pass=False), gain(2, 20.0, short_pass=False)])
    assert result.status == "GAP"
    assert result.counted_seqs == ()


def test_empty_window_is_a_gap() -> None:
    result = _check([])
    assert result.status == "GAP"


def test_seq_gap_is_defective() -> None:
    result = _check([gain(4, 10.0), gain(6, 10.0)])
    assert result.status == "DEFECTIVE"
    assert result.verdict == "DEFECTIVE"
    assert result.r is None
    assert any("seq 6 follows seq 4" in reason for reason in result.reasons)


def test_duplicate_seq_is_defective() -> None:
    result = _check([gain(4, 10.0), gain(4, 10.0)])
    assert result.status == "DEFECTIVE"


def test_out_of_order_seq_is_defective() -> None:
    result = _check([gain(5, 10.0), gain(4, 10.0)])
    assert result.status == "DEFECTIVE"


@pytest.mark.parametrize(
    ("window", "fragment"),
    [
        ((3, 5), "starts at seq 3"),  # entries start at 4: seq 3 is missing
        ((4, 6), "ends at seq 6"),  # entries end at 5: seq 6 is missing
        ((5, 5), "starts at seq 5"),  # entry 4 lies outside the window
    ],
)
def test_window_mismatch_is_defective(window: tuple[int, int], fragment: str) -> None:
    result = _check([gain(4, 10.0), gain(5, 10.0)], window=window)
    assert result.status == "DEFECTIVE"
    assert any(fragment in reason for reason in result.reasons)


def test_window_without_entries_is_defective() -> None:
    result = _check([], window=(1, 3))
    assert result.status == "DEFECTIVE"


def test_matching_window_is_fine() -> None:
    result = _check([gain(4, 10.0), gain(5, 10.0)], window=[4, 5])
    assert result.status == "ok"
    assert result.window == (4, 5)
