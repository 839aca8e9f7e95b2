"""libcst's parse of a file, in the pieces that ``parsing.check`` cut it into (see
``parsing``, which explains the pieces): imported only when a file is parsed."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence

import libcst as cst

from repro_lint import cst_nodes
from repro_lint.parsing import NEWLINE, Pieces
from repro_lint.walker import children

# What libcst runs after building each node: its validation (see ``_unvalidated``).
_VALIDATE = cst.CSTNode.__post_init__
# Parses in this process after which libcst's nodes get quicker constructors (``cst_nodes``:
# writing them costs about as much as they save on one median-sized file).
QUICK_AFTER = 3
_parses = 0


def _validated_by_the_parse(node: cst.CSTNode) -> None:
    """A node's validation while libcst parses (see ``_unvalidated``): none."""


@contextlib.contextmanager
def _unvalidated() -> Iterator[None]:
    """libcst's parser without the validation of each node it builds.

    Every node libcst makes validates itself when built (``CSTNode.__post_init__`` calls
    ``_validate``): the checks that keep hand-built trees printable, such as a space between
    ``not`` and a name. A tree the parser builds is the text it read, and ``check`` has
    already found the text to be Python, so the checks find nothing there; they took an
    eighth to a sixth of each parse. The nodes a fix builds are validated as before: the hook
    is put back as each parse ends, and the quicker constructors (``cst_nodes``) skip calling
    it only meanwhile. (Where two threads parse at once, as the language server's linting
    thread and its requests may, a node built meanwhile can go unvalidated too; a fix's result
    is parsed again before it is used, so that costs no check that matters.)"""
    cst.CSTNode.__post_init__ = _validated_by_the_parse  # type: ignore[method-assign,assignment]
    cst_nodes.checking(False)
    try:
        yield
    finally:
        cst_nodes.checking(True)
        cst.CSTNode.__post_init__ = _VALIDATE  # type: ignore[method-assign]


def parse_module(text: str, cuts: Sequence[int] = (), pieces: Pieces | None = None) -> cst.Module:
    """libcst's module of ``text``, parsed in the pieces that start at ``cuts`` (``check``'s):
    the same tree as ``cst.parse_module(text)``, raising what it raises. A piece parsed for
    the last version is taken from ``pieces``. Nodes are not validated (``_unvalidated``)."""
    global _parses
    _parses += 1
    if _parses == QUICK_AFTER:
        cst_nodes.install()
    with _unvalidated():
        return _parse_module(text, cuts, pieces)


def _parse_module(text: str, cuts: Sequence[int], pieces: Pieces | None) -> cst.Module:
    if not cuts:
        return cst.parse_module(text)
    known = pieces.libcst if pieces is not None else {}
    used: dict[str, cst.Module] = {}
    bounds = [0, *cuts, len(text)]
    first_newline = NEWLINE.search(text)
    newline = first_newline.group() if first_newline else "\n"
    body: list[cst.SimpleStatementLine | cst.BaseCompoundStatement] = []
    first: cst.Module | None = None
    indent: str | None = None
    for start, end in itertools.pairwise(bounds):
        source = text[start:end]
        # Taken out, not looked up: a text that repeats a piece gets a parse of its own for
        # the repetition, as nodes are told apart by identity (one node, one position).
        found = known.pop(source, None)
        if found is None:
            try:
                found = cst.parse_module(source)
            except cst.ParserSyntaxError:
                return cst.parse_module(text)
        piece = used[source] = found
        last = end == len(text)
        if not piece.body or (piece.footer and not last) or piece.default_newline != newline:
            return cst.parse_module(text)
        if piece.default_indent != indent and _has_block(piece):
            if indent is not None:
                return cst.parse_module(text)
            indent = piece.default_indent
        statements = list(piece.body)
        if first is None:
            first = piece
        elif piece.header:
            head = statements[0]
            statements[0] = head.with_changes(leading_lines=(*piece.header, *head.leading_lines))
        body.extend(statements)
    assert first is not None  # there are at least two pieces
    if pieces is not None:
        pieces.libcst = used
    return cst.Module(
        body=body,
        header=first.header,
        footer=piece.footer,
        encoding=first.encoding,
        default_indent=indent if indent is not None else first.default_indent,
        default_newline=newline,
        has_trailing_newline=piece.has_trailing_newline,
    )


# The nodes whose children may be an indented block, or a clause that holds one.
_CLAUSES = (
    cst.BaseCompoundStatement,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)


def _has_block(module: cst.Module) -> bool:
    """Whether the module holds an indented block (its parse then saw an INDENT token, from
    which libcst takes the module's default indentation)."""
    stack: list[cst.CSTNode] = list(reversed(module.body))
    while stack:
        node = stack.pop()
        if type(node) is cst.IndentedBlock:
            return True
        if isinstance(node, _CLAUSES):
            stack.extend(reversed(children(node)))
    return False
