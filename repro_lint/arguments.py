"""Read a call's arguments (by keyword or position) and the literal values rules judge."""

from __future__ import annotations

import ast
from typing import Any, NamedTuple

import libcst as cst

from repro_lint.walker import walk

# Literal texts evaluated so far (the short ones), by text; emptied when it holds
# _REMEMBERED_COUNT of them, so that a process linting a large tree stays small.
_EVALUATED: dict[str, object] = {}
_REMEMBERED_LENGTH = 200
_REMEMBERED_COUNT = 8192


def evaluated(node: cst.SimpleString | cst.Integer) -> Any:
    """``node.evaluated_value``, remembered by the literal's text. libcst evaluates a literal
    with ``ast.literal_eval``, which compiles the text on every call and leaves a reference
    cycle of four helper closures behind (garbage only the cyclic collector frees); the same
    few literals (keywords, device names, small numbers) recur through every file."""
    text = node.value
    found = _EVALUATED.get(text, _EVALUATED)
    if found is _EVALUATED:
        found = ast.literal_eval(text)
        if len(text) <= _REMEMBERED_LENGTH:
            if len(_EVALUATED) >= _REMEMBERED_COUNT:
                _EVALUATED.clear()
            _EVALUATED[text] = found
    return found


def mentions_string(node: cst.CSTNode, value: str) -> bool:
    """Whether a string literal in ``node``'s tree (``node`` included) evaluates to ``value``.
    (A plain walk: a visitor class made per call would be a cycle left for the collector.)"""
    found = False

    def enter(child: cst.CSTNode) -> bool:
        nonlocal found
        if not found and type(child) is cst.SimpleString:
            found = evaluated(child) == value
        return not found

    walk(node, enter, _ignore)
    return found


def _ignore(node: cst.CSTNode) -> None:
    return None


def string_value(node: cst.BaseExpression) -> str | bytes | None:
    """What a string literal evaluates to (``ConcatenatedString.evaluated_value`` with
    ``evaluated`` for its parts); None for f-strings and anything else."""
    if type(node) is cst.SimpleString:
        value = evaluated(node)
        return value if isinstance(value, str | bytes) else None
    if type(node) is cst.ConcatenatedString:
        left, right = string_value(node.left), string_value(node.right)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(left, bytes) and isinstance(right, bytes):
            return left + right
    return None


def argument(call: cst.Call, keyword: str | None, position: int | None = None) -> cst.Arg | None:
    """The argument bound to a parameter, by keyword or by position (None if not decidable)."""
    if keyword is not None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                return arg
    if position is None:
        return None
    index = 0
    for arg in call.args:
        if arg.star:
            # ``f(*xs, y)``: positions after a star-arg are unknown.
            return None
        if arg.keyword is not None:
            continue
        if index == position:
            return arg
        index += 1
    return None


def has_double_star(call: cst.Call) -> bool:
    """``f(**kwargs)``: any keyword may be hidden in the mapping."""
    return any(arg.star == "**" for arg in call.args)


def literal_bool(node: cst.BaseExpression) -> bool | None:
    """True/False for ``True``, ``False`` and integer literals; None for anything else."""
    if type(node) is cst.Name and node.value in ("True", "False"):
        return node.value == "True"
    value = literal_int(node)
    return None if value is None else value != 0


def literal_int(node: cst.BaseExpression) -> int | None:
    if type(node) is cst.Integer:
        return int(evaluated(node))
    if (
        type(node) is cst.UnaryOperation
        and type(node.operator) is cst.Minus
        and type(node.expression) is cst.Integer
    ):
        return -int(evaluated(node.expression))
    return None


def number_is_float(node: cst.BaseExpression) -> bool | None:
    """A literal number: True for a float (``1.5``, ``-0.5``), False for an int, None for
    anything else."""
    if type(node) is cst.Float:
        return True
    if type(node) is cst.Integer or literal_int(node) is not None:
        return False
    if type(node) is cst.UnaryOperation:
        return number_is_float(node.expression)
    return None


def literal_str(node: cst.BaseExpression) -> str | None:
    """The value of a plain (non-f, non-byte) string literal, else None."""
    value = string_value(node)
    return value if isinstance(value, str) else None


class SetAttr(NamedTuple):
    """``setattr(holder, "name", value)``, its attribute named by a string literal."""

    holder: cst.BaseExpression
    name: str
    name_node: cst.BaseExpression
    value: cst.BaseExpression


