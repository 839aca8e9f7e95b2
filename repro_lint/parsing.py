"""Python's and libcst's parse of a file, in pieces when the file is large.

Both parsers cost far more memory while they parse than the trees they return: a 2 MB
generated module peaked at 1.4 GB in libcst's native parser and at 0.4 GB in Python's, against
about 300 MB for libcst's finished tree. A large file is therefore cut between top-level
statements, and each parser parses the pieces one after another: Python's trees are dropped
piece by piece (the syntax guard and the docstring gate need only where the docstrings are),
and libcst's statements are joined into the module one parse of the whole text gives.

A boundary is a line of code, then only empty lines, then a statement in the first column (see
``check``), so a piece's parse cannot give a line to another node than a whole parse does: a
whole parse gives those empty lines to the next statement as its leading lines, a piece's parse
to its header, and they are moved. Anything else a piece's libcst parse could see differently
falls back to one parse of the whole text: a piece libcst rejects (so the error is reported
where a whole parse puts it), a piece whose default indentation or newline differs from the
file's (nodes record theirs relative to the module's), or a piece with lines after its last
statement.

An editor's buffer is parsed in small pieces instead (``Pieces``): the next version of a
buffer differs in a statement or two, and each piece whose text is unchanged is taken from the
last version's parse instead of being parsed again (libcst's nodes are immutable, so two
versions' trees may share them).

This module is Python's half, which every file linted goes through; libcst's half, imported
only for a file that is parsed, is ``cst_parse``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from repro_lint.source import SourceError

if TYPE_CHECKING:
    import libcst as cst

# Characters per piece. Small enough that a piece's parse costs little memory next to the
# tree it returns; large enough that the per-parse overhead is lost in the parse itself.
PIECE = 64 * 1024
# Characters per piece of an editor's buffer: a one-line edit parses about this much again.
EDITOR_PIECE = 2 * 1024
NEWLINE = re.compile(r"\r\n?|\n")
# The end of a line that may be followed by a top-level statement: after it, empty lines
# only, then a name or a decorator in the first column that continues no statement.
_BEFORE_STATEMENT = re.compile(r"\n(?=(?:\r?\n)*(?!(?:else|elif|except|finally)\b)[A-Za-z_@])")
_SYNTAX_FAILURES = (SyntaxError, ValueError, RecursionError, MemoryError)
# The comment lines and empty lines a text starts with.
_LEADING_COMMENTS = re.compile(r"(?:[ \t\f]*(?:#[^\r\n]*)?(?:\r\n|\r|\n))*")
# A triple-quoted string that starts a line (a module's docstring, at its first line of code).
_TRIPLE_QUOTE = re.compile(r"[rRuU]?(\"\"\"|\'\'\')")
# (first row, its column, last row, end column): rows 1-based, columns in UTF-8 bytes.
Span = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Checked:
    """What Python's own parse tells the per-file pass about a text that parses: where its
    docstrings are, and where the pieces libcst parses on their own start (see ``cuts``)."""

    docstrings: list[Span]
    cuts: list[int]


class Pieces:
    """The pieces of one buffer's last version, parsed by both parsers, by their text (and,
    for Python's docstrings, whether the piece starts the module). Only the last version's
    pieces are kept: each parse replaces them with its own."""

    __slots__ = ("libcst", "python", "size")

    def __init__(self, size: int = EDITOR_PIECE) -> None:
        self.size = size
        # None: the piece does not parse on its own (it is joined to the next).
        self.python: dict[tuple[bool, str], list[Span] | None] = {}
        self.libcst: dict[str, cst.Module] = {}


def check(text: str, pieces: Pieces | None = None) -> Checked | SourceError:
    """Python's parse of ``text``, in pieces when it is large: where and why it does not
    parse, or what it tells. Python's tree is as large as libcst's, and its parser peaks at
    several times that, so a large text's pieces are parsed and dropped one at a time.

    A piece ends where a candidate boundary lies: a line of code (not a comment, a decorator
    or a continued line), then empty lines only, then a name or decorator in the first
    column. Only a boundary between two top-level statements leaves both sides parsing: one
    inside a string or brackets leaves the first side unterminated. A piece that does not
    parse is joined to the next one once; if that fails too, the whole text is parsed, so a
    syntax error is reported as a whole parse reports it. With ``pieces`` the pieces are
    theirs (smaller), and a piece parsed for the last version is not parsed again."""
    size = PIECE if pieces is None else pieces.size
    cuts = _candidate_cuts(text, size) if "\0" not in text else []
    if not cuts:
        tree = python_tree(text)
        if isinstance(tree, SourceError):
            return tree
        return Checked(docstrings(tree), piece_starts(text, tree, size))
    used: dict[tuple[bool, str], list[Span] | None] = {}
    found: list[Span] = []
    kept: list[int] = []
    bounds = [0, *cuts, len(text)]
    index = 0
    rows = 0  # rows before the current piece
    while index < len(bounds) - 1:
        start, end = bounds[index], bounds[index + 1]
        spans = _piece_docstrings(text[start:end], start == 0, pieces, used)
        if spans is None and index + 2 < len(bounds):
            index += 1
            end = bounds[index + 1]
            spans = _piece_docstrings(text[start:end], start == 0, pieces, used)
        if spans is None:
            whole = python_tree(text)
            if isinstance(whole, SourceError):
                return whole
            return Checked(docstrings(whole), piece_starts(text, whole, size))
        found.extend(
            (first + rows, column, last + rows, end_column)
            for first, column, last, end_column in spans
        )
        if start:
            kept.append(start)
        rows += len(NEWLINE.findall(text, start, end))
        index += 1
    if pieces is not None:
        pieces.python = used
    return Checked(found, kept)


def _piece_docstrings(
    piece: str,
    first: bool,
    pieces: Pieces | None,
    used: dict[tuple[bool, str], list[Span] | None],
) -> list[Span] | None:
    """The docstrings of one piece (rows counted from its start), or None when it does not
    parse on its own; its tree is dropped at once. Taken from ``pieces`` when it was parsed
    for the last version, and noted in ``used`` for the next one."""
    key = (first, piece)
    if pieces is not None and key in pieces.python:
        spans = pieces.python[key]
    else:
        try:
            spans = docstrings(ast.parse(piece), module=first)
        except _SYNTAX_FAILURES:
            spans = None
    if pieces is not None:
        used[key] = spans
    return spans


def python_tree(text: str) -> ast.Module | SourceError:
    """Python's own tree of ``text``, or where and why it does not parse."""
    if "\0" in text:
        before = text[: text.index("\0")]
        row = len(NEWLINE.findall(before)) + 1
        column = len(NEWLINE.split(before)[-1]) + 1
        return SourceError("source contains a null byte", row, column)
    try:
        # No file name: Python would read the error's line from a file of that name on disk,
        # which is not the text linted here (an editor buffer, a notebook, stdin).
        return ast.parse(text)
    except SyntaxError as exc:
        return SourceError(f"SyntaxError: {exc.msg}", exc.lineno or 1, max(exc.offset or 1, 1))
    except (ValueError, RecursionError, MemoryError) as exc:
        return SourceError(f"cannot parse file: {exc}")


