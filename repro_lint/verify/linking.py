"""A divergence linked back to the static findings: the finding at its line that addresses the
cause, or findings of the cause's rules elsewhere in the program; none means the linter
missed the hazard. Also the source lines shown with it. Imports no torch."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro_lint.diagnostics import Diagnostic, FileResult
from repro_lint.rules import rule_for
from repro_lint.verify.divergence import Divergence, Place

# Findings elsewhere in the program shown at most, after those at the line.
_RELATED = 3


@dataclass(frozen=True)
class Linked:
    """A static finding that addresses the divergence's cause."""

    diagnostic: Diagnostic
    # At the divergence's line (or where its module or DataLoader was built), rather than
    # elsewhere in the program.
    at_line: bool

    @property
    def fix(self) -> str | None:
        """What to do, in a line: the finding's own fix, or its rule's remedy."""
        if self.diagnostic.fix is not None:
            return self.diagnostic.fix.message
        rule = rule_for(self.diagnostic.code)
        return rule.FIX_TITLE if rule is not None else None

    def to_json(self) -> dict[str, Any]:
        return {**self.diagnostic.to_json(), "at_line": self.at_line, "remedy": self.fix}


def link(
    divergence: Divergence,
    results: Sequence[FileResult],
    paths: Mapping[str, Path],
    used: Sequence[str] = (),
) -> list[Linked]:
    """The findings that address ``divergence``'s cause: at its lines first, then up to a few
    elsewhere in the files the run used (``used``; every linted file when empty), those in the
    same file first.

    ``paths`` maps each result's display name to its file.
    """
    codes = divergence.cause.codes
    if not codes:
        return []
    rank = {code: index for index, code in enumerate(codes)}
    places = divergence.places
    at_line: list[Diagnostic] = []
    elsewhere: list[tuple[tuple[int, int, str, int], Diagnostic]] = []
    for result in results:
        path = str((paths.get(result.filename) or Path(result.filename)).resolve())
        for diagnostic in result.diagnostics:
            if diagnostic.code not in rank:
                continue
            row = diagnostic.location.row
            if any(place.holds(path, row) for place in places):
                at_line.append(diagnostic)
                continue
            if used and path not in used:
                continue
            same_file = any(place.path == path for place in places)
            key = (0 if same_file else 1, rank[diagnostic.code], path, row)
            elsewhere.append((key, diagnostic))
    at_line.sort(key=lambda d: (rank[d.code], d.sort_key))
    elsewhere.sort(key=lambda item: item[0])
    linked = [Linked(d, at_line=True) for d in at_line]
    linked.extend(Linked(d, at_line=False) for _, d in elsewhere[:_RELATED])
    return linked


@dataclass(frozen=True)
class Snippet:
    """Source lines around a place, the place's own lines marked."""

    path: str
    lines: tuple[tuple[int, str, bool], ...]

    def to_json(self) -> list[dict[str, Any]]:
        return [{"line": n, "text": text, "marked": marked} for n, text, marked in self.lines]


def snippet(place: Place, context: int = 2) -> Snippet | None:
    """The place's lines with ``context`` lines around them, when the file can be read."""
    try:
        text = Path(place.path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    lines = text.splitlines()
    if not 1 <= place.line <= len(lines):
        return None
    start = max(1, place.line - context)
    end = min(len(lines), max(place.end_line, place.line) + context)
    shown = tuple(
        (number, lines[number - 1].rstrip(), place.line <= number <= place.end_line)
        for number in range(start, end + 1)
    )
    return Snippet(place.path, shown)


def display(path: str, cwd: Path) -> str:
    """A path relative to ``cwd`` when it lies below it."""
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if relative.startswith("..") else Path(relative).as_posix()
