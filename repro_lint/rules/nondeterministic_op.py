"""RPL401: an explicit call of an op that has no deterministic implementation, judged against
the op catalog for the target torch version. Also the call classifier RPL402 shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import MethodType
from typing import TYPE_CHECKING, Any, ClassVar

import libcst as cst

from repro_lint.arguments import argument, literal_int, literal_str
from repro_lint.autograd import (
    CALLED_IN_ITS_FILE,
    IN_PLAIN_FUNCTION,
    JUDGED_BY_RUNS,
    NO_ARGUMENTS,
    Autograd,
    Grad,
    used_detached,
)
from repro_lint.catalog import (
    BY_METHOD,
    DETERMINISTIC_MODE_SINCE,
    ENTRIES,
    HAS_NO_DETERMINISTIC_KERNEL,
    MAYBE,
    MISSING,
    NEEDS_DETERMINISTIC_MODE,
    UNKNOWN,
    Api,
    ApiKind,
    Behaviour,
    Device,
    Entry,
    Named,
    Phase,
    Scope,
    TensorFacts,
    Value,
    apis_named,
    canonical,
    reported,
)
from repro_lint.diagnostics import Diagnostic
from repro_lint.names import Names, dotted_name
from repro_lint.rule import FileContext, Invalid, Note, Rule, SettledRule, Valid
from repro_lint.tensors import Tensors
from repro_lint.torch_versions import TorchVersion
from repro_lint.walker import code_children

if TYPE_CHECKING:
    # (The program model only judges what the per-file pass found: see ``SettledRule``.)
    from repro_lint.program import Program, Unit

# -- classifying calls ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """A call of a catalogued op whose condition holds (or cannot be decided)."""

    entry: Entry
    api: Api
    behaviour: Behaviour
    # How the source names the op: `F.interpolate`, `nn.Upsample`, `Tensor.index_add_`.
    spelling: str
    # The parts of the condition the source does not decide, in words.
    undecided: tuple[str, ...]


class _View:
    """A call as the catalog's conditions see it (``catalog.CallView``)."""

    def __init__(
        self,
        calls: CatalogCalls,
        api: Api,
        call: cst.Call | None,
        receiver: cst.BaseExpression | None = None,
        shift: int = 0,
        forward_call: cst.Call | None = None,
    ) -> None:
        self._calls = calls
        self._api = api
        self._call = call
        self._receiver = receiver
        self._shift = shift
        self._forward_call = forward_call

    def value(self, param: str) -> Value:
        if param == "input" and self._api.kind is ApiKind.METHOD:
            if self._receiver is None:
                return UNKNOWN
            return self._calls.tensors.facts(self._receiver) or UNKNOWN
        if self._forward_call is not None and param in self._api.forward:
            return self._argument(self._forward_call, param, self._api.forward.index(param))
        if self._call is None:
            return UNKNOWN
        params = self._api.params
        position = params.index(param) + self._shift if param in params else None
        return self._argument(self._call, param, position)

    def _argument(self, call: cst.Call, keyword: str, position: int | None) -> Value:
        arg = argument(call, keyword, position)
        if arg is None:
            # ``f(*args)`` / ``f(**kwargs)`` may pass it; otherwise the default applies.
            return MAYBE if any(a.star for a in call.args) else MISSING
        return self._calls.value_of(arg.value)


class CatalogCalls:
    """Finds calls of catalogued ops in one module and judges them for a torch version."""

    def __init__(self, names: Names, target: TorchVersion, library: bool = False) -> None:
        self.names = names
        self.target = target
        # PyTorch's own ops (RPL401/RPL402), or third-party packages' (RPL403).
        self.library = library
        self.tensors = Tensors(names)
        self.autograd = Autograd(names, self.tensors)

    def differentiated(self, node: cst.Call, finding: Finding) -> cst.BaseExpression | None:
        """The tensor whose gradient a backward-phase finding is about: the method's receiver
        or the function's first argument."""
        api = finding.api
        if api.kind is ApiKind.METHOD:
            if type(node.func) is cst.Attribute and self.names.qualified_name(node.func) is None:
                return node.func.value
            first = argument(node, None, 0)
            return first.value if first is not None else None
        if api.kind is ApiKind.FUNCTION and api.params:
            arg = argument(node, api.params[0], 0)
            return arg.value if arg is not None else None
        return None

    def value_of(self, expr: cst.BaseExpression) -> Value:
        """An argument as a literal, a tensor's facts, a resolved name, or UNKNOWN."""
        if type(expr) is cst.Name and expr.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[expr.value]
        number = literal_int(expr)
        if number is not None:
            return number
        if type(expr) is cst.Float:
            return float(expr.value)
        text = literal_str(expr)
        if text is not None:
            return text
        if isinstance(expr, cst.Tuple | cst.List):
            if any(type(e) is cst.StarredElement for e in expr.elements):
                return UNKNOWN
            return tuple(self.value_of(e.value) for e in expr.elements)
        facts = self.tensors.argument_facts(expr)
        if facts is not None:
            return facts
        qualified = self.names.qualified_name(expr)
        return Named(qualified) if qualified is not None else UNKNOWN

    def classify(self, node: cst.Call) -> Finding | None:
        """The finding for this call: one with no deterministic kernel wins over one that
        deterministic mode fixes; a decided condition over an undecided one, and fewer open
        parts over more; then catalog order."""
        best: tuple[tuple[int, int, int], Finding] | None = None
        for entry, api, view, spelling in self._candidates(node):
            if entry.scope is not Scope.CALL or (entry.package is not None) != self.library:
                continue
            behaviour = entry.behaviour(self.target)
            if behaviour not in HAS_NO_DETERMINISTIC_KERNEL | NEEDS_DETERMINISTIC_MODE:
                continue
            verdict = api.when.evaluate(view)
            if verdict is False or (entry.device is Device.CUDA and _on_cpu(api, view)):
                continue
            assert behaviour is not None
            undecided = api.when.undecided(view) if verdict is None else ()
            rank = (
                0 if behaviour in HAS_NO_DETERMINISTIC_KERNEL else 1,
                0 if verdict else 1,
                len(undecided),
            )
            if best is None or rank < best[0]:
                best = (rank, Finding(entry, api, behaviour, spelling, undecided))
        return best[1] if best is not None else None

    def _candidates(self, node: cst.Call) -> Iterable[tuple[Entry, Api, _View, str]]:
        func = node.func
        qualified = self.names.qualified_name(func)
        if qualified is not None:
            spelling = (
                dotted_name(func) if isinstance(func, cst.Name | cst.Attribute) else qualified
            )
            yield from self._named(node, qualified, spelling)
            return
        choices = self.names.alternatives(func)
        if choices is not None:
            # ``loss_fn = F.cross_entropy if log else F.nll_loss``: the call may be either.
            for choice, written in choices:
                yield from self._named(node, choice, written)
            return
        if type(func) is cst.Attribute and func.attr.value in BY_METHOD:
            # Never a bare ``.median`` on an unknown receiver: it must be a likely tensor.
            if self.tensors.facts(func.value) is None:
                return
            spelling = f"Tensor.{func.attr.value}"
            for entry, api in BY_METHOD[func.attr.value]:
                yield entry, api, _View(self, api, node, func.value), spelling
            return
        instance = self.tensors.module_instance(func)
        if instance is not None:
            # A call of a built module (``criterion(logits, target)``) whose condition needs
            # the call's arguments.
            spelling = canonical(instance.qualified).rsplit(".", 1)[1]
            for entry, api in apis_named(instance.qualified):
                if api.kind is ApiKind.MODULE and api.judged_at_call:
                    view = _View(self, api, instance.call, forward_call=node)
                    yield entry, api, view, spelling

    def _named(
        self, node: cst.Call, qualified: str, spelling: str
    ) -> Iterator[tuple[Entry, Api, _View, str]]:
        """The candidates of a call of the op ``qualified``."""
        for entry, api in apis_named(qualified):
            if api.kind is ApiKind.METHOD:
                # ``torch.Tensor.index_add_(t, ...)``: the tensor is the first argument.
                first = argument(node, None, 0)
                receiver = first.value if first is not None else None
                yield entry, api, _View(self, api, node, receiver, shift=1), spelling
            elif not (api.kind is ApiKind.MODULE and api.judged_at_call):
                yield entry, api, _View(self, api, node), spelling


