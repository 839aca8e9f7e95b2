"""Results as JSON data and back, through explicit constructors that validate every field.

The cache stores what this module writes; whatever is read back is checked here before it
becomes a result, so a cache file is data and nothing but data (no pickle, no eval)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from repro_lint.diagnostics import Diagnostic, Edit, FileResult, Fix, FixSafety, Location

Json = Any


class FormatError(ValueError):
    """The data does not have the shape of a result."""


def _field(data: Mapping[str, Json], key: str, kind: type | tuple[type, ...]) -> Json:
    if key not in data:
        raise FormatError(f"missing `{key}`")
    value = data[key]
    if type(value) is kind:  # what JSON decodes to: checked at once (a bool is not an int)
        return value
    # bool is an int subclass: a row of `true` is not a row.
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise FormatError(f"`{key}` has the wrong type")
    if not isinstance(value, kind):
        raise FormatError(f"`{key}` has the wrong type")
    return value


def _object(value: Json, what: str) -> Mapping[str, Json]:
    if not isinstance(value, dict):
        raise FormatError(f"{what} is not an object")
    return value


def _list(value: Json, what: str) -> list[Json]:
    if not isinstance(value, list):
        raise FormatError(f"{what} is not a list")
    return value


def _optional(data: Mapping[str, Json], key: str, kind: type) -> Json:
    value = data.get(key)
    if value is None:
        return None
    return _field(data, key, kind)


# -- to JSON --------------------------------------------------------------------------------


def location_to_json(location: Location) -> list[int]:
    return [location.row, location.column]


def edit_to_json(edit: Edit) -> dict[str, Json]:
    return {
        "content": edit.content,
        "location": location_to_json(edit.location),
        "end_location": location_to_json(edit.end_location),
        "filename": edit.filename,
    }


def fix_to_json(fix: Fix) -> dict[str, Json]:
    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [edit_to_json(edit) for edit in fix.edits],
    }


def diagnostic_to_json(diagnostic: Diagnostic) -> dict[str, Json]:
    return {
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "filename": diagnostic.filename,
        "location": location_to_json(diagnostic.location),
        "end_location": location_to_json(diagnostic.end_location),
        "fix": fix_to_json(diagnostic.fix) if diagnostic.fix is not None else None,
        "noqa_row": diagnostic.noqa_row,
        "url": diagnostic.url,
        "severity": diagnostic.severity,
        "properties": [[key, value] for key, value in diagnostic.properties],
    }


def result_to_json(result: FileResult) -> dict[str, Json]:
    """A result as JSON data; the source text is not kept (it is read again when needed)."""
    return {
        "filename": result.filename,
        "diagnostics": [diagnostic_to_json(d) for d in result.diagnostics],
        "summary": result.summary,
        "unsettled": [diagnostic_to_json(d) for d in result.unsettled],
        "cells": list(result.cells),
    }


# -- from JSON ------------------------------------------------------------------------------


def location_from_json(value: Json) -> Location:
    pair = _list(value, "a location")
    if len(pair) == 2:
        return _place(pair[0], pair[1])
    raise FormatError("a location is not two non-negative integers")


def _place(row: Json, column: Json) -> Location:
    if type(row) is int and type(column) is int and row >= 0 and column >= 0:
        return Location(row, column)
    raise FormatError("a location is not two non-negative integers")


def edit_from_json(value: Json) -> Edit:
    data = _object(value, "an edit")
    return Edit(
        content=_field(data, "content", str),
        location=location_from_json(_field(data, "location", list)),
        end_location=location_from_json(_field(data, "end_location", list)),
        filename=_optional(data, "filename", str),
    )


def fix_from_json(value: Json) -> Fix:
    data = _object(value, "a fix")
    try:
        applicability = FixSafety(_field(data, "applicability", str))
    except ValueError as exc:
        raise FormatError("unknown fix applicability") from exc
    return Fix(
        applicability=applicability,
        message=_field(data, "message", str),
        edits=tuple(edit_from_json(e) for e in _field(data, "edits", list)),
    )


def diagnostic_from_json(value: Json) -> Diagnostic:
    data = _object(value, "a diagnostic")
    properties = []
    for item in _field(data, "properties", list):
        pair = _list(item, "a property")
        if len(pair) != 2 or not isinstance(pair[0], str):
            raise FormatError("a property is not a (name, value) pair")
        properties.append((pair[0], pair[1]))
    noqa_row = _optional(data, "noqa_row", int)
    fix = data.get("fix")
    return Diagnostic(
        code=_field(data, "code", str),
        name=_field(data, "name", str),
        message=_field(data, "message", str),
        filename=_field(data, "filename", str),
        location=location_from_json(_field(data, "location", list)),
        end_location=location_from_json(_field(data, "end_location", list)),
        fix=fix_from_json(fix) if fix is not None else None,
        noqa_row=noqa_row,
        url=_optional(data, "url", str),
        severity=_field(data, "severity", str),
        properties=tuple(properties),
    )


def result_from_json(value: Json) -> FileResult:
    """Rebuild a result from :func:`result_to_json`'s data; FormatError if anything is off."""
    data = _object(value, "a result")
    summary = _field(data, "summary", dict)
    if not all(isinstance(key, str) for key in summary):
        raise FormatError("a summary key is not a string")
    cells = _field(data, "cells", list)
    if not all(isinstance(cell, str) for cell in cells):
        raise FormatError("a notebook cell is not a string")
    return FileResult(
        filename=_field(data, "filename", str),
        diagnostics=tuple(diagnostic_from_json(d) for d in _field(data, "diagnostics", list)),
        source=None,
        summary=summary,
        unsettled=tuple(diagnostic_from_json(d) for d in _field(data, "unsettled", list)),
        cells=tuple(cells),
    )


