"""``# noqa`` comments: line-level (``# noqa: RPL201``) and file-level (``# repro-lint: noqa``):
what they hide, which of their codes hide nothing, and the edits that add or remove codes."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from repro_lint.diagnostics import Diagnostic, Edit, Location

# A line directive is "noqa" after a hash, optionally followed by a colon and codes or names
# separated by commas or spaces; the codes part stops at the first word that is neither (an
# explanation after the codes is allowed).
_LINE = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Za-z][A-Za-z0-9_-]*(?:\s*,\s*[A-Za-z][A-Za-z0-9_-]*"
    r"|\s+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_FILE = re.compile(
    r"#\s*repro-lint\s*:\s*noqa(?::\s*(?P<codes>[A-Za-z][A-Za-z0-9_-]*"
    r"(?:\s*,\s*[A-Za-z][A-Za-z0-9_-]*|\s+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Directive:
    """One noqa comment. ``codes`` is None for a blanket ``# noqa``."""

    row: int
    column: int  # 1-based column of the ``#``
    end_column: int  # 1-based column just past the comment
    codes: frozenset[str] | None
    file_level: bool
    # The whole comment, from its ``#`` (edits that remove codes rewrite it).
    comment: str = ""

    def matches(self, code: str, name: str) -> bool:
        return self.codes is None or code.upper() in self.codes or name.lower() in self.codes

    def matched(self, code: str, name: str) -> frozenset[str]:
        """The entries of ``codes`` that name this rule (empty for a blanket directive)."""
        if self.codes is None:
            return frozenset()
        return self.codes & {code.upper(), name.lower()}

    def names_repro_lint(self, known: Iterable[str]) -> bool:
        """Whether this directive concerns repro-lint at all (blanket, or one of our codes)."""
        if self.codes is None:
            return True
        return any(item in self.codes for item in known)


def _codes(text: str | None) -> frozenset[str] | None:
    if not text:
        return None
    items = [part for part in re.split(r"[\s,]+", text) if part]
    # Codes compare upper-case (RPL201), names lower-case (cudnn-benchmark-enabled).
    return frozenset(
        item.upper() if re.fullmatch(r"[A-Za-z]+\d+", item) else item.lower() for item in items
    )


def parse_comment(text: str, row: int, column: int) -> Directive | None:
    """Parse one comment (``column`` is the 1-based column of its ``#``)."""
    file_match = _FILE.search(text)
    if file_match is not None:
        codes = _codes(file_match.group("codes"))
        return Directive(row, column, column + len(text), codes, True, text)
    match = _LINE.search(text)
    if match is None:
        return None
    return Directive(row, column, column + len(text), _codes(match.group("codes")), False, text)


@dataclass(frozen=True, slots=True)
class Suppressions:
    """All directives of one file, indexed by row."""

    by_row: dict[int, Directive]
    file_level: tuple[Directive, ...]

    @classmethod
    def from_directives(cls, directives: Iterable[Directive]) -> Suppressions:
        by_row: dict[int, Directive] = {}
        file_level: list[Directive] = []
        for directive in directives:
            if directive.file_level:
                file_level.append(directive)
            else:
                by_row[directive.row] = directive
        return cls(by_row, tuple(file_level))

    def suppressing(self, code: str, name: str, rows: Iterable[int]) -> Directive | None:
        """The directive that suppresses ``code`` reported on any of ``rows``, if one does."""
        for directive in self.file_level:
            if directive.matches(code, name):
                return directive
        for row in rows:
            on_row = self.by_row.get(row)
            if on_row is not None and on_row.matches(code, name):
                return on_row
        return None

    def protected_rows(self, known: Iterable[str]) -> frozenset[int]:
        """Rows a fix must never modify: they carry a noqa that concerns repro-lint."""
        known_set = frozenset(known)
        return frozenset(row for row, d in self.by_row.items() if d.names_repro_lint(known_set))


EMPTY = Suppressions({}, ())
# Never given a noqa by --add-noqa: RPL000 cannot be suppressed, and RPL901's answer to an
# unused suppression is to remove it, not to add another.
NOT_SUPPRESSIBLE = frozenset({"RPL000", "RPL901"})


def noqa_wanted(diagnostics: Iterable[Diagnostic]) -> dict[int, set[str]]:
    """The codes a ``# noqa`` must name on each row to suppress these findings."""
    wanted: dict[int, set[str]] = {}
    for d in diagnostics:
        if d.code not in NOT_SUPPRESSIBLE and d.noqa_row is not None:
            wanted.setdefault(d.noqa_row, set()).add(d.code)
    return wanted


_OWN_CODE = re.compile(r"RPL\d+")


def _normalise(item: str) -> str:
    return item.upper() if re.fullmatch(r"[A-Za-z]+\d+", item) else item.lower()


