"""Whether a sampler feeds evaluation only: every loader built on it is iterated only where
grad recording is off (``with torch.no_grad():``, a function decorated with it), in the code
that builds it or in a function of the same file it is passed to. Such a loader's order has
no effect on what training learns (RPL304)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import libcst as cst

from repro_lint.arguments import argument
from repro_lint.autograd import decorator_switch, grad_switch
from repro_lint.names import Names, assigned_name
from repro_lint.values import parameters

# Calls that iterate over their first argument on behalf of a ``for`` loop.
_WRAPPERS = frozenset({"enumerate", "iter", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm"})
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def evaluation_only(
    module: cst.Module, call: cst.Call, names: Names, loaders: frozenset[str]
) -> bool:
    """Whether the sampler that ``call`` builds (``val_sampler = DistributedSampler(ds)``)
    is used only as the ``sampler=`` of loaders (qualified names in ``loaders``) assigned to
    names, each of them used only for ``len()`` and as what a ``for`` loop under a grad-off
    switch iterates over, directly or through the parameter of a top-level function of the
    file it is passed to. False where anything else may happen to them."""
    path = _path_to(module, call)
    if path is None or len(path) < 2:
        return False
    sampler = assigned_name(path[-1], call)
    if sampler is None:
        return False
    scope = next((n for n in reversed(path) if type(n) is cst.FunctionDef), module)
    defined = [node for node in module.body if type(node) is cst.FunctionDef]
    counts = Counter(node.name.value for node in defined)
    # (A name defined twice is left alone: which definition a call reaches is open.)
    functions = {node.name.value: node for node in defined if counts[node.name.value] == 1}
    uses = list(_uses(scope, sampler))
    if sum(1 for use in uses if use.store) != 1:
        return False
    built: list[str] = []
    for use in uses:
        if use.store:
            continue
        loader = _loader_of(use, names, loaders)
        if loader is None:
            return False
        built.append(loader)
    if not built:
        return False
    checker = _Checker(names, functions)
    return all(checker.feeds_evaluation(scope, loader) for loader in built)


class _Use:
    """One occurrence of a name in a scope, with the nodes that hold it (innermost last)."""

    def __init__(self, name: cst.Name, holders: Sequence[cst.CSTNode], store: bool) -> None:
        self.name = name
        self.holders = holders
        self.store = store


def _path_to(module: cst.Module, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The nodes that hold ``target``, outermost first (None when it is not in ``module``)."""
    stack: list[cst.CSTNode] = []
    return stack if _descend(module, target, stack) else None


def _descend(node: cst.CSTNode, target: cst.CSTNode, stack: list[cst.CSTNode]) -> bool:
    # (Module-level, not a closure: a recursive closure is a reference cycle, which the
    # per-file pass must not leave to the collector.)
    if node is target:
        return True
    stack.append(node)
    for child in node.children:
        if _descend(child, target, stack):
            return True
    stack.pop()
    return False


def _uses(scope: cst.CSTNode, name: str) -> Iterator[_Use]:
    """Every occurrence of ``name`` in ``scope`` (a function's parameters and body, or the
    module), with the nodes that hold it from ``scope`` on. One inside a nested function,
    class or lambda is never a binding of ``scope``'s name."""
    holders: list[cst.CSTNode] = [scope]
    children = [scope.params, scope.body] if type(scope) is cst.FunctionDef else scope.children
    for child in children:
        yield from _walk(child, name, holders, False)


def _walk(node: cst.CSTNode, name: str, holders: list[cst.CSTNode], nested: bool) -> Iterator[_Use]:
    if type(node) is cst.Name:
        parent = holders[-1]
        if node.value == name and not _label(parent, node):
            store = not nested and _is_target(parent, node)
            yield _Use(node, list(holders), store)
        return
    if isinstance(node, _SCOPES) and _binds(node, name):
        return  # (its own variable of that name)
    holders.append(node)
    inner = nested or isinstance(node, _SCOPES)
    for child in node.children:
        yield from _walk(child, name, holders, inner)
    holders.pop()


def _binds(scope: cst.FunctionDef | cst.ClassDef | cst.Lambda, name: str) -> bool:
    """Whether a nested function, class or lambda has a variable ``name`` of its own (a
    parameter, or a binding not declared ``global`` or ``nonlocal``)."""
    if type(scope) is cst.Lambda:
        return any(param == name for param, _, _ in parameters(scope))
    declared = any(
        isinstance(node, cst.Global | cst.Nonlocal)
        and any(item.name.value == name for item in node.names)
        for node in _own_nodes(scope.body)
    )
    return not declared and any(use.store for use in _uses(scope, name))


