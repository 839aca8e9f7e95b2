"""Per-module summaries: what one file defines and does, written during the per-file pass.

``SummaryCollector`` rides along the engine's single traversal of a file and writes a small
JSON-able summary (cached with the file's result): the functions the file defines, what each
does in source order (seeds, RNG consumption, calls, imports, processes it spawns, deterministic
settings, convolutions), its entry point, and the rows fixes and suppressions need. Rows are
counted from the newlines the traversal passes, so no positions pass is needed. The program
model (``program.py``) reads these summaries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst

from repro_lint import randomness as rng
from repro_lint.arguments import argument, literal_bool, literal_int, literal_str
from repro_lint.loaders import CallSite, LoaderFacts
from repro_lint.names import dotted_name
from repro_lint.rule import FileContext
from repro_lint.suppressions import parse_comment

SUMMARY_VERSION = 5
# The summary of a file not summarised yet: it cannot be an entry point and no per-file rule
# parsed it; the project phase loads its real summary if an entry point reaches it.
DEFERRED_KEY = "deferred"
DEFERRED: Mapping[str, bool] = {DEFERRED_KEY: True}
MODULE = ""  # key of a module's top-level code
MAIN = "<main>"  # key of its ``if __name__ == "__main__":`` block
_LINE_BREAK = re.compile(r"\r\n?|\n")
# Names a seed fix may need to import; a file that binds one of them to something else
# gets no fix for that family.
_FIX_MODULES = ("torch", "numpy", "random")
# Whether a library module is (possibly) project code is decided per summary: never for the
# top-level packages in randomness.LIBRARIES, unless the file belongs to that package itself.

Json = Any


def is_main_check(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if not isinstance(target.operator, cst.Equal):
        return False
    left, right = test.left, target.comparator
    for name, value in ((left, right), (right, left)):
        if isinstance(name, cst.Name) and name.value == "__name__":
            return literal_str(value) == "__main__"
    return False


@dataclass(eq=False)
class _Open:
    """A statement being visited: its first row and, once something refers to it, its index
    in the summary's statement table."""

    node: cst.CSTNode
    row: int
    index: int = -1


@dataclass(frozen=True)
class _Scope:
    kind: str  # "func", "class" or "main"
    key: str


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


def _lines_in(whitespace: cst.BaseParenthesizableWhitespace) -> int:
    if isinstance(whitespace, cst.ParenthesizedWhitespace):
        return 1 + len(whitespace.empty_lines)
    if isinstance(whitespace, cst.SimpleWhitespace):
        return len(_LINE_BREAK.findall(whitespace.value))
    return 0


def _pretrained(call: cst.Call) -> bool:
    """``resnet18(weights=...)``, ``create_model(..., pretrained=True)``."""
    weights = argument(call, "weights")
    if weights is not None and not (
        isinstance(weights.value, cst.Name) and weights.value.value == "None"
    ):
        return True
    pretrained = argument(call, "pretrained")
    return pretrained is not None and literal_bool(pretrained.value) is not False


def _first_body_statement(body: cst.BaseSuite) -> cst.CSTNode | None:
    """The statement a fix inserts before: the first one after a docstring."""
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    statements = list(body.body)
    if _is_docstring(statements[0]):
        return statements[1] if len(statements) > 1 else None
    return statements[0]