def unused_items(
    directive: Directive,
    used: Collection[str],
    active: Collection[str],
    known: Collection[str],
    exempt: Collection[str] = (),
) -> list[str]:
    """Entries of a directive that hide nothing, in the comment's own spelling and order.

    Only repro-lint's entries are judged: codes and names of rules that ran on the file
    (``active``) and ``RPL`` codes that name no rule at all. A code of a rule that is known
    but not enabled is left alone (it may matter under another configuration), and so is every
    other tool's code."""
    if directive.codes is None:
        return []
    dead: list[str] = []
    for item in _spelled_items(directive):
        key = _normalise(item)
        if key in used or key in exempt:
            continue
        if key in active or (_OWN_CODE.fullmatch(key) and key not in known):
            dead.append(item)
    return dead


def _match(directive: Directive) -> re.Match[str] | None:
    return (_FILE if directive.file_level else _LINE).search(directive.comment)


def _spelled_items(directive: Directive) -> list[str]:
    match = _match(directive)
    codes = match.group("codes") if match is not None else None
    return [part for part in re.split(r"[\s,]+", codes or "") if part]


def removal_edit(directive: Directive, dead: Collection[str], line: str) -> Edit | None:
    """The edit that drops ``dead`` entries from a directive on ``line`` (its text without the
    line ending): only those entries when others remain; else the directive and its
    explanation, keeping any other comment around it; else the comment, or the whole line when
    nothing else is on it."""
    match = _match(directive)
    if match is None or match.group("codes") is None:
        return None
    dead_keys = {_normalise(item) for item in dead}
    kept = [item for item in _spelled_items(directive) if _normalise(item) not in dead_keys]
    row, start, comment = directive.row, directive.column - 1, directive.comment
    if kept:
        begin, end = match.span("codes")
        return Edit(
            ", ".join(kept), Location(row, start + begin + 1), Location(row, start + end + 1)
        )
    head = comment[: match.start()].rstrip()
    tail = comment[match.end() :].lstrip()
    # A comment after the codes stays (a trailing ``# type: ignore``); other text there is
    # the directive's own explanation and goes with it.
    rest = tail if tail.startswith("#") else ""
    remaining = "  ".join(part for part in (head, rest) if part)
    comment_end = Location(row, start + len(comment) + 1)
    if remaining:
        return Edit(remaining, Location(row, start + 1), comment_end)
    before = line[:start].rstrip()
    if not before:
        return Edit("", Location(row, 1), Location(row + 1, 1))
    return Edit("", Location(row, len(before) + 1), comment_end)


@dataclass(frozen=True, slots=True)
class _Row:
    """Where a comment can go on a row, and the comment already there."""

    end: int  # 0-based offset just past the row's code (or its comment)
    comment_start: int | None
    comment: str | None


def _rows(text: str) -> dict[int, _Row]:
    """Rows that end a (physical) line where a comment may be added: not inside a string
    and not continued by a backslash."""
    rows: dict[int, _Row] = {}
    comments: dict[int, tuple[int, str]] = {}
    lines = text.splitlines()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = (token.start[1], token.string)
            elif token.type in (tokenize.NEWLINE, tokenize.NL):
                row = token.start[0]
                if row - 1 >= len(lines):
                    continue
                found = comments.get(row)
                code = lines[row - 1].rstrip("\r\n")
                end = len(code.rstrip(" \t\f"))
                rows[row] = _Row(end, found[0] if found else None, found[1] if found else None)
    except (tokenize.TokenError, SyntaxError):
        return {}
    return rows


def noqa_edits(text: str, wanted: Mapping[int, Collection[str]]) -> tuple[list[Edit], list[int]]:
    """Edits that make each row's ``# noqa`` name the wanted codes, keeping the codes already
    there (``# noqa: E501`` becomes ``# noqa: E501, RPL201``); and the rows where no comment
    can go (the line ends inside a string or continues with a backslash)."""
    rows = _rows(text)
    edits: list[Edit] = []
    skipped: list[int] = []
    for row in sorted(wanted):
        codes = sorted(set(wanted[row]))
        info = rows.get(row)
        if info is None or not codes:
            skipped.append(row)
            continue
        if info.comment is not None and info.comment_start is not None:
            edit = _extend(info.comment, info.comment_start, row, codes)
            if edit is not None:
                edits.append(edit)
            continue
        at = Location(row, info.end + 1)
        edits.append(Edit(f"  # noqa: {', '.join(codes)}", at, at))
    return edits, skipped


def _extend(comment: str, start: int, row: int, codes: list[str]) -> Edit | None:
    """Add codes to the noqa directive inside ``comment``, or append one after it."""
    if _FILE.search(comment) is None:
        match = _LINE.search(comment)
        if match is not None:
            if match.group("codes") is None:
                # A blanket directive already hides everything.
                return None
            present = _codes(match.group("codes")) or frozenset()
            missing = [code for code in codes if code not in present]
            if not missing:
                return None
            at = Location(row, start + match.end("codes") + 1)
            return Edit(", " + ", ".join(missing), at, at)
    at = Location(row, start + len(comment) + 1)
    return Edit(f"  # noqa: {', '.join(codes)}", at, at)
