"""Import-alias resolution: turn an expression into the qualified name it refers to.

One cheap walk over the module's *statements* (never its expressions) collects every import and
every one-step alias (``f = torch.manual_seed``); resolving a ``Name``/``Attribute`` chain is then a
dictionary lookup. This replaces libcst's Scope/QualifiedName providers, which cost several parses
per file; the price is that bindings are file-wide rather than scope-exact (see ``Names``).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import libcst as cst

from repro_lint.walker import COMPOUND_STATEMENTS

_BUILTINS = frozenset(dir(builtins))
# The compound statements that open a scope.
_SCOPES = frozenset({cst.ClassDef, cst.FunctionDef})


@dataclass(frozen=True, slots=True)
class Binding:
    """A local name bound to a qualified name by an import or a one-step alias."""

    local: str
    qualified: str
    # The statement that creates the binding (to order it against fix insertions).
    statement: cst.BaseStatement
    # The top-level statement that contains it (the statement itself at module level).
    top: cst.BaseStatement
    # True for imports at module level (also inside module-level if/try/with), where a fix
    # inserted anywhere after them may use the name.
    module_level: bool
    is_import: bool


@dataclass(frozen=True, slots=True)
class _Stmt:
    node: cst.BaseStatement
    module_level: bool
    top: cst.BaseStatement


def _iter_simple_statements(
    body: Sequence[cst.CSTNode], module_level: bool, top: cst.BaseStatement | None = None
) -> Iterator[tuple[_Stmt, cst.BaseSmallStatement]]:
    """Yield every small statement, descending into compound statements but not expressions."""
    for node in body:
        if type(node) is cst.SimpleStatementLine:
            holder = _Stmt(node, module_level, top or node)
            for small in node.body:
                yield holder, small
        elif type(node) in COMPOUND_STATEMENTS:
            stmt = cast(cst.BaseCompoundStatement, node)
            outer = top or stmt
            nested_level = module_level and type(stmt) not in _SCOPES
            for suite in _suites(stmt):
                if type(suite) is cst.IndentedBlock:
                    yield from _iter_simple_statements(suite.body, nested_level, outer)
                elif type(suite) is cst.SimpleStatementSuite:
                    # ``if x: import torch`` has no SimpleStatementLine of its own: the compound
                    # statement holds the binding.
                    holder = _Stmt(stmt, nested_level, outer)
                    for small in suite.body:
                        yield holder, small


def _suites(stmt: cst.BaseCompoundStatement) -> Iterator[cst.BaseSuite]:
    if type(stmt) is cst.Match:
        # A ``match`` statement has no body of its own, only its cases'.
        for case in stmt.cases:
            yield case.body
        return
    yield stmt.body
    if isinstance(stmt, cst.If | cst.For | cst.While):
        orelse = stmt.orelse
        while orelse is not None:
            yield orelse.body
            orelse = orelse.orelse if type(orelse) is cst.If else None
    elif isinstance(stmt, cst.Try | cst.TryStar):
        for handler in stmt.handlers:
            yield handler.body
        if stmt.orelse is not None:
            yield stmt.orelse.body
        if stmt.finalbody is not None:
            yield stmt.finalbody.body


def _targets(node: cst.BaseExpression | cst.BaseAssignTargetExpression) -> Iterator[str]:
    if type(node) is cst.Name:
        yield node.value
    elif isinstance(node, cst.Tuple | cst.List):
        for element in node.elements:
            yield from _targets(element.value)
    elif type(node) is cst.StarredElement:
        yield from _targets(node.value)


def _local_names(function: cst.FunctionDef) -> frozenset[str]:
    """Parameters and names assigned in ``function``'s own body (not nested functions),
    minus those declared ``global``/``nonlocal``; imports are left to the import table."""
    names: set[str] = set()
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        names.add(param.name.value)
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            names.add(star.name.value)
    declared: set[str] = set()
    if type(function.body) is cst.IndentedBlock:
        for _, small in _iter_simple_statements(function.body.body, module_level=False):
            if type(small) is cst.Assign:
                for target in small.targets:
                    names.update(_targets(target.target))
            elif isinstance(small, cst.AnnAssign | cst.AugAssign):
                names.update(_targets(small.target))
            elif isinstance(small, cst.Global | cst.Nonlocal):
                declared.update(item.name.value for item in small.names)
        for statement in _iter_compound(function.body.body):
            if type(statement) is cst.For:
                names.update(_targets(statement.target))
            elif type(statement) is cst.With:
                for item in statement.items:
                    if item.asname is not None:
                        names.update(_targets(item.asname.name))
            elif isinstance(statement, cst.FunctionDef | cst.ClassDef):
                names.add(statement.name.value)
    return frozenset(names - declared)


def _local_aliases(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """Names ``function`` binds exactly once, by ``name = a.b`` (a Name or Attribute chain)
    or ``name = a.b if test else c.d`` (two of them), and never otherwise (no parameter, loop
    target, augmented assignment of that name)."""
    if type(function.body) is not cst.IndentedBlock:
        return {}
    counts: dict[str, int] = {}
    values: dict[str, cst.BaseExpression] = {}
    for _, small in _iter_simple_statements(function.body.body, module_level=False):
        if type(small) is cst.Assign:
            for target in small.targets:
                for name in _targets(target.target):
                    counts[name] = counts.get(name, 0) + 1
                    if (
                        len(small.targets) == 1
                        and type(target.target) is cst.Name
                        and (_is_chain(small.value) or _is_chain_choice(small.value))
                    ):
                        values[name] = small.value
        elif isinstance(small, cst.AnnAssign | cst.AugAssign):
            for name in _targets(small.target):
                counts[name] = counts.get(name, 0) + 2
    if not values:
        return {}
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        counts[param.name.value] = 2
    for statement in _iter_compound(function.body.body):
        if type(statement) is cst.For:
            for name in _targets(statement.target):
                counts[name] = 2
        elif type(statement) is cst.With:
            for item in statement.items:
                if item.asname is not None:
                    for name in _targets(item.asname.name):
                        counts[name] = 2
    return {name: value for name, value in values.items() if counts.get(name) == 1}


def _is_chain(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name | cst.Attribute)


def _is_chain_choice(node: cst.BaseExpression) -> bool:
    """``a.b if test else c.d``: a choice between two Name or Attribute chains."""
    return type(node) is cst.IfExp and _is_chain(node.body) and _is_chain(node.orelse)


def _iter_compound(body: Sequence[cst.CSTNode]) -> Iterator[cst.BaseCompoundStatement]:
    """Compound statements of a body, descending into blocks but not into nested scopes."""
    for stmt in body:
        if type(stmt) in COMPOUND_STATEMENTS:
            compound = cast(cst.BaseCompoundStatement, stmt)
            yield compound
            if type(compound) in _SCOPES:
                continue
            for suite in _suites(compound):
                if type(suite) is cst.IndentedBlock:
                    yield from _iter_compound(suite.body)


def dotted_name(node: cst.BaseExpression | cst.ImportAlias | cst.Attribute | cst.Name) -> str:
    """``a.b.c`` for a Name/Attribute chain (as written, unresolved)."""
    if type(node) is cst.Name:  # (``type``: abc's isinstance is slow)
        return node.value
    if type(node) is cst.Attribute:
        return f"{dotted_name(node.value)}.{node.attr.value}"
    if type(node) is cst.ImportAlias:
        return dotted_name(node.name)
    raise TypeError(f"not a dotted name: {type(node).__name__}")


def assigned_name(node: cst.CSTNode, value: cst.CSTNode | None = None) -> str | None:
    """The name ``node`` binds when it is ``name = value`` with one plain name as its target
    (and, given ``value``, that very node as its value); None otherwise."""
    if not (
        type(node) is cst.Assign
        and (value is None or node.value is value)
        and len(node.targets) == 1
        and type(node.targets[0].target) is cst.Name
    ):
        return None
    return node.targets[0].target.value


def _resolve_relative(module: str | None, is_package: bool, level: int, target: str) -> str:
    """Qualify ``from ..x import y``'s module part against this module's own name."""
    if module is None:
        return "." * level + target
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    keep = len(parts) - (level - 1)
    if keep < 0:
        return "." * level + target
    base = ".".join(parts[:keep])
    if base and target:
        return f"{base}.{target}"
    return base or target


class Names:
    """Resolve expressions of one module to qualified names through its imports and aliases.

    Precision notes: a binding holds for the whole file (an import inside a function also
    resolves the name elsewhere); the first import of a name wins; an alias assigned twice with
    different values is dropped; an unbound builtin (``setattr``) resolves to ``builtins.x``.
    Top-level ``def``/``class`` names resolve to ``<module>.<name>`` so calls into project code
    can be followed across files.
    """

    def __init__(
        self, module: cst.Module, module_name: str | None = None, is_package: bool = False
    ) -> None:
        self.module_name = module_name
        self.is_package = is_package
        self._bindings: dict[str, Binding] = {}
        self._assigned: set[str] = set()
        self._defined: dict[str, str] = {}
        # Imported names that a later top-level ``def``/``class`` binds again (``class
        # Dataset(Dataset):``): the function bodies, which run after the module, see the
        # definition; the module's own code keeps the import (the base class is evaluated
        # before the name is bound again).
        self._redefined: dict[str, str] = {}
        self._imports: list[Binding] = []
        # Names a function binds locally (parameters, assignments), innermost last; the
        # engine's traversal enters and leaves functions.
        self._shadows: list[frozenset[str]] = []
        # Names a function binds once to a module or a function (``npr = np.random``),
        # innermost last: they resolve as written.
        self._aliases: list[dict[str, str]] = []
        # Names a function binds once to one of two (``loss_fn = F.cross_entropy if log else
        # F.nll_loss``), innermost last: they resolve to neither (``alternatives`` has both,
        # each with its text).
        self._choices: list[dict[str, tuple[tuple[str, str], ...]]] = []
        # ``qualified_name``'s answers in the current scope, by node (kept with the node: an
        # id is unique only while its object lives). Rules ask about the same nodes again and
        # again; entering or leaving a function forgets them.
        self._answered: dict[int, tuple[cst.CSTNode, str | None]] = {}
        self.star_imports: list[str] = []
        self._collect(module)
        self._answered.clear()  # (what collecting asked was asked before all was bound)

    # -- collection ------------------------------------------------------------------------

    def _collect(self, module: cst.Module) -> None:
        alias_candidates: list[tuple[_Stmt, str, cst.BaseExpression]] = []
        # Where each top-level statement stands, and the last ``def``/``class`` of each name.
        order: dict[int, int] = {}
        last_definition: dict[str, int] = {}
        for index, stmt in enumerate(module.body):
            order[id(stmt)] = index
            if isinstance(stmt, cst.FunctionDef | cst.ClassDef):
                qualified = f"{self.module_name}.{stmt.name.value}" if self.module_name else None
                if qualified:
                    self._defined[stmt.name.value] = qualified
                    last_definition[stmt.name.value] = index
                self._assigned.add(stmt.name.value)
        for holder, small in _iter_simple_statements(module.body, module_level=True):
            if type(small) is cst.Import:
                for alias in small.names:
                    full = dotted_name(alias.name)
                    if alias.asname is not None and type(alias.asname.name) is cst.Name:
                        self._bind(alias.asname.name.value, full, holder, is_import=True)
                    else:
                        top = full.split(".", 1)[0]
                        self._bind(top, top, holder, is_import=True)
            elif type(small) is cst.ImportFrom:
                self._collect_from(small, holder)
            elif type(small) is cst.Assign:
                for target in small.targets:
                    if type(target.target) is cst.Name:
                        name = target.target.value
                        if len(small.targets) == 1 and _is_chain(small.value):
                            alias_candidates.append((holder, name, small.value))
                        else:
                            self._assigned.add(name)
            elif isinstance(small, cst.AnnAssign | cst.AugAssign):
                if type(small.target) is cst.Name:
                    self._assigned.add(small.target.value)
        self._collect_aliases(alias_candidates)
        for name, index in last_definition.items():
            binding = self._bindings.get(name)
            if (
                binding is not None
                and binding.is_import
                and binding.module_level
                and order.get(id(binding.top), len(order)) < index
            ):
                self._redefined[name] = self._defined[name]

    def _collect_from(self, node: cst.ImportFrom, holder: _Stmt) -> None:
        base = self.import_base(node)
        if isinstance(node.names, cst.ImportStar):
            self.star_imports.append(base)
            return
        for alias in node.names:
            imported = dotted_name(alias.name)
            local = imported
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                local = alias.asname.name.value
            qualified = f"{base}.{imported}" if base and not base.endswith(".") else base + imported
            self._bind(local, qualified, holder, is_import=True)

    def _collect_aliases(self, candidates: list[tuple[_Stmt, str, cst.BaseExpression]]) -> None:
        seen: dict[str, str | None] = {}
        holders: dict[str, _Stmt] = {}
        for holder, name, value in candidates:
            if name in self._bindings and self._bindings[name].is_import:
                # ``try: import x`` / ``except ImportError: x = fallback``: the import wins.
                continue
            qualified = self.qualified_name(value)
            if name in seen and seen[name] != qualified:
                seen[name] = None
            else:
                seen.setdefault(name, qualified)
                holders.setdefault(name, holder)
        for name, qualified in seen.items():
            if qualified is None or name in self._assigned:
                self._assigned.add(name)
                continue
            holder = holders[name]
            self._bindings[name] = Binding(
                name, qualified, holder.node, holder.top, holder.module_level, is_import=False
            )

    def _bind(self, local: str, qualified: str, holder: _Stmt, *, is_import: bool) -> None:
        binding = Binding(local, qualified, holder.node, holder.top, holder.module_level, is_import)
        self._imports.append(binding)
        existing = self._bindings.get(local)
        if existing is not None and existing.is_import:
            # Keep the first import, but remember a module-level one over a local one.
            if existing.module_level or not holder.module_level:
                return
        self._bindings[local] = binding

    # -- queries -----------------------------------------------------------------------------

    def enter_function(self, node: cst.FunctionDef) -> None:
        """Inside ``node``, its parameters and local assignments hide module-level names,
        except one-step aliases it assigns once (``npr = np.random``)."""
        local = _local_names(node)
        aliases: dict[str, str] = {}
        choices: dict[str, tuple[tuple[str, str], ...]] = {}
        for name, value in _local_aliases(node).items():
            if type(value) is cst.IfExp:
                first = self._alias_target(value.body, local)
                second = self._alias_target(value.orelse, local)
                if first is not None and second is not None:
                    choices[name] = (
                        (first, dotted_name(value.body)),
                        (second, dotted_name(value.orelse)),
                    )
                continue
            qualified = self._alias_target(value, local)
            if qualified is not None:
                aliases[name] = qualified
        self._shadows.append(local)
        self._aliases.append(aliases)
        self._choices.append(choices)
        self._answered.clear()

    def _alias_target(self, value: cst.BaseExpression, local: frozenset[str]) -> str | None:
        """What a local alias's value names, outside the function (None for a value of the
        function's own: ``x = param.attr``, or a builtin)."""
        root = value
        while type(root) is cst.Attribute:
            root = root.value
        if type(root) is cst.Name and root.value in local:
            return None
        qualified = self.qualified_name(value)
        if qualified is None or qualified.startswith("builtins."):
            return None
        return qualified

    def leave_function(self) -> None:
        self._shadows.pop()
        self._aliases.pop()
        self._choices.pop()
        self._answered.clear()

    def alternatives(self, node: cst.CSTNode) -> tuple[tuple[str, str], ...] | None:
        """What a local name bound once by a conditional expression may refer to (``loss_fn
        = F.cross_entropy if log else F.nll_loss``), each choice's qualified name with its
        text as written; None for any other node."""
        if type(node) is cst.Name and self._choices:
            return self._choices[-1].get(node.value)
        return None

    def import_base(self, node: cst.ImportFrom) -> str:
        """The module ``from <base> import ...`` imports from, relative imports qualified."""
        level = len(node.relative)
        target = dotted_name(node.module) if node.module is not None else ""
        if not level:
            return target
        return _resolve_relative(self.module_name, self.is_package, level, target)

    def is_bound(self, local: str) -> bool:
        """Whether the module binds ``local`` (import, alias, def, class or assignment)."""
        return local in self._bindings or local in self._defined or local in self._assigned

    def qualified_name(self, node: cst.CSTNode) -> str | None:
        """The qualified name ``node`` refers to, or None when it is not an imported name."""
        known = self._answered.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        answer = self._qualified_name(node)
        self._answered[id(node)] = (node, answer)
        return answer

    def _qualified_name(self, node: cst.CSTNode) -> str | None:
        # ``type(...) is``: the concrete node classes have no subclasses, and isinstance
        # against them goes through abc (this runs for most expressions of every file).
        if type(node) is cst.Name:
            if self._shadows and node.value in self._shadows[-1]:
                return self._aliases[-1].get(node.value)
            if self._shadows and node.value in self._redefined:
                return self._redefined[node.value]
            binding = self._bindings.get(node.value)
            if binding is not None:
                return binding.qualified
            defined = self._defined.get(node.value)
            if defined is not None:
                return defined
            if node.value in _BUILTINS and node.value not in self._assigned:
                return f"builtins.{node.value}"
            return None
        if type(node) is cst.Attribute:
            base = self.qualified_name(node.value)
            if base is None or base.startswith("builtins."):
                return None
            return f"{base}.{node.attr.value}"
        return None

    def imports_in_order(self) -> list[Binding]:
        """Every name bound by an import statement, in source order (repeats included)."""
        return list(self._imports)

    def binding(self, local: str) -> Binding | None:
        return self._bindings.get(local)

    def bindings(self) -> list[Binding]:
        return list(self._bindings.values())

    def expression_for(self, qualified: str) -> tuple[str, Binding | None]:
        """Source text that names ``qualified`` using this module's module-level imports.

        Returns the shortest spelling and the binding it relies on; when nothing is imported the
        fully qualified text and None (the caller must then add an import).
        """
        best: tuple[int, str, Binding] | None = None
        for binding in self._bindings.values():
            if not (binding.is_import and binding.module_level):
                continue
            prefix = binding.qualified
            if qualified == prefix or qualified.startswith(prefix + "."):
                text = binding.local + qualified[len(prefix) :]
                key = (len(text), text, binding)
                if best is None or key[:2] < best[:2]:
                    best = key
        if best is None:
            return qualified, None
        return best[1], best[2]

    def imports_module(self, module: str) -> bool:
        """Whether any import in the file binds ``module`` or something inside it."""
        return any(
            b.is_import and (b.qualified == module or b.qualified.startswith(module + "."))
            for b in self._bindings.values()
        )
