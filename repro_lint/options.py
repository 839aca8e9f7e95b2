"""Command-line options (argparse, click) a module defines, with their defaults: where a
program takes its seed from.

``Options`` rides along a rule's traversal: the rule forwards its ``visit_Assign``,
``visit_Call`` and ``visit_FunctionDef`` nodes. An option counts only when its parser is
known to be argparse's (a variable bound to ``ArgumentParser(...)``, one of its argument
groups, or a parameter annotated as one) or when ``click.option`` declares it, never from a
method name on an unknown receiver.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from repro_lint.arguments import argument, literal_bool, literal_int, literal_str
from repro_lint.names import Names
from repro_lint.randomness import is_seed_name

_PARSERS = frozenset({"argparse.ArgumentParser"})
_GROUPS = frozenset({"add_argument_group", "add_mutually_exclusive_group"})
_CLICK_OPTIONS = frozenset({"click.option", "typer.Option"})


@dataclass(frozen=True)
class Option:
    """One option: its destination name, its default (None when none is given, which
    argparse and click turn into ``None``) and the call that declares it."""

    dest: str
    default: cst.BaseExpression | None
    call: cst.Call
    # True for flags (``action="store_true"``): their default is False, never None.
    flag: bool = False

    @property
    def default_is_none(self) -> bool:
        if self.flag:
            return False
        return self.default is None or (
            type(self.default) is cst.Name and self.default.value == "None"
        )

    def default_int(self) -> int | None:
        """The default as an integer literal (``-1`` sentinels), when it is one."""
        return None if self.default is None else literal_int(self.default)


def _dest(call: cst.Call) -> str | None:
    """argparse's destination: ``dest=``, else the first long option (``--manual-seed``
    -> ``manual_seed``), else the first short one or a positional name."""
    keyword = argument(call, "dest")
    if keyword is not None:
        return literal_str(keyword.value)
    names = []
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            break
        value = literal_str(arg.value)
        if value is None:
            return None
        names.append(value)
    for name in names:
        if name.startswith("--"):
            return name[2:].replace("-", "_")
    if names:
        return names[0].lstrip("-").replace("-", "_")
    return None


class Options:
    """The options declared in one module (by destination name, the first declaration
    wins)."""

    def __init__(self, names: Names) -> None:
        self._names = names
        self._parsers: set[str] = set()
        self.by_dest: dict[str, Option] = {}

    def get(self, dest: str) -> Option | None:
        return self.by_dest.get(dest)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """Parameters annotated as parsers (``def add_args(parser: ArgumentParser)``) and
        click options declared by decorators."""
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            annotation = param.annotation
            if annotation is not None and (
                self._names.qualified_name(annotation.annotation) in _PARSERS
            ):
                self._parsers.add(param.name.value)
        for decorator in node.decorators:
            call = decorator.decorator
            if type(call) is cst.Call and self._names.qualified_name(call.func) in _CLICK_OPTIONS:
                self._click(call)

    def _click(self, call: cst.Call) -> None:
        dest = _dest(call)
        if dest is None:
            return
        default = argument(call, "default")
        flag = argument(call, "is_flag")
        is_flag = flag is not None and literal_bool(flag.value) is True
        self._add(Option(dest, None if default is None else default.value, call, is_flag))

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if type(value) is not cst.Call or len(node.targets) != 1:
            return
        target = node.targets[0].target
        if type(target) is not cst.Name:
            return
        if self._is_parser(value):
            self._parsers.add(target.value)

    def parses(self, call: cst.Call) -> bool:
        """Whether ``call`` is ``parser.parse_args(...)`` on a known argparse parser."""
        func = call.func
        return (
            type(func) is cst.Attribute
            and func.attr.value == "parse_args"
            and type(func.value) is cst.Name
            and func.value.value in self._parsers
        )

    def seed_option(self) -> Option | None:
        """The first option named for a seed (``--seed``, ``--manualSeed``), not a flag."""
        return next((o for o in self.by_dest.values() if is_seed_name(o.dest) and not o.flag), None)

    def _is_parser(self, call: cst.Call) -> bool:
        if self._names.qualified_name(call.func) in _PARSERS:
            return True
        func = call.func
        return (
            type(func) is cst.Attribute
            and func.attr.value in _GROUPS
            and type(func.value) is cst.Name
            and func.value.value in self._parsers
        )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (
            type(func) is cst.Attribute
            and func.attr.value == "add_argument"
            and type(func.value) is cst.Name
            and func.value.value in self._parsers
        ):
            return
        dest = _dest(node)
        if dest is None:
            return
        default = argument(node, "default")
        action = argument(node, "action")
        kind = literal_str(action.value) if action is not None else None
        flag = kind is not None and kind.startswith(("store_true", "store_false", "count"))
        self._add(Option(dest, None if default is None else default.value, node, flag))

    def _add(self, option: Option) -> None:
        self.by_dest.setdefault(option.dest, option)

    def option_of(self, node: cst.BaseExpression) -> Option | None:
        """The option an expression reads: ``args.seed``, ``opt.manualSeed``."""
        if type(node) is cst.Attribute and type(node.value) is cst.Name:
            return self.by_dest.get(node.attr.value)
        return None


__all__ = ["Option", "Options"]
