"""Source positions of the nodes a file reports, from one lean code generation per file.

libcst's PositionProvider positions every node of a module through its metadata machinery,
which costs about twice as much as parsing it, and positioning each finding on its own (a
wrapper per statement) made every finding cost as much again. Here the statements that hold
reported nodes are generated once, together, in document order, by a code generation state
that only counts rows and columns (no text is kept) and records each node's range: every
finding of the file then reads its position from that one shared pass. A statement is
generated on its own from the row and indentation the engine's traversal counted for it
(``starts``); a node outside every known statement (a module's header or footer, or a module
linted without a traversal) is positioned by one generation of the whole module.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Mapping

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")
# (start row, start column, end row, end column): rows 1-based, columns 0-based (libcst's).
_Span = tuple[int, int, int, int]


class _Recorder(CodegenState):
    """A code generation that records where each node starts and ends, and nothing else.

    The two ranges libcst's providers give: ``inclusive`` with the whitespace, comments and
    newline a node owns (WhitespaceInclusivePositionProvider), and ``syntactic`` for the nodes
    libcst marks a syntactic part of (PositionProvider; every other node's syntactic range is
    its inclusive one).
    """

    __slots__ = ("_stack", "column", "inclusive", "line", "syntactic")

    def __init__(self, module: cst.Module, line: int, indent: str) -> None:
        super().__init__(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        self.line = line
        self.column = 0
        self._stack: list[tuple[int, int]] = []
        self.inclusive: dict[cst.CSTNode, _Span] = {}
        self.syntactic: dict[cst.CSTNode, _Span] = {}
        if indent:
            self.indent_tokens = [indent]

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.column += len(token)

    def add_token(self, value: str) -> None:
        if not self.tokens:
            # Only whether anything was generated matters (``Module`` asks, for an empty file).
            self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self._stack.pop()
        self.inclusive[node] = (line, column, self.line, self.column)

    @contextlib.contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Iterator[None]:
        line, column = self.line, self.column
        try:
            yield
        finally:
            end_line, end_column = self.line, self.column
            # The parts libcst hoists from a child (a compound statement ends where its body
            # does); the child was generated inside this one, so it is recorded already.
            if start_node is not None:
                line, column = self._range(start_node)[:2]
            if end_node is not None:
                end_line, end_column = self._range(end_node)[2:]
            self.syntactic[node] = (line, column, end_line, end_column)

    def _range(self, node: cst.CSTNode) -> _Span:
        found = self.syntactic.get(node)
        return found if found is not None else self.inclusive[node]


def _code_range(span: _Span) -> CodeRange:
    return CodeRange(CodePosition(span[0], span[1]), CodePosition(span[2], span[3]))


class Positions:
    """1-based lines and 0-based columns (libcst's CodeRange) of nodes of one module.

    Tell it where the nodes you will ask about live (``within``: their innermost statement;
    ``hint``: their top-level statement), then ask: the first question generates every
    statement told about so far, in one pass, and later questions read its records.
    """

    def __init__(
        self, module: cst.Module, starts: Mapping[cst.CSTNode, tuple[int, str]] | None = None
    ) -> None:
        self.module = module
        # Rows and indentation of statements, counted by the traversal: a statement is
        # generated on its own there, rather than with the whole module.
        self._starts = starts if starts is not None else {}
        self._roots: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        self._pending: dict[cst.CSTNode, None] = {}
        self._done: set[cst.CSTNode] = set()
        self._inclusive: dict[cst.CSTNode, _Span] = {}
        self._syntactic: dict[cst.CSTNode, _Span] = {}
        self._whole = False
        # How many generation passes ran (a pass covers every statement pending at the time).
        self.passes = 0

    def within(self, node: cst.CSTNode, statement: cst.CSTNode) -> None:
        """Tell which statement (the innermost) holds ``node``."""
        self._register(node, statement)

    def hint(self, node: cst.CSTNode, top: cst.CSTNode | None) -> None:
        """Tell which top-level statement holds ``node`` (None: the module's header or
        footer)."""
        if top is not None:
            self._register(node, top)

    def _register(self, node: cst.CSTNode, statement: cst.CSTNode) -> None:
        roots = self._roots.get(node)
        if roots is None:
            # A statement is its own innermost statement.
            roots = self._roots[node] = [node] if node in self._starts else []
            first = node if roots else statement
            if first in self._starts and first not in self._done:
                # Only the innermost statement is generated with the next pass; an outer
                # one only if the node turns out not to be inside it.
                self._pending[first] = None
        if statement not in roots:
            roots.append(statement)

    def syntactic(self, node: cst.CSTNode) -> CodeRange:
        """The node's own range (no surrounding whitespace or comments)."""
        found = self._syntactic.get(node)
        if found is None:
            found = self._inclusive.get(node)
        if found is None:
            self._locate(node)
            found = self._syntactic.get(node) or self._inclusive[node]
        return _code_range(found)

    def inclusive(self, node: cst.CSTNode) -> CodeRange:
        """The node's range with the whitespace, comments and newline it owns."""
        found = self._inclusive.get(node)
        if found is None:
            self._locate(node)
            found = self._inclusive[node]
        return _code_range(found)

    def _locate(self, node: cst.CSTNode) -> None:
        """Generate what holds ``node``: every statement pending, then, until the node is
        found, the other statements told to hold it, the node itself if it is a statement,
        and at last the whole module."""
        if self._pending:
            self._generate(list(self._pending))
        for root in [*self._roots.get(node, ()), node]:
            if node in self._inclusive:
                return
            if root in self._starts:
                # Generated again if need be: only what was asked about is kept.
                self._done.discard(root)
                self._generate([root])
        if node in self._inclusive:
            return
        if not self._whole:
            self._whole = True
            self.passes += 1
            recorder = _Recorder(self.module, 1, "")
            self.module._codegen(recorder)
            # Nothing told where nodes are: any of them may be asked about.
            self._inclusive.update(recorder.inclusive)
            for seen, span in recorder.syntactic.items():
                self._syntactic.setdefault(seen, span)
        if node not in self._inclusive:
            raise KeyError(f"{type(node).__name__} is not part of this module")

    def _generate(self, statements: Iterable[cst.CSTNode]) -> None:
        self.passes += 1
        for statement in statements:
            self._pending.pop(statement, None)
            if statement in self._done:
                continue
            row, indent = self._starts[statement]
            recorder = _Recorder(self.module, row, indent)
            statement._codegen(recorder)
            self._keep(recorder)
            # A statement generated inside another one has its records already.
            self._done.update(n for n in recorder.inclusive if n in self._starts)

    def _keep(self, recorder: _Recorder) -> None:
        """Keep the ranges of the nodes told about and of statements (what fixes position
        besides the findings); a file with many findings would otherwise keep a range for
        every node of every statement that holds one."""
        wanted, starts = self._roots, self._starts
        for node, span in recorder.inclusive.items():
            if node in wanted or node in starts:
                self._inclusive.setdefault(node, span)
        for node, span in recorder.syntactic.items():
            if node in wanted or node in starts:
                self._syntactic.setdefault(node, span)
