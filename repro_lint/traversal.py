"""The one batched traversal of a file: every node goes to each interested rule and to the
summary collector, while statements, rows and indentation are tracked for positions."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import libcst as cst

from repro_lint.rule import FileContext
from repro_lint.walker import IS_NODE, ORDER, is_node, order, walk

Hook = Callable[[cst.CSTNode], object]

NEWLINE = re.compile(r"\r\n?|\n")
_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


_HOOKS: dict[type, tuple[tuple[str, str], ...]] = {}


def _hooks(rule: type) -> tuple[tuple[str, str], ...]:
    """(node type, method name) for every visit_/leave_ method of a rule class (cached)."""
    hooks = _HOOKS.get(rule)
    if hooks is None:
        hooks = tuple(
            (attr.split("_", 1)[1], attr)
            for attr in dir(rule)
            if attr.startswith(("visit_", "leave_")) and callable(getattr(rule, attr))
        )
        _HOOKS[rule] = hooks
    return hooks


_STATEMENT, _FUNCTION, _COMMENT, _NEWLINE, _SPACE, _TEXT, _BLOCK = 1, 2, 4, 8, 16, 32, 64
_SIMPLE_SPACE, _NEWLINE_NODE = cst.SimpleWhitespace, cst.Newline
_KINDS: dict[type, int] = {}
_TEXTS = (cst.SimpleString, cst.FormattedStringText, cst.TemplatedStringText)


def _kind(node_type: type) -> int:
    """What the traversal tracks about a node type (cached: isinstance against libcst's
    abstract classes is slow)."""
    kind = _KINDS.get(node_type)
    if kind is None:
        kind = 0
        if issubclass(node_type, _STATEMENTS):
            kind |= _STATEMENT
        if issubclass(node_type, cst.FunctionDef):
            kind |= _FUNCTION
        if issubclass(node_type, cst.Comment):
            kind |= _COMMENT
        if issubclass(node_type, cst.Newline):
            kind |= _NEWLINE
        if issubclass(node_type, cst.SimpleWhitespace):
            kind |= _SPACE
        if issubclass(node_type, _TEXTS):
            kind |= _TEXT
        if issubclass(node_type, cst.IndentedBlock):
            kind |= _BLOCK
        _KINDS[node_type] = kind
    return kind


def _stepped(node: cst.CSTNode) -> None:
    """What ``Dispatcher.run``'s walk is once it is over (see there)."""