# -- compact rows, for the run record (thousands of findings read and written per run) -----
#
# A finding is a list, not an object: ``[kind, message, row, column, end row, end column,
# suppression row, filename, fix, properties]``. ``kind`` indexes a table of the (code, name, url,
# severity) the findings share; ``filename`` is None where it is the result's. A fix is
# ``[applicability, message, [[content, row, column, end row, end column, filename], ...]]``.
# A result is ``[filename, findings, unsettled, cells]``; an unsettled finding equal to one of
# the result's findings (a finding the project pass kept as it was) is that finding's index.
# Decoding checks every field as the object form's constructors do.


class Rows:
    """Results written as compact rows, sharing one table of kinds (see above)."""

    def __init__(self, kinds: Sequence[list[Json]] = ()) -> None:
        """``kinds``: a table rows already written index (``results_from_rows`` checked it),
        which new kinds are added to."""
        self.kinds: list[list[Json]] = [list(kind) for kind in kinds]
        self._index: dict[tuple[Json, ...], int] = {
            tuple(kind): at for at, kind in enumerate(self.kinds)
        }

    def _kind(self, d: Diagnostic) -> int:
        key = (d.code, d.name, d.url, d.severity)
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.kinds)
            self.kinds.append(list(key))
        return found

    def diagnostic(self, d: Diagnostic, owner: str) -> list[Json]:
        fix = d.fix
        return [
            self._kind(d),
            d.message,
            d.location.row,
            d.location.column,
            d.end_location.row,
            d.end_location.column,
            d.noqa_row,
            None if d.filename == owner else d.filename,
            None
            if fix is None
            else [
                fix.applicability.value,
                fix.message,
                [
                    [
                        e.content,
                        e.location.row,
                        e.location.column,
                        e.end_location.row,
                        e.end_location.column,
                        e.filename,
                    ]
                    for e in fix.edits
                ],
            ],
            [[key, value] for key, value in d.properties],
        ]

    def result(self, result: FileResult) -> list[Json]:
        """A result without its source and summary (a record's results need neither)."""
        name = result.filename
        unsettled: list[Json] = []
        if result.unsettled:
            index = _index(result.diagnostics)
            for d in result.unsettled:
                try:
                    at = index.get(d)
                except TypeError:  # a property holds a list
                    at = None
                unsettled.append(at if at is not None else self.diagnostic(d, name))
        return [
            name,
            [self.diagnostic(d, name) for d in result.diagnostics],
            unsettled,
            list(result.cells),
        ]


