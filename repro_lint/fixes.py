"""Apply fixes: choose non-overlapping edits, apply, re-parse, re-lint, until nothing changes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from repro_lint.diagnostics import Diagnostic, Edit, FileResult, FixSafety, Location

MAX_ROUNDS = 10
_NEWLINE = re.compile(r"\r\n?|\n")
PARSE_ERROR = "RPL000"


# Code a fix inserts is written with four spaces per level of indentation.
INDENT = "    "


def reindent(line: str, unit: str) -> str:
    """``line`` of inserted code with each leading level of four spaces written in the
    file's own indentation ``unit`` (a tab, two spaces...), so the file stays consistent."""
    if unit == INDENT or not line.startswith(INDENT):
        return line
    stripped = line.lstrip(" ")
    levels, rest = divmod(len(line) - len(stripped), len(INDENT))
    return unit * levels + " " * rest + stripped


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(match.end() for match in _NEWLINE.finditer(text))
    return starts


def _offset(starts: list[int], text: str, location: Location) -> int:
    if location.row - 1 >= len(starts):
        return len(text)
    return min(starts[location.row - 1] + location.column - 1, len(text))


Span = tuple[int, int, str]


def _spans(text: str, edits: Iterable[Edit]) -> list[Span]:
    starts = _line_starts(text)
    return sorted(
        (
            (_offset(starts, text, e.location), _offset(starts, text, e.end_location), e.content)
            for e in edits
        ),
        key=lambda span: (span[0], span[1]),
    )


def _unjoined(text: str, start: int, end: int, content: str) -> str:
    """``content`` such that it joins no line break of ``text`` with one of its own: after a
    line that ends in a lone ``\r``, a ``\n`` would turn two line breaks into one ``\r\n``."""
    if content.startswith("\n") and start > 0 and text[start - 1] == "\r":
        content = "\r" + content
    if content.endswith("\r") and text[end : end + 1] == "\n":
        content += "\n"
    return content


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (positions refer to ``text``)."""
    spans = _spans(text, edits)
    out: list[str] = []
    cursor = 0
    for start, end, content in spans:
        if start < cursor:
            raise ValueError("overlapping edits")
        out.append(text[cursor:start])
        out.append(_unjoined(text, start, end, content))
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


def target(edit: Edit, owner: str) -> str:
    """The file an edit of a finding in ``owner`` changes."""
    return edit.filename if edit.filename is not None else owner


def choose(
    diagnostics: Iterable[Diagnostic],
    safeties: frozenset[FixSafety],
    taken: dict[str, list[Edit]] | None = None,
) -> list[Diagnostic]:
    """The fixes to apply in one round: in file order, skipping any that overlap earlier ones
    (in whichever file they edit). Identical edits (the same import added by two fixes) are
    shared, not conflicting. ``taken`` carries the edits chosen so far across files."""
    taken = {} if taken is None else taken
    chosen: list[Diagnostic] = []
    for diagnostic in sorted(diagnostics, key=lambda d: d.sort_key):
        fix = diagnostic.fix
        if fix is None or fix.applicability not in safeties or not fix.edits:
            continue
        owner = diagnostic.filename
        if any(_conflicts(e, taken.get(target(e, owner), [])) for e in fix.edits):
            continue
        chosen.append(diagnostic)
        for edit in fix.edits:
            edits = taken.setdefault(target(edit, owner), [])
            if edit not in edits:
                edits.append(edit)
    return chosen


def edits_by_file(chosen: Iterable[Diagnostic]) -> dict[str, list[Edit]]:
    """The chosen fixes' edits, grouped by the file each one changes (shared edits once)."""
    grouped: dict[str, list[Edit]] = {}
    for diagnostic in chosen:
        assert diagnostic.fix is not None
        for edit in diagnostic.fix.edits:
            edits = grouped.setdefault(target(edit, diagnostic.filename), [])
            if edit not in edits:
                edits.append(edit)
    return grouped


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


def map_offset(offset: int, text: str, spans: Sequence[Span]) -> int | None:
    """Where ``offset`` of ``text`` is once ``spans`` (sorted, from ``_spans``) are applied:
    text inserted at it comes before it, a replacement that starts at it starts there, and an
    offset inside a replaced span survives only inside an unchanged prefix of it."""
    shift = 0
    for start, end, content in spans:
        if start > offset:
            break
        if end <= offset and not (start == offset < end):
            shift += len(content) - (end - start)
            continue
        if start == offset:
            return offset + shift
        # Inside the replaced text: kept where the new text starts the same way.
        if content[: offset - start] == text[start:offset]:
            return offset + shift
        return None
    return offset + shift


_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def inserted_text(text: str, edit: Edit) -> str:
    """What ``edit`` adds to ``text``: its content without the parts of the replaced text it
    keeps (a keyword appended to a call is the keyword and the line break before it, not the
    whole call). Compared token by token; separate insertions are joined by " … "."""
    starts = _line_starts(text)
    old = text[_offset(starts, text, edit.location) : _offset(starts, text, edit.end_location)]
    if not old:
        return edit.content
    # Matched from the end, so that text kept at the end (the closing parenthesis of an
    # extended call) pairs with the end, not with a parenthesis inside the new text.
    before, after = _TOKEN.findall(old)[::-1], _TOKEN.findall(edit.content)[::-1]
    import difflib  # (only when fixes are applied: a check that fixes nothing never needs it)

    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    parts = [
        "".join(after[j1:j2][::-1])
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag in ("insert", "replace")
    ]
    return " … ".join(parts[::-1])


def _location_offset(text: str, starts: list[int], location: Location) -> int:
    return _offset(starts, text, location)


