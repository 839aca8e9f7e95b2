"""Source positions of the few nodes a file reports, without positioning the whole tree.

libcst's PositionProvider positions every node of a module, which costs more than parsing it.
A finding needs the positions of a handful of nodes, so positions are computed per top-level
statement: the line where each top-level statement starts comes from the length of the code
before it (one code generation, no bookkeeping), and only the statements that hold a reported
node are positioned in full, as one-statement modules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import (
    CodePosition,
    CodeRange,
    MetadataWrapper,
    PositionProvider,
    WhitespaceInclusivePositionProvider,
)

_NEWLINE = re.compile(r"\r\n?|\n")


class _Index(cst.CSTVisitor):
    """Maps every node under one top-level statement to that statement."""

    def __init__(self, top: cst.CSTNode, into: dict[cst.CSTNode, cst.CSTNode | None]) -> None:
        self.top = top
        self.into = into

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.into[node] = self.top
        return True

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


class _Local:
    """Positions inside one statement (or the module's header and footer), rows shifted by
    ``offset`` to the file's."""

    def __init__(self, module: cst.Module, offset: int = 0) -> None:
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.offset = offset
        self.syntactic: dict[cst.CSTNode, CodeRange] | None = None
        self.inclusive: dict[cst.CSTNode, CodeRange] | None = None

    def lookup(self, node: cst.CSTNode, inclusive: bool) -> CodeRange | None:
        if inclusive:
            if self.inclusive is None:
                self.inclusive = dict(self.wrapper.resolve(WhitespaceInclusivePositionProvider))
            found = self.inclusive.get(node)
        else:
            if self.syntactic is None:
                self.syntactic = dict(self.wrapper.resolve(PositionProvider))
            found = self.syntactic.get(node)
        if found is None or self.offset == 0:
            return found
        return CodeRange(
            CodePosition(found.start.line + self.offset, found.start.column),
            CodePosition(found.end.line + self.offset, found.end.column),
        )


class Positions:
    """1-based lines and 0-based columns (libcst's CodeRange) of nodes of one module."""

    def __init__(
        self, module: cst.Module, starts: Mapping[cst.CSTNode, tuple[int, str]] | None = None
    ) -> None:
        self.module = module
        # Rows and indentation of statements, counted by the traversal: a node inside one of
        # them is positioned by printing that statement alone (cheap) rather than its
        # top-level statement (a whole class, often).
        self._starts = starts or {}
        self._inside: dict[cst.CSTNode, cst.CSTNode] = {}
        self._statement_local: dict[cst.CSTNode, _Local] = {}
        self._tops: dict[cst.CSTNode, cst.CSTNode | None] = {}
        self._first_line: dict[cst.CSTNode, int] | None = None
        self._body_lines = 0
        self._local: dict[cst.CSTNode | None, _Local] = {}
        self._indexed = False
        self._indexed_tops: set[cst.CSTNode] = set()

    def within(self, node: cst.CSTNode, statement: cst.CSTNode) -> None:
        """Tell which statement (the innermost) holds ``node``."""
        self._inside[node] = statement

    def _in_statement(self, node: cst.CSTNode, inclusive: bool) -> CodeRange | None:
        statement = self._inside.get(node)
        if statement is None and node in self._starts:
            statement = node
        start = self._starts.get(statement) if statement is not None else None
        if statement is None or start is None:
            return None
        local = self._statement_local.get(statement)
        if local is None:
            row, indent = start
            if indent:
                # Printed inside a block with the statement's own indentation, behind an
                # ``if _:`` line, so every line of it comes out as it is in the file.
                block = cst.IndentedBlock(body=[statement], indent=indent)  # type: ignore[list-item]
                wrapper: cst.CSTNode = cst.If(test=cst.Name("_"), body=block)
                offset = row - 2
            else:
                wrapper, offset = statement, row - 1
            mini = self.module.with_changes(body=[wrapper], header=[], footer=[])
            local = self._statement_local[statement] = _Local(mini, offset)
        return local.lookup(node, inclusive)

    def statement_indent(self, node: cst.CSTNode) -> str | None:
        """The indentation of the innermost statement known to hold ``node`` (see
        ``within``), None when no statement was named for it."""
        statement = self._inside.get(node)
        if statement is None and node in self._starts:
            statement = node
        start = self._starts.get(statement) if statement is not None else None
        return None if start is None else start[1]

    def hint(self, node: cst.CSTNode, top: cst.CSTNode | None) -> None:
        """Tell where ``node`` lives (its top-level statement, None for header/footer)."""
        self._tops[node] = top

    def _top_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if node in self._tops:
            return self._tops[node]
        if not self._indexed:
            # A node nobody gave a hint for is nearly always a fix's target inside a statement
            # that holds a finding: index those statements before the whole module.
            for top in [t for t in dict.fromkeys(self._tops.values()) if t is not None]:
                if top not in self._indexed_tops:
                    self._indexed_tops.add(top)
                    top.visit(_Index(top, self._tops))
                    if node in self._tops:
                        return self._tops[node]
            # Elsewhere: index the whole module once (one walk).
            self._indexed = True
            for statement in self.module.body:
                statement.visit(_Index(statement, self._tops))
        return self._tops.setdefault(node, None)

    def _lines(self) -> dict[cst.CSTNode, int]:
        if self._first_line is None:
            first: dict[cst.CSTNode, int] = {}
            # Counted, not assumed one per EmptyLine: libcst keeps a backslash continuation
            # before a blank line ("\\\n\n") as one EmptyLine spanning two lines.
            header = "".join(self.module.code_for_node(empty) for empty in self.module.header)
            header_lines = len(_NEWLINE.findall(header))
            line = 1 + header_lines
            for statement in self.module.body:
                first[statement] = line
                line += len(_NEWLINE.findall(self.module.code_for_node(statement)))
            self._body_lines = line - 1 - header_lines
            self._first_line = first
        return self._first_line

    def _positions(self, top: cst.CSTNode | None) -> _Local:
        local = self._local.get(top)
        if local is None:
            if top is None:
                mini = self.module.with_changes(body=[])
            else:
                mini = self.module.with_changes(body=[top], header=[], footer=[])
            local = _Local(mini)
            self._local[top] = local
        return local

    def _shift(self, node: cst.CSTNode, top: cst.CSTNode | None, rng: CodeRange) -> CodeRange:
        if top is not None:
            offset = self._lines()[top] - 1
        else:
            self._lines()
            footer_nodes = self._footer_nodes()
            offset = self._body_lines if node in footer_nodes else 0
        if offset == 0:
            return rng
        return CodeRange(
            CodePosition(rng.start.line + offset, rng.start.column),
            CodePosition(rng.end.line + offset, rng.end.column),
        )

    def _footer_nodes(self) -> set[cst.CSTNode]:
        nodes: set[cst.CSTNode] = set()
        for line in self.module.footer:
            nodes.update((line, line.whitespace, line.newline))
            if line.comment is not None:
                nodes.add(line.comment)
        return nodes

    def syntactic(self, node: cst.CSTNode) -> CodeRange:
        """The node's own range (no surrounding whitespace or comments)."""
        found = self._in_statement(node, inclusive=False)
        if found is not None:
            return found
        top = self._top_of(node)
        local = self._positions(top)
        if local.syntactic is None:
            local.syntactic = dict(local.wrapper.resolve(PositionProvider))
        return self._shift(node, top, local.syntactic[node])

    def inclusive(self, node: cst.CSTNode) -> CodeRange:
        """The node's range with the whitespace, comments and newline it owns."""
        found = self._in_statement(node, inclusive=True)
        if found is not None:
            return found
        top = self._top_of(node)
        local = self._positions(top)
        if local.inclusive is None:
            local.inclusive = dict(local.wrapper.resolve(WhitespaceInclusivePositionProvider))
        return self._shift(node, top, local.inclusive[node])
