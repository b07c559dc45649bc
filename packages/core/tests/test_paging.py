"""Reads fetch rows in pages sized by the bytes of their data (store.base.paged_rows)."""

from __future__ import annotations

from typing import Any

from cladelog.core.store.base import PAGE_BYTES, PAGE_ROWS, paged_rows


class Blob:
    """Stands for ``n`` bytes of data (only their number is read)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


class Cursor:
    """A fetchmany over ``rows`` that records the page sizes asked for."""

    def __init__(self, sizes: list[int]) -> None:
        # column 6 is data, as in both row layouts
        self.rows = [(i, "s", i, "t", 1, "now", Blob(n), b"{}", "h")
                     for i, n in enumerate(sizes)]
        self.asked: list[int] = []

    def fetchmany(self, size: int) -> list[Any]:
        self.asked.append(size)
        page, self.rows = self.rows[:size], self.rows[size:]
        return page


def test_every_row_once_in_order() -> None:
    sizes = [10] * 5000 + [400_000] * 7 + [0] * 3 + [10] * 30
    cur = Cursor(sizes)
    assert [r[0] for r in paged_rows(cur.fetchmany)] == list(range(len(sizes)))


def test_page_sizes_follow_the_bytes_of_the_rows() -> None:
    cur = Cursor([300_000] * 100 + [100] * 5000)
    list(paged_rows(cur.fetchmany))
    # a small first page; then large rows a few per page (about PAGE_BYTES of data in
    # each), and small rows PAGE_ROWS at a time
    big = PAGE_BYTES // 300_001
    assert 1 <= big < 16
    n_big = -(-(100 - 16) // big)  # the pages the large rows after the first page take
    # (the page after the last large row is sized by it too)
    assert cur.asked[:2 + n_big] == [16] + [big] * (n_big + 1)
    assert set(cur.asked[2 + n_big:]) == {PAGE_ROWS}


def test_a_row_larger_than_a_page_comes_alone() -> None:
    cur = Cursor([5] * 16 + [PAGE_BYTES * 3] * 4)
    rows = list(paged_rows(cur.fetchmany))
    assert len(rows) == 20
    assert cur.asked[:2] == [16, PAGE_ROWS]
    assert cur.asked[2:] == [1] * (len(cur.asked) - 2)


def test_an_empty_read_asks_once() -> None:
    cur = Cursor([])
    assert list(paged_rows(cur.fetchmany)) == []
    assert cur.asked == [16]


def test_a_data_column_of_another_type_does_not_stop_the_paging() -> None:
    """A damaged log may hold anything in a column: the paging reads on, and the read
    that checks each row says what is wrong (ChainError), not the paging."""
    cur = Cursor([10] * 40)
    cur.rows = [(*r[:6], bad, *r[7:]) for r, bad in zip(cur.rows, [None, 7, 1.5, b"x"] * 10)]
    assert [r[0] for r in paged_rows(cur.fetchmany)] == list(range(40))