def _index(findings: Sequence[Diagnostic]) -> dict[Diagnostic, int]:
    """Where each finding first stands in ``findings`` (those that can be hashed)."""
    index: dict[Diagnostic, int] = {}
    for at, d in enumerate(findings):
        with contextlib.suppress(TypeError):  # (a property that holds a list)
            index.setdefault(d, at)
    return index


_Kind = tuple[str, str, str | None, str]


def _kinds_from_rows(value: Json) -> list[_Kind]:
    kinds = []
    for kind in _list(value, "the kinds of findings"):
        if not (
            type(kind) is list
            and len(kind) == 4
            and type(kind[0]) is str
            and type(kind[1]) is str
            and (kind[2] is None or type(kind[2]) is str)
            and type(kind[3]) is str
        ):
            raise FormatError("a kind of finding is not (code, name, url, severity)")
        kinds.append((kind[0], kind[1], kind[2], kind[3]))
    return kinds


def _fix_from_row(value: Json) -> Fix:
    if type(value) is not list or len(value) != 3 or type(value[1]) is not str:
        raise FormatError("a fix is not (applicability, message, edits)")
    try:
        applicability = FixSafety(value[0])
    except ValueError as exc:
        raise FormatError("unknown fix applicability") from exc
    edits = []
    for edit in _list(value[2], "a fix's edits"):
        if not (
            type(edit) is list
            and len(edit) == 6
            and type(edit[0]) is str
            and (edit[5] is None or type(edit[5]) is str)
        ):
            raise FormatError("an edit is not (content, place, end, filename)")
        edits.append(Edit(edit[0], _place(edit[1], edit[2]), _place(edit[3], edit[4]), edit[5]))
    return Fix(applicability, value[1], tuple(edits))


def _diagnostic_from_row(value: Json, owner: str, kinds: list[_Kind]) -> Diagnostic:
    if type(value) is not list or len(value) != 10:
        raise FormatError("a finding is not a row of 10 fields")
    kind, message, row, column, end_row, end_column, noqa, filename, fix, properties = value
    if not (type(kind) is int and 0 <= kind < len(kinds)):
        raise FormatError("a finding's kind is not in the table")
    if not (
        type(message) is str
        and (noqa is None or type(noqa) is int)
        and (filename is None or type(filename) is str)
        and type(properties) is list
    ):
        raise FormatError("a finding has a field of the wrong type")
    pairs = []
    for pair in properties:
        if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
            raise FormatError("a property is not a (name, value) pair")
        pairs.append((pair[0], pair[1]))
    code, name, url, severity = kinds[kind]
    return Diagnostic(
        code=code,
        name=name,
        message=message,
        filename=owner if filename is None else filename,
        location=_place(row, column),
        end_location=_place(end_row, end_column),
        fix=None if fix is None else _fix_from_row(fix),
        noqa_row=noqa,
        url=url,
        severity=severity,
        properties=tuple(pairs),
    )


def _unsettled_from_row(
    value: Json, owner: str, kinds: list[_Kind], findings: tuple[Diagnostic, ...]
) -> Diagnostic:
    if type(value) is int:
        if not 0 <= value < len(findings):
            raise FormatError("an unsettled finding's index is not among the findings")
        return findings[value]
    return _diagnostic_from_row(value, owner, kinds)


def results_from_rows(kinds: Json, rows: Json) -> list[FileResult]:
    """Rebuild the results ``Rows`` wrote; FormatError if anything is off."""
    table = _kinds_from_rows(kinds)
    results = []
    for row in _list(rows, "results"):
        if type(row) is not list or len(row) != 4 or type(row[0]) is not str:
            raise FormatError("a result is not (filename, findings, unsettled, cells)")
        name, found, unsettled, cells = row
        if type(cells) is not list or not all(type(cell) is str for cell in cells):
            raise FormatError("a notebook cell is not a string")
        findings = tuple(_diagnostic_from_row(d, name, table) for d in _list(found, "findings"))
        results.append(
            FileResult(
                name,
                findings,
                unsettled=tuple(
                    _unsettled_from_row(d, name, table, findings)
                    for d in _list(unsettled, "findings")
                ),
                cells=tuple(cells),
            )
        )
    return results


__all__ = [
    "FormatError",
    "Rows",
    "diagnostic_from_json",
    "diagnostic_to_json",
    "result_from_json",
    "result_to_json",
    "results_from_rows",
]
