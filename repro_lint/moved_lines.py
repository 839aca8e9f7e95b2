"""Lines that moved: when an edit only moves the lines the project pass read of a file (a
line inserted or removed above them, a comment added, a blank line dropped), the last pass's
findings still hold once their rows are moved the same way.

Whether that is so is decided on the file's part in the pass (its summary and the findings
the pass settles, see ``project_pass.unit_part``), without the old text:

- the part of the new text is compared with the part of the same text behind ``SHIFT``
  comment lines: a number that grows by exactly ``SHIFT`` is a row, one that stays the same
  is not (a character offset would grow by at least twice as much, and anything else
  refuses);
- the part of the old text (kept by the cache) must then equal the new part everywhere but
  in rows, and its rows must map to the new ones one to one, in the same order.

The pass sees a file's rows only as places and their order, so the findings it added then are
the ones it would add now, with rows mapped. A row of a finding that the parts do not name is
mapped only between two rows they do name, when as many lines lie between them as before;
otherwise (and for any text that names a row of the file) nothing is reused.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import json
import re
from collections.abc import Collection
from typing import Any

from repro_lint.diagnostics import Diagnostic, Edit, Fix, Location

# Comment lines put before the text to tell rows from other numbers: enough that a number
# made from a row some other way (a half, a character offset) moves by other than this, few
# enough that parsing and walking them stays a small part of linting the text again.
SHIFT = 256


def shift_prefix(text: str) -> str:
    """``SHIFT`` comment lines ending as the text's first line does (the text's newline is
    part of what the pass reads)."""
    found = re.search(r"\r\n|\r|\n", text)
    return ("#" + (found.group() if found else "\n")) * SHIFT


class Refused(Exception):
    """The edit changed more than rows (or a row cannot be mapped)."""


def _plain(value: Any) -> Any:
    """JSON data as ``json.loads`` gives it (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value, sort_keys=True))


class RowMap:
    """Old rows of one file to new ones, from the rows the parts name (see the module's
    docstring); ``row`` raises ``Refused`` for a row it cannot place."""

    def __init__(self, pairs: dict[int, int]) -> None:
        ordered = sorted(pairs.items())
        if any(b[1] <= a[1] for a, b in itertools.pairwise(ordered)):
            raise Refused("rows change order")
        self.old = [old for old, _ in ordered]
        self.new = [new for _, new in ordered]

    @property
    def identity(self) -> bool:
        return self.old == self.new

    def row(self, old: int) -> int:
        at = bisect.bisect_left(self.old, old)
        if at < len(self.old) and self.old[at] == old:
            return self.new[at]
        if 0 < at < len(self.old):
            low, high = at - 1, at
            if self.old[high] - self.old[low] == self.new[high] - self.new[low]:
                return self.new[low] + old - self.old[low]
        raise Refused(f"row {old} is not among the rows the pass read")


def row_map(old: Any, new: Any, shifted: Any) -> RowMap:
    """The map of ``old``'s rows to ``new``'s, where ``new`` and ``shifted`` are the parts of
    one text without and with ``shift_prefix`` (see the module's docstring)."""
    pairs: dict[int, int] = {}

    def walk(o: Any, n: Any, s: Any) -> None:
        if type(o) is not type(n) or type(n) is not type(s):
            raise Refused("the parts differ in shape")
        if isinstance(n, dict):
            if n.keys() != s.keys() or n.keys() != o.keys():
                raise Refused("the parts differ in keys")
            for key in n:
                walk(o[key], n[key], s[key])
        elif isinstance(n, list):
            if not len(o) == len(n) == len(s):
                raise Refused("the parts differ in length")
            for a, b, c in zip(o, n, s, strict=True):
                walk(a, b, c)
        elif type(n) is int:
            if s == n:
                if o != n:
                    raise Refused("a number that is not a row changed")
            elif s == n + SHIFT:
                if pairs.setdefault(o, n) != n:
                    raise Refused("one old row became two")
            else:
                raise Refused("a number moved by other than the lines put before")
        elif not o == n == s:
            raise Refused("the parts differ")

    walk(_plain(old), _plain(new), _plain(shifted))
    return RowMap(pairs)