def _own_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and what it holds, not looking into nested functions, classes or lambdas."""
    yield node
    for child in node.children:
        if not isinstance(child, _SCOPES):
            yield from _own_nodes(child)


def _label(parent: cst.CSTNode, name: cst.Name) -> bool:
    """A name that names no variable: an attribute (``x.loader``), a keyword (``loader=``)."""
    return (type(parent) is cst.Attribute and parent.attr is name) or (
        type(parent) is cst.Arg and parent.keyword is name
    )


def _is_target(parent: cst.CSTNode, name: cst.Name) -> bool:
    if isinstance(
        parent,
        cst.AssignTarget | cst.AugAssign | cst.AnnAssign | cst.For | cst.CompFor | cst.NamedExpr,
    ):
        return parent.target is name
    if isinstance(parent, cst.AsName | cst.Param | cst.FunctionDef | cst.ClassDef):
        return parent.name is name
    # (an imported name binds it too)
    return type(parent) is cst.ImportAlias


def _loader_of(use: _Use, names: Names, loaders: frozenset[str]) -> str | None:
    """The name a loader is assigned to, for a sampler passed as ``sampler=`` to it:
    ``val_loader = DataLoader(ds, sampler=val_sampler)``."""
    holders = use.holders
    if len(holders) < 3 or use.store:
        return None
    arg, call, assign = holders[-1], holders[-2], holders[-3]
    if not (
        type(arg) is cst.Arg
        and arg.value is use.name
        and arg.keyword is not None
        and arg.keyword.value == "sampler"
        and type(call) is cst.Call
        and names.qualified_name(call.func) in loaders
    ):
        return None
    return assigned_name(assign, call)


class _Checker:
    def __init__(self, names: Names, functions: dict[str, cst.FunctionDef]) -> None:
        self.names = names
        self.functions = functions

    def feeds_evaluation(self, scope: cst.CSTNode, loader: str, passed: bool = True) -> bool:
        """Whether ``loader``, bound once in ``scope`` (or a parameter of it), is only
        measured with ``len()`` and iterated under a grad-off switch there; with ``passed``,
        also passed to a top-level function of the file whose parameter is."""
        uses = list(_uses(scope, loader))
        stores = [use for use in uses if use.store]
        param = type(scope) is cst.FunctionDef and any(
            type(use.holders[-1]) is cst.Param for use in stores
        )
        if len(stores) != 1 or (not passed and not param):
            return False
        for use in uses:
            if use.store:
                continue
            if _measured(use) or self._iterated_quietly(use):
                continue
            if passed and self._passed_to_evaluation(use):
                continue
            return False
        return True

    def _iterated_quietly(self, use: _Use) -> bool:
        """``for batch in loader:`` (or over ``enumerate(loader)``, ``tqdm(loader)``) where
        the innermost grad switch of the scope the loop runs in turns grad recording off."""
        holders = use.holders
        expr: cst.CSTNode = use.name
        index = len(holders) - 1
        if type(holders[index]) is cst.Arg and index >= 2:
            call = holders[index - 1]
            if not (
                type(call) is cst.Call
                and call.args
                and call.args[0] is holders[index]
                and _qualified(self.names, call.func) in _WRAPPERS
            ):
                return False
            expr, index = call, index - 2
        loop = holders[index]
        if not (type(loop) is cst.For and loop.iter is expr):
            return False
        switch: bool | None = None
        for holder in holders[:index]:
            if type(holder) is cst.FunctionDef:
                switch = decorator_switch(self.names, holder)
            elif isinstance(holder, cst.Lambda | cst.ClassDef):
                switch = None
            elif type(holder) is cst.With:
                for item in holder.items:
                    found = grad_switch(self.names, item.item)
                    if found is not None:
                        switch = found
        return switch is True

    def _passed_to_evaluation(self, use: _Use) -> bool:
        holders = use.holders
        if len(holders) < 2:
            return False
        arg, call = holders[-1], holders[-2]
        if not (
            type(arg) is cst.Arg
            and arg.value is use.name
            and not arg.star
            and type(call) is cst.Call
            and type(call.func) is cst.Name
        ):
            return False
        function = self.functions.get(call.func.value)
        if function is None or self.names.binding(call.func.value) is not None:
            return False
        parameter = _parameter(function, call, arg)
        return parameter is not None and self.feeds_evaluation(function, parameter, False)


def _measured(use: _Use) -> bool:
    """``len(loader)``."""
    holders = use.holders
    if len(holders) < 2:
        return False
    arg, call = holders[-1], holders[-2]
    return (
        type(arg) is cst.Arg
        and type(call) is cst.Call
        and type(call.func) is cst.Name
        and call.func.value == "len"
        and len(call.args) == 1
    )


def _qualified(names: Names, func: cst.BaseExpression) -> str | None:
    if type(func) is cst.Name and func.value in ("enumerate", "iter"):
        return func.value
    return names.qualified_name(func)


def _parameter(function: cst.FunctionDef, call: cst.Call, arg: cst.Arg) -> str | None:
    """The parameter of ``function`` that ``arg`` of ``call`` binds (None where starred
    arguments or parameters leave that open)."""
    if any(a.star for a in call.args):
        return None
    found = None
    for name, where, _ in parameters(function):
        if where in ("*", "**"):
            return None
        if argument(call, name, where if isinstance(where, int) else None) is arg:
            found = name
    return found


__all__ = ["evaluation_only"]
