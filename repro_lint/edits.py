"""Fix intents to text: a rule's CST-level edits (replace, insert, add import) as positioned
text edits of one file."""

from __future__ import annotations

import re
from collections.abc import Iterable

import libcst as cst
from libcst.metadata import CodeRange

from repro_lint.diagnostics import Edit, Location
from repro_lint.fixes import reindent
from repro_lint.names import Names
from repro_lint.positions import Positions
from repro_lint.rule import AddImport, InsertAfter, InsertBefore, NodeEdit, Replace

NEWLINE = re.compile(r"\r\n?|\n")


def start_of(rng: CodeRange) -> Location:
    return Location(rng.start.line, rng.start.column + 1)


def end_of(rng: CodeRange) -> Location:
    return Location(rng.end.line, rng.end.column + 1)


# -- fixes: CST intents -> text edits -----------------------------------------------------------


class EditBuilder:
    """Turns a rule's NodeEdits into text Edits for one file."""

    def __init__(self, text: str, module: cst.Module, names: Names, positions: Positions):
        self.module = module
        self.names = names
        self.positions = positions
        self.newline = module.default_newline
        self._lines: list[str] | None = None
        self._text = text

    def _line(self, row: int) -> str:
        if self._lines is None:
            self._lines = NEWLINE.split(self._text)
        return self._lines[row - 1] if row - 1 < len(self._lines) else ""

    def _indent(self, node: cst.CSTNode) -> str:
        start = self.positions.syntactic(node).start
        prefix = self._line(start.line)[: start.column]
        return prefix if prefix.strip() == "" else ""

    def _lines_of(self, code: str, indent: str) -> list[str]:
        """The lines of inserted ``code`` at ``indent``, its nested levels in the file's own
        indentation unit."""
        unit = self.module.default_indent
        return [
            indent + reindent(line, unit) if line else line for line in code.strip("\n").split("\n")
        ]

    def build(self, edits: Iterable[NodeEdit]) -> list[Edit]:
        out: list[Edit] = []
        for edit in edits:
            built = self._build_one(edit)
            if built is not None:
                out.append(built)
        return _merge_inserts(out)

    def _build_one(self, edit: NodeEdit) -> Edit | None:
        newline = self.newline
        if isinstance(edit, Replace):
            rng = self.positions.inclusive(edit.node)
            return Edit(self.module.code_for_node(edit.new), start_of(rng), end_of(rng))
        if isinstance(edit, InsertBefore):
            start = start_of(self.positions.syntactic(edit.statement))
            indent = self._indent(edit.statement)
            lines = self._lines_of(edit.code, indent)
            # The first line lands where the statement starts, after its indentation.
            content = newline.join(
                line[len(indent) :] if i == 0 else line for i, line in enumerate(lines)
            )
            return Edit(content + newline + indent, start, start)
        if isinstance(edit, InsertAfter):
            end = end_of(self.positions.inclusive(edit.statement))
            indent = self._indent(edit.statement)
            content = "".join(line + newline for line in self._lines_of(edit.code, indent))
            if end.column != 1:
                content = newline + content.removesuffix(newline)
            return Edit(content, end, end)
        return self._add_import(edit)

    def _add_import(self, edit: AddImport) -> Edit | None:
        top = edit.module.split(".", 1)[0]
        local = edit.asname or top
        binding = self.names.binding(local)
        wanted = edit.module if edit.asname else top
        if (
            binding is not None
            and binding.is_import
            and binding.module_level
            and (binding.qualified == wanted)
        ):
            if edit.before is None:
                return None
            bound_at = self.positions.syntactic(binding.statement).start.line
            if bound_at < self.positions.syntactic(edit.before).start.line:
                return None
        statement = f"import {edit.module}" + (f" as {edit.asname}" if edit.asname else "")
        location, prefix = self._import_anchor()
        return Edit(prefix + statement + self.newline, location, location)

    def _import_anchor(self) -> tuple[Location, str]:
        """Where new imports go: after the docstring and ``from __future__`` imports."""
        for index, statement in enumerate(self.module.body):
            if index == 0 and _is_docstring(statement):
                continue
            if _is_future_import(statement):
                continue
            start = self.positions.syntactic(statement).start
            return Location(start.line, 1), ""
        lines = NEWLINE.split(self._text)
        if len(lines) == 1 and lines[0] == "":
            return Location(1, 1), ""
        if lines[-1] == "":
            return Location(len(lines), 1), ""
        return Location(len(lines), len(lines[-1]) + 1), self.newline


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def _is_future_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, cst.ImportFrom)
        and isinstance(small.module, cst.Name)
        and small.module.value == "__future__"
        for small in statement.body
    )


def _merge_inserts(edits: list[Edit]) -> list[Edit]:
    """Join insertions at the same point (in the order given) so edits never tie."""
    merged: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.location, e.end_location)):
        if merged and edit.location == edit.end_location == merged[-1].location == (
            merged[-1].end_location
        ):
            if edit.content not in merged[-1].content:
                previous = merged.pop()
                merged.append(Edit(previous.content + edit.content, edit.location, edit.location))
            continue
        merged.append(edit)
    return merged


__all__ = ["EditBuilder", "end_of", "start_of"]