def _code_start(text: str) -> int:
    """Where the text's first line of code starts. The first piece ends at the first
    boundary after it, and the others are measured from there: comment lines put before a
    text (``moved_lines.shift_prefix``) then change its first piece only, a small one, and
    every other piece is taken from the text's parse (``Pieces``)."""
    found = _LEADING_COMMENTS.match(text)
    return found.end() if found else 0


def _candidate_cuts(text: str, size: int) -> list[int]:
    """Offsets where the pieces of a large text after the first may start (see ``check``):
    the first boundary after the first line of code (``_code_start``) and the docstring it
    may open, then boundaries at least ``size`` characters apart; none for a text of at most
    two pieces' length from that line."""
    start = _code_start(text)
    if len(text) - start <= 2 * size:
        return []
    cuts: list[int] = []
    # Not within the docstring the code may open: its lines often start in the first column.
    position = start
    opening = _TRIPLE_QUOTE.match(text, start)
    if opening is not None:
        closing = text.find(opening.group(1), opening.end())
        position = closing if closing >= 0 else start
    while position < len(text) - size:
        match = _BEFORE_STATEMENT.search(text, position, len(text) - size)
        if match is None:
            break
        line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()].strip()
        # Code: not a comment, a decorator (its definition follows) or a continued line.
        if line and line[0] not in "#@" and line[-1] != "\\":
            cuts.append(match.end())
            position = match.end() + size
        else:
            position = match.end()
    return cuts


def piece_starts(text: str, tree: ast.Module, size: int) -> list[int]:
    """Character offsets where the pieces of ``text`` after the first start, from Python's
    tree of the whole text (empty for a text of at most two pieces' length, which is parsed
    whole): boundaries between top-level statements with only empty lines between them,
    chosen as ``_candidate_cuts`` chooses them."""
    start = _code_start(text)
    if len(text) - start <= 2 * size or len(tree.body) < 2:
        return []
    # Offsets of the start of each line (1-based rows: starts[row - 1]).
    starts = [0]
    starts.extend(match.end() for match in NEWLINE.finditer(text))
    cuts: list[int] = []
    previous_end = 0
    earliest = start
    for statement in tree.body:
        decorators = getattr(statement, "decorator_list", None)
        first = decorators[0].lineno if decorators else statement.lineno
        end = statement.end_lineno or statement.lineno
        if previous_end and first > previous_end:
            cut = starts[previous_end]
            if (
                cut >= earliest
                and len(text) - cut >= size
                and _only_empty_lines(text, cut, starts[first - 1])
            ):
                cuts.append(cut)
                earliest = cut + size
        previous_end = end
    return cuts


def _only_empty_lines(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is nothing but line breaks (possibly nothing)."""
    position = start
    while position < end:
        match = NEWLINE.match(text, position)
        if match is None:
            return False
        position = match.end()
    return True


def docstrings(tree: ast.Module, *, module: bool = True) -> list[Span]:
    """Where the docstrings of the module (``module``: the tree starts the module), its
    classes and functions are."""
    found: list[Span] = []
    bodies: list[list[ast.stmt]] = [tree.body]
    while bodies:
        body = bodies.pop()
        for index, statement in enumerate(body):
            if isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                first = statement.body[0]
                if (
                    isinstance(first, ast.Expr)
                    and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)
                ):
                    found.append(_span(first.value))
            elif (
                module
                and index == 0
                and body is tree.body
                and isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                found.append(_span(statement.value))
            for name in ("body", "orelse", "finalbody"):
                nested = getattr(statement, name, None)
                if isinstance(nested, list) and nested and isinstance(nested[0], ast.stmt):
                    bodies.append(nested)
            for handler in getattr(statement, "handlers", ()):
                bodies.append(handler.body)
            for case in getattr(statement, "cases", ()):
                bodies.append(case.body)
    return found


def _span(value: ast.expr) -> Span:
    return (
        value.lineno,
        value.col_offset,
        value.end_lineno or value.lineno,
        value.end_col_offset or 0,
    )