def _name_pattern(filename: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w./\\-])" + re.escape(filename) + r":(\d+)")


def _base(filename: str) -> str:
    return filename.replace("\\", "/").rpartition("/")[2]


def _location(location: Location, rows: RowMap) -> Location:
    return Location(rows.row(location.row), location.column)


def _text(text: str, filename: str, rows: RowMap, own: bool) -> str:
    """``text`` with ``filename:row`` references moved; in the file's own findings a bare
    ``line N`` cannot be told from another file's and refuses."""
    if own and re.search(r"\bline \d", text):
        raise Refused("a message names a line")
    pattern = _name_pattern(filename)
    # The file named some other way (by its base name) cannot be told apart.
    base = _base(filename)
    if re.search(re.escape(base) + r":\d", pattern.sub("", text)):
        raise Refused("a text names the file by another name")
    return pattern.sub(lambda m: f"{filename}:{rows.row(int(m.group(1)))}", text)


def _edit(edit: Edit, owner: str, maps: dict[str, RowMap]) -> Edit:
    target = edit.filename or owner
    rows = maps.get(target)
    content = edit.content
    for name, other in maps.items():
        if _base(name) in content:
            content = _text(content, name, other, own=False)
    if rows is None:
        return edit if content is edit.content else dataclasses.replace(edit, content=content)
    return dataclasses.replace(
        edit,
        content=content,
        location=_location(edit.location, rows),
        end_location=_location(edit.end_location, rows),
    )


def moved(diagnostic: Diagnostic, maps: dict[str, RowMap]) -> Diagnostic:
    """``diagnostic`` (of the last pass) with the rows of the files in ``maps`` moved: its
    own place when its file is one, its fix's edits in them, and ``file:row`` in its texts.
    Raises ``Refused`` where a row cannot be placed."""
    rows = maps.get(diagnostic.filename)
    if rows is None and not touches(diagnostic, maps):
        return diagnostic
    if diagnostic.properties:
        raise Refused("a finding with properties (a notebook cell)")
    message = diagnostic.message
    for name, other in maps.items():
        if _base(name) in message or (name == diagnostic.filename and "line " in message):
            message = _text(message, name, other, own=name == diagnostic.filename)
    fix = diagnostic.fix
    if fix is not None:
        title = fix.message
        for name, other in maps.items():
            if _base(name) in title:
                title = _text(title, name, other, own=False)
        edits = tuple(_edit(e, diagnostic.filename, maps) for e in fix.edits)
        fix = Fix(fix.applicability, title, edits)
    if rows is None:
        return dataclasses.replace(diagnostic, message=message, fix=fix)
    noqa = diagnostic.noqa_row
    return dataclasses.replace(
        diagnostic,
        message=message,
        fix=fix,
        location=_location(diagnostic.location, rows),
        end_location=_location(diagnostic.end_location, rows),
        noqa_row=None if noqa is None else rows.row(noqa),
    )


def touches(diagnostic: Diagnostic, names: Collection[str]) -> bool:
    """Whether ``diagnostic`` names one of these files outside its own place (a fix's edit
    there, or ``file:row`` in a text)."""
    texts = [diagnostic.message]
    if diagnostic.fix is not None:
        texts.append(diagnostic.fix.message)
        texts.extend(edit.content for edit in diagnostic.fix.edits)
        if any(edit.filename in names for edit in diagnostic.fix.edits if edit.filename):
            return True
    return any(_base(name) in text for name in names for text in texts)


__all__ = ["SHIFT", "Refused", "RowMap", "moved", "row_map", "shift_prefix", "touches"]
