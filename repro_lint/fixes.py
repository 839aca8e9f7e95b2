"""Apply fixes: choose non-overlapping edits, apply, re-parse, re-lint, until nothing changes."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from repro_lint.diagnostics import Diagnostic, Edit, FileResult, FixSafety, Location

MAX_ROUNDS = 10
_NEWLINE = re.compile(r"\r\n?|\n")
PARSE_ERROR = "RPL000"


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(match.end() for match in _NEWLINE.finditer(text))
    return starts


def _offset(starts: list[int], text: str, location: Location) -> int:
    if location.row - 1 >= len(starts):
        return len(text)
    return min(starts[location.row - 1] + location.column - 1, len(text))


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (positions refer to ``text``)."""
    starts = _line_starts(text)
    spans = sorted(
        (
            (_offset(starts, text, e.location), _offset(starts, text, e.end_location), e.content)
            for e in edits
        ),
        key=lambda span: (span[0], span[1]),
    )
    out: list[str] = []
    cursor = 0
    for start, end, content in spans:
        if start < cursor:
            raise ValueError("overlapping edits")
        out.append(text[cursor:start])
        out.append(content)
        cursor = end
    out.append(text[cursor:])
    return "".join(out)


def _span(edit: Edit) -> tuple[Location, Location]:
    return edit.location, edit.end_location


def _conflicts(edit: Edit, taken: list[Edit]) -> bool:
    for other in taken:
        if edit == other:
            continue
        a0, a1 = _span(edit)
        b0, b1 = _span(other)
        # Two different insertions at one point, or ranges that overlap, conflict.
        if a0 == b0 or (a0 < b1 and b0 < a1):
            return True
    return False


def choose(diagnostics: Iterable[Diagnostic], safeties: frozenset[FixSafety]) -> list[Diagnostic]:
    """The fixes to apply in one round: in file order, skipping any that overlap earlier ones.
    Identical edits (the same import added by two fixes) are shared, not conflicting."""
    taken: list[Edit] = []
    chosen: list[Diagnostic] = []
    for diagnostic in sorted(diagnostics, key=lambda d: d.sort_key):
        fix = diagnostic.fix
        if fix is None or fix.applicability not in safeties:
            continue
        if any(_conflicts(edit, taken) for edit in fix.edits):
            continue
        chosen.append(diagnostic)
        taken.extend(e for e in fix.edits if e not in taken)
    return chosen


def _edits_of(chosen: Iterable[Diagnostic]) -> list[Edit]:
    edits: list[Edit] = []
    for diagnostic in chosen:
        assert diagnostic.fix is not None
        edits.extend(e for e in diagnostic.fix.edits if e not in edits)
    return edits


def touches(edits: Iterable[Edit], rows: frozenset[int]) -> bool:
    """Whether an edit changes text on a protected row (a pure insertion at a line start
    does not change that line)."""
    for edit in edits:
        first = edit.location.row
        if edit.location == edit.end_location and edit.location.column == 1:
            continue
        last = edit.end_location.row
        if edit.end_location.column == 1 and last > first:
            last -= 1
        if any(row in rows for row in range(first, last + 1)):
            return True
    return False


def _broken(result: FileResult) -> bool:
    return any(d.code == PARSE_ERROR for d in result.diagnostics)


@dataclass
class FixOutcome:
    """What fixing did to one file."""

    original: str
    text: str
    result: FileResult
    fixed: Counter[str] = field(default_factory=Counter)

    @property
    def changed(self) -> bool:
        return self.text != self.original


def fix_texts(
    texts: Mapping[str, str],
    results: Mapping[str, FileResult],
    relint: Callable[[Mapping[str, str]], Mapping[str, FileResult]],
    safeties: frozenset[FixSafety],
    max_rounds: int = MAX_ROUNDS,
) -> dict[str, FixOutcome]:
    """Fix files to a fixed point. ``relint`` receives the current text of every file of the
    run (those a round edits with the edits applied) and returns their results, so that
    project-level findings follow edits made in other files; it should re-lint only the texts
    that changed. A round's edits to a file are kept only if the file still parses, else its
    fixes are retried one at a time."""
    outcomes = {name: FixOutcome(texts[name], texts[name], results[name]) for name in texts}
    rejected: set[tuple[str, str, int, int]] = set()

    def current(changed: Mapping[str, str]) -> dict[str, str]:
        return {name: changed.get(name, outcome.text) for name, outcome in outcomes.items()}

    # Results of files a round did not edit come from a relint that saw the round's proposed
    # texts; when a proposal is then rejected they must be computed again.
    stale = False
    for _ in range(max_rounds):
        proposals: dict[str, tuple[str, list[Diagnostic]]] = {}
        for name, outcome in outcomes.items():
            candidates = [
                d
                for d in outcome.result.diagnostics
                if (name, d.code, d.location.row, d.location.column) not in rejected
            ]
            chosen = choose(candidates, safeties)
            if chosen:
                proposals[name] = (apply_edits(outcome.text, _edits_of(chosen)), chosen)
        if not proposals:
            break
        fresh = relint(current({name: text for name, (text, _) in proposals.items()}))
        stale = False
        progressed = False
        for name, result in fresh.items():
            # Files this round did not edit may still gain or lose project-level findings.
            if name in outcomes and name not in proposals:
                outcomes[name].result = result
        for name, (text, chosen) in proposals.items():
            outcome = outcomes[name]
            if not _broken(fresh[name]) and text != outcome.text:
                outcome.text, outcome.result = text, fresh[name]
                outcome.fixed.update(d.code for d in chosen)
                progressed = True
                continue
            # The combined edits broke the file: try the first fix alone; if even that
            # breaks it, never try it again.
            first = chosen[0]
            single = apply_edits(outcome.text, _edits_of([first]))
            alone = relint(current({name: single}))[name]
            stale = True
            if _broken(alone) or single == outcome.text:
                rejected.add((name, first.code, first.location.row, first.location.column))
            else:
                outcome.text, outcome.result = single, alone
                outcome.fixed[first.code] += 1
            progressed = True
        if not progressed:
            break
    if stale:
        for name, result in relint(current({})).items():
            if name in outcomes:
                outcomes[name].result = result
    return outcomes


def unified_diff(filename: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{filename}",
        tofile=f"b/{filename}",
    )
    out = []
    for line in lines:
        out.append(
            line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
        )
    return "".join(out)
