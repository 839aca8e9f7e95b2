"""Results as JSON data and back, through explicit constructors that validate every field.

The cache stores what this module writes; whatever is read back is checked here before it
becomes a result, so a cache file is data and nothing but data (no pickle, no eval)."""

from __future__ import annotations

from collections.abc import Mapping
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
        row, column = pair
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


__all__ = [
    "FormatError",
    "diagnostic_from_json",
    "diagnostic_to_json",
    "result_from_json",
    "result_to_json",
]