@dataclass(frozen=True)
class AppliedFix:
    """A fix the loop applied: its finding, whether that finding was in the original text
    (not created by an earlier fix), and, per file it edited, the text it inserted (what its
    edits add, without the text they keep)."""

    diagnostic: Diagnostic
    original: bool
    inserted: tuple[tuple[str, str], ...]


@dataclass
class FixOutcome:
    """What fixing did to one file. ``found`` counts the findings of the original text;
    ``fixed`` counts, per code, those of them that the fixes removed (findings that a fix
    created and a later fix removed are neither); ``applied`` lists the fixes applied to the
    findings of this file, in order."""

    original: str
    text: str
    result: FileResult
    fixed: Counter[str] = field(default_factory=Counter)
    found: int = 0
    applied: list[AppliedFix] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.text != self.original


class _Tracker:
    """Follows a file's original findings (code and offset) through the edits of each round,
    so that the findings left at the end can be told apart from those fixes created."""

    def __init__(self, text: str, result: FileResult) -> None:
        starts = _line_starts(text)
        self.found = len(result.diagnostics)
        self.keys: list[tuple[str, int | None]] = [
            (d.code, _location_offset(text, starts, d.location)) for d in result.diagnostics
        ]

    def holds(self, text: str, diagnostic: Diagnostic) -> bool:
        """Whether ``diagnostic`` (of the current ``text``) is one of the original findings."""
        offset = _location_offset(text, _line_starts(text), diagnostic.location)
        return (diagnostic.code, offset) in self.keys

    def follow(self, text: str, edits: Sequence[Edit]) -> None:
        spans = _spans(text, edits)
        self.keys = [
            (code, None if offset is None else map_offset(offset, text, spans))
            for code, offset in self.keys
        ]

    def fixed(self, text: str, result: FileResult) -> Counter[str]:
        starts = _line_starts(text)
        left: Counter[tuple[str, int | None]] = Counter(
            (d.code, _location_offset(text, starts, d.location)) for d in result.diagnostics
        )
        out: Counter[str] = Counter()
        for key in self.keys:
            if left[key] > 0:
                left[key] -= 1
            else:
                out[key[0]] += 1
        return out


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
    that changed. A fix may edit another file of the run (``Edit.filename``). A round's edits
    are kept only if every file they change still parses; otherwise the round's fixes are
    retried one at a time, and one that breaks a file on its own is never tried again."""
    outcomes = {name: FixOutcome(texts[name], texts[name], results[name]) for name in texts}
    trackers = {name: _Tracker(texts[name], results[name]) for name in texts}
    rejected: set[tuple[str, str, int, int]] = set()

    def key(diagnostic: Diagnostic) -> tuple[str, str, int, int]:
        location = diagnostic.location
        return (diagnostic.filename, diagnostic.code, location.row, location.column)

    def current(changed: Mapping[str, str]) -> dict[str, str]:
        return {name: changed.get(name, outcome.text) for name, outcome in outcomes.items()}

    def applied(chosen: list[Diagnostic]) -> dict[str, str] | None:
        grouped = edits_by_file(chosen)
        if any(name not in outcomes for name in grouped):
            return None  # a file outside this run: the fix cannot be applied here
        return {name: apply_edits(outcomes[name].text, edits) for name, edits in grouped.items()}

    def accept(
        chosen: list[Diagnostic], changed: dict[str, str], fresh: Mapping[str, FileResult]
    ) -> None:
        for name, result in fresh.items():
            if name in outcomes:
                outcomes[name].result = result
        grouped = edits_by_file(chosen)
        for diagnostic in chosen:
            owner = outcomes.get(diagnostic.filename)
            if owner is None or diagnostic.fix is None:
                continue
            inserted = tuple(
                (target(edit, diagnostic.filename), inserted_text(outcomes[name].text, edit))
                for edit in diagnostic.fix.edits
                if (name := target(edit, diagnostic.filename)) in outcomes
            )
            original = trackers[diagnostic.filename].holds(owner.text, diagnostic)
            owner.applied.append(AppliedFix(diagnostic, original, inserted))
        for name, text in changed.items():
            trackers[name].follow(outcomes[name].text, grouped.get(name, []))
            outcomes[name].text = text

    # True when the results in hand come from a relint of texts that were then not kept.
    stale = False
    for _ in range(max_rounds):
        taken: dict[str, list[Edit]] = {}
        chosen: list[Diagnostic] = []
        for outcome in outcomes.values():
            candidates = [d for d in outcome.result.diagnostics if key(d) not in rejected]
            chosen.extend(choose(candidates, safeties, taken))
        runnable = [d for d in chosen if applied([d]) is not None]
        changed = applied(runnable) if runnable else None
        if not changed or all(outcomes[n].text == t for n, t in changed.items()):
            break
        fresh = relint(current(changed))
        if not any(_broken(fresh[name]) for name in changed):
            accept(runnable, changed, fresh)
            stale = False
            continue
        # The combined edits broke a file: keep the first fix that works on its own (the
        # next round proposes the rest again); one that breaks a file alone is dropped.
        stale = True
        for diagnostic in runnable:
            single = applied([diagnostic])
            assert single is not None
            alone = relint(current(single))
            if any(_broken(alone[name]) for name in single):
                rejected.add(key(diagnostic))
                continue
            accept([diagnostic], single, alone)
            stale = False
            break
    if stale:
        for name, result in relint(current({})).items():
            if name in outcomes:
                outcomes[name].result = result
    for name, outcome in outcomes.items():
        tracker = trackers[name]
        outcome.found = tracker.found
        # A finding can go because of an edit in another file (a seed added to the entry
        # point that reaches this module): counted here too.
        outcome.fixed = tracker.fixed(outcome.text, outcome.result)
    return outcomes


def unified_diff(filename: str, before: str, after: str) -> str:
    import difflib

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