def _on_cpu(api: Api, view: _View) -> bool:
    """Whether the call's tensor (a method's receiver, a function's first argument) is known
    to be on the CPU, where the op runs then."""
    if api.kind is ApiKind.METHOD:
        found = view.value("input")
    elif api.kind is ApiKind.FUNCTION and api.params:
        found = view.value(api.params[0])
    else:
        return False
    return isinstance(found, TensorFacts) and found.cpu is True


@dataclass(frozen=True, slots=True)
class Site:
    """A finding where it was found: the call, what the statements around it were (for a
    later report), and whether it runs at module level (a script, not a library)."""

    node: cst.Call
    finding: Finding
    anchor: tuple[cst.CSTNode, ...]
    module_level: bool


# Where a built module that only a backward pass makes hazardous is kept: an attribute of
# the enclosing class or a name of the enclosing scope (the scope's node, the name).
_Holder = tuple[cst.CSTNode | None, str]


@dataclass(slots=True)
class _Waiting:
    """Findings that the rest of a scope or of the module decides."""

    # Classes and functions being visited, innermost last.
    scopes: list[cst.CSTNode] = field(default_factory=list)
    # The assignment targets around the node being visited.
    targets: list[cst.BaseExpression] = field(default_factory=list)
    # Built modules by where they are kept: the findings, and for each later use whether
    # it was in code no backward reaches.
    held: dict[_Holder, tuple[list[Site], list[bool]]] = field(default_factory=dict)
    # Findings on a value whose grad the call sites of the file decide.
    open: list[tuple[Site, Grad]] = field(default_factory=list)


