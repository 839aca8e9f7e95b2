"""Fix intents to text: a rule's CST-level edits (replace, insert, add import) as positioned
text edits of one file."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange

from repro_lint import layout
from repro_lint.arguments import expression_code
from repro_lint.config import find_project_root
from repro_lint.diagnostics import Edit, Location
from repro_lint.fixes import reindent
from repro_lint.names import Names
from repro_lint.positions import Positions
from repro_lint.rule import AddImport, DropComments, InsertAfter, InsertBefore, NodeEdit, Replace

NEWLINE = re.compile(r"\r\n?|\n")


def _comment_lines_above(statement: cst.CSTNode) -> int:
    """How many comment lines come right before ``statement`` (no blank line between; a
    notebook's cell marker is not one of them)."""
    return layout.describing_comments(getattr(statement, "leading_lines", ()))


def start_of(rng: CodeRange) -> Location:
    return Location(rng.start.line, rng.start.column + 1)


def end_of(rng: CodeRange) -> Location:
    return Location(rng.end.line, rng.end.column + 1)


# -- fixes: CST intents -> text edits -----------------------------------------------------------


def _continues(line: str) -> bool:
    """Whether a line leaves brackets open (or ends in a backslash): its statement goes on
    on the next line, wrapped by hand."""
    code = re.sub(r"(\"[^\"]*\"|'[^']*')", "", line.split("#", 1)[0])
    opened = sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
    return opened > 0 or code.rstrip().endswith("\\")


class EditBuilder:
    """Turns a rule's NodeEdits into text Edits for one file."""

    def __init__(
        self,
        text: str,
        module: cst.Module,
        names: Names,
        positions: Positions,
        path: Path | None = None,
    ):
        self.module = module
        self.names = names
        self.positions = positions
        self.newline = module.default_newline
        self.path = path
        self._lines: list[str] | None = None
        self._text = text
        self._header: layout.Header | None = None
        self._cells: tuple[layout.Cell, ...] | None = None
        self._width: int | None = None

    @property
    def header(self) -> layout.Header:
        if self._header is None:
            self._header = layout.header_of(self.module)
        return self._header

    @property
    def cells(self) -> tuple[layout.Cell, ...]:
        """A notebook's code cells (its joined module starts with a cell marker); none for a
        Python file."""
        if self._cells is None:
            marked = layout.is_joined_notebook(self._text)
            self._cells = layout.cell_headers(self.module) if marked else ()
        return self._cells

    def _header_at(self, row: int) -> tuple[layout.Header, layout.Cell | None]:
        """The header that code at ``row`` follows: the module's, or in a notebook that of
        the cell holding the row (with the cell)."""
        cell = layout.cell_at(self.cells, row)
        return (self.header, None) if cell is None else (cell.header, cell)

    @property
    def width(self) -> int:
        if self._width is None:
            self._width = layout.line_length(self.path)
        return self._width

    def _all_lines(self) -> list[str]:
        if self._lines is None:
            self._lines = NEWLINE.split(self._text)
        return self._lines

    def _line(self, row: int) -> str:
        lines = self._all_lines()
        return lines[row - 1] if row - 1 < len(lines) else ""

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
            return self._replace(edit)
        if isinstance(edit, InsertBefore):
            start = start_of(self.positions.syntactic(edit.statement))
            indent = self._indent(edit.statement)
            lines = self._lines_of(edit.code, indent)
            comments = _comment_lines_above(edit.statement)
            if comments and indent == self._line(start.row)[: start.column - 1]:
                # The comment lines right above the statement describe it, not the inserted
                # code: the code goes above them.
                start = Location(start.row - comments, 1)
                content = newline.join(lines)
                if not indent and self._follows_imports(start.row, edit.code):
                    content = newline + content
                return Edit(content + newline, start, start)
            # The first line lands where the statement starts, after its indentation.
            content = newline.join(
                line[len(indent) :] if i == 0 else line for i, line in enumerate(lines)
            )
            if not indent and self._follows_imports(start.row, edit.code):
                # Right after the import block: a blank line keeps the block what isort
                # (ruff I001) wants.
                content = newline + content
            return Edit(content + newline + indent, start, start)
        if isinstance(edit, InsertAfter):
            end = end_of(self.positions.inclusive(edit.statement))
            indent = self._indent(edit.statement)
            content = "".join(line + newline for line in self._lines_of(edit.code, indent))
            if end.column != 1:
                content = newline + content.removesuffix(newline)
            elif not indent and self._follows_imports(end.row, edit.code):
                content = newline + content
            return Edit(content, end, end)
        if isinstance(edit, DropComments):
            start = start_of(self.positions.syntactic(edit.statement))
            comments = _comment_lines_above(edit.statement)
            if not comments:
                return None
            return Edit("", Location(start.row - comments, 1), Location(start.row, 1))
        return self._add_import(edit)

    def _follows_imports(self, row: int, code: str) -> bool:
        """Whether code inserted at the start of ``row`` would directly follow the import
        block (and is not itself an import)."""
        first = code.lstrip().split("\n", 1)[0]
        if first.startswith(("import ", "from ")):
            return False
        return layout.after_imports(self._header_at(row)[0], row)

    def _replace(self, edit: Replace) -> Edit:
        rng = self.positions.inclusive(edit.node)
        start, end = start_of(rng), end_of(rng)
        block = self.positions.statement_indent(edit.node)
        if block is None:
            block = self._leading(start.row)
        old, new = edit.node, edit.new
        if type(old) is cst.Call and type(new) is cst.Call:
            extras = _appended(old, new)
            if extras:
                syntactic = self.positions.syntactic(old)
                room = layout.room_at(
                    self._all_lines(),
                    (syntactic.start.line, syntactic.start.column),
                    (syntactic.end.line, syntactic.end.column),
                    block,
                    self.width,
                    formatted=layout.formatted(self.path),
                )
                code = layout.fit_call(self.module, old, extras, room)
                if "\n" in code and syntactic.start.line == syntactic.end.line:
                    chained = self._split_chain(old, extras, block)
                    if chained is not None:
                        return chained
                return Edit(code, start_of(syntactic), end_of(syntactic))
        if _wraps(new, old):
            assert type(new) is cst.Call
            syntactic = self.positions.syntactic(old)
            if syntactic.start.line == syntactic.end.line:
                room = layout.room_at(
                    self._all_lines(),
                    (syntactic.start.line, syntactic.start.column),
                    (syntactic.end.line, syntactic.end.column),
                    block,
                    self.width,
                )
                inline = layout.wrapper_fits(self.module, new, room)
                if inline is None:
                    split = self._split_comprehension(old, new, block)
                    if split is not None:
                        return split
                    lines = self._all_lines()
                    line = lines[syntactic.end.line - 1]
                    after = line[syntactic.end.column :]
                    if (
                        not re.match(r"[\s)\]}:,]*(#|$)", after)
                        and _continues(line)
                        and any(len(other) > self.width for other in lines)
                    ):
                        # Code follows on a line the author continues by hand (``... in
                        # sorted(os.listdir(d)) if`` / ``    os.path.isdir(x)]``), in a file
                        # that does not keep to its line length: a ``sorted(`` / ``) if``
                        # break is a shape no formatter writes; the line grows, as others of
                        # the file did.
                        inline = expression_code(self.module, new, block)
                    else:
                        inline = layout.break_wrapper(self.module, new, room)
                return Edit(inline, start_of(syntactic), end_of(syntactic))
        if isinstance(new, cst.BaseExpression):
            return Edit(expression_code(self.module, new, block), start, end)
        return Edit(self.module.code_for_node(new), start, end)

    def _split_comprehension(self, old: cst.CSTNode, new: cst.Call, block: str) -> Edit | None:
        """When ``old`` is what a one-line comprehension iterates over: the comprehension with
        ``new`` in its place and its brackets' content on a line of its own, if that fits."""
        finder = _IteratedBy(old)
        self.module.visit(finder)
        comprehension = finder.found
        if comprehension is None:
            return None
        span = self.positions.syntactic(comprehension)
        if span.start.line != span.end.line:
            return None
        room = layout.room_at(
            self._all_lines(),
            (span.start.line, span.start.column),
            (span.end.line, span.end.column),
            block,
            self.width,
        )
        replaced = comprehension.deep_replace(old, new)
        assert isinstance(replaced, layout.Comprehension)
        code = layout.split_brackets(self.module, replaced, room)
        return None if code is None else Edit(code, start_of(span), end_of(span))

    def _split_chain(self, old: cst.Call, extras: list[cst.Arg], block: str) -> Edit | None:
        """When ``old`` is a link of a method chain on one line (``x.shuffle().map(f)``) that
        the new arguments push past the line length: the chain laid out as black lays it out
        (``layout.split_chain``), if it is a statement's whole value or alone in its
        parentheses and black would break it between links."""
        finder = _ChainOf(old)
        self.module.visit(finder)
        if finder.chain is None:
            return None
        chain, wrap = finder.chain, finder.wrap
        span = self.positions.syntactic(chain)
        if span.start.line != span.end.line:
            return None
        lines = self._all_lines()
        line = lines[span.end.line - 1]
        after = line[span.end.column :].strip()
        if after and not (wrap and after.startswith("#")):
            # Code follows on its line (a comment stays after a statement's parentheses).
            return None
        if not wrap and line[: span.start.column].strip():
            return None  # (not alone on its line in its parentheses)
        room = layout.room_at(
            lines,
            (span.start.line, span.start.column),
            (span.end.line, span.end.column),
            block,
            self.width,
        )
        new = layout.append_inline(old, extras)
        replaced = chain.deep_replace(old, new)
        assert isinstance(replaced, cst.BaseExpression)
        code = layout.split_chain(self.module, replaced, room, wrap)
        return None if code is None else Edit(code, start_of(span), end_of(span))

    def _leading(self, row: int) -> str:
        line = self._line(row)
        return line[: len(line) - len(line.lstrip())]

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
        name = layout.ImportName(edit.module, edit.asname)
        end, lead = self._import_anchor()
        # Where the import goes when the header holds no statement after it.
        last = (end.row, end.column, lead)
        header = self.header
        if edit.before is not None and self.cells:
            # A notebook: the import goes into the cell that uses it. Cells run one by one,
            # and the first often installs packages (and is not run again after a restart).
            header, cell = self._header_at(self.positions.syntactic(edit.before).start.line)
            if cell is not None:
                end, lead = Location(cell.start, 1), ""
                last = (cell.header_end, 1, "")
        root = find_project_root(self.path) if self.path is not None else None
        placed = layout.place_import(
            header,
            name,
            self.newline,
            layout.first_party_finder(self.path, root),
            last,
        )
        location = Location(placed.row, placed.column)
        if edit.before is not None:
            before = self.positions.syntactic(edit.before).start.line
            if placed.row > before:
                # An import block out of order: the sorted place is after the use.
                statement = layout.import_text(name)
                return Edit(lead + statement + self.newline, end, end)
        return Edit(placed.text, location, location)

    def _import_anchor(self) -> tuple[Location, str]:
        """Where new imports go: after the docstring and ``from __future__`` imports."""
        for index, statement in enumerate(self.module.body):
            if index == 0 and layout.is_docstring(statement):
                continue
            if layout.is_future_import(statement):
                continue
            start = self.positions.syntactic(statement).start
            return Location(start.line, 1), ""
        lines = NEWLINE.split(self._text)
        if len(lines) == 1 and lines[0] == "":
            return Location(1, 1), ""
        if lines[-1] == "":
            return Location(len(lines), 1), ""
        return Location(len(lines), len(lines[-1]) + 1), self.newline


class _IteratedBy(cst.CSTVisitor):
    """Finds the bracketed comprehension (list, set, dict) that iterates over ``node``."""

    def __init__(self, node: cst.CSTNode) -> None:
        self.node = node
        self.found: layout.Comprehension | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found is not None:
            return False
        if isinstance(node, cst.ListComp | cst.SetComp | cst.DictComp):
            loop: cst.CompFor | None = node.for_in
            while loop is not None:
                if loop.iter is self.node:
                    self.found = node
                    return False
                loop = loop.inner_for_in
        return True


class _ChainOf(cst.CSTVisitor):
    """Finds the method chain ``call`` is a link of: the outermost expression that attribute
    accesses, calls and subscripts build on it (None when nothing is built on it), and
    whether the chain is the whole value of an assignment to a plain name or attribute, or
    of a ``return``, without parentheses of its own (``wrap``). A chain that is neither
    must be alone in its own parentheses."""

    def __init__(self, call: cst.Call) -> None:
        self.call = call
        self.chain: cst.BaseExpression | None = None
        self.wrap = False
        self._stack: list[cst.CSTNode] = []
        self._done = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._done:
            return False
        if node is self.call:
            self._done = True
            self._found()
            return False
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if not self._done:
            self._stack.pop()

    def _found(self) -> None:
        chain: cst.BaseExpression = self.call
        stack = self._stack
        while stack and not chain.lpar:
            parent = stack[-1]
            if not (
                (isinstance(parent, cst.Attribute | cst.Subscript) and parent.value is chain)
                or (type(parent) is cst.Call and parent.func is chain)
            ):
                break
            chain = parent
            stack = stack[:-1]
        if chain is self.call:
            return
        holder = stack[-1] if stack else None
        if chain.lpar:
            if (
                len(chain.lpar) == 1
                and type(chain.lpar[0].whitespace_after) is cst.ParenthesizedWhitespace
            ):
                self.chain = chain
            return
        returned = type(holder) is cst.Return and holder.value is chain
        assigned = (
            type(holder) is cst.Assign
            and holder.value is chain
            and len(holder.targets) == 1
            and _plain_target(holder.targets[0].target)
        )
        if returned or assigned:
            self.chain, self.wrap = chain, True


def _plain_target(target: cst.BaseExpression) -> bool:
    """A name or a chain of attributes on one (``self.data``): no brackets, which would make
    black weigh splitting them first."""
    while type(target) is cst.Attribute:
        target = target.value
    return type(target) is cst.Name


def _wraps(new: cst.CSTNode, old: cst.CSTNode) -> bool:
    """Whether ``new`` is a call whose only argument is ``old`` (``sorted(x)`` for ``x``)."""
    if type(new) is not cst.Call or len(new.args) != 1:
        return False
    (arg,) = new.args
    return arg.keyword is None and not arg.star and arg.value.deep_equals(old)


def _appended(old: cst.Call, new: cst.Call) -> list[cst.Arg]:
    """The keyword arguments ``new`` adds at the end of ``old`` (empty when ``new`` is not
    ``old`` plus keyword arguments)."""
    if len(new.args) <= len(old.args):
        return []
    for before, after in zip(old.args, new.args, strict=False):
        before_key = before.keyword.value if before.keyword is not None else None
        after_key = after.keyword.value if after.keyword is not None else None
        if before_key != after_key or before.star != after.star:
            return []
        if before.value is not after.value and not before.value.deep_equals(after.value):
            # An argument changes too: not a pure extension of the call.
            return []
    extras = list(new.args[len(old.args) :])
    if not all(extra.keyword is not None and not extra.star for extra in extras):
        return []
    if _dotted_code(old.func) != _dotted_code(new.func):
        return []
    return extras


def _dotted_code(node: cst.BaseExpression) -> str:
    return cst.Module(body=[]).code_for_node(node)


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
