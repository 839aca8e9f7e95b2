"""Per-module summaries: what one file defines and does, written during the per-file pass.

``SummaryCollector`` rides along the engine's single traversal of a file and writes a small
JSON-able summary (cached with the file's result): the functions the file defines, what each
does in source order (seeds, RNG consumption, calls, imports, processes it spawns, deterministic
settings, convolutions), its entry point, and the rows fixes and suppressions need. Rows are
counted from the newlines the traversal passes, so no positions pass is needed. The program
model (``program.py``) reads these summaries.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libcst as cst

from repro_lint import randomness as rng
from repro_lint.arguments import argument, literal_bool, literal_int, literal_str
from repro_lint.autograd import GradCalls, top_functions
from repro_lint.checkpoints import CheckpointFacts
from repro_lint.config import find_project_root
from repro_lint.estimators import draws_from_numpy, is_function
from repro_lint.gates import Gate, GateFacts
from repro_lint.kernel_facts import KernelFacts
from repro_lint.layout import (
    CONVENTIONAL_ALIASES,
    FROM_IMPORTED,
    HeaderRecorder,
    cell_headers,
    describing_comments,
    is_docstring,
    is_future_import,
    is_joined_notebook,
)
from repro_lint.loaders import CallSite, LoaderFacts
from repro_lint.names import dotted_name
from repro_lint.options import Options
from repro_lint.rule import FileContext
from repro_lint.summary_format import DEFERRED, DEFERRED_KEY, MAIN, MODULE, SUMMARY_VERSION
from repro_lint.suppressions import parse_comment
from repro_lint.walker import code_children

_SCOPE = "scope"  # a block that starts a function's (or the __main__ block's) own code
_LINE_BREAK = re.compile(r"\r\n?|\n")
# Names a seed fix may need to import (also the packages of the modules it imports from a
# package: ``mpi4py`` for ``MPI``); a file that binds one of them to something else gets no
# fix for that family.
_FIX_MODULES = (
    "torch",
    "numpy",
    "random",
    "os",
    *(module.split(".", 1)[0] for module in FROM_IMPORTED),
)
# Names a fix may bind: the modules above, the conventional aliases it imports them as and
# the modules it imports from a package (``MPI``).
_FIX_NAMES = (
    *_FIX_MODULES,
    *CONVENTIONAL_ALIASES.values(),
    *(module.rpartition(".")[2] for module in FROM_IMPORTED),
)
# Whether a library module is (possibly) project code is decided per summary: never for the
# top-level packages in randomness.LIBRARIES, unless the file belongs to that package itself.

Json = Any


def tree_packages(path: Path | None) -> frozenset[str]:
    """The library names (``randomness.LIBRARIES``) that the project tree of ``path``
    holds as a package or module of its own, at its root or under ``src/``."""
    if path is None:
        return frozenset()
    return _tree_packages(_project_root(str(path.resolve().parent)))


# Per directory, once per process, as ``_tree_packages`` (the search looks for four markers
# in every ancestor: a cold run asked it again for each file it summarised).
@functools.lru_cache(maxsize=1024)
def _project_root(directory: str) -> str:
    return str(find_project_root(Path(directory)))


# Per project root, once per process (a process that outlives a run, the daemon, clears
# it between runs: the tree may have changed).
@functools.lru_cache(maxsize=256)
def _tree_packages(root: str) -> frozenset[str]:
    names: set[str] = set()
    for base in (root, os.path.join(root, "src")):
        try:
            entries = os.listdir(base)
        except OSError:
            continue
        for entry in entries:
            name = entry[:-3] if entry.endswith(".py") else entry
            if name in rng.LIBRARIES and name not in sys.stdlib_module_names:
                if entry.endswith(".py") or os.path.isfile(
                    os.path.join(base, entry, "__init__.py")
                ):
                    names.add(name)
    return frozenset(names)


def _target_text(node: cst.BaseExpression) -> str:
    """The last name of an assignment target (``opt.manualSeed`` -> ``manualSeed``,
    ``os.environ["MASTER_PORT"]`` -> ``MASTER_PORT``)."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    if type(node) is cst.Subscript and len(node.slice) == 1:
        index = node.slice[0].slice
        if type(index) is cst.Index:
            text = literal_str(index.value)
            if text is not None:
                return text
    return ""


def _dotted_code(node: cst.BaseExpression) -> str | None:
    """The code of a name or of a dotted name written without parentheses or spaces (most
    ``if`` tests: ``if verbose:``, ``if self.training:``) as ``code_for_node`` prints it,
    without printing; None for anything else."""
    parts: list[str] = []
    while type(node) is cst.Attribute:
        before, after = node.dot.whitespace_before, node.dot.whitespace_after
        if (
            node.lpar
            or type(before) is not cst.SimpleWhitespace
            or type(after) is not cst.SimpleWhitespace
            or before.value
            or after.value
        ):
            return None
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name or node.lpar:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def has_main_block(module: cst.Module) -> bool:
    """Whether the module's own body has an ``if __name__ == "__main__":`` block."""
    return any(type(s) is cst.If and is_main_check(s.test) for s in module.body)