class SummaryCollector:
    """Builds one file's summary during the engine's traversal (register it like a rule)."""

    def __init__(self, context: FileContext, text: str, seed_functions: frozenset[str]) -> None:
        self._names = context.names
        self._module = context.module_name or "__main__"
        self._package = self._names.is_package
        self._own = self._module.split(".", 1)[0]
        self._text = text
        self._lines: list[str] | None = None
        self._seed_functions = seed_functions
        self._newline = context.module.default_newline
        self._default_indent = context.module.default_indent
        # The engine's traversal counts rows for everyone (see _Dispatcher).
        self._cursor = context.cursor
        self._open: list[_Open] = []
        self._table: list[list[Json]] = []
        self._scopes: list[_Scope] = []
        self._funcs: dict[str, list[list[Json]]] = {}
        self._seen: dict[str, set[Json]] = {}
        self._defs: dict[str, list[Json]] = {}
        self._classes: dict[str, dict[str, Json]] = {}
        self._locals: dict[str, set[str]] = {}
        self._body_of: dict[int, str] = {}
        self._main: dict[str, Json] | None = None
        self._main_if: cst.If | None = None
        self._elifs: set[int] = set()
        self._lambdas = 0
        self._noqa: list[list[Json]] = []
        self._imports: list[list[int]] = []
        self._first: int | None = None
        self._work: int | None = None
        self._bare: list[list[Json]] = []
        self._bare_calls: set[int] = set()
        self._spawn_contexts: set[str] = set()
        self._fresh_start = False
        self._anchor: list[Json] | None = None
        self._top_count = 0
        self._bindings: list[list[Json]] = []
        self._binding_statements: dict[int, list[tuple[str, str]]] = {}
        # DataLoaders, samplers and the generators datasets own (the data-loading rules).
        self._data = LoaderFacts(context)
        for binding in self._names.bindings():
            top = binding.qualified.split(".", 1)[0]
            if binding.is_import and binding.module_level and top in _FIX_MODULES:
                self._binding_statements.setdefault(id(binding.statement), []).append(
                    (binding.local, binding.qualified)
                )

    # -- rows ---------------------------------------------------------------------------------

    def node_row(self, node: cst.CSTNode) -> int:
        """The row an expression being visited starts on (inside its own parentheses)."""
        row = self.row
        if isinstance(node, cst.BaseExpression):
            row += sum(_lines_in(paren.whitespace_after) for paren in node.lpar)
        return row

    def statement_row(self) -> int:
        """The first row of the innermost statement being visited."""
        return self._open[-1].row if self._open else 1

    def _line(self, row: int) -> str:
        if self._lines is None:
            self._lines = _LINE_BREAK.split(self._text)
        return self._lines[row - 1] if 0 < row <= len(self._lines) else ""

    @property
    def row(self) -> int:
        return self._cursor.row

    def visit_Comment(self, node: cst.Comment) -> None:
        if "noqa" not in node.value.lower():
            return
        line = self._line(self.row)
        column = line.rfind(node.value) + 1 or 1
        directive = parse_comment(node.value, self.row, column)
        if directive is not None:
            codes = sorted(directive.codes) if directive.codes is not None else None
            self._noqa.append([self.row, column, directive.end_column, codes, directive.file_level])

    # -- statements -----------------------------------------------------------------------------

    def _enter(self, node: cst.CSTNode, leading: Sequence[cst.EmptyLine]) -> None:
        row = self.row + len(leading)
        top = not self._open
        self._open.append(_Open(node, row))
        owner = self._body_of.pop(id(node), None)
        if owner is not None:
            place = [row, self._indent(row)]
            if owner == MAIN and self._main is not None:
                self._main["body"] = place
            elif owner in self._defs:
                self._defs[owner][0] = place
        for local, qualified in self._binding_statements.get(id(node), ()):
            self._bindings.append([local, qualified, row])
        if top and not self._scopes:
            self._top_level(node, row)

    def _top_level(self, node: cst.CSTNode, row: int) -> None:
        first = self._top_count == 0
        self._top_count += 1
        if self._anchor is None and not (first and _is_docstring(node)):
            if not _is_future_import(node):
                self._anchor = [row, 1, ""]
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                    self._bare_calls.add(id(small.value))

    def _leave(self, node: cst.CSTNode) -> None:
        entry = self._open.pop()
        if entry.index >= 0:
            self._table[entry.index][1] = self.row - 1
        if (
            not self._open
            and not self._scopes
            and isinstance(node, cst.SimpleStatementLine)
            and all(isinstance(s, cst.Import | cst.ImportFrom) for s in node.body)
        ):
            self._imports.append([entry.row, self.row - 1])

    def _indent(self, row: int) -> str:
        line = self._line(row)
        return line[: len(line) - len(line.lstrip())]

    def _index(self, entry: _Open) -> int:
        if id(entry.node) in self._elifs:
            # An ``elif`` is part of its ``if`` statement: nothing can go before it.
            position = next(i for i, e in enumerate(self._open) if e is entry)
            if position > 0:
                return self._index(self._open[position - 1])
        if entry.index < 0:
            line = self._line(entry.row)
            entry.index = len(self._table)
            self._table.append(
                [entry.row, entry.row, self._indent(entry.row), len(line.rstrip()) + 1]
            )
        return entry.index

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._enter(node, node.leading_lines)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self._leave(original_node)

    def visit_For(self, node: cst.For) -> None:
        self._enter(node, node.leading_lines)
        self._data.assign([node.target], None, self._function_key())

    def leave_For(self, original_node: cst.For) -> None:
        self._leave(original_node)

    def visit_While(self, node: cst.While) -> None:
        self._enter(node, node.leading_lines)

    def leave_While(self, original_node: cst.While) -> None:
        self._leave(original_node)

    def visit_With(self, node: cst.With) -> None:
        self._enter(node, node.leading_lines)

    def leave_With(self, original_node: cst.With) -> None:
        self._leave(original_node)

    def visit_Try(self, node: cst.Try) -> None:
        self._enter(node, node.leading_lines)

    def leave_Try(self, original_node: cst.Try) -> None:
        self._leave(original_node)

    def visit_TryStar(self, node: cst.TryStar) -> None:
        self._enter(node, node.leading_lines)

    def leave_TryStar(self, original_node: cst.TryStar) -> None:
        self._leave(original_node)

    def visit_Match(self, node: cst.Match) -> None:
        self._enter(node, node.leading_lines)

    def leave_Match(self, original_node: cst.Match) -> None:
        self._leave(original_node)

    def visit_If(self, node: cst.If) -> None:
        top = not self._open and not self._scopes
        self._enter(node, node.leading_lines)
        if isinstance(node.orelse, cst.If):
            self._elifs.add(id(node.orelse))
        if top and self._main is None and is_main_check(node.test):
            self._main_if = node
            self._main = {"stmt": self._index(self._open[-1]), "body": None, "suite": None}
            first = _first_body_statement(node.body)
            if first is not None:
                self._body_of[id(first)] = MAIN
            elif isinstance(node.body, cst.SimpleStatementSuite):
                self._main["suite"] = self._suite(self._open[-1].row)
            self._scopes.append(_Scope("main", MAIN))

    def _suite(self, row: int) -> list[int] | None:
        """``if __name__ == "__main__": main()``: where the colon and the statement are."""
        line = self._line(row)
        name = line.find("__main__")
        colon = line.find(":", name) if name >= 0 else -1
        if colon < 0:
            return None
        rest = line[colon + 1 :]
        start = colon + 1 + len(rest) - len(rest.lstrip())
        return [row, colon + 2, start + 1]

    def leave_If(self, original_node: cst.If) -> None:
        if original_node is self._main_if:
            self._scopes.pop()
            self._main_if = None
        self._leave(original_node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter(node, node.leading_lines)
        method = bool(self._scopes) and self._scopes[-1].kind == "class"
        key = self._child_key(node.name.value, function=True)
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        self._defs[key] = [None, params, method]
        first = _first_body_statement(node.body)
        if first is not None:
            self._body_of[id(first)] = key
        self._scopes.append(_Scope("func", key))
        self._data.enter_function(node, method)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._data.leave_function()
        self._scopes.pop()
        self._leave(original_node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter(node, node.leading_lines)
        key = self._child_key(node.name.value, function=False)
        bases = []
        for arg in node.bases:
            if arg.keyword is None and not arg.star:
                qualified = self._names.qualified_name(arg.value)
                if qualified is not None:
                    bases.append(qualified)
        row = self.row + len(node.leading_lines) + len(node.lines_after_decorators)
        row += sum(1 + len(d.leading_lines) for d in node.decorators)
        self._classes[key] = {"bases": bases, "methods": [], "row": row}
        self._scopes.append(_Scope("class", key))
        self._data.enter_class(key)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._data.leave_class()
        self._scopes.pop()
        self._leave(original_node)

    def _child_key(self, name: str, *, function: bool) -> str:
        parent = self._scopes[-1] if self._scopes else None
        if parent is None:
            return name
        if parent.kind == "class":
            if function:
                self._classes[parent.key]["methods"].append(name)
            return f"{parent.key}.{name}"
        # Nested in a function or in the __main__ block: callable by its bare name there.
        self._locals.setdefault(parent.key, set()).add(name)
        return name if parent.kind == "main" else f"{parent.key}.{name}"

    def _function_key(self) -> str:
        for scope in reversed(self._scopes):
            if scope.kind != "class":
                return scope.key
        return MODULE

    def _class_key(self) -> str | None:
        """The class whose method is being visited (for ``self.method()``)."""
        for index in range(len(self._scopes) - 1, 0, -1):
            if self._scopes[index].kind == "func" and self._scopes[index - 1].kind == "class":
                return self._scopes[index - 1].key
        return None

    # -- events -------------------------------------------------------------------------------

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._lambdas += 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._lambdas -= 1

    def _event(self, node: cst.CSTNode, tag: str, *payload: Json, dedup: Json = None) -> None:
        if self._lambdas:
            # A lambda's body runs whenever it is called, if ever: not part of any path.
            return
        key = self._function_key()
        seen = self._seen.setdefault(key, set())
        marker = (tag, dedup if dedup is not None else payload)
        if marker in seen:
            return
        seen.add(marker)
        statement = self._index(self._open[-1]) if self._open else -1
        self._funcs.setdefault(key, []).append([tag, *payload, statement, self.node_row(node)])
        if key == MODULE and tag != "i" and self._first is None and self._open:
            self._first = self._index(self._open[0])

    def _seed(self, node: cst.CSTNode, families: Iterable[str]) -> None:
        for family in families:
            self._event(node, "s", family)

    def _use(self, node: cst.CSTNode, family: str, what: str) -> None:
        later = what in rng.DEFERRED
        self._event(node, "u", family, what, dedup=(family, later))

    def _call(self, node: cst.Call, ref: list[Json]) -> None:
        self._event(node, "c", ref, dedup=tuple(ref))
        if id(node) in self._bare_calls:
            self._bare.append([ref, self._index(self._open[0])])

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self._names.qualified_name(node.func)
        self._data.call(node, qualified, self._function_key(), self)
        if qualified is None:
            self._unresolved_call(node)
        else:
            self._classify(node, qualified)

    def _classify(self, node: cst.Call, qualified: str) -> None:
        family = rng.SEEDS.get(qualified)
        if family is not None:
            self._seed(node, (family,))
        elif (
            qualified in rng.HELPERS
            or qualified in self._seed_functions
            or qualified in rng.SEEDING_CONSTRUCTORS
        ):
            self._seed(node, rng.FAMILIES)
            for kind in self._helper_settings(node, qualified):
                self._event(node, "d", kind)
        elif qualified in rng.USE_DETERMINISTIC:
            arg = argument(node, "mode", 0) or argument(node, "d", 0)
            if arg is not None and literal_bool(arg.value) is not False:
                self._event(node, "d", "algorithms")
            elif arg is not None:
                # Switched off again: a fix that turns it on before this call is undone.
                self._event(node, "o", "algorithms")
        elif qualified == rng.DEBUG_MODE:
            arg = argument(node, "debug_mode", 0)
            if arg is not None and literal_int(arg.value) != 0:
                if literal_str(arg.value) != "default":
                    self._event(node, "d", "algorithms")
                else:
                    self._event(node, "o", "algorithms")
            elif arg is not None:
                self._event(node, "o", "algorithms")
        elif qualified == f"{rng.CUDNN}.flags":
            arg = argument(node, "deterministic", 3)
            if arg is not None and literal_bool(arg.value) is not False:
                self._event(node, "d", "cudnn")
        elif qualified in rng.LIGHTNING_TRAINERS:
            arg = argument(node, "deterministic")
            if arg is not None and literal_bool(arg.value) is not False:
                self._event(node, "d", "algorithms")
        elif qualified in rng.SPAWNERS:
            self._process(node, argument(node, "fn", 0), "spawn")
        elif qualified in rng.PROCESS_CLASSES:
            self._process(node, argument(node, "target", 1), "process")
        elif qualified in rng.THREADS or qualified in rng.RUNNERS:
            position = (None, 0) if qualified in rng.RUNNERS else ("target", 1)
            target = self._target(argument(node, *position))
            if target is not None:
                self._call(node, target)
        elif qualified in rng.SET_START_METHOD:
            arg = argument(node, "method", 0)
            if arg is not None and literal_str(arg.value) in rng.FRESH_START_METHODS:
                self._fresh_start = True
        elif qualified.rsplit(".", 1)[-1] == "DataLoader" and qualified.startswith(
            "torch.utils.data"
        ):
            self._loader(node)
        elif qualified.startswith(("torch.", "torchvision.", "timm.")):
            what = rng.torch_use(qualified)
            if what == rng.MODEL and rng.builds_conv_model(qualified) and _pretrained(node):
                # Every random initial weight is overwritten by the downloaded ones.
                what = None
            if what is not None and argument(node, "generator") is None:
                self._use(node, "torch", what)
            if rng.builds_conv(qualified):
                self._event(node, "v")
        elif rng.numpy_draw(qualified):
            self._use(node, "numpy", rng.DRAW)
        elif rng.random_draw(qualified):
            self._use(node, "random", rng.DRAW)
        elif not rng.is_library(qualified, self._own):
            self._call(node, ["q", qualified])

    def _helper_settings(self, node: cst.Call, qualified: str) -> tuple[str, ...]:
        settings = rng.HELPERS.get(qualified, ())
        if settings == ("mmengine",):
            arg = argument(node, "deterministic", 1)
            return rng.BOTH if arg is not None and literal_bool(arg.value) is True else ()
        return settings

    def _loader(self, node: cst.Call) -> None:
        """A DataLoader draws its base seed (and shuffles) from the global torch RNG unless it
        has its own ``generator=``; the base seed seeds every worker's random/numpy/torch."""
        if argument(node, "generator") is not None:
            return
        shuffle = argument(node, "shuffle", 2)
        workers = argument(node, "num_workers", 5)
        if shuffle is not None and literal_bool(shuffle.value) is not False:
            self._use(node, "torch", rng.LOADER)
        elif workers is not None and literal_int(workers.value) != 0:
            self._use(node, "torch", rng.WORKERS)

    def _process(self, node: cst.Call, arg: cst.Arg | None, kind: str) -> None:
        target = self._target(arg)
        if target is not None:
            self._event(node, "p", target, kind, dedup=tuple(target))

    def _target(self, arg: cst.Arg | None) -> list[Json] | None:
        """A reference to the function a thread or process runs."""
        if arg is None:
            return None
        value = arg.value
        if isinstance(value, cst.Call) and self._names.qualified_name(value.func) in (
            "functools.partial",
        ):
            first = argument(value, None, 0)
            if first is None:
                return None
            value = first.value
        if isinstance(value, cst.Name):
            local = self._local(value.value)
            if local is not None:
                return ["l", local]
            qualified = self._names.qualified_name(value)
            if qualified is not None and not rng.is_library(qualified, self._own):
                return ["q", qualified]
        elif isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name):
            klass = self._class_key()
            if value.value.value in ("self", "cls") and klass is not None:
                return ["m", klass, value.attr.value, 0]
            qualified = self._names.qualified_name(value)
            if qualified is not None and not rng.is_library(qualified, self._own):
                return ["q", qualified]
        return None

    def _local(self, name: str) -> str | None:
        """A function defined inside an enclosing function (or the __main__ block)."""
        for scope in reversed(self._scopes):
            if scope.kind == "class":
                continue
            if name in self._locals.get(scope.key, ()):
                return name if scope.kind == "main" else f"{scope.key}.{name}"
        return None

    def _unresolved_call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            local = self._local(func.value)
            if local is not None:
                self._call(node, ["l", local])
            return
        if not isinstance(func, cst.Attribute):
            return
        receiver, attr = func.value, func.attr.value
        klass = self._class_key()
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls") and klass:
            self._call(node, ["m", klass, attr, 0])
        elif (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Name)
            and receiver.func.value == "super"
            and klass
        ):
            self._call(node, ["m", klass, attr, 1])
        elif attr == "Process" and self._spawn_context(receiver):
            self._process(node, argument(node, "target", 1), "context")
        if not self._scopes and self._open and self._work is None and self._is_work(func):
            self._work = self._index(self._open[0])

    def _spawn_context(self, receiver: cst.BaseExpression) -> bool:
        if isinstance(receiver, cst.Name):
            return receiver.value in self._spawn_contexts
        if isinstance(receiver, cst.Call):
            return self._fresh_context(receiver)
        return False

    def _fresh_context(self, call: cst.Call) -> bool:
        if self._names.qualified_name(call.func) not in rng.GET_CONTEXT:
            return False
        arg = argument(call, "method", 0)
        return arg is not None and literal_str(arg.value) in rng.FRESH_START_METHODS

    @staticmethod
    def _is_work(func: cst.Attribute) -> bool:
        """Module-level training work: ``loss.backward()``, ``optimizer.step()``, ``.fit()``."""
        attr = func.attr.value
        if attr in ("backward", "fit"):
            return True
        if attr == "step":
            try:
                receiver = dotted_name(func.value)
            except TypeError:
                return False
            return "opt" in receiver.rsplit(".", 1)[-1].lower()
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._names.qualified_name(target.target) == f"{rng.CUDNN}.deterministic":
                if literal_bool(node.value) is not False:
                    self._event(node, "d", "cudnn")
        if isinstance(node.value, cst.Call) and self._fresh_context(node.value):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._spawn_contexts.add(target.target.value)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        targets = [target.target for target in original_node.targets]
        self._data.assign(targets, original_node.value, self._function_key())

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        self._data.assign([original_node.target], original_node.value, self._function_key())

    def site(self, node: cst.CSTNode) -> CallSite:
        """Where ``node``, being visited, is: its innermost statement (indexed in the
        statement table), its row and indentation, and its top-level statement with the row
        where a helper function can be inserted before it (for the data-loading rules)."""
        statement = self._index(self._open[-1]) if self._open else -1
        top = self._open[0] if self._open else None
        indent = self._indent(self._open[-1].row) if self._open else ""
        if top is None:
            return CallSite(statement, self.node_row(node), indent, None, 1)
        leading: Sequence[cst.EmptyLine] = getattr(top.node, "leading_lines", ())
        blank = 0
        for line in leading:
            if line.comment is not None:
                break
            blank += 1
        # After the blank lines (so the inserted text never starts with a line break, which
        # would join a lone "\r" before it into "\r\n"), before comments and decorators.
        helper_row = top.row - len(leading) + blank
        return CallSite(statement, self.node_row(node), indent, top.node, helper_row)

    def visit_Import(self, node: cst.Import) -> None:
        modules = [dotted_name(alias.name) for alias in node.names]
        self._import(node, modules)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        base = self._names.import_base(node)
        if isinstance(node.names, cst.ImportStar):
            self._import(node, [base])
            return
        # ``from pkg import name``: ``name`` may be a submodule; both run module code.
        self._import(node, [base, *(f"{base}.{dotted_name(a.name)}" for a in node.names)])

    def _import(self, node: cst.CSTNode, modules: list[str]) -> None:
        wanted = [m for m in modules if m and not m.startswith(".") and not self._library(m)]
        if wanted:
            self._event(node, "i", wanted, dedup=tuple(wanted))

    def _library(self, qualified: str) -> bool:
        return rng.is_library(qualified, self._own)

    # -- the result ---------------------------------------------------------------------------

    def summary(self) -> dict[str, Json]:
        exports: dict[str, str] = {}
        for binding in self._names.bindings():
            qualified = binding.qualified
            if binding.module_level and (
                not self._library(qualified)
                or qualified in rng.SEEDS
                or qualified in rng.HELPERS
                or qualified in self._seed_functions
            ):
                exports[binding.local] = qualified
        taken = [name for name in _FIX_MODULES if self._taken(name)]
        anchor = self._anchor or self._end_anchor()
        data = self._data.summary()
        return {
            **({"data": data} if data is not None else {}),
            "v": SUMMARY_VERSION,
            "module": self._module,
            "package": self._package,
            "funcs": self._funcs,
            "defs": self._defs,
            "classes": self._classes,
            "exports": exports,
            "stmts": self._table,
            "main": self._main,
            "work": self._work,
            "first": self._first,
            "bare": self._bare,
            "fresh_start": self._fresh_start,
            "imports": self._imports,
            "anchor": anchor,
            "bindings": self._bindings,
            "taken": taken,
            "noqa": self._noqa,
            "newline": self._newline,
            "indent": self._default_indent,
        }

    def _taken(self, name: str) -> bool:
        """Whether ``import name`` would clash with what the module binds ``name`` to, or
        would give a meaning to a ``name.x`` the module uses without binding ``name`` (from a
        star import, or a NameError today): a fix must not change what existing code does."""
        if not self._names.is_bound(name):
            return _uses_unbound(name, self._text)
        bound = self._names.binding(name)
        return bound is None or bound.qualified != name

    def _end_anchor(self) -> list[Json]:
        lines = _LINE_BREAK.split(self._text)
        if len(lines) == 1 and lines[0] == "":
            return [1, 1, ""]
        if lines[-1] == "":
            return [len(lines), 1, ""]
        return [len(lines), len(lines[-1]) + 1, self._newline]


def _uses_unbound(name: str, text: str) -> bool:
    """Whether ``name.attr`` appears outside import statements (text-level, so a mention in a
    comment or string also counts: the fix is then withheld, never wrong)."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\.")
    return any(
        pattern.search(line) and not line.lstrip().startswith(("import ", "from "))
        for line in text.splitlines()
    )


__all__ = [
    "DEFERRED",
    "DEFERRED_KEY",
    "MAIN",
    "MODULE",
    "SUMMARY_VERSION",
    "SummaryCollector",
    "is_main_check",
]