class Dispatcher(cst.CSTVisitor):
    """One traversal that feeds every node to each interested rule (and to the project
    summary collector, which rides along the same way)."""

    def __init__(
        self,
        visitors: Sequence[object],
        context: FileContext,
        comments: list[tuple[cst.Comment, int]] | None,
    ) -> None:
        self._visit: dict[str, list[Hook]] = {}
        self._leave: dict[str, list[Hook]] = {}
        for visitor in visitors:
            idle = getattr(visitor, "idle_hooks", None)
            skipped = idle() if idle is not None else frozenset()
            for node_type, attr in _hooks(type(visitor)):
                if attr in skipped:
                    continue
                table = self._visit if attr.startswith("visit_") else self._leave
                table.setdefault(node_type, []).append(getattr(visitor, attr))
        self._stack = context.statement_stack
        self._names = context.names
        self._comments = comments
        self._cursor = context.cursor
        self._default_indent = context.module.default_indent
        self._indents: list[str] = []
        self._elifs: set[cst.CSTNode] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = _kind(type(node))
        if kind:
            self._track(node, kind)
        hooks = self._visit.get(type(node).__name__)
        if hooks:
            for hook in hooks:
                hook(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        hooks = self._leave.get(type(original_node).__name__)
        if hooks:
            for hook in hooks:
                hook(original_node)
        kind = _kind(type(original_node))
        if kind & _STATEMENT:
            self._stack.pop()
            if kind & _FUNCTION:
                self._names.leave_function()
        elif kind & _BLOCK:
            self._indents.pop()

    def _track(self, node: cst.CSTNode, kind: int) -> None:
        """Statements, rows (newlines passed) and indentation, for positions and summaries."""
        cursor = self._cursor
        if kind & _NEWLINE:
            cursor.row += 1
        elif kind & _SPACE:
            # A backslash continuation is the only way plain whitespace spans lines.
            value = node.value  # type: ignore[attr-defined]
            if "\\" in value:
                cursor.row += len(NEWLINE.findall(value))
        elif kind & _TEXT:
            value = node.value  # type: ignore[attr-defined]
            if "\n" in value or "\r" in value:
                cursor.row += len(NEWLINE.findall(value))
        elif kind & _STATEMENT:
            self._stack.append(node)
            if node in self._elifs:
                # An ``elif`` prints as ``if`` on its own: it is positioned with its ``if``.
                self._elifs.discard(node)
            else:
                cursor.starts[node] = (cursor.row, "".join(self._indents))
            if type(node) is cst.If and type(node.orelse) is cst.If:
                self._elifs.add(node.orelse)
            if kind & _FUNCTION:
                self._names.enter_function(node)  # type: ignore[arg-type]
        elif kind & _BLOCK:
            indent = node.indent  # type: ignore[attr-defined]
            self._indents.append(self._default_indent if indent is None else indent)
        elif kind & _COMMENT and self._comments is not None:
            if "noqa" in node.value.lower():  # type: ignore[attr-defined]
                self._comments.append((node, cursor.row))  # type: ignore[arg-type]

    def run(self, module: cst.Module) -> None:
        """One read-only walk of the tree, in libcst's visiting order (see walker.py for why
        not ``module.visit``). It is ``walker.walk(module, self.on_visit, self.on_leave)``
        with both inlined: this loop runs once per node of every file linted. (A subclass
        that overrides ``on_visit`` or ``on_leave`` is walked through them.)"""
        if type(self).on_visit is not Dispatcher.on_visit or (
            type(self).on_leave is not Dispatcher.on_leave
        ):
            walk(module, self.on_visit, self.on_leave)
            return
        # Per node type: what to track, and the hooks to call on the way in and out.
        plans: dict[type, tuple[int, tuple[Hook, ...], tuple[Hook, ...]]] = {}
        visit, leave, track = self._visit, self._leave, self._track
        stack, indents, names, cursor = self._stack, self._indents, self._names, self._cursor
        known = IS_NODE.get  # is_node, inlined
        # Whitespace and newlines are nearly half of a tree's nodes: where no hook wants
        # them, they are counted in place (as ``_track`` would) instead of being stepped into.
        spaces = not ({"SimpleWhitespace"} & (visit.keys() | leave.keys()))
        newlines = not ({"Newline"} & (visit.keys() | leave.keys()))

        def step(node: cst.CSTNode) -> None:
            node_type = type(node)
            plan = plans.get(node_type)
            if plan is None:
                name = node_type.__name__
                plan = (_kind(node_type), tuple(visit.get(name, ())), tuple(leave.get(name, ())))
                plans[node_type] = plan
            kind, entering, leaving = plan
            if kind:
                track(node, kind)
            for hook in entering:
                hook(node)
            for attribute in ORDER.get(node_type) or order(node):
                child = getattr(node, attribute)
                child_type = type(child)
                if child_type is _SIMPLE_SPACE and spaces:
                    if "\\" in child.value:
                        cursor.row += len(NEWLINE.findall(child.value))
                elif child_type is _NEWLINE_NODE and newlines:
                    cursor.row += 1
                elif child_type is tuple or child_type is list:
                    for item in child:
                        answer = known(type(item))
                        if answer or (answer is None and is_node(type(item))):
                            step(item)
                else:
                    answer = known(child_type)
                    if answer or (answer is None and is_node(child_type)):
                        step(child)
            for hook in leaving:
                hook(node)
            if kind & _STATEMENT:
                stack.pop()
                if kind & _FUNCTION:
                    names.leave_function()
            elif kind & _BLOCK:
                indents.pop()

        try:
            step(module)
        finally:
            # ``step`` refers to itself: left as it is, that cycle would keep everything the
            # traversal reached (the tree, through the hooks) for the garbage collector.
            step = _stepped

    # libcst calls these for every child attribute of every node; the defaults look up
    # ``visit_<Node>_<attr>`` methods by name, which we never define.
    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


__all__ = ["Dispatcher"]