def is_main_check(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    if type(target.operator) is not cst.Equal:
        return False
    left, right = test.left, target.comparator
    for name, value in ((left, right), (right, left)):
        if type(name) is cst.Name and name.value == "__name__":
            return literal_str(value) == "__main__"
    return False


# The expressions naming a table of functions in ``TABLE[name](...)``.
_TABLES = frozenset({cst.Name, cst.Attribute})


@dataclass(eq=False, slots=True)
class _Open:
    """A statement being visited: its first row and, once something refers to it, its index
    in the summary's statement table."""

    node: cst.CSTNode
    row: int
    index: int = -1
    # The first row of the comment lines right above the statement (no blank line between):
    # code inserted before the statement goes above them, since they describe it.
    above: int = 0


@dataclass(frozen=True, slots=True)
class _Scope:
    kind: str  # "func", "class" or "main"
    key: str


def _lines_in(whitespace: cst.BaseParenthesizableWhitespace) -> int:
    if type(whitespace) is cst.ParenthesizedWhitespace:
        return 1 + len(whitespace.empty_lines)
    if type(whitespace) is cst.SimpleWhitespace:
        return len(_LINE_BREAK.findall(whitespace.value))
    return 0


def _pretrained(call: cst.Call) -> bool:
    """``resnet18(weights=...)``, ``create_model(..., pretrained=True)``."""
    weights = argument(call, "weights")
    if weights is not None and not (
        type(weights.value) is cst.Name and weights.value.value == "None"
    ):
        return True
    pretrained = argument(call, "pretrained")
    return pretrained is not None and literal_bool(pretrained.value) is not False


def _is_declaration(statement: cst.CSTNode) -> bool:
    """``global x`` / ``nonlocal x``: code inserted before it would make it a SyntaxError
    (a name used before its global declaration)."""
    return type(statement) is cst.SimpleStatementLine and all(
        isinstance(small, cst.Global | cst.Nonlocal) for small in statement.body
    )


def _first_body_statement(body: cst.BaseSuite) -> cst.CSTNode | None:
    """The statement a fix inserts before: the first one after the docstring and the
    ``global``/``nonlocal`` declarations."""
    if type(body) is not cst.IndentedBlock or not body.body:
        return None
    statements = list(body.body)
    if is_docstring(statements[0]):
        statements = statements[1:]
    while statements and _is_declaration(statements[0]):
        statements = statements[1:]
    return statements[0] if statements else None


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
        # A notebook's code cells (its joined module opens with a cell marker): fixes put
        # imports and helpers into the cell they are for.
        self._cells = (
            [cell.to_json() for cell in cell_headers(context.module)]
            if is_joined_notebook(text)
            else []
        )
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
        # Module-level calls in other statements (``net = Net()``, a loop calling train()).
        self._calls: list[list[Json]] = []
        self._tree = tree_packages(context.path)
        self._stars = [
            base
            for base in self._names.star_imports
            if base and not base.startswith(".") and not self._library(base)
        ]
        # Control flow: one entry per block being visited: None (it runs whenever its
        # statement does), _SCOPE (a function's or the __main__ block's body; contexts are
        # relative to it) or [branch id, arm] (the arm of an if/elif/else, an except
        # handler, a match case). An event's context is the list of its branches.
        self._blocks: list[Json] = []
        self._clauses: list[tuple[int, str, int]] = []
        self._branch_ids: dict[Json, int] = {}
        # An ``if`` test's branch by the test node's id: its code is printed once, not once
        # per arm and ``elif``.
        self._test_branches: dict[int, int] = {}
        self._elif_of: dict[int, list[int]] = {}
        self._code = context.module.code_for_node
        self._handler_count: dict[int, int] = {}
        self._ctx: dict[str, dict[int, list[list[int]]]] = {}
        # Options defaulting off that gate code (see ``gates``): per entry of ``_blocks``,
        # the gates of its arm; per conditional expression's body (by node id), its gates;
        # per function, the gates of its events (resolved to option names at the end).
        self._option_gates = GateFacts()
        self._gate_blocks: list[list[Gate] | None] = []
        self._expr_gates: dict[int, list[Gate]] = {}
        self._event_gates: dict[str, dict[int, list[Gate]]] = {}
        # The program's command-line seed option, where the entry point parses it:
        # [statement, the parsed namespace's name], and the option.
        self._options = Options(self._names)
        self._parsed: list[Json] | None = None
        # Module-level dicts of the module's functions (registries), by name.
        self._registries = _registries(context.module)
        # Per function: seed events whose argument a fix may repeat, with its text.
        self._seed_texts: dict[str, list[list[Json]]] = {}
        # Assignment targets being visited (their last names), innermost last,
        # and where the events of the statement start.
        self._targets: list[list[str]] = []
        # The names (``cst.Name`` values) met in the value of the assignment being visited:
        # after its last target, up to its end (an assignment holds no other statement).
        self._value_names: list[set[str]] = []
        self._assign_start: list[int] = []
        # Per visited call: whether it is a seeding call (a draw in its arguments derives
        # the seed value).
        self._call_seeds: list[bool] = []
        self._seed_args = 0
        # Per function: variable -> indices of the events that built the model it holds;
        # the events a later ``load_state_dict`` on every path overwrites.
        self._models: dict[str, dict[str, list[int]]] = {}
        self._over: dict[str, list[int]] = {}
        # Per function: variable -> qualified name of the class it was built from.
        self._types: dict[str, dict[str, str]] = {}
        self._spawn_contexts: set[str] = set()
        # The module hands work to a cluster job (a submitit executor's ``submit``).
        self._submits_jobs = False
        # The module measures speed (a profiler or a benchmark timer).
        self._times = False
        # Every call of project code: [ref, whether its first positional argument is an int
        # literal (None: no positional argument), the keywords given int literals].
        self._arguments: list[list[Json]] = []
        # Per call being visited: the row it starts on and the events that the call itself
        # makes (a project call, a constructor that seeds), recorded there once its arguments
        # have been: Python evaluates ``Runner(model=Net())``'s argument, drawing its
        # weights, before the Runner seeds.
        # (None for the many calls that make none.)
        self._after_arguments: list[tuple[int, list[Callable[[], object]]] | None] = []
        self._fresh_start = False
        self._anchor: list[Json] | None = None
        # The docstring, imports and constants that open the module (where fixes put imports
        # and helper functions).
        self._header = HeaderRecorder()
        self._top_count = 0
        self._bindings: list[list[Json]] = []
        self._binding_statements: dict[int, list[tuple[str, str]]] = {}
        # DataLoaders, samplers and the generators datasets own (the data-loading rules).
        self._data = LoaderFacts(context, text)
        # Checkpoints saved, loaded back and RNG states kept (the resume rule).
        self._ckpt = CheckpointFacts(self._names)
        # Kernels, devices, training and deterministic settings (RPL202).
        self._kernels = KernelFacts(self._names, self)
        # Calls of other project modules' functions, and whether a backward reaches them
        # (RPL401/RPL402 settle hazards in a function by its callers); the rules' notes.
        self._grad = GradCalls(
            self._names,
            self._library,
            top_functions(context.module),
        )
        self._notes = context.notes
        self._positions = context.positions
        for binding in self._names.bindings():
            top = binding.qualified.split(".", 1)[0]
            if binding.is_import and binding.module_level and top in _FIX_MODULES:
                self._binding_statements.setdefault(id(binding.statement), []).append(
                    (binding.local, binding.qualified)
                )

    # -- rows ---------------------------------------------------------------------------------

    def release(self) -> None:
        """Drop what the pass built (``file_pass`` calls this once the summary is made)."""
        self._data.release()

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
        above = len(leading) - describing_comments(leading)
        self._open.append(_Open(node, row, above=self.row + above))
        owner = self._body_of.pop(id(node), None)
        if owner is not None:
            # Code inserted at the start of a body goes above the comment lines right before
            # its first statement: they describe that statement, not the inserted code.
            place = [self.row + above, self._indent(row)]
            if owner == MAIN and self._main is not None:
                self._main["body"] = place
            elif owner in self._defs:
                self._defs[owner][0] = place
        for local, qualified in self._binding_statements.get(id(node), ()):
            self._bindings.append([local, qualified, row])
        if top and not self._scopes:
            self._top_level(node, row)
            self._header.enter(node, self.row, leading)

    def _top_level(self, node: cst.CSTNode, row: int) -> None:
        first = self._top_count == 0
        self._top_count += 1
        if self._anchor is None and not (first and is_docstring(node)):
            if not is_future_import(node):
                self._anchor = [row, 1, ""]
        if type(node) is cst.SimpleStatementLine:
            for small in node.body:
                if type(small) is cst.Expr and type(small.value) is cst.Call:
                    self._bare_calls.add(id(small.value))

    def _leave(self, node: cst.CSTNode) -> None:
        entry = self._open.pop()
        if not self._open and not self._scopes:
            self._header.leave(self.row - 1)
        if entry.index >= 0:
            self._table[entry.index][1] = self.row - 1
        if (
            not self._open
            and not self._scopes
            and type(node) is cst.SimpleStatementLine
            and all(isinstance(s, cst.Import | cst.ImportFrom) for s in node.body)
        ):
            self._imports.append([entry.row, self.row - 1])

    def _indent(self, row: int) -> str:
        line = self._line(row)
        # Interned: a summary holds an indentation per statement, mostly the same few.
        return sys.intern(line[: len(line) - len(line.lstrip())])

    def _index(self, entry: _Open) -> int:
        if id(entry.node) in self._elifs:
            # An ``elif`` is part of its ``if`` statement: nothing can go before it.
            position = next(i for i, e in enumerate(self._open) if e is entry)
            if position > 0:
                return self._index(self._open[position - 1])
        if entry.index < 0:
            line = self._line(entry.row)
            entry.index = len(self._table)
            loop = self._outer_loop(entry)
            self._table.append(
                [
                    entry.row,
                    entry.row,
                    self._indent(entry.row),
                    len(line.rstrip()) + 1,
                    entry.above or entry.row,
                    None if loop is None else [loop.above or loop.row, self._indent(loop.row)],
                ]
            )
        return entry.index

    def _outer_loop(self, entry: _Open) -> _Open | None:
        """The outermost ``for``/``while`` loop around ``entry`` in its own function (or in
        the module's top-level code): where one-time set-up for what the loop repeats goes."""
        position = next((i for i, e in enumerate(self._open) if e is entry), len(self._open))
        found = None
        for ancestor in reversed(self._open[:position]):
            if isinstance(ancestor.node, cst.FunctionDef | cst.ClassDef):
                break
            if isinstance(ancestor.node, cst.For | cst.While):
                found = ancestor
        return found

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._enter(node, node.leading_lines)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self._leave(original_node)

    def visit_For(self, node: cst.For) -> None:
        self._enter(node, node.leading_lines)
        self._kernels.loop(node)
        self._data.bound(node.target)
        self._data.branches(node)
        self._data.enter_loop(node)

    def leave_For(self, original_node: cst.For) -> None:
        self._data.leave_loop(original_node)
        self._leave(original_node)

    def visit_While(self, node: cst.While) -> None:
        self._enter(node, node.leading_lines)
        self._data.branches(node)
        self._data.enter_while()

    def leave_While(self, original_node: cst.While) -> None:
        self._data.leave_while()
        self._leave(original_node)

    def visit_With(self, node: cst.With) -> None:
        self._enter(node, node.leading_lines)
        self._kernels.enter_with(node)
        self._grad.enter_with(node)
        for item in node.items:
            if item.asname is not None:
                self._data.entered(item.asname.name, item.item)

    def leave_With(self, original_node: cst.With) -> None:
        self._kernels.leave_with()
        self._grad.leave_with()
        self._leave(original_node)

    def visit_Try(self, node: cst.Try) -> None:
        self._enter(node, node.leading_lines)
        self._data.branches(node)

    def leave_Try(self, original_node: cst.Try) -> None:
        self._leave(original_node)
        self._data.left_try()

    def visit_TryStar(self, node: cst.TryStar) -> None:
        self._enter(node, node.leading_lines)
        self._data.branches(node)

    def leave_TryStar(self, original_node: cst.TryStar) -> None:
        self._leave(original_node)
        self._data.left_try()

    def visit_Match(self, node: cst.Match) -> None:
        self._enter(node, node.leading_lines)
        self._data.branches(node)

    def leave_Match(self, original_node: cst.Match) -> None:
        self._leave(original_node)

    def visit_If(self, node: cst.If) -> None:
        top = not self._open and not self._scopes
        parent = self._elif_of.get(id(node))
        if parent is not None:
            # An ``elif`` runs only when its ``if`` did not: the else arm of that branch.
            self._blocks.append(parent)
            self._gate_blocks.append(None)
        self._enter(node, node.leading_lines)
        if id(node) not in self._elifs:
            # An ``elif`` was registered with the ``if`` that leads its chain.
            self._data.branches(node)
        if type(node.orelse) is cst.If:
            self._elifs.add(id(node.orelse))
            self._elif_of[id(node.orelse)] = self._if_arm(node, 1)
        if top and self._main is None and is_main_check(node.test):
            self._main_if = node
            self._main = {"stmt": self._index(self._open[-1]), "body": None, "suite": None}
            first = _first_body_statement(node.body)
            if first is not None:
                self._body_of[id(first)] = MAIN
            elif type(node.body) is cst.SimpleStatementSuite:
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
        if id(original_node) in self._elif_of:
            self._blocks.pop()
            self._gate_blocks.pop()
        elif id(original_node) not in self._elifs:
            self._data.settled(original_node)

    # -- control flow ---------------------------------------------------------------------------

    def _branch_id(self, key: Json) -> int:
        found = self._branch_ids.get(key)
        if found is None:
            found = self._branch_ids[key] = len(self._branch_ids)
        return found

    def _if_arm(self, node: cst.If, arm: int) -> list[int]:
        """The branch of an ``if`` arm. Branches are named by their test, so two ``if``
        statements on one condition (``if resume:`` ... ``if not resume:``) share a branch
        (with the arms swapped by ``not``): code in opposite arms never runs together."""
        test = node.test
        while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test = test.expression
            arm ^= 1
        branch = self._test_branches.get(id(test))
        if branch is None:
            code = _dotted_code(test) or self._code(test)
            branch = self._test_branches[id(test)] = self._branch_id(("test", code))
        return [branch, arm]

    def _clause(self, kind: str, index: int = 0) -> None:
        self._clauses.append((len(self._open), kind, index))

    def _counted_clause(self, kind: str) -> None:
        owner = id(self._open[-1].node) if self._open else 0
        count = self._handler_count.get(owner, 0) + 1
        self._handler_count[owner] = count
        self._clause(kind, count)

    def visit_Else(self, node: cst.Else) -> None:
        self._clause("else")

    def leave_Else(self, original_node: cst.Else) -> None:
        self._clauses.pop()

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._counted_clause("except")

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler) -> None:
        self._clauses.pop()

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> None:
        self._counted_clause("except")

    def leave_ExceptStarHandler(self, original_node: cst.ExceptStarHandler) -> None:
        self._clauses.pop()

    def visit_Finally(self, node: cst.Finally) -> None:
        self._clause("finally")

    def leave_Finally(self, original_node: cst.Finally) -> None:
        self._clauses.pop()

    def visit_MatchCase(self, node: cst.MatchCase) -> None:
        self._counted_clause("case")

    def leave_MatchCase(self, original_node: cst.MatchCase) -> None:
        self._clauses.pop()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks.append(self._block_entry())
        self._gate_blocks.append(self._gate_entry())
        self._data.enter_block(node, self.row)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._data.leave_block(original_node, self.row)
        self._blocks.pop()
        self._gate_blocks.pop()

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._blocks.append(self._block_entry())
        self._gate_blocks.append(self._gate_entry())
        self._data.enter_block(node, None)

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite) -> None:
        self._data.leave_block(original_node, None)
        self._blocks.pop()
        self._gate_blocks.pop()

    def _block_entry(self) -> Json:
        """What the block being entered is: see ``_blocks``."""
        if not self._open:
            return None
        node = self._open[-1].node
        clause = None
        if self._clauses and self._clauses[-1][0] == len(self._open):
            clause = self._clauses[-1]
        if type(node) is cst.FunctionDef:
            return _SCOPE
        if node is self._main_if and clause is None:
            return _SCOPE
        if type(node) is cst.If:
            return self._if_arm(node, 0 if clause is None else 1)
        if isinstance(node, cst.Try | cst.TryStar | cst.Match) and clause is not None:
            if clause[1] in ("except", "case"):
                return [self._branch_id(("node", id(node))), clause[2]]
        return None

    def _gate_entry(self) -> list[Gate] | None:
        """The options gating the block being entered: an ``if`` arm (not its ``else``)
        whose test is an option defaulting off."""
        if not self._open:
            return None
        node = self._open[-1].node
        if type(node) is not cst.If:
            return None
        if self._clauses and self._clauses[-1][0] == len(self._open):
            return None
        return self._option_gates.test(node.test, self._class_key()) or None

    def _gates(self, node: cst.CSTNode) -> list[Gate]:
        """The options gating ``node``, within its function."""
        found = list(self._expr_gates.get(id(node), ()))
        for entry, gates in zip(reversed(self._blocks), reversed(self._gate_blocks), strict=True):
            if entry is _SCOPE:
                break
            if gates:
                found.extend(gates)
        return found

    def visit_IfExp(self, node: cst.IfExp) -> None:
        gates = self._option_gates.test(node.test, self._class_key())
        if gates:
            self._expr_gates[id(node.body)] = gates

    def visit_Dict(self, node: cst.Dict) -> None:
        self._option_gates.dict_literal(node)

    def _context(self) -> list[list[int]]:
        """The branches the code being visited runs in, within its function."""
        found: list[list[int]] = []
        for entry in reversed(self._blocks):
            if entry is _SCOPE:
                break
            if entry is not None:
                found.append(entry)
        found.reverse()
        return found

    def leave_Return(self, original_node: cst.Return) -> None:
        self._data.returned(original_node)

    def leave_Yield(self, original_node: cst.Yield) -> None:
        self._data.yielded(original_node)
        self._grad.on_yield()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._enter(node, node.leading_lines)
        method = bool(self._scopes) and self._scopes[-1].kind == "class"
        key = self._child_key(node.name.value, function=True)
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        self._defs[key] = [None, params, method]
        self._options.visit_FunctionDef(node)
        first = _first_body_statement(node.body)
        if first is not None:
            self._body_of[id(first)] = key
        self._scopes.append(_Scope("func", key))
        self._data.enter_function(node, method, key)
        self._ckpt.enter_function(key, node)
        self._kernels.enter_function(node)
        self._grad.enter_function(node)
        self._option_gates.enter_function(node, method)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._option_gates.leave_function()
        self._grad.leave_function()
        self._kernels.leave_function()
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
        self._grad.enter_class(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._grad.leave_class()
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

    def _event(
        self,
        node: cst.CSTNode,
        tag: str,
        *payload: Json,
        dedup: Json = None,
        tentative: bool = False,
        passive: bool = False,
    ) -> int:
        """Record an event of the function being visited; its index (-1 when not recorded).
        A ``tentative`` event does not hide later ones of its kind (a checkpoint may yet
        overwrite what it built)."""
        if self._lambdas:
            # A lambda's body runs whenever it is called, if ever: not part of any path.
            return -1
        if self._data.dead:
            # Code that never runs: ``if False:``, the ``else`` of ``if True:``, ``while
            # False:``, ``if TYPE_CHECKING:`` (for type checkers only).
            return -1
        key = self._function_key()
        context = self._context()
        gates = self._gates(node)
        seen = self._seen.setdefault(key, set())
        marker = (
            tag,
            dedup if dedup is not None else payload,
            tuple(map(tuple, context)),
            tuple(gates),
        )
        if marker in seen:
            return -1
        if not tentative:
            seen.add(marker)
        statement = self._index(self._open[-1]) if self._open else -1
        events = self._funcs.setdefault(key, [])
        index = len(events)
        events.append([tag, *payload, statement, self.node_row(node)])
        if context:
            self._ctx.setdefault(key, {})[index] = context
        if gates:
            self._event_gates.setdefault(key, {})[index] = gates
        if key == MODULE and tag != "i" and not passive and self._first is None and self._open:
            self._first = self._index(self._open[0])
        return index

    def event(self, node: cst.CSTNode, tag: str, *payload: Json, dedup: Json = None) -> None:
        """Record an event of the function being visited for a facts collector. Such events
        never mark where a script's work starts (where inserted seeds go)."""
        self._event(node, tag, *payload, dedup=dedup, passive=True)

    def function_key(self) -> str:
        return self._function_key()

    def class_key(self) -> str | None:
        return self._class_key()

    def branched(self) -> bool:
        """Whether the statement being visited runs only on some paths through its function
        (or the ``__main__`` block, or the module's code): it sits in an ``if``, a loop, a
        ``try`` or a ``match`` there."""
        for entry in reversed(self._open[:-1]):
            node = entry.node
            if isinstance(node, cst.FunctionDef | cst.ClassDef):
                return False
            if type(node) is cst.If and is_main_check(node.test):
                return False
            if isinstance(node, cst.If | cst.For | cst.While | cst.Try | cst.TryStar | cst.Match):
                return True
        return False

    def _seed(self, node: cst.CSTNode, families: Iterable[str]) -> None:
        argument_text = self._seed_text(node)
        checked = argument_text is not None and self._checked_seed(argument_text)
        for family in families:
            index = self._event(node, "s", family)
            if index >= 0 and argument_text is not None:
                entry: list[Json] = [index, argument_text]
                if checked:
                    entry.append(1)
                self._seed_texts.setdefault(self._function_key(), []).append(entry)

    def _checked_seed(self, text: str) -> bool:
        """Whether the seeding call being visited runs only under ``if <text> is not None:``
        within its function (the only branch around it, in its first arm): the program seeds
        only when given a seed."""
        context = self._context()
        if len(context) != 1 or context[0][1] != 0:
            return False
        wanted = ("test", f"{' '.join(text.split())} is not None")
        branch = context[0][0]
        return any(
            found == branch
            and type(key) is tuple
            and len(key) == 2
            and key[0] == wanted[0]
            and " ".join(str(key[1]).split()) == wanted[1]
            for key, found in self._branch_ids.items()
        )

    def _seed_text(self, node: cst.CSTNode) -> str | None:
        """The seed a seeding call passes, as written (``args.seed``, ``seed + rank``),
        when it is a plain value a fix may repeat right after the call: names, attributes,
        subscripts with literal keys, integers and sums; None otherwise (a draw, a call)."""
        if type(node) is not cst.Call or not self._open:
            return None
        if type(self._open[-1].node) is not cst.SimpleStatementLine:
            # ``if s: torch.manual_seed(s)``: nothing can go after it inside the guard.
            return None
        arg = argument(node, "seed", 0) or argument(node, "a", 0)
        if arg is None or not _plain(arg.value):
            return None
        text = self._code(arg.value)
        return text if "\n" not in text and "\r" not in text else None

    def _use(self, node: cst.CSTNode, family: str, what: str) -> None:
        if what == rng.DRAW and self._derives():
            return
        later = what in rng.DEFERRED
        tentative = what in rng.WEIGHTS and bool(self._targets)
        self._event(node, "u", family, what, dedup=(family, later), tentative=tentative)

    def _derives(self) -> bool:
        """Whether a draw being visited derives a seed value (in a seeding call's arguments,
        or assigned to a seed) or picks a free port: not randomness the program computes
        with. RPL103 judges the seed derivations."""
        if self._seed_args:
            return True
        return any(
            rng.is_seed_name(text) or rng.is_port_name(text)
            for texts in self._targets
            for text in texts
        )

    def _site(self) -> tuple[int, int]:
        """The innermost statement being visited (indexed) and its first row."""
        if not self._open:
            return -1, self.row
        return self._index(self._open[-1]), self._open[-1].row

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._ckpt.subscript(node)

    def _call(self, node: cst.Call, ref: list[Json], *, direct: bool = True) -> None:
        """A call of project code; ``direct``: ``node`` calls it (its arguments are the
        callee's), not a thread or a command-line runner that calls it later."""
        self._ckpt.project_call(node, ref, self._function_key(), self._site())
        self._after_its_arguments(lambda: self._event(node, "c", ref, dedup=tuple(ref)))
        self._arguments.append([ref, *_int_arguments(node)] if direct else [ref, False, []])
        if self._scopes or not self._open:
            return
        if id(node) in self._bare_calls:
            self._bare.append([ref, self._index(self._open[0])])
        else:
            self._calls.append([ref, self._index(self._open[0])])

    def _after_its_arguments(self, record: Callable[[], object]) -> None:
        """Record an event of the call being visited once its arguments have been."""
        waiting = self._after_arguments[-1]
        if waiting is None:
            waiting = self._after_arguments[-1] = (self.row, [])
        waiting[1].append(record)

    def visit_Call(self, node: cst.Call) -> None:
        self._after_arguments.append(None)
        self._options.visit_Call(node)
        self._option_gates.call(node)
        qualified = self._names.qualified_name(node.func)
        if qualified is None:
            qualified = self._typed_helper(node.func)
        self._data.call(node, qualified, self._function_key(), self)
        checkpoint = self._ckpt.call(node, qualified, self._function_key(), self._site())
        if checkpoint is not None:
            self._event(node, "l" if checkpoint == "load" else "k")
        self._kernels.call(node, qualified)
        self._grad.call(node, qualified, self._lambdas > 0)
        if qualified is None:
            self._unresolved_call(node)
        else:
            self._extra_uses(node, qualified)
            self._classify(node, qualified)
            self._callbacks(node, qualified)
        seeding = self._seeding_call(node, qualified)
        self._call_seeds.append(seeding)
        if seeding:
            self._seed_args += 1

    def leave_Call(self, original_node: cst.Call) -> None:
        if self._call_seeds.pop():
            self._seed_args -= 1
        waiting = self._after_arguments.pop()
        if waiting is not None:
            row, records = waiting
            # Recorded at the row the call starts on, as its other events are.
            cursor = self._cursor
            here, cursor.row = cursor.row, row
            for record in records:
                record()
            cursor.row = here

    def _seeding_call(self, node: cst.Call, qualified: str | None) -> bool:
        """A call whose arguments are a seed: a known seeding function, or one named so
        (``set_seed(...)``, ``generator.manual_seed(...)``)."""
        if qualified is not None and (
            qualified in rng.SEEDS
            or qualified in rng.HELPERS
            or qualified in self._seed_functions
            or qualified in rng.NUMPY_GENERATORS
        ):
            return True
        func = node.func
        name = func.attr.value if type(func) is cst.Attribute else ""
        if type(func) is cst.Name:
            name = func.value
        return "seed" in name.lower()

    def _extra_uses(self, node: cst.Call, qualified: str) -> None:
        """Uses of the global generators by libraries outside torch's namespace."""
        if qualified.startswith("sklearn."):
            if draws_from_numpy(qualified, node):
                kind = rng.SKLEARN if is_function(qualified) else rng.ESTIMATOR
                self._use(node, "numpy", kind)
        elif rng.third_party_layer(qualified) or qualified in rng.THIRD_PARTY_MODEL_FUNCTIONS:
            self._use(node, "torch", rng.MODEL)
        elif qualified in rng.CONFIG_MODELS:
            first = argument(node, "model", 0)
            path = literal_str(first.value) if first is not None else None
            if path is not None and path.lower().endswith(rng.CONFIG_SUFFIXES):
                self._use(node, "torch", rng.MODEL)

    def _callbacks(self, node: cst.Call, qualified: str) -> None:
        """Project functions passed by position to a call (``model.apply(init_weights)``,
        ``launch(main, ...)``): called at some time by the callee, in this process."""
        if (
            qualified in rng.SPAWNERS
            or qualified in rng.PROCESS_CLASSES
            or qualified in rng.THREADS
            or qualified in rng.RUNNERS
            or qualified in rng.LAUNCHERS
        ):
            return
        if qualified.startswith("torch.utils.data."):
            # collate_fn, worker_init_fn: they run in the loader's worker processes.
            return
        for arg in node.args:
            # By position only: keyword callbacks (``worker_init_fn=``, ``key=``) run
            # elsewhere or only compare.
            if type(arg.value) is not cst.Name or arg.star or arg.keyword is not None:
                continue
            local = self._local(arg.value.value)
            if local is not None:
                self._event(node, "f", ["l", local], dedup=("l", local))
                continue
            target = self._names.qualified_name(arg.value)
            if target is not None and not self._library(target):
                self._event(node, "f", ["q", target], dedup=("q", target))

    def _classify(self, node: cst.Call, qualified: str) -> None:
        if qualified.startswith(rng.TIMERS):
            self._times = True
        family = rng.SEEDS.get(qualified)
        if family is not None:
            self._seed(node, (family,))
        elif qualified in rng.HELPERS or qualified in self._seed_functions:
            self._seed(node, rng.FAMILIES)
            for kind in self._helper_settings(node, qualified):
                self._event(node, "d", kind)
        elif qualified in rng.SEEDING_CONSTRUCTORS:
            # A seeding helper's arguments are the seed; a constructor's may be a model.
            self._after_its_arguments(lambda: self._seed(node, rng.FAMILIES))
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
        elif qualified in rng.LAUNCHERS:
            self._process(node, argument(node, *rng.LAUNCHERS[qualified]), "launch")
        elif qualified in rng.THREADS or qualified in rng.RUNNERS:
            position = (None, 0) if qualified in rng.RUNNERS else ("target", 1)
            target = self._target(argument(node, *position))
            if target is not None:
                self._call(node, target, direct=False)
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
        elif rng.numpy_draw(qualified):
            self._use(node, "numpy", rng.DRAW)
        elif rng.random_draw(qualified):
            self._use(node, "random", rng.DRAW)
        elif not self._library(qualified) and qualified not in rng.CONFIG_MODELS:
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
            # Tentative: it matters only with randomness in the workers, which other uses
            # of this function (random transforms, the dataset's draws) show.
            self._event(node, "u", "torch", rng.WORKERS, tentative=True)

    def _process(self, node: cst.Call, arg: cst.Arg | None, kind: str) -> None:
        target = self._target(arg)
        if target is not None:
            self._event(node, "p", target, kind, dedup=tuple(target))

    def _target(self, arg: cst.Arg | None) -> list[Json] | None:
        """A reference to the function a thread or process runs."""
        if arg is None:
            return None
        value = arg.value
        if type(value) is cst.Call and self._names.qualified_name(value.func) in (
            "functools.partial",
        ):
            first = argument(value, None, 0)
            if first is None:
                return None
            value = first.value
        if type(value) is cst.Name:
            local = self._local(value.value)
            if local is not None:
                return ["l", local]
            qualified = self._names.qualified_name(value)
            if qualified is not None and not self._library(qualified):
                return ["q", qualified]
            if qualified is None and self._stars and not self._names.is_bound(value.value):
                return ["*", value.value]
        elif type(value) is cst.Attribute and type(value.value) is cst.Name:
            klass = self._class_key()
            if value.value.value in ("self", "cls") and klass is not None:
                return ["m", klass, value.attr.value, 0]
            qualified = self._names.qualified_name(value)
            if qualified is not None and not self._library(qualified):
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
        if type(func) is cst.Name:
            local = self._local(func.value)
            klass = self._class_key() if func.value == "cls" else None
            if local is not None:
                self._call(node, ["l", local])
            elif klass is not None:
                # ``cls(...)`` in a classmethod builds the class (``LibriMix.loaders()``
                # makes its datasets so), as ``LibriMix(...)`` would.
                self._call(node, ["q", f"{self._module}.{klass}"])
            elif self._stars and not self._names.is_bound(func.value):
                # ``from models import *`` then ``Net()``: one of the star-imported modules.
                self._call(node, ["*", func.value])
            return
        if type(func) is cst.Subscript and type(func.value) is cst.Call:
            if self._names.qualified_name(func.value.func) == "builtins.globals":
                # ``globals()[name](...)``: any function of this module.
                self._call(node, ["g"])
            return
        if type(func) is cst.Subscript and type(func.value) in _TABLES:
            table = func.value
            if type(table) is cst.Name and table.value in self._registries:
                # ``METRICS[name](...)``: any function registered in that dict.
                self._call(node, ["r", table.value])
                return
            qualified = self._names.qualified_name(table)
            if qualified is not None and not self._library(qualified):
                # ``MODELS[name](...)`` with a table of another project module (imported, or
                # ``models.MODELS``): any function registered there.
                self._call(node, ["t", qualified])
            return
        if type(func) is not cst.Attribute:
            return
        receiver, attr = func.value, func.attr.value
        klass = self._class_key()
        if self._is_work(func):
            self._event(node, "t")
        if attr == "load_state_dict":
            self._weights_loaded(node, receiver)
        typed = self._type_of(receiver)
        if typed is not None:
            method = f"{typed}.{attr}"
            if method in rng.SEEDING_METHODS:
                self._seed(node, rng.FAMILIES)
                deterministic = argument(node, "deterministic")
                if deterministic is None or literal_bool(deterministic.value) is not False:
                    # The trainer's init_seeds(deterministic=True by default) sets
                    # cudnn.deterministic and warn-only deterministic mode.
                    self._event(node, "d", "cudnn")
                    self._event(node, "d", "algorithms")
            elif method in rng.JOB_SUBMITS:
                # The work runs in a cluster job, another process: settings and seeds made
                # here never reach it, nor made by a program that calls this function.
                self._submits_jobs = True
                self._event(node, "j")
            elif not self._library(typed) and typed not in rng.CONFIG_MODELS:
                self._call(node, ["q", method])
        if type(receiver) is cst.Name and receiver.value in ("self", "cls") and klass:
            self._call(node, ["m", klass, attr, 0])
        elif (
            type(receiver) is cst.Call
            and type(receiver.func) is cst.Name
            and receiver.func.value == "super"
            and klass
        ):
            self._call(node, ["m", klass, attr, 1])
        elif attr == "Process" and self._spawn_context(receiver):
            self._process(node, argument(node, "target", 1), "context")
        if not self._scopes and self._open and self._work is None and self._is_work(func):
            self._work = self._index(self._open[0])

    def _spawn_context(self, receiver: cst.BaseExpression) -> bool:
        if type(receiver) is cst.Name:
            return receiver.value in self._spawn_contexts
        if type(receiver) is cst.Call:
            return self._fresh_context(receiver)
        return False

    def _fresh_context(self, call: cst.Call) -> bool:
        if self._names.qualified_name(call.func) not in rng.GET_CONTEXT:
            return False
        arg = argument(call, "method", 0)
        return arg is not None and literal_str(arg.value) in rng.FRESH_START_METHODS

    def _typed_helper(self, func: cst.BaseExpression) -> str | None:
        """A known seeding helper called as a method of an object built from its class in
        this scope (``fabric = Fabric(...)``, then ``fabric.seed_everything(seed)``)."""
        # Most calls of a file are unresolved method calls: the name is checked first.
        if type(func) is not cst.Attribute or func.attr.value != rng.FABRIC_SEED_METHOD:
            return None
        typed = self._type_of(func.value)
        method = None if typed is None else f"{typed}.{rng.FABRIC_SEED_METHOD}"
        return method if method in rng.FABRIC_SEED else None

    def _type_of(self, receiver: cst.BaseExpression) -> str | None:
        """The class a local variable was built from (``model = YOLO(...)``)."""
        if type(receiver) is not cst.Name:
            return None
        return self._types.get(self._function_key(), {}).get(receiver.value)

    def _weights_loaded(self, node: cst.Call, receiver: cst.BaseExpression) -> None:
        """``model.load_state_dict(...)`` (or ``model.module.``...): the random initial
        weights of the model that variable holds are overwritten, if this runs on every
        path that built it (its branches enclose the construction's)."""
        if type(receiver) is cst.Attribute and receiver.attr.value == "module":
            receiver = receiver.value
        name = _holder(receiver)
        if name is None:
            return
        strict = argument(node, "strict", 1)
        if strict is not None and literal_bool(strict.value) is not True:
            return
        key = self._function_key()
        models = self._models.get(key, {})
        # Its parts too: ``model.fc = nn.Linear(...)``, then the whole model's state loaded.
        parts = [part for part in models if part.startswith(f"{name}.")]
        built = models.pop(name, []) + [i for part in parts for i in models.pop(part)]
        if not built:
            return
        here = self._context()
        contexts = self._ctx.get(key, {})
        for index in built:
            if contexts.get(index, [])[: len(here)] == here:
                self._over.setdefault(key, []).append(index)

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

    def _enter_assign(self, targets: Sequence[cst.BaseExpression]) -> None:
        self._ckpt.targets(targets)
        self._targets.append([_target_text(target) for target in targets])
        self._assign_start.append(len(self._funcs.get(self._function_key(), ())))

    def _leave_assign(
        self,
        targets: Sequence[cst.BaseExpression],
        value: cst.BaseExpression | None,
        value_names: set[str] | None = None,
    ) -> None:
        self._targets.pop()
        start = self._assign_start.pop()
        self._ckpt.assign(self._function_key(), targets, value)
        if len(targets) != 1 or value is None:
            return
        name = _holder(targets[0])
        if name is None:
            return
        held = "." in name
        key = self._function_key()
        events = self._funcs.get(key, [])
        built = [i for i in range(start, len(events)) if _builds_model(events[i])]
        models = self._models.setdefault(key, {})
        if held and not built and name not in models:
            # Holds no model before or after (most ``self.x = ...`` of a constructor).
            return
        if value_names is not None and not held:
            mentioned = name in value_names
        else:
            mentioned = _mentions(value, name)
        if mentioned:
            # ``model = DataParallel(model).to(device)``: still the same model.
            if built or name in models:
                models[name] = models.get(name, []) + built
        elif built:
            models[name] = built
        else:
            models.pop(name, None)
        if held:
            return
        types = self._types.setdefault(key, {})
        qualified = None
        if type(value) is cst.Call:
            qualified = self._names.qualified_name(value.func)
        if qualified is not None:
            types[name] = qualified
        elif not mentioned:
            types.pop(name, None)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._data.augmented(node.target)
        self._option_gates.assign([node.target], None, self._class_key())

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._enter_assign([node.target])
        self._option_gates.assign([node.target], node.value, self._class_key())

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._kernels.string(node)
        self._option_gates.string(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._kernels.formatted_string(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._value_names.append(set())
        self._kernels.assign(node)
        self._options.visit_Assign(node)
        self._option_gates.assign(
            [target.target for target in node.targets], node.value, self._class_key()
        )
        self._parse_statement(node)
        self._enter_assign([target.target for target in node.targets])
        for target in node.targets:
            if self._names.qualified_name(target.target) == f"{rng.CUDNN}.deterministic":
                if literal_bool(node.value) is not False:
                    self._event(node, "d", "cudnn")
        if type(node.value) is cst.Call and self._fresh_context(node.value):
            for target in node.targets:
                if type(target.target) is cst.Name:
                    self._spawn_contexts.add(target.target.value)

    def _parse_statement(self, node: cst.Assign) -> None:
        """``args = parser.parse_args()`` as a statement of the ``__main__`` block or of the
        module's top level itself (not nested in a branch or loop)."""
        if self._parsed is not None or len(node.targets) != 1:
            return
        target = node.targets[0].target
        if not (
            type(target) is cst.Name
            and type(node.value) is cst.Call
            and self._options.parses(node.value)
        ):
            return
        depth = 1 if self._function_key() == MODULE else 2
        if self._function_key() not in (MODULE, MAIN) or len(self._open) != depth:
            return
        if depth == 2 and self._open[0].node is not self._main_if:
            return
        self._parsed = [self._index(self._open[-1]), target.value]

    def _seed_option(self) -> list[Json] | None:
        """Where the entry point parses its seed option: [statement, ``args.seed``, whether
        the option defaults to None]."""
        option = self._options.seed_option()
        if self._parsed is None or option is None:
            return None
        statement, name = self._parsed
        return [statement, f"{name}.{option.dest}", option.default_is_none]

    def leave_AssignTarget(self, original_node: cst.AssignTarget) -> None:
        # What the targets name is not the value's.
        self._value_names[-1].clear()

    def leave_Assign(self, original_node: cst.Assign) -> None:
        targets = [target.target for target in original_node.targets]
        self._data.assign(targets, original_node.value, self._function_key())
        self._leave_assign(targets, original_node.value, self._value_names.pop())

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        self._data.assign([original_node.target], original_node.value, self._function_key())
        self._leave_assign([original_node.target], original_node.value)

    def site(self, node: cst.CSTNode) -> CallSite:
        """Where ``node``, being visited, is: its innermost statement (indexed in the
        statement table), its row and indentation, and its top-level statement with the row
        where a helper function can be inserted before it (for the data-loading rules)."""
        innermost = self._open[-1] if self._open else None
        statement = self._index(innermost) if innermost is not None else -1
        top = self._open[0] if self._open else None
        indent = self._indent(innermost.row) if innermost is not None else ""
        inner = innermost.node if innermost is not None else None
        context = tuple((int(branch), int(arm)) for branch, arm in self._context())
        if top is None:
            return CallSite(statement, self.node_row(node), indent, None, 1, context, inner)
        leading: Sequence[cst.EmptyLine] = getattr(top.node, "leading_lines", ())
        blank = 0
        for line in leading:
            if line.comment is not None:
                break
            blank += 1
        # After the blank lines (so the inserted text never starts with a line break, which
        # would join a lone "\r" before it into "\r\n"), before comments and decorators.
        helper_row = top.row - len(leading) + blank
        return CallSite(
            statement, self.node_row(node), indent, top.node, helper_row, context, inner
        )

    def visit_Name(self, node: cst.Name) -> None:
        if self._value_names:
            self._value_names[-1].add(node.value)
        if node.value in self._grad.imported:
            self._grad.name(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._grad.attribute(node)

    def visit_Import(self, node: cst.Import) -> None:
        self._grad.enter_import()
        modules = [dotted_name(alias.name) for alias in node.names]
        self._import(node, modules)

    def leave_Import(self, original_node: cst.Import) -> None:
        self._grad.leave_import()

    def leave_ImportFrom(self, original_node: cst.ImportFrom) -> None:
        self._grad.leave_import()

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._grad.enter_import()
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
        return rng.is_library(qualified, self._own, self._tree)

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
        taken = [name for name in _FIX_NAMES if self._taken(name)]
        anchor = self._anchor or self._end_anchor()
        option = self._options.seed_option()
        data = self._data.summary(None if option is None else (option.dest, option.default_is_none))
        ckpt = self._ckpt.summary()
        grad = self._grad.summary()
        notes = self._positioned_notes()
        return {
            **({"data": data} if data is not None else {}),
            **({"ckpt": ckpt} if ckpt is not None else {}),
            **({"grad": grad} if grad is not None else {}),
            **({"notes": notes} if notes else {}),
            **({"cells": self._cells} if self._cells else {}),
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
            "calls": self._calls,
            "stars": self._stars,
            "ctx": {key: sorted(found.items()) for key, found in self._ctx.items()},
            **self._gate_summary(),
            "over": self._over,
            "sargs": self._seed_texts,
            "registries": self._registries,
            "seed_option": self._seed_option(),
            "fresh_start": self._fresh_start,
            "arguments": self._arguments,
            "jobs": self._submits_jobs,
            "times": self._times,
            "imports": self._imports,
            "anchor": anchor,
            "header": self._header.header().to_json(),
            "bindings": self._bindings,
            "taken": taken,
            "noqa": self._noqa,
            "newline": self._newline,
            "indent": self._default_indent,
        }

    def _gate_summary(self) -> dict[str, Json]:
        """The options gating events (``gates``: per function, [event, options]) and what
        the module turns on (see ``gates.GateFacts``); empty parts are left out."""
        found: dict[str, list[list[Json]]] = {}
        for key, events in self._event_gates.items():
            for index, raw in sorted(events.items()):
                names = self._option_gates.resolve(raw)
                if names:
                    found.setdefault(key, []).append([index, names])
        facts = {k: v for k, v in self._option_gates.summary().items() if v}
        return {**({"gates": found} if found else {}), **facts}

    def _positioned_notes(self) -> dict[str, list[list[Json]]]:
        """The rules' notes by kind: ``[row, column, data]`` (1-based, where a finding at
        the node would be), each once."""
        found: dict[str, list[list[Json]]] = {}
        for note in self._notes:
            # Every node first: one generation pass positions them all.
            if note.statement is not None:
                self._positions.within(note.node, note.statement)
            self._positions.hint(note.node, note.top)
        # Kept records by their text: a list's ``in`` made 40,000 notes (one per op
        # finding) take quadratic time.
        seen: set[tuple[str, int, int, str]] = set()
        for note in self._notes:
            start = self._positions.syntactic(note.node).start
            key = (note.kind, start.line, start.column, repr(note.data))
            if key not in seen:
                seen.add(key)
                found.setdefault(note.kind, []).append([start.line, start.column + 1, note.data])
        return found

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


def _int_arguments(call: cst.Call) -> tuple[bool | None, list[str]]:
    """Whether a call's first positional argument is an int literal (None when it has no
    positional argument), and the keywords it gives int literals."""
    first: bool | None = None
    keywords: list[str] = []
    for arg in call.args:
        if arg.star:
            if first is None and arg.star == "*":
                first = False
            continue
        if arg.keyword is not None:
            if literal_int(arg.value) is not None:
                keywords.append(arg.keyword.value)
        elif first is None:
            first = literal_int(arg.value) is not None
    return first, keywords


def _registries(module: cst.Module) -> dict[str, list[str]]:
    """Module-level dicts that hold functions of the module, so that ``TABLE[name](...)``
    calls one of them: a dict a decorator of the module stores its argument in
    (``TABLE[fn.__name__] = fn``; the functions it decorates are registered), or a dict
    literal of the module's functions (``TABLE = {"a": f}``)."""
    functions = {
        statement.name.value: statement
        for statement in module.body
        if type(statement) is cst.FunctionDef
    }
    assigned: set[str] = set()
    found: dict[str, list[str]] = {}
    for statement in module.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:
            if type(small) is cst.Assign and len(small.targets) == 1:
                target = small.targets[0].target
                if type(target) is cst.Name:
                    assigned.add(target.value)
                    members = _dict_of_functions(small.value, functions)
                    if members:
                        found[target.value] = members
    decorators: dict[str, str] = {}
    for name, function in functions.items():
        table = _stores_argument(function)
        if table is not None and table in assigned:
            decorators[name] = table
    for name, function in functions.items():
        for decorator in function.decorators:
            if type(decorator.decorator) is cst.Name:
                table = decorators.get(decorator.decorator.value)
                if table is not None:
                    found.setdefault(table, []).append(name)
    return found


def _dict_of_functions(
    value: cst.BaseExpression, functions: Mapping[str, cst.FunctionDef]
) -> list[str]:
    """The module functions a dict literal maps to, when all its values are ones."""
    if type(value) is not cst.Dict or not value.elements:
        return []
    members: list[str] = []
    for element in value.elements:
        if not (
            type(element) is cst.DictElement
            and type(element.value) is cst.Name
            and element.value.value in functions
        ):
            return []
        members.append(element.value.value)
    return members


def _stores_argument(function: cst.FunctionDef) -> str | None:
    """The module-level dict a one-parameter decorator stores its argument in
    (``TABLE[...] = fn``), if it does."""
    params = function.params.params
    if len(params) != 1 or type(function.body) is not cst.IndentedBlock:
        return None
    param = params[0].name.value
    for statement in function.body.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:
            if (
                type(small) is cst.Assign
                and len(small.targets) == 1
                and type(small.value) is cst.Name
                and small.value.value == param
            ):
                target = small.targets[0].target
                if type(target) is cst.Subscript and type(target.value) is cst.Name:
                    return target.value.value
    return None


def _plain(node: cst.BaseExpression) -> bool:
    """A value without calls: names, attributes, literal subscripts, integers, sums."""
    if isinstance(node, cst.Name | cst.Integer):
        return True
    if type(node) is cst.Attribute:
        return _plain(node.value)
    if type(node) is cst.Subscript:
        index = node.slice[0].slice if len(node.slice) == 1 else None
        return (
            type(index) is cst.Index
            and isinstance(index.value, cst.SimpleString | cst.Integer)
            and _plain(node.value)
        )
    if type(node) is cst.BinaryOperation and isinstance(node.operator, cst.Add | cst.Subtract):
        return _plain(node.left) and _plain(node.right)
    return False


def _builds_model(event: list[Json]) -> bool:
    """An event that builds a model with random weights: a layer, an init, or a call into
    project code (a constructor or a builder function)."""
    if event[0] == "u":
        return bool(event[1] == "torch" and event[2] in rng.WEIGHTS)
    return bool(event[0] == "c")


def _holder(node: cst.BaseExpression) -> str | None:
    """What a variable that may hold a model is called: ``model``, or ``self.model`` (an
    attribute of a plain name); None for anything else."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute and type(node.value) is cst.Name:
        return f"{node.value.value}.{node.attr.value}"
    return None


def _mentions(node: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` appears in ``node``: as a bare name, or for ``self.model`` as that
    attribute (``_holder``)."""
    kind = cst.Attribute if "." in name else cst.Name
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is kind and _holder(current) == name:
            return True
        stack.extend(code_children(current))
    return False


def _uses_unbound(name: str, text: str) -> bool:
    """Whether ``name.attr`` appears outside import statements (text-level, so a mention in a
    comment or string also counts: the fix is then withheld, never wrong)."""
    if name not in text:
        return False
    # (A pattern that starts with its name is searched for that name first, at memchr speed;
    # one that starts with the lookbehind is tried at every position of the text.)
    if re.search(rf"{re.escape(name)}\s*\.", text) is None:
        return False
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\s*\.")
    if pattern.search(text) is None:  # (no line can match: most files, looked at once)
        return False
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