class CatalogTraversal:
    """Visitor methods that keep the tensor and grad inference up to date and classify every
    call.

    Shared by RPL401/RPL402 (dispatched by the engine) and ``classify`` (a libcst visitor):
    the method names are the same in both protocols. With ``gate`` (the rules), a hazard of
    the backward pass is kept only where a backward can reach it (``autograd``): not in a
    no-grad scope, data or evaluation code, nor on a value that provably does not require
    grad; a module built for it is dropped when every use of it is in such code. What the
    rest of the file decides (the call sites of a function whose parameter the value comes
    from) is decided at the end of the module.
    """

    calls: CatalogCalls
    gate: bool = True
    # Also keep forward hazards out of no-grad, data and evaluation code (RPL403's layers).
    gate_forward: bool = False
    _waiting: _Waiting

    def on_finding(self, site: Site) -> None:
        raise NotImplementedError

    def on_open(self, site: Site, functions: tuple[tuple[str, int], ...]) -> None:
        """A finding (passed to ``on_finding``) that the callers in other modules of these
        module-level functions may settle (``Autograd.across_files``)."""

    def finish_module(self, module: cst.Module) -> None:
        """After every finding of the module was passed to ``on_finding``."""

    # What the traversal calls (``CatalogRule`` passes them on to the rules it runs for).
    def _found(self, site: Site) -> None:
        self.on_finding(site)

    def _opened(self, site: Site, functions: tuple[tuple[str, int], ...]) -> None:
        self.on_open(site, functions)

    def _finished(self, module: cst.Module) -> None:
        self.finish_module(module)

    # -- where findings wait --------------------------------------------------------------------

    def _statements(self) -> tuple[cst.CSTNode, ...]:
        return ()

    # -- events ---------------------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self.calls.autograd.enter_module(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        waiting = self._waiting
        for holder in list(waiting.held):
            self._release(holder)
        autograd = self.calls.autograd
        mentions: dict[str, int] | None = None
        for site, grad in waiting.open:
            if autograd.settled(grad):
                continue
            self._found(site)
            functions = autograd.across_files(grad)
            if functions:
                if mentions is None:
                    mentions = _name_counts(original_node)
                # Named only where it is defined and called: the file does not pass it on
                # either (a plain function judged by its callers is, by their summaries).
                if all(
                    mentions.get(function, 0) == 1 + len(autograd.call_sites.get(function, ()))
                    for function, how in functions
                    if how != JUDGED_BY_RUNS
                ):
                    self._opened(site, functions)
        self._finished(original_node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.calls.tensors.enter_class(node)
        self.calls.autograd.enter_class(node)
        self._waiting.scopes.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.calls.tensors.leave_class()
        self.calls.autograd.leave_class()
        self._leave_scope(original_node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.calls.tensors.enter_function(node)
        self.calls.autograd.enter_function(node)
        self._waiting.scopes.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.calls.tensors.leave_function()
        self.calls.autograd.leave_function()
        self._leave_scope(original_node)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.calls.tensors.enter_function(node)
        self.calls.autograd.enter_function(node)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.calls.tensors.leave_function()
        self.calls.autograd.leave_function()

    def visit_With(self, node: cst.With) -> None:
        self.calls.autograd.enter_with(node)

    def leave_With(self, original_node: cst.With) -> None:
        self.calls.autograd.leave_with()

    def visit_For(self, node: cst.For) -> None:
        self.calls.tensors.bind(node.target, None)
        self.calls.autograd.bind_loop(node.target, node.iter)

    def _comprehension(self, node: cst.BaseComp | cst.DictComp) -> None:
        # Comprehension variables shadow outer names; the element is visited before the
        # ``for`` clauses, so bind them first (precision over recall: they stay unknown).
        # Their grad lives in a scope of their own, as in Python.
        autograd = self.calls.autograd
        clause: cst.CompFor | None = node.for_in
        iterables = []
        while clause is not None:
            self.calls.tensors.bind(clause.target, None)
            iterables.append((clause.target, clause.iter))
            clause = clause.inner_for_in
        autograd.enter_comprehension()
        for target, iterable in iterables:
            autograd.bind_loop(target, iterable)

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension(node)

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self.calls.autograd.leave_comprehension()

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comprehension(node)

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self.calls.autograd.leave_comprehension()

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension(node)

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp) -> None:
        self.calls.autograd.leave_comprehension()

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comprehension(node)

    def leave_DictComp(self, original_node: cst.DictComp) -> None:
        self.calls.autograd.leave_comprehension()

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.calls.tensors.bind(node.asname.name, None)
            self.calls.autograd.bind(node.asname.name, None)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._waiting.targets.append(node.targets[-1].target)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self._waiting.targets.pop()
        # On leave, so that ``x = x.float()`` reads the previous ``x``.
        for target in original_node.targets:
            self.calls.tensors.bind(target.target, original_node.value)
            self.calls.autograd.bind(target.target, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            self.calls.tensors.bind(original_node.target, original_node.value)
            self.calls.autograd.bind(original_node.target, original_node.value)
        else:
            self.calls.tensors.declare(original_node.target, original_node.annotation.annotation)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        self.calls.autograd.augment(original_node.target, original_node.value)

    def leave_NamedExpr(self, original_node: cst.NamedExpr) -> None:
        self.calls.tensors.bind(original_node.target, original_node.value)
        self.calls.autograd.bind(original_node.target, original_node.value)

    def visit_Return(self, node: cst.Return) -> None:
        self.calls.autograd.on_return(node.value)

    def visit_Yield(self, node: cst.Yield) -> None:
        # What a generator yields is what iterating over its call gives.
        value = node.value
        self.calls.autograd.on_yield(value.item if isinstance(value, cst.From) else value)

    def visit_Name(self, node: cst.Name) -> None:
        if self._waiting.held:
            self._use((self._scope(), node.value))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._waiting.held and self.calls.autograd.is_self(node.value):
            self._use((self._class(), node.attr.value))

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.autograd.on_call(node)
        finding = self.calls.classify(node)
        if finding is not None:
            self.judge(node, finding)

    def judge(self, node: cst.Call, finding: Finding) -> None:
        """Pass a finding on, keep it waiting, or drop it where no backward pass (and, with
        ``gate_forward``, no training step) reaches it."""
        module_level = not any(
            isinstance(s, cst.FunctionDef | cst.ClassDef) for s in self._statements()
        )
        site = Site(node, finding, self._statements(), module_level)
        backward = finding.entry.phase is Phase.BACKWARD
        if not self.gate or not (backward or self.gate_forward):
            self._found(site)
            return
        autograd = self.calls.autograd
        if autograd.quiet() is not None:
            return
        if finding.api.kind is ApiKind.MODULE:
            holder = self._holder()
            if holder is None:
                self._found(site)
            else:
                self._waiting.held.setdefault(holder, ([], []))[0].append(site)
            return
        if not backward:
            self._found(site)
            return
        if used_detached(site.anchor, node):
            # Its result is read only through ``.data``, ``.size()``...: no backward.
            return
        grad = autograd.opened(autograd.grad(self.calls.differentiated(node, finding)))
        if grad.maybe:
            self._found(site)
        elif grad.depends:
            self._waiting.open.append((site, grad))

    # -- built modules ------------------------------------------------------------------------

    def _scope(self) -> cst.CSTNode | None:
        for scope in reversed(self._waiting.scopes):
            if type(scope) is cst.FunctionDef:
                return scope
        return None

    def _class(self) -> cst.CSTNode | None:
        for scope in reversed(self._waiting.scopes):
            if type(scope) is cst.ClassDef:
                return scope
        return None

    def _holder(self) -> _Holder | None:
        """Where the module being built is kept: the target of the assignment around it."""
        targets = self._waiting.targets
        if not targets:
            return None
        target = targets[-1]
        if type(target) is cst.Name:
            return (self._scope(), target.value)
        if type(target) is cst.Attribute and self.calls.autograd.is_self(target.value):
            return (self._class(), target.attr.value)
        return None

    def _use(self, holder: _Holder) -> None:
        held = self._waiting.held.get(holder)
        if held is not None:
            held[1].append(self.calls.autograd.quiet() is not None)

    def _leave_scope(self, scope: cst.CSTNode) -> None:
        waiting = self._waiting
        waiting.scopes.pop()
        for holder in [h for h in waiting.held if h[0] is scope]:
            self._release(holder)

    def _release(self, holder: _Holder) -> None:
        sites, uses = self._waiting.held.pop(holder)
        # Built, and used only where no backward runs (or never used here): the layer
        # takes part in no backward pass of this file.
        if uses and all(uses):
            return
        for site in sites:
            self._found(site)


def _name_counts(module: cst.Module) -> dict[str, int]:
    """How often each name occurs in the module (definitions included)."""
    counts: dict[str, int] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name:
            counts[node.value] = counts.get(node.value, 0) + 1
        stack.extend(code_children(node))
    return counts


class _Classifier(CatalogTraversal, cst.CSTVisitor):
    gate = False

    def __init__(self, calls: CatalogCalls) -> None:
        super().__init__()
        self.calls = calls
        self._waiting = _Waiting()
        self.found: dict[cst.Call, Finding] = {}

    # The engine's traversal tells the name resolver about function scopes (parameters hide
    # imports); do the same, so that this finds exactly what the rules report.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.calls.names.enter_function(node)
        super().visit_FunctionDef(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(original_node)
        self.calls.names.leave_function()

    def on_finding(self, site: Site) -> None:
        self.found[site.node] = site.finding


def classify(module: cst.Module, names: Names, target: TorchVersion) -> dict[cst.Call, Finding]:
    """Every catalogued call of ``module`` and its finding for ``target`` (what RPL401/RPL402
    see, without reporting)."""
    classifier = _Classifier(CatalogCalls(names, target))
    module.visit(classifier)
    return classifier.found


# Every catalogued name resolves through an import of torch, and every likely tensor comes
# from torch or from a LightningModule's forward: a file that names neither has no finding.
# (Op names would make a poor prefilter: "put" is in every "input".)
# Any call of a catalogued op spells the op's own name somewhere in the file (in the call, or
# in the import that brings it in), so those names are the prefilter's trigger words.
CATALOG_TRIGGERS = tuple(sorted({api.short for entry in reported() for api in entry.apis}))


# -- documentation and examples ---------------------------------------------------------------

_SHORT_PREFIXES = (
    ("torch.nn.functional.", "F."),
    ("torch.Tensor.", "Tensor."),
    ("torch.nn.", "nn."),
)


def short_name(qualified: str) -> str:
    for prefix, short in _SHORT_PREFIXES:
        if qualified.startswith(prefix):
            return short + qualified[len(prefix) :]
    return qualified


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _status(entry: Entry, target: TorchVersion) -> str:
    now = entry.behaviour(target)
    if now is None:
        return f"not judged before {entry.since}"
    if len(entry.history) == 1:
        return f"**{now.value}** (from {entry.since})"
    return f"**{now.value}** ({entry.history_text()})"


def catalog_table(entries: Sequence[Entry], target: TorchVersion | None) -> str:
    """A markdown table of catalog entries: op, condition, where, status, alternative."""
    status_heading = f"Status on torch {target}" if target is not None else "Status"
    lines = [
        f"| Op | Condition | Where | {status_heading} | Alternative |",
        "|---|---|---|---|---|",
    ]
    for entry in entries:
        apis = ", ".join(dict.fromkeys(f"`{short_name(api.name)}`" for api in entry.apis))
        where = f"{entry.phase.value}, {entry.device.value}"
        status = _status(entry, target) if target is not None else entry.history_text()
        cells = (apis, entry.condition, where, status, entry.alternative or "")
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def catalog_sections(
    behaviours: frozenset[Behaviour], target: TorchVersion | None
) -> dict[str, str]:
    """The catalog entries a rule reports: for ``target`` (and those it reports only for
    other releases), or every release when no target is given."""
    entries = entries_reported_as(behaviours)
    if target is None:
        return {"Ops": catalog_table(entries, None)}
    now = [entry for entry in entries if entry.behaviour(target) in behaviours]
    other = [entry for entry in entries if entry not in now]
    return {
        "Ops": catalog_table(now, target),
        "Ops reported for other torch releases": catalog_table(other, target),
    }


def corrections(entries: Sequence[Entry]) -> str:
    """Where the catalog departs from the reference research, one line per correction."""
    by_text: dict[str, list[str]] = {}
    for entry in entries:
        if entry.correction is not None:
            by_text.setdefault(entry.correction, []).append(f"`{entry.id}`")
    return "\n".join(f"- {', '.join(ids)}: {text}" for text, ids in by_text.items())


def entries_reported_as(behaviours: frozenset[Behaviour]) -> tuple[Entry, ...]:
    """Per-call entries that some torch release gives one of ``behaviours`` (leaving out
    entries that another one always shadows)."""
    return tuple(
        entry
        for entry in reported()
        if entry.shadowed_by is None
        and any(period.behaviour in behaviours for period in entry.history)
    )


PREAMBLE = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "from torch import nn\n"
    "\n"
    "x = torch.randn(2, 3, 8, 8, device='cuda', requires_grad=True)\n"
    "idx = torch.tensor([0, 1, 1, 2], device='cuda')\n"
    "src = torch.ones(4, device='cuda')\n"
)


def catalog_examples(behaviours: frozenset[Behaviour]) -> tuple[Invalid, ...]:
    """One INVALID example per catalog entry and release where it takes ``behaviours``,
    calling the entry's main API (entries another entry always shadows are left out)."""
    examples: list[Invalid] = []
    for entry in reported():
        if entry.shadowed_by is not None or entry.example is None:
            continue
        for period in entry.history:
            if period.behaviour in behaviours:
                examples.append(
                    Invalid(
                        PREAMBLE + entry.example + "\n",
                        config={"target-torch": str(period.since)},
                        note=f"catalog entry {entry.id}",
                    )
                )
    return tuple(examples)


# -- the rule ---------------------------------------------------------------------------------

_TAIL = {
    Behaviour.RAISES: "has no deterministic implementation (deterministic mode raises)",
    Behaviour.SILENT: "is nondeterministic, and deterministic mode does not catch it",
}


def describe(finding: Finding, tail: str) -> str:
    """The finding in words: op, condition (with what the source leaves open), tail and the
    alternative."""
    entry = finding.entry
    condition = f" (if {' and '.join(finding.undecided)})" if finding.undecided else ""
    message = f"`{finding.spelling}`: {entry.summary}{condition} {tail}"
    if entry.alternative and finding.behaviour in HAS_NO_DETERMINISTIC_KERNEL:
        message += f"; alternative: {entry.alternative}"
    return message


class CatalogRule(CatalogTraversal, Rule):
    """A rule that reports catalogued calls (RPL401, RPL402, RPL403).

    Rules that judge the same calls the same way (RPL401 and RPL402: the same catalog, the
    same gates) share one traversal per file: the first one made runs it and passes what
    it finds to each of them; the traversal's hooks of the others do nothing (see below).
    """

    # Third-party packages' ops (RPL403) rather than PyTorch's own.
    LIBRARY: ClassVar[bool] = False

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        key = (CatalogRule, self.LIBRARY, self.gate, self.gate_forward)
        leader: CatalogRule | None = context.shared.get(key)
        self._leader = leader
        self._rules: list[CatalogRule] = [self]
        self._waiting = _Waiting()
        if leader is None:
            context.shared[key] = self
            self.calls = CatalogCalls(context.names, context.target_torch, library=self.LIBRARY)
            # The leader's shared hooks, bound as they are (not through ``_run_by_leader``'s
            # test, on every node).
            for name in _inherited(type(self)):
                setattr(self, name, MethodType(vars(CatalogTraversal)[name], self))
        else:
            leader._rules.append(self)
            self.calls = leader.calls

    def idle_hooks(self) -> frozenset[str]:
        # A follower's shared hooks (those it does not override) run nothing.
        return frozenset() if self._leader is None else frozenset(_inherited(type(self)))

    def _found(self, site: Site) -> None:
        for rule in self._rules:
            rule.on_finding(site)
        if not self.LIBRARY and site.finding.behaviour in NEEDS_DETERMINISTIC_MODE:
            # Written by the shared traversal, whichever rules run: a file's notes do not
            # depend on the selection.
            function = function_key(site.anchor)
            if function is not None:
                top, statement = site.anchor[0], site.anchor[-1]
                self.context.notes.append(Note(IN_FUNCTION, site.node, top, function, statement))

    def _opened(self, site: Site, functions: tuple[tuple[str, int], ...]) -> None:
        for rule in self._rules:
            rule.on_open(site, functions)

    def _finished(self, module: cst.Module) -> None:
        for rule in self._rules:
            rule.finish_module(module)

    def _statements(self) -> tuple[cst.CSTNode, ...]:
        return self.anchor()

    def on_open(self, site: Site, functions: tuple[tuple[str, int], ...]) -> None:
        top, statement = (site.anchor[0], site.anchor[-1]) if site.anchor else (None, None)
        judged = [[function, how] for function, how in functions]
        self.context.notes.append(Note(OPEN_ACROSS_FILES, site.node, top, judged, statement))


def _run_by_leader(hook: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    def run(self: CatalogRule, node: Any) -> None:
        if self._leader is None:
            hook(self, node)

    run.__name__ = hook.__name__
    run.__doc__ = hook.__doc__
    return run


# The traversal's hooks of a rule that shares another's run only in that one (a subclass
# that adds to a hook calls the shared part through ``super()``).
_LEADER_ONLY: dict[str, object] = {}
for _name, _hook in list(vars(CatalogTraversal).items()):
    if _name.startswith(("visit_", "leave_")):
        _LEADER_ONLY[_name] = _run_by_leader(_hook)
        setattr(CatalogRule, _name, _LEADER_ONLY[_name])
del _name, _hook
_INHERITED: dict[type, tuple[str, ...]] = {}


def _inherited(rule: type) -> tuple[str, ...]:
    """The shared hooks a catalog rule does not override (per class, once)."""
    found = _INHERITED.get(rule)
    if found is None:
        found = tuple(name for name, hook in _LEADER_ONLY.items() if getattr(rule, name) is hook)
        _INHERITED[rule] = found
    return found


# The summary's notes of findings that callers in other modules may settle:
# ``[row, column, [[function, how it is judged], ...]]`` (``Autograd.across_files``).
OPEN_ACROSS_FILES = "grad-open"

# The note that names the function a finding deterministic mode fixes is in (``Class.method``,
# as summaries key it): RPL402 asks which programs run that function.
IN_FUNCTION = "op-function"


def function_key(anchor: tuple[cst.CSTNode, ...]) -> str | None:
    """The summary key of the function the statements ``anchor`` lead into (None at module
    level or in the ``__main__`` block's own code)."""
    scopes = [n for n in anchor if isinstance(n, cst.FunctionDef | cst.ClassDef)]
    if not scopes or type(scopes[-1]) is not cst.FunctionDef:
        return None
    return ".".join(scope.name.value for scope in scopes)


def settle_across_files(
    program: Program, filename: str, diagnostics: list[Diagnostic]
) -> list[Diagnostic]:
    """Drop the backward-only findings of a file that depend on the parameters of its
    module-level functions, when every call of those functions in other modules runs where
    no backward pass can reach (a no-grad scope, data code, an evaluation function, a plain
    module-level function that is itself called only there), or in a private function
    nothing in the project names (``Autograd.across_files`` says which functions)."""
    unit = program.linted_unit(filename)
    notes = unit.summary.get("notes", {}).get(OPEN_ACROSS_FILES) if unit is not None else None
    if unit is None or not notes:
        return diagnostics
    waiting = {
        (int(row), int(column)): [(str(f), int(judged)) for f, judged in functions]
        for row, column, functions in notes
    }
    quiet: dict[tuple[int, str, bool], bool | None] = {}
    kept = []
    for diagnostic in diagnostics:
        functions = waiting.get((diagnostic.location.row, diagnostic.location.column))
        if functions is not None and all(
            _settles(program, unit, function, judged, quiet) for function, judged in functions
        ):
            continue
        kept.append(diagnostic)
    return kept


def _settles(
    program: Program,
    unit: Unit,
    function: str,
    judged: int,
    quiet: dict[tuple[int, str, bool], bool | None],
) -> bool:
    """Whether the callers of ``function`` settle a finding as one no backward reaches, as
    ``judged`` asks (``JUDGED_BY_RUNS``, ``JUDGED_BY_ARGUMENTS``, ``CALLED_IN_ITS_FILE``)."""
    found = _callers_quiet(program, unit, function, quiet, judged != JUDGED_BY_RUNS)
    return found is not None if judged == CALLED_IN_ITS_FILE else found is True


# How many plain functions deep ``_callers_quiet`` follows callers (a helper of a dataset's
# helper of a dataset): past it, a call counts as one a backward may reach.
_CALLER_DEPTH = 4


def _callers_quiet(
    program: Program,
    unit: Unit,
    function: str,
    judged: dict[tuple[int, str, bool], bool | None],
    through_parameters: bool,
    depth: int = 0,
) -> bool | None:
    """Whether the module-level ``function`` of ``unit`` is called only where no backward
    pass reaches (True), is not called at all (False), or may be called where one does
    (None): found through the project's files that name it (their summaries' ``grad``
    calls); a file that passes it on as a value, or a call that a backward may reach, keeps
    it open. A call made in a plain module-level function (no decorator, no grad switch
    around the call) is judged by that function's own callers, in every file that names
    it, its own included.

    ``through_parameters``: the question is whether a backward reaches the function's
    parameters (a finding that depends on them): a call that passes nothing leaves them at
    their defaults, and the calls in ``unit`` itself are the per-file pass's to judge.
    Otherwise the question is whether a backward reaches anything the function runs."""
    key = (id(unit), function, through_parameters)
    if key in judged:
        return judged[key]
    # Until decided (a function that calls itself, or its caller): it may.
    judged[key] = None
    mentioning = program.mentioning(unit, function)
    if mentioning is None:
        return None
    called = False
    for path in mentioning:
        caller = program.summarised(path)
        if caller is None:
            return None
        if caller is unit and through_parameters:
            continue
        for local, qualified in caller.summary.get("exports", {}).items():
            if local != function and _is_function(program, caller, qualified, unit, function):
                # Bound under another name (``from .ops import resize as scale``), which
                # other modules may call it by.
                return None
        grad = caller.summary.get("grad", {})
        for ref in grad.get("refs", ()):
            if _names_function(program, caller, str(ref), unit, function):
                return None
        for call in grad.get("calls", ()):
            callee, quiet, name = call[:3]
            flags = int(call[3]) if len(call) > 3 else 0
            target = str(callee)
            if target.startswith("*"):
                # A name from a star import: it may be this function.
                if target[1:] != function:
                    continue
            elif not _names_function(program, caller, target, unit, function):
                continue
            called = True
            if quiet or (through_parameters and flags & NO_ARGUMENTS):
                continue
            if _dead(program, caller, str(name)):
                continue
            if (
                flags & IN_PLAIN_FUNCTION
                and depth < _CALLER_DEPTH
                and _callers_quiet(program, caller, str(name), judged, False, depth + 1) is True
            ):
                continue
            return None
    judged[key] = called
    return called


def _names_function(
    program: Program, importer: Unit, qualified: str, unit: Unit, function: str
) -> bool:
    """Whether ``qualified``, as ``importer`` imports it, is ``function`` of ``unit``, or
    ``unit``'s module itself (any of its functions). Only names that end the same way are
    looked up (a lookup may load modules)."""
    last = qualified.rpartition(".")[2]
    if last == unit.module.rpartition(".")[2] and program.module(qualified, importer) is unit:
        return True
    return _is_function(program, importer, qualified, unit, function)


def _is_function(
    program: Program, importer: Unit, qualified: str, unit: Unit, function: str
) -> bool:
    """Whether ``qualified``, as ``importer`` imports it, is ``function`` of ``unit``."""
    if qualified.rpartition(".")[2] != function:
        return False
    found = program.referent(importer, ["q", qualified])
    return (
        found is not None and found[0] == "function" and found[1] is unit and found[2] == function
    )


def _dead(program: Program, unit: Unit, name: str) -> bool:
    """A private function (``_name``, not a dunder) that no file of the project names except
    where it is defined: it never runs."""
    if not name.startswith("_") or name.startswith("__"):
        return False
    return program.unreferenced(unit, name)


class NondeterministicOp(CatalogRule, SettledRule):
    """
    ## What it does
    Flags an explicit call, or a module construction, of a PyTorch op that has no
    deterministic implementation for the target torch version: under
    `torch.use_deterministic_algorithms(True)` it raises (a few are not even caught), and
    without it the result changes from run to run. Examples: the backward of bicubic
    interpolation, of reflection padding and of 3-D average pooling on CUDA;
    `median(x, dim)`, `histc` of floats and `bincount` with weights on CUDA;
    `put_(accumulate=False)` and `MaxUnpool2d` on every device.

    The argument conditions of the catalog decide (`bincount` only with `weights`,
    `median` only with `dim`, interpolation only in linear/bilinear/bicubic/trilinear modes,
    `F.pad` only in `reflect` mode, `EmbeddingBag` only with `mode="max"`, `nll_loss` only
    for provably spatial input, `AdaptiveAvgPool2d(1)` never); an argument the source does
    not decide (a variable `mode`) is reported, and the message says what it depends on.
    A tensor's dimensions and dtype are followed from how it was built (factories, shape
    and dtype methods, comparisons, einops patterns such as `rearrange(x, "b n c -> b c
    n")`). Accumulations of whole numbers are exact in any order and not reported: a
    `cumsum` of a boolean or integer tensor, also cast to float32/float64
    (`mask.float().cumsum(-1)`), and `scatter_add_`/`index_add_` into an integer tensor.
    A tensor known to be on the CPU (`torch.from_numpy(...)`, `.cpu()`, and what indexing,
    casts and arithmetic with numbers make of it) has no CUDA-only hazard: evaluation code
    that counts classes with `torch.histc` on arrays from numpy is not reported.
    Tensor methods (`x.median(dim=1)`) are reported only when `x` is likely a torch tensor,
    never on numpy arrays or pandas objects. A call through a local name that a function
    binds once to one of two ops (`loss_fn = F.cross_entropy if not log_probs else
    F.nll_loss`) is judged as either, the more hazardous reported.

    A hazard of the backward pass is reported only where a backward can reach it: not under
    `torch.no_grad()`/`inference_mode()`, in data code (a Dataset, a transform, a collate
    function), in an evaluation function that never calls `backward`, nor on a value that
    cannot require grad (nor on a parameter named as a mask, `mask`, `attn_mask`,
    `key_padding_mask`: by convention data that selects or weights positions, which a
    learned mask passed in as an argument would break), nor where the result is read only
    through what carries no gradient (`out = F.avg_pool3d(x, 1, 2)` then only `out.size(0)`
    and `out.data` until `out` is bound again, in the same block or after the `if` or `with`
    whose block it ends: `if small: x = F.interpolate(x, ...)` then `x = x.detach()`). A
    value that comes from a
    function's parameter is judged by the
    function's callers: those in its own file, or, when its file never calls it nor passes
    it on, those in the other modules of the project (found by its name; none may pass it
    on as a value). A call made in a plain module-level function (no decorator, no grad
    switch around the call), in another module or in the function's own, is judged in turn
    by that function's callers, up to four functions deep: a resize helper that a dataset's
    sampling helper calls is data code.
    A call in a private function (`_name`) that no file of the project names is never run.

    ## Why is this bad?
    These kernels accumulate with atomic adds (or pick among tied indices) in an order that
    depends on thread scheduling, so two runs with the same seeds give different numbers.
    Deterministic mode cannot help: it has no deterministic kernel to switch to, so it raises
    `RuntimeError: <op> does not have a deterministic implementation` as soon as the op runs,
    and a training script that turns on deterministic mode for reproducibility crashes.

    ## Options
    `target-torch` (or the torch version inferred from the project's dependencies): ops whose
    status changed between releases (bilinear and trilinear interpolation, replication
    padding, `cumsum`, `kthvalue`, `histc` of integers, 3-D max pooling with indices) are
    judged for that release.

    ## Known limitations
    The device is not known statically: an op that is nondeterministic only on CUDA is
    reported even in code that runs on the CPU (ignore RPL401 for such files with
    `per-file-ignores`), but for a notebook whose program never selects a CUDA device
    (`.cuda()`, `"cuda"`, `torch.cuda.*`, a framework that uses the GPU whenever there is
    one): a notebook picks its device in its own cells, where a script may take it from its
    command line. Convolutions, matmul, attention (SDPA) and plain tensor indexing are
    not reported per call (RPL202 covers them), nor ops hazardous only under torch.compile
    tracing or an optional kernel library (see "Not reported per call"). Callers in other
    modules are looked for in projects of up to 5,000 Python files, by the name the
    function is defined with (a name more than 24 files use is not followed); a call
    through an object the analysis cannot resolve (a module imported with `importlib`,
    `getattr` with a computed name) is not seen, and the forward arguments of a model are
    not followed to the code that calls the model.

    ## References
    - `torch.use_deterministic_algorithms` documentation
    - PyTorch notes on randomness: "Avoiding nondeterministic algorithms"
    """

    CODE = "RPL401"
    MESSAGE = "This op has no deterministic implementation for the target torch version"
    TRIGGERS = CATALOG_TRIGGERS
    TRIGGER_WORDS = True
    _NEW = {"target-torch": "2.13"}
    INVALID = (
        Invalid(
            "import torch\nfrom torch import nn\n\n"
            "class Decoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.up = nn.Upsample(scale_factor=2, mode='bicubic')\n",
            config=_NEW,
        ),
        Invalid(
            "import torch.nn.functional as F\n\n"
            "def resize(image, mode):\n"
            "    return F.interpolate(image, scale_factor=2, mode=mode)\n",
            note="a mode the source does not decide is reported",
        ),
        Invalid(
            "import torch\n\ndef stats(scores: torch.Tensor):\n    return scores.median(dim=1)\n",
            note="a parameter annotated torch.Tensor",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass Head(nn.Module):\n"
            "    def forward(self, logits):\n"
            "        return logits.median(1)\n",
            note="a parameter of forward in an nn.Module",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass Head(nn.Module):\n"
            "    def forward(self, x):\n"
            "        return self.weight.put_(x, x)\n",
            note="an attribute of an nn.Module",
        ),
        Invalid(
            "import torch\ncounts = torch.arange(10.0, device='cuda').histc(bins=4)\n",
            note="a chain starting at a torch call",
        ),
        Invalid("import torch\nloss = torch.Tensor.put_(torch.zeros(3), idx, src)\n"),
        Invalid(
            "import torch\nfrom torch import nn\n\n"
            "images = torch.randn(8, 3, 32, 32, device='cuda')\n"
            "criterion = nn.CrossEntropyLoss()\n"
            "loss = criterion(images, labels)\n",
            note="a provably spatial input to a loss module",
        ),
        Invalid(
            "from torch.nn.functional import pad\n"
            "def f(x):\n"
            "    return pad(x, (1, 1), mode='reflect')\n"
        ),
        Invalid(
            "import torch\nfrom torch import nn\nup = nn.Upsample(scale_factor=2, mode='bilinear')\n",
            config={"target-torch": "2.0"},
            note="bilinear raises before 2.1",
        ),
        Invalid(
            "import torch.nn as nn\n\n"
            "class ResidualBlock(nn.Module):\n"
            "    def __init__(self, features):\n"
            "        super().__init__()\n"
            "        layers = [nn.ReflectionPad2d(1), nn.Conv2d(features, features, 3)]\n"
            "        layers += [nn.InstanceNorm2d(features), nn.ReLU(inplace=True)]\n"
            "        self.block = nn.Sequential(*layers)\n",
            config={"target-torch": "1.4"},
            note="a project declaring torch older than deterministic mode (1.7): the "
            "kernel was just as nondeterministic, with nothing to catch it",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\n\n"
            "def project(synthesis, target, steps):\n"
            "    w = torch.zeros(1, 512, device='cuda', requires_grad=True)\n"
            "    optimizer = torch.optim.Adam([w])\n"
            "    for _ in range(steps):\n"
            "        images = synthesis(w)\n"
            "        images = F.interpolate(images, size=(256, 256), mode='area')\n"
            "        loss = (images - target).square().sum()\n"
            "        optimizer.zero_grad()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            note="area interpolation is adaptive average pooling",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
            "class SetCriterion(nn.Module):\n"
            "    def loss_labels(self, outputs, matched):\n"
            "        logits = outputs['pred_logits']\n"
            "        classes = torch.full(logits.shape[:2], self.num_classes,\n"
            "                             dtype=torch.int64, device=logits.device)\n"
            "        classes[matched] = 0\n"
            "        return F.cross_entropy(logits.transpose(1, 2), classes)\n",
            note="a 2-D class-index target: the input has a class dimension besides",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\n\n"
            "def spectrogram(y, n_fft):\n"
            "    y = F.pad(y.unsqueeze(1), (n_fft // 4, n_fft // 4), mode='reflect')\n"
            "    return torch.stft(y.squeeze(1), n_fft, return_complex=True).abs()\n\n"
            "def generator_step(generator, x, y):\n"
            "    fake = generator(x)\n"
            "    loss = F.l1_loss(spectrogram(fake, 1024), spectrogram(y, 1024))\n"
            "    loss.backward()\n",
            note="one call site passes a generator's output, which requires grad",
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
            "class Refiner(nn.Module):\n"
            "    def forward(self, x):\n"
            "        with torch.no_grad():\n"
            "            with torch.enable_grad():\n"
            "                return F.interpolate(x, scale_factor=2, mode='bicubic')\n",
            note="enable_grad switches recording back on",
        ),
        Invalid(
            "import torch.nn.functional as F\n\n"
            "def pyramid(blocks, x):\n"
            "    for block in blocks:\n"
            "        x = block(x)\n"
            "        yield x\n\n"
            "def multiscale_loss(blocks, x, target):\n"
            "    loss = 0.0\n"
            "    for features in pyramid(blocks, x):\n"
            "        loss = loss + (F.interpolate(features, size=target.shape[-2:], mode='bicubic')\n"
            "                       - target).abs().mean()\n"
            "    loss.backward()\n",
            note="what a generator yields is what the loop gets: block outputs",
        ),
        *catalog_examples(HAS_NO_DETERMINISTIC_KERNEL),
    )
    VALID = (
        Valid(
            "import torch\nfrom torch import nn\n\n"
            "class Decoder(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.up = nn.Upsample(scale_factor=2, mode='nearest')\n",
            note="nearest interpolation has a deterministic backward",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\n\n"
            "def predict(net, image, size):\n"
            "    net.eval()\n"
            "    with torch.no_grad():\n"
            "        output = net(image).cpu()\n"
            "        output = F.interpolate(output, size, mode='bicubic')\n"
            "    return output.argmax(dim=1)\n",
            note="under torch.no_grad(): no backward pass",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
            "class PostProcess(nn.Module):\n"
            "    @torch.no_grad()\n"
            "    def forward(self, masks, size):\n"
            "        return F.interpolate(masks, size=size, mode='bicubic') > 0.5\n\n"
            "@torch.inference_mode()\n"
            "def upscale(model, x):\n"
            "    return F.interpolate(model(x), scale_factor=4, mode='bicubic')\n",
            note="no-grad and inference-mode decorators",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\n\n"
            "def load_finetune(model, path):\n"
            "    checkpoint = torch.load(path, map_location='cpu')\n"
            "    state = checkpoint['model']\n"
            "    pos = state['pos_embed'][:, 1:]\n"
            "    pos = pos.reshape(-1, 14, 14, 768).permute(0, 3, 1, 2)\n"
            "    pos = F.interpolate(pos, size=(16, 16), mode='bicubic', align_corners=False)\n"
            "    state['pos_embed'] = pos.permute(0, 2, 3, 1).flatten(1, 2)\n"
            "    model.load_state_dict(state, strict=False)\n",
            note="resizing checkpoint tensors while loading weights: nothing requires grad",
        ),
        Valid(
            "import torch\n\n"
            "def resize_pos_embed(model, state_dict):\n"
            "    old = state_dict['pos_embed']\n"
            "    grid = old[:, 1:].reshape(-1, 7, 7, old.shape[-1]).permute(0, 3, 1, 2)\n"
            "    grid = torch.nn.functional.interpolate(grid, size=(14, 14), mode='bicubic')\n"
            "    grid = grid.permute(0, 2, 3, 1).flatten(1, 2)\n"
            "    state_dict['pos_embed'] = torch.cat((old[:, :1], grid), dim=1)\n",
            note="an entry of a state dict, read and written back: stored tensors",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\nfrom torch.utils.data import Dataset\n\n"
            "class Clips(Dataset):\n"
            "    def __getitem__(self, index):\n"
            "        audio = self.load(index)\n"
            "        return F.pad(audio.unsqueeze(0), (256, 256), mode='reflect')\n\n"
            "def pad_collate(batch):\n"
            "    return F.pad(torch.stack(batch), (1, 1), mode='reflect')\n",
            note="data code runs in loader workers, without autograd",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n"
            "def validation(model, loader, converter):\n"
            "    criterion = nn.CTCLoss(zero_infinity=True)\n"
            "    total = 0.0\n"
            "    for images, labels in loader:\n"
            "        preds = model(images).log_softmax(2)\n"
            "        total += criterion(preds, labels, converter.lengths, converter.sizes)\n"
            "    return total\n",
            note="an evaluation function that never calls backward",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\n\n"
            "def train(model, train_loader, optimizer):\n"
            "    for images, labels in train_loader:\n"
            "        images = F.interpolate(images.cuda(), scale_factor=2, mode='bicubic')\n"
            "        loss = F.cross_entropy(model(images), labels.cuda())\n"
            "        loss.backward()\n"
            "        optimizer.step()\n",
            note="a batch from the loader, before it enters the model",
        ),
        Valid(
            "import numpy as np\nimport torch\nfrom torch import nn\n\n"
            "class GaussianBlur(object):\n"
            "    def __init__(self, radius):\n"
            "        self.blur = nn.Sequential(nn.ReflectionPad2d(radius), nn.Conv2d(3, 3, 3))\n\n"
            "    def __call__(self, image):\n"
            "        with torch.no_grad():\n"
            "            return self.blur(image)\n",
            note="a layer used only under no_grad",
        ),
        Valid(
            "import torch.nn.functional as F\nfrom mmdet.models import BatchSyncRandomResize\n\n"
            "class RandomResize(BatchSyncRandomResize):\n"
            "    def forward(self, inputs, data_samples):\n"
            "        inputs = F.interpolate(inputs.float(), size=self._input_size, mode='bicubic')\n"
            "        return inputs, data_samples\n",
            note="a framework batch augmentation runs on the raw batch",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\n\n"
            "def project(synthesis, target: torch.Tensor, steps):\n"
            "    target = F.interpolate(target.unsqueeze(0).float(), size=(256, 256), mode='area')\n"
            "    return target\n\n"
            "def run(synthesis, image):\n"
            "    return project(synthesis, torch.tensor(image, device='cuda'), 100)\n",
            note="every call site in the file passes a tensor that does not require grad",
        ),
        Valid(
            "import torch.nn.functional as F\n\n"
            "def low_resolution_batches(data, size):\n"
            "    for batch, kwargs in data:\n"
            "        kwargs['low_res'] = F.interpolate(batch, size, mode='area')\n"
            "        yield batch, kwargs\n",
            note="a generator that feeds batches, never differentiated",
        ),
        PREAMBLE + "up = nn.Upsample(scale_factor=2)\ny = F.interpolate(x, scale_factor=2)\n",
        Valid(
            PREAMBLE + "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n",
            config=_NEW,
            note="bilinear is deterministic in deterministic mode since 2.1 (RPL402)",
        ),
        Valid(PREAMBLE + "counts = torch.bincount(idx)\n", note="no weights"),
        Valid(PREAMBLE + "m = torch.median(x)\nn = x.nanmedian()\n", note="no dim"),
        Valid(
            PREAMBLE + "h = torch.histc(torch.tensor([1, 2, 2], device='cuda'), bins=3)\n",
            config=_NEW,
            note="integer histc stopped alerting in 2.8",
        ),
        Valid(
            PREAMBLE + "y = F.pad(x, (1, 1))\nz = F.pad(x, (1, 1), mode='replicate')\n",
            config=_NEW,
            note="replicate padding is deterministic in deterministic mode since 2.3 (RPL402)",
        ),
        Valid(
            PREAMBLE + "bag = nn.EmbeddingBag(10, 3)\nbag2 = nn.EmbeddingBag(10, 3, mode='sum')\n"
        ),
        Valid(
            PREAMBLE + "logits = torch.randn(8, 10, device='cuda')\n"
            "loss = F.cross_entropy(logits, labels)\nl2 = nn.CrossEntropyLoss()(logits, labels)\n",
            note="2-D input: nll_loss, not nll_loss2d",
        ),
        Valid(
            PREAMBLE
            + "criterion = nn.CrossEntropyLoss()\nloss = criterion(model(images), labels)\n"
            "l2 = F.nll_loss(outputs, labels)\n",
            note="not provably spatial: quiet",
        ),
        Valid(
            PREAMBLE + "y = torch.zeros(3, device='cuda').scatter_reduce_(0, idx, x, 'sum')\n",
            note="sum/mean are deterministic in deterministic mode (RPL402)",
        ),
        Valid(
            PREAMBLE + "y = torch.zeros(4, device='cuda').index_put_((idx,), x, accumulate=True)\n"
        ),
        Valid(
            PREAMBLE + "pool = nn.AdaptiveAvgPool2d(1)\npool2 = nn.AdaptiveAvgPool2d((1, 1))\n"
            "y = F.adaptive_avg_pool2d(x, 1)\npool3 = nn.AdaptiveMaxPool3d(1)\n",
            note="output size 1 is a mean (max), not the atomic backward",
        ),
        Valid(
            "import numpy as np\nimport pandas as pd\nimport torch\n\n"
            "df = pd.read_csv('scores.csv')\nm = df.median()\narr = np.arange(10)\n"
            "c = arr.cumsum()\nmed = np.median(arr, axis=0)\narr.put([0], [1])\n"
            "t = torch.arange(10)\nn = t.numpy().cumsum()\n",
            config={"target-torch": "2.0"},
            note="pandas and numpy look-alikes",
        ),
        Valid(
            "import numpy as np\nimport torch\nfrom torch import nn\n\n"
            "class Stats(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.history = np.zeros(10)\n"
            "    def forward(self, x):\n"
            "        return self.history.put([0], [1])\n",
            note="an nn.Module attribute assigned a numpy array",
        ),
        Valid(
            "import torch\n\ndef summarize(values):\n    return values.median(dim=0)\n",
            note="an unannotated parameter may be anything",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import Dataset\n\nclass Data(Dataset):\n"
            "    def __getitem__(self, i):\n        return self.rows.median(dim=0)\n",
            note="a Dataset is not an nn.Module",
        ),
        Valid(
            PREAMBLE + "conv = nn.Conv2d(3, 8, 3)\ny = torch.matmul(x, x)\n"
            "a = F.scaled_dot_product_attention(x, x, x)\nz = x[idx]\nx[idx] = 0.0\n"
            "b = torch.bmm(x[0], x[0])\n",
            note="ubiquitous ops are covered by RPL202",
        ),
        Valid(
            PREAMBLE
            + "v = torch.kthvalue(x, 2, dim=1)\nc = x.cumsum(dim=1)\nm = torch.mode(x, 1)\n",
            config=_NEW,
            note="kthvalue fixed in 2.10; cumsum fixed by deterministic mode in 2.6; mode only when traced",
        ),
        Valid(
            PREAMBLE + "y = torch.zeros(3, device='cuda').scatter_(0, idx, 1.0)\n",
            note="a scalar value",
        ),
        Valid(PREAMBLE + "x.resize_(4)\n", note="not a quantized tensor"),
        Valid(
            PREAMBLE + "pool = nn.MaxPool3d(2, return_indices=True)\n",
            config=_NEW,
            note="with indices, deterministic mode uses a decomposition in 2.13 (RPL402)",
        ),
        Valid(
            "import torch\ncounts = torch.zeros(10).put_(idx, src, accumulate=True)\n",
            config={"target-torch": "1.8"},
            note="not judged before the release the catalog vouches for",
        ),
    )

    def on_finding(self, site: Site) -> None:
        tail = _TAIL.get(site.finding.behaviour)
        target = self.calls.target
        if tail is not None and target < DETERMINISTIC_MODE_SINCE:
            tail = f"is nondeterministic, and torch {target} has no deterministic mode"
        if tail is not None:
            self.report(site.node, describe(site.finding, tail), anchor=site.anchor)

    @classmethod
    def settle(
        cls, program: Program, filename: str, diagnostics: list[Diagnostic]
    ) -> list[Diagnostic]:
        """Backward-only hazards in a function are judged by its callers in other modules;
        a notebook whose program selects no CUDA device keeps no finding."""
        diagnostics = settle_across_files(program, filename, diagnostics)
        return [] if diagnostics and program.on_cpu(filename) else diagnostics

    @classmethod
    def doc_sections(cls, target: TorchVersion | None = None) -> dict[str, str]:
        not_per_call = "\n".join(
            f"- {', '.join(dict.fromkeys(f'`{short_name(a.name)}`' for a in entry.apis))}: "
            f"{entry.summary}; {entry.scope.value}"
            for entry in ENTRIES
            if entry.scope is not Scope.CALL
        )
        return {
            **catalog_sections(HAS_NO_DETERMINISTIC_KERNEL, target),
            "Not reported per call": not_per_call,
            "Catalog corrections": corrections(ENTRIES),
        }
