"""``# noqa`` comments: line-level (``# noqa: RPL201``) and file-level (``# repro-lint: noqa``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

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

    def matches(self, code: str, name: str) -> bool:
        return self.codes is None or code.upper() in self.codes or name.lower() in self.codes

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
        return Directive(row, column, column + len(text), _codes(file_match.group("codes")), True)
    match = _LINE.search(text)
    if match is None:
        return None
    return Directive(row, column, column + len(text), _codes(match.group("codes")), False)


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
