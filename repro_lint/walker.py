"""A read-only walk over a libcst tree, in libcst's own visiting order, rebuilding nothing.

``CSTNode.visit`` rebuilds (and re-validates) every node of the tree even for a visitor that
changes nothing; on real files that costs about as much as parsing them. The linter only reads
the tree, so it walks the children itself. The order of each node type's children is learned
once, from libcst's ``_visit_and_replace_children`` (the order it announces the attributes in),
so rules and the row counting that rides along see exactly what a libcst visitor would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import libcst as cst

# Per node type, its attributes in visiting order (see ``order``).
ORDER: dict[type[cst.CSTNode], tuple[str, ...]] = {}
# isinstance against libcst's abstract base classes goes through abc and is slow; the answer
# per concrete type is cached instead.
IS_NODE: dict[type, bool] = {}


def is_node(kind: type) -> bool:
    """Whether values of this type are CST nodes (cached per type)."""
    answer = IS_NODE.get(kind)
    if answer is None:
        answer = IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return answer


class _Recorder(cst.CSTVisitor):
    """Learns the attribute order of one node without descending into its children."""

    def __init__(self) -> None:
        self.attributes: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.attributes.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


def order(node: cst.CSTNode) -> tuple[str, ...]:
    """The attributes of ``node`` in the order a libcst visitor visits them (cached per
    node type)."""
    kind = type(node)
    found = ORDER.get(kind)
    if found is None:
        recorder = _Recorder()
        node._visit_and_replace_children(recorder)
        names = list(dict.fromkeys(recorder.attributes))
        # An attribute libcst skips when it is None (an f-string's format_spec) comes last
        # in its visiting order; fields that never hold nodes are skipped while walking.
        names += [f.name for f in dataclasses.fields(node) if f.name not in names]
        found = ORDER[kind] = tuple(names)
    return found


# Whitespace, newlines and comments: nearly half of a tree's nodes, and never the code a
# search through a subtree looks for (they hold nothing else).
_LAYOUT = frozenset(
    {
        cst.SimpleWhitespace,
        cst.ParenthesizedWhitespace,
        cst.TrailingWhitespace,
        cst.EmptyLine,
        cst.Newline,
        cst.Comment,
    }
)


# The compound statements, tested as ``type(node) in COMPOUND_STATEMENTS``: isinstance goes
# through abc, too slow for walks that see every statement of every file.
COMPOUND_STATEMENTS = frozenset(
    {
        cst.ClassDef,
        cst.For,
        cst.FunctionDef,
        cst.If,
        cst.Match,
        cst.Try,
        cst.TryStar,
        cst.While,
        cst.With,
    }
)


# What a search for a function's own calls, statements or assignments does not enter: the
# functions and classes it defines (tested as ``type(node) in``: such a search sees every node).
NESTED_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def code_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``children`` without the layout nodes (``_LAYOUT``): for searches through a subtree
    for names, calls or statements."""
    return [child for child in children(node) if type(child) not in _LAYOUT]


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` without rebuilding ``node``: its child nodes in visiting order.
    (libcst's property runs ``_visit_and_replace_children``, which copies the node; a
    search through a subtree paid that once per node.)"""
    found: list[cst.CSTNode] = []
    known = IS_NODE.get  # is_node, inlined: this runs for every node of many searches
    for attribute in ORDER.get(type(node)) or order(node):
        child = getattr(node, attribute)
        kind = type(child)
        if kind is tuple or kind is list:
            for item in child:
                answer = known(type(item))
                if answer or (answer is None and is_node(type(item))):
                    found.append(item)
        else:
            answer = known(kind)
            if answer or (answer is None and is_node(kind)):
                found.append(child)
    return found


def walk(
    node: cst.CSTNode,
    enter: Callable[[cst.CSTNode], bool],
    leave: Callable[[cst.CSTNode], object],
) -> None:
    """Call ``enter`` on each node before its children (False skips them) and ``leave``
    after them, depth first, in the order a libcst visitor sees the nodes."""
    if enter(node):
        for attribute in ORDER.get(type(node)) or order(node):
            child = getattr(node, attribute)
            kind = type(child)
            if kind is tuple or kind is list:
                for item in child:
                    if is_node(type(item)):
                        walk(item, enter, leave)
            elif is_node(kind):
                walk(child, enter, leave)
    leave(node)
