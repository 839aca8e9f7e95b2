"""Rows moved by an edit: telling rows from other numbers, mapping them, and moving the last
pass's findings (``moved_lines``)."""

from __future__ import annotations

import pytest

from repro_lint.diagnostics import Diagnostic, Edit, Fix, FixSafety, Location
from repro_lint.moved_lines import SHIFT, Refused, RowMap, moved, row_map, shift_prefix, touches


def part(rows: list[int], count: int = 2, name: str = "seed") -> list[object]:
    """A stand-in for a file's part in the pass: rows, an ordinal and a name."""
    return [{"events": [[name, count, row] for row in rows]}, [True, None, 1.5]]


def test_rows_are_told_from_other_numbers_by_the_lines_put_before() -> None:
    rows = row_map(part([3, 9]), part([4, 10]), part([4 + SHIFT, 10 + SHIFT]))
    assert (rows.old, rows.new) == ([3, 9], [4, 10])


@pytest.mark.parametrize(
    ("old", "new", "shifted", "why"),
    [
        # The ordinal (2 -> 3) is not a row: it stays put behind the lines put before.
        (part([3], 2), part([4], 3), part([4 + SHIFT], 3), "not a row changed"),
        # A character offset grows by the prefix's length, twice the lines.
        (part([3]), part([4]), part([4 + 2 * SHIFT]), "other than the lines"),
        (part([3]), part([4], name="other"), part([4 + SHIFT], name="other"), "differ"),
        (part([3, 5]), part([4]), part([4 + SHIFT]), "length"),
        # Two old rows become one, or change order.
        (part([3, 5]), part([4, 4]), part([4 + SHIFT, 4 + SHIFT]), "order"),
        (part([3, 5]), part([8, 4]), part([8 + SHIFT, 4 + SHIFT]), "order"),
        (part([3, 3]), part([4, 5]), part([4 + SHIFT, 5 + SHIFT]), "one old row became two"),
        ({"a": 1}, {"b": 1}, {"b": 1}, "keys"),
        ([True], [1], [1], "shape"),
    ],
)
def test_anything_but_rows_changing_refuses(
    old: object, new: object, shifted: object, why: str
) -> None:
    with pytest.raises(Refused, match=why):
        row_map(old, new, shifted)


def test_rows_the_parts_do_not_name_are_placed_only_where_no_line_came_or_went() -> None:
    rows = RowMap({10: 11, 20: 21, 30: 35})
    assert rows.row(20) == 21
    assert rows.row(15) == 16  # nine lines between 10 and 20, before and after
    for row in (25, 5, 31):  # lines came between 20 and 30; outside the named rows
        with pytest.raises(Refused):
            rows.row(row)
    assert RowMap({4: 4}).identity and not rows.identity


def finding(
    filename: str, row: int, message: str = "m", edits: tuple[Edit, ...] = ()
) -> Diagnostic:
    fix = Fix(FixSafety.UNSAFE, "turn it on (train.py:10)", edits) if edits else None
    return Diagnostic(
        "RPL402", "n", message, filename, Location(row, 5), Location(row, 9), fix, noqa_row=row
    )


def test_a_finding_moves_with_its_file_and_so_do_edits_and_texts_naming_it() -> None:
    maps = {"train.py": RowMap({10: 12, 20: 22})}
    own = moved(finding("train.py", 20, "see train.py:10"), maps)
    assert (own.location, own.end_location, own.noqa_row) == (
        Location(22, 5),
        Location(22, 9),
        22,
    )
    assert own.message == "see train.py:12"
    edit = Edit("x\n", Location(10, 1), Location(10, 1), filename="train.py")
    other = finding("lib/train.py", 3, "train.py:20 and lib/model.py:20", (edit,))
    assert touches(other, maps)
    after = moved(other, maps)
    assert after.location == Location(3, 5)  # its own file did not move
    assert after.message == "train.py:22 and lib/model.py:20"
    assert after.fix is not None and after.fix.message == "turn it on (train.py:12)"
    assert after.fix.edits[0].location == Location(12, 1)
    untouched = finding("model.py", 7)
    assert not touches(untouched, maps) and moved(untouched, maps) is untouched


def test_a_line_named_without_its_file_refuses() -> None:
    maps = {"train.py": RowMap({10: 11, 20: 21})}
    assert moved(finding("train.py", 10, "a liner 20"), maps).location == Location(11, 5)
    with pytest.raises(Refused, match="names a line"):
        moved(finding("train.py", 10, "turned off again at line 20"), maps)


def test_a_file_named_by_its_base_name_alone_refuses() -> None:
    maps = {"src/train.py": RowMap({10: 11})}
    assert moved(finding("model.py", 3, "see src/train.py:10"), maps).message == (
        "see src/train.py:11"
    )
    for other in ("see train.py:10", "see /abs/src/train.py:10", "see lib/train.py:10"):
        with pytest.raises(Refused, match="another name"):
            moved(finding("model.py", 3, other), maps)


def test_the_lines_put_before_end_as_the_text_s_first_line_does() -> None:
    assert shift_prefix("a = 1\r\nb = 2\n") == "#\r\n" * SHIFT
    assert shift_prefix("a = 1") == shift_prefix("a = 1\n") == "#\n" * SHIFT