def setattr_arguments(call: cst.Call) -> SetAttr | None:
    """The arguments of a ``setattr`` call (that the callee is ``setattr`` is the caller's to
    check), when all three are given and the attribute's name is a string literal."""
    holder, attribute, value = (argument(call, None, i) for i in range(3))
    if holder is None or attribute is None or value is None:
        return None
    name = literal_str(attribute.value)
    if name is None:
        return None
    return SetAttr(holder.value, name, attribute.value, value.value)


def dict_literal_items(node: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """``{"k": v, ...}`` or ``dict(k=v)`` with string keys; None when not a literal mapping."""
    if type(node) is cst.Dict:
        items: dict[str, cst.BaseExpression] = {}
        for element in node.elements:
            if type(element) is not cst.DictElement:
                continue
            key = literal_str(element.key)
            if key is not None:
                items[key] = element.value
        return items
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "dict":
        return {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
    return None


def equal_like(call: cst.Call) -> cst.AssignEqual:
    """The ``=`` of a keyword argument added to ``call``: ``key = value`` where every keyword
    argument the call has is written so, else ``key=value`` (PEP 8's)."""
    equals = [
        arg.equal
        for arg in call.args
        if arg.keyword is not None and type(arg.equal) is cst.AssignEqual
    ]
    spaced = bool(equals) and all(
        _one_space(e.whitespace_before) and _one_space(e.whitespace_after) for e in equals
    )
    space = " " if spaced else ""
    return cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(space), whitespace_after=cst.SimpleWhitespace(space)
    )


def _one_space(whitespace: cst.BaseParenthesizableWhitespace) -> bool:
    return type(whitespace) is cst.SimpleWhitespace and whitespace.value == " "


def with_keyword(call: cst.Call, keyword: str, value: str) -> cst.Call:
    """``call`` with ``keyword=value`` appended, keeping its layout (one argument per line
    with a trailing comma stays so; otherwise the closing parenthesis keeps its place) and
    the way its keyword arguments are spaced (``equal_like``)."""
    new = cst.Arg(
        value=cst.parse_expression(value), keyword=cst.Name(keyword), equal=equal_like(call)
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    if type(last.comma) is cst.Comma:
        # A trailing comma: the new argument takes the last one's place in the layout.
        layout = call.whitespace_before_args
        after: cst.BaseParenthesizableWhitespace = (
            layout if type(layout) is cst.ParenthesizedWhitespace else cst.SimpleWhitespace(" ")
        )
        args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=after))
        args.append(new.with_changes(comma=last.comma))
    else:
        # ``f(a, b\n)``: the line break before ``)`` moves behind the new argument.
        args[-1] = last.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        args.append(new.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


class _Absolute(cst.CSTTransformer):
    """Writes a block's indentation into the line breaks (and comment lines) inside an
    expression, so that its code is right wherever it is generated on its own."""

    def __init__(self, indent: str) -> None:
        super().__init__()
        self.indent = indent

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        if not updated_node.indent:
            return updated_node
        last = cst.SimpleWhitespace(self.indent + updated_node.last_line.value)
        return updated_node.with_changes(indent=False, last_line=last)

    def leave_EmptyLine(
        self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine
    ) -> cst.EmptyLine:
        if not updated_node.indent:
            return updated_node
        whitespace = cst.SimpleWhitespace(self.indent + updated_node.whitespace.value)
        return updated_node.with_changes(indent=False, whitespace=whitespace)


def indented(node: cst.BaseExpression, indent: str) -> cst.BaseExpression:
    """``node`` for a statement indented by ``indent``, with that indentation written into
    its continuation lines: a replacement's code is generated on its own, outside the block
    that would otherwise indent them."""
    if not indent:
        return node
    result = node.visit(_Absolute(indent))
    assert isinstance(result, cst.BaseExpression)
    return result


def expression_code(module: cst.Module, node: cst.BaseExpression, indent: str) -> str:
    """The code of ``node`` for a statement indented by ``indent``: ``code_for_node`` alone
    leaves the block's indentation out of the expression's continuation lines."""
    code = module.code_for_node(node)
    if "\n" not in code and "\r" not in code:
        # One line: no line break or comment line to indent (and rebuilding the tree to
        # find none is most of the cost).
        return code
    return module.code_for_node(indented(node, indent))
