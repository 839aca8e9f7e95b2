"""Plain frozen data the engine produces and every renderer consumes (1-based positions)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, order=True)
class Location:
    """A 1-based (row, column) position; columns count characters, not bytes."""

    row: int
    column: int

    def to_json(self) -> dict[str, int]:
        return {"row": self.row, "column": self.column}


class FixSafety(enum.Enum):
    """How freely a fix may be applied (ruff's names)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text between two locations (equal locations: an insertion)."""

    content: str
    location: Location
    end_location: Location
    # Another file of the run, when the fix for a finding belongs elsewhere (deterministic
    # mode is turned on at the entry point, not in the module that calls the op).
    filename: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "content": self.content,
            "location": self.location.to_json(),
            "end_location": self.end_location.to_json(),
        }
        if self.filename is not None:
            data["filename"] = self.filename
        return data


@dataclass(frozen=True, slots=True)
class Fix:
    """A set of edits that together remove one hazard."""

    applicability: FixSafety
    message: str
    edits: tuple[Edit, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [edit.to_json() for edit in self.edits],
        }


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding: what, where, and optionally how to fix it."""

    code: str
    name: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    noqa_row: int | None = None
    url: str | None = None
    severity: str = "error"
    # Extra, renderer-visible facts (e.g. the verifier's verdict); stays JSON-serialisable.
    properties: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def cell(self) -> int | None:
        """The notebook cell (1-based) the position is in; None outside notebooks."""
        for key, value in self.properties:
            if key == "cell":
                return int(value)
        return None

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "filename": self.filename,
            "location": self.location.to_json(),
            "end_location": self.end_location.to_json(),
            "fix": self.fix.to_json() if self.fix else None,
            "noqa_row": self.noqa_row,
            "severity": self.severity,
            "url": self.url,
        }
        for key, value in self.properties:
            data[key] = value
        return data


@dataclass(frozen=True, slots=True)
class FileResult:
    """Everything the engine learned about one file."""

    filename: str
    diagnostics: tuple[Diagnostic, ...]
    # The decoded source, kept only when there is something to show (code frames, fixes).
    source: str | None = None
    # Per-file facts for the project phase (plain JSON-able data; empty for unparsable files).
    summary: dict[str, Any] = field(default_factory=dict)
    # Findings of rules the project phase revises (``Rule.settle``), as the file alone gave
    # them: re-running the project phase after a fix starts again from these.
    unsettled: tuple[Diagnostic, ...] = ()
    # A notebook's cell sources (cell N is ``cells[N - 1]``; empty for cells that are not
    # code): findings in a notebook have cell rows, and their code frames come from here.
    cells: tuple[str, ...] = ()
