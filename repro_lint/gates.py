"""Options that default off: code a program never runs unless it turns an option on.

A model library builds and runs some kernels only behind a constructor option that defaults
off (``flash = False`` ... ``if self.flash: F.scaled_dot_product_attention(...)``,
``nn.Conv2d(...) if talking_heads else None``). ``GateFacts`` rides along the project
summary's traversal (``summary.py`` feeds it) and writes two things:

- per event, the options that gate it (``gates``): an ``if`` arm or a conditional expression
  whose test is (a conjunct of) a parameter of the enclosing function that defaults to
  ``False``, or an attribute ``self.x`` that the class sets only in ``__init__``, from such a
  parameter;
- what the module turns on (``enables``): names given a value other than ``False``, ``None``
  or ``0`` as a keyword, a dict key, a subscript key or an attribute, and the names that only
  pass an off option on under another name (``passes``: ``talking_heads = cope_talking_heads``),
  and the string literals ending in ``_`` that may route keywords by prefix (``attn_``).

The program model (``program.py``) judges an option per entry point: it is on when a file the
program reaches turns on its name, its name behind such a prefix, or a name passed on to it.
Options set only from data (a config file read at run time) are invisible; a positional
argument never turns an option on.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from repro_lint.arguments import literal_str

Json = Any
# A gate as a test reads it, before the file's end tells whether it is an option:
# ("param", id of the function, parameter) or ("self", class key, attribute).
Gate = tuple[str, int | str, str]


def _is_off(node: cst.BaseExpression) -> bool:
    """``False``, ``None`` or ``0``."""
    if type(node) is cst.Name:
        return node.value in ("False", "None")
    return type(node) is cst.Integer and node.value == "0"


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The terms of ``a and b and c`` (the test itself when it is not a conjunction)."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


class GateFacts:
    """Options defaulting off that gate code, and what a module turns on."""

    def __init__(self) -> None:
        # The enclosing functions' parameters that default to False, innermost last, with
        # the function's id; the (function id, parameter) pairs its code binds again
        # (``flash = flash or detect()``): those are no options.
        self._off: list[frozenset[str]] = []
        self._functions: list[int] = []
        self._rebound: set[tuple[int, str]] = set()
        self._methods: list[str | None] = []
        # (class, attribute) -> the off parameter of __init__ it is set from (with the id of
        # that ``__init__``), or None when it is set anywhere else or from anything else.
        self._attributes: dict[tuple[str, str], tuple[int, str] | None] = {}
        self._enables: set[str] = set()
        self._passes: set[tuple[str, str]] = set()
        self._prefixes: set[str] = set()

    # -- scopes -------------------------------------------------------------------------------

    def enter_function(self, node: cst.FunctionDef, method: bool) -> None:
        params = node.params
        self._off.append(
            frozenset(
                p.name.value
                for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                if p.default is not None
                and type(p.default) is cst.Name
                and p.default.value == "False"
            )
        )
        self._methods.append(node.name.value if method else None)
        self._functions.append(id(node))

    def leave_function(self) -> None:
        self._off.pop()
        self._methods.pop()
        self._functions.pop()

    def _off_here(self) -> frozenset[str]:
        return self._off[-1] if self._off else frozenset()

    # -- gates ----------------------------------------------------------------------------------

    def test(self, test: cst.BaseExpression, class_key: str | None) -> list[Gate]:
        """The options gating the code that runs when ``test`` is true."""
        found: list[Gate] = []
        off = self._off_here()
        for term in _conjuncts(test):
            if type(term) is cst.Name and term.value in off and not term.lpar:
                found.append(("param", self._functions[-1], term.value))
            elif (
                class_key is not None
                and type(term) is cst.Attribute
                and type(term.value) is cst.Name
                and term.value.value == "self"
            ):
                found.append(("self", class_key, term.attr.value))
        return found

    def resolve(self, raw: list[Gate]) -> list[str]:
        """The option names of gates ``test`` found (those that turn out not to be options
        are dropped)."""
        found: list[str] = []
        for kind, scope, name in raw:
            # An attribute gates as the __init__ parameter it is set from, if any.
            parameter = (
                (scope, name) if kind == "param" else self._attributes.get((str(scope), name))
            )
            if parameter is None or parameter in self._rebound:
                continue
            if parameter[1] not in found:
                found.append(parameter[1])
        return found

    # -- what a module turns on -----------------------------------------------------------------

    def _value(self, name: str, value: cst.BaseExpression | None) -> None:
        if value is not None and _is_off(value):
            return
        if type(value) is cst.IfExp and _is_off(value.orelse):
            # ``x if option else None``: a value only when the option is on.
            value = value.test
        if type(value) is cst.Name and value.value in self._off_here():
            self._passes.add((name, value.value))
        else:
            self._enables.add(name)

    def call(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.keyword is not None:
                self._value(arg.keyword.value, arg.value)

    def dict_literal(self, node: cst.Dict) -> None:
        for element in node.elements:
            if type(element) is cst.DictElement:
                key = literal_str(element.key)
                if key is not None:
                    self._value(key, element.value)

    def string(self, node: cst.SimpleString) -> None:
        text = literal_str(node)
        if text is not None and len(text) > 1 and text.endswith("_") and text.isidentifier():
            self._prefixes.add(text)

    def assign(
        self,
        targets: list[cst.BaseExpression],
        value: cst.BaseExpression | None,
        class_key: str | None,
    ) -> None:
        for target in targets:
            if isinstance(target, cst.Tuple | cst.List):
                self.assign([e.value for e in target.elements], None, class_key)
            elif type(target) is cst.Name and target.value in self._off_here():
                self._rebound.add((self._functions[-1], target.value))
            elif type(target) is cst.Attribute:
                name = target.attr.value
                self._value(name, value)
                if type(target.value) is cst.Name and target.value.value == "self" and class_key:
                    self._attribute(class_key, name, value)
            elif type(target) is cst.Subscript and len(target.slice) == 1:
                index = target.slice[0].slice
                if type(index) is cst.Index:
                    key = literal_str(index.value)
                    if key is not None:
                        self._value(key, value)

    def _attribute(self, klass: str, name: str, value: cst.BaseExpression | None) -> None:
        source = None
        method = self._methods[-1] if self._methods else None
        if method == "__init__" and type(value) is cst.Name and value.value in self._off_here():
            source = (self._functions[-1], value.value)
        key = (klass, name)
        self._attributes[key] = source if key not in self._attributes else None

    def summary(self) -> dict[str, Json]:
        return {
            "enables": sorted(self._enables),
            "passes": sorted(map(list, self._passes)),
            "prefixes": sorted(self._prefixes),
        }
