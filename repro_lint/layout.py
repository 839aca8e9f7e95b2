"""How a file is laid out, for the text that fixes add to it: its line length (from the file's
formatter configuration), its header (docstring, imports, constants) with the sections and order
of its import block, and where a new import, a new top-level ``def`` or a new keyword argument
goes so that isort/ruff (I001), pycodestyle (E501) and PEP 8's blank lines stay satisfied.

Everything here is plain data and pure functions: the per-file pass builds a ``Header`` from the
CST, the summary collector records the same ``Header`` as JSON for the project pass, and both
place their insertions with the same functions.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libcst as cst

from repro_lint.arguments import equal_like, expression_code
from repro_lint.config import parse_toml

DEFAULT_LINE_LENGTH = 88
# How the community spells a module it imports (ruff's ICN001 defaults): a fix that imports
# one of these uses the alias when the file leaves it free.
CONVENTIONAL_ALIASES = {"numpy": "np"}
# Modules of a package imported from it by name (``from mpi4py import MPI``: ``import mpi4py``
# does not load it).
FROM_IMPORTED = ("mpi4py.MPI",)
_NEWLINE = re.compile(r"\r\n?|\n")

Json = Any


# -- line length --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _toml(path: Path) -> dict[str, Any] | None:
    # Read once per process: the line length and the formatter come from the same files.
    try:
        with path.open("rb") as handle:
            return parse_toml(handle.read())
    except (OSError, ValueError):
        return None


def _positive(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


def _ini_length(path: Path) -> int | None:
    import configparser  # (only where a fix is laid out in a project with such a file)

    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return None
    for section in ("flake8", "pycodestyle"):
        for key in ("max-line-length", "max_line_length"):
            if parser.has_option(section, key):
                found = _positive(parser.get(section, key))
                if found is not None:
                    return found
    return None


# ruff's own files, in the order it prefers them in one directory (before ``pyproject.toml``).
_RUFF_FILES = (".ruff.toml", "ruff.toml")


@functools.lru_cache(maxsize=1024)
def _configured(directory: str) -> tuple[dict[str, Any] | None, bool, dict[str, Any]]:
    """What ``directory`` itself configures, read once for the line length, the formatter
    and ruff's rule selection: ruff's table (None: no ruff configuration there; ruff then
    takes the closest one above), whether that comes from a file of ruff's own (its top
    level, from ``.ruff.toml``, else ``ruff.toml``) rather than ``[tool.ruff]`` in
    ``pyproject.toml``, which ruff reads only without one, and that ``pyproject.toml``'s
    ``[tool]`` table ({} without one; black's settings are there)."""
    base = Path(directory)
    tool: dict[str, Any] = {}
    pyproject = base / "pyproject.toml"
    if pyproject.is_file():
        found = (_toml(pyproject) or {}).get("tool")
        tool = found if isinstance(found, dict) else {}
    for name in _RUFF_FILES:
        if (base / name).is_file():
            return _toml(base / name) or {}, True, tool
    ruff = tool.get("ruff")
    return (ruff if isinstance(ruff, dict) else None), False, tool


@functools.lru_cache(maxsize=1024)
def _directory_setting(directory: str) -> tuple[int | None, bool]:
    """The line length configured in ``directory`` itself, and whether a ruff configuration
    there ends the search (ruff takes the closest one, with its default of 88)."""
    ruff, own_file, tool = _configured(directory)
    if ruff is not None and own_file:
        return _positive(ruff.get("line-length")), True
    for section in (ruff, tool.get("black")):
        if isinstance(section, dict):
            found = _positive(section.get("line-length"))
            if found is not None:
                return found, True
    base = Path(directory)
    for name in (".flake8", "setup.cfg", "tox.ini"):
        if (base / name).is_file():
            found = _ini_length(base / name)
            if found is not None:
                return found, True
    return None, ruff is not None


def line_length(path: Path | None) -> int:
    """The line length of the file at ``path``: the closest ruff (``line-length``), black
    (``[tool.black] line-length``) or flake8/pycodestyle (``max-line-length`` in .flake8,
    setup.cfg or tox.ini) setting at or above it, up to its repository root; else 88."""
    for candidate in _directories(path):
        found, final = _directory_setting(str(candidate))
        if found is not None:
            return found
        if final:
            break
    return DEFAULT_LINE_LENGTH


def _directories(path: Path | None) -> Iterator[Path]:
    """The directory of the file at ``path`` and those above it, up to its repository root
    (the first with a ``.git``)."""
    if path is None:
        return
    try:
        directory = Path(os.path.abspath(path)).parent
    except (OSError, ValueError):
        return
    for candidate in (directory, *directory.parents):
        yield candidate
        if (candidate / ".git").exists():
            return


# The rules ruff checks where nothing selects any (its ``lint.select`` default).
RUFF_DEFAULT_SELECT = ("E4", "E7", "E9", "F")


def _lint_settings(table: dict[str, Any]) -> dict[str, Any]:
    """The rule selection of a ruff configuration table: its top-level keys (the old
    spelling), then its ``lint`` table's."""
    found: dict[str, Any] = {
        k: table[k] for k in ("select", "extend-select", "ignore") if k in table
    }
    lint = table.get("lint")
    if isinstance(lint, dict):
        found.update({k: lint[k] for k in ("select", "extend-select", "ignore") if k in lint})
    return found


@functools.lru_cache(maxsize=1024)
def _directory_ruff(directory: str) -> dict[str, Any] | None:
    """The rule selection of a ruff configuration in ``directory`` itself (None: none there;
    ruff takes the closest one)."""
    ruff = _configured(directory)[0]
    return None if ruff is None else _lint_settings(ruff)


def _specificity(selector: str, code: str) -> int | None:
    """How closely a rule selector (``ALL``, ``NPY``, ``NPY002``) matches ``code``: the
    length of its prefix, 0 for ``ALL``; None when it does not."""
    if selector == "ALL":
        return 0
    return len(selector) if code.startswith(selector) else None


def ruff_checks(path: Path | None, code: str) -> bool:
    """Whether ruff checks rule ``code`` in the file at ``path``, configured by the closest
    ruff configuration at or above it, up to its repository root (``ruff.toml``,
    ``.ruff.toml`` or ``[tool.ruff]``; ruff's default selection without one): some
    ``select``/``extend-select`` selector matches it, and no ``ignore`` selector matches it
    as closely. A ``# noqa`` for a rule ruff does not check is noise (and ruff's RUF100
    reports it as unused). Per-file ignores and inherited configurations (``extend``) are
    not read."""
    settings: dict[str, Any] = {}
    for candidate in _directories(path):
        found = _directory_ruff(str(candidate))
        if found is not None:
            settings = found
            break
    select = settings.get("select")
    selectors = [*(select if isinstance(select, list) else RUFF_DEFAULT_SELECT)]
    extend = settings.get("extend-select")
    selectors += extend if isinstance(extend, list) else []
    matches = [m for m in (_specificity(str(s), code) for s in selectors) if m is not None]
    if not matches:
        return False
    ignore = settings.get("ignore")
    ignored = [
        m
        for m in (_specificity(str(s), code) for s in (ignore if isinstance(ignore, list) else []))
        if m is not None
    ]
    return not any(m >= max(matches) for m in ignored)


_FORMATTER_HOOK = re.compile(r"^\s*-?\s*id:\s*['\"]?(black|ruff-format)\b", re.M)


@functools.lru_cache(maxsize=1024)
def _directory_formatter(directory: str) -> bool:
    """Whether ``directory`` itself configures black or ruff's formatter: a ``[tool.black]``
    table, a ``format`` table in ruff's configuration (``[tool.ruff.format]``; ``[format]``
    in ruff's own files), or a pre-commit hook running either."""
    ruff, _, tool = _configured(directory)
    if isinstance(tool.get("black"), dict) or (
        ruff is not None and isinstance(ruff.get("format"), dict)
    ):
        return True
    hooks = Path(directory) / ".pre-commit-config.yaml"
    if hooks.is_file():
        try:
            text = hooks.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        return _FORMATTER_HOOK.search(text) is not None
    return False


def formatted(path: Path | None) -> bool:
    """Whether the file at ``path`` belongs to a project formatted by black or ruff (a
    configuration at or above it, up to its repository root): a call a fix breaks is then
    laid out as they lay it out, never aligned with its opening parenthesis."""
    return any(_directory_formatter(str(candidate)) for candidate in _directories(path))


# -- the header of a module -------------------------------------------------------------------

DOC, FUTURE, IMPORT, CONST, DEF, OTHER = "doc", "future", "import", "const", "def", "other"
# A statement that changes the environment or the import path between imports
# (``os.environ[...] = ...``, ``os.environ.setdefault(...)``, ``sys.path.insert(...)``): the
# imports after it still open the module (pycodestyle's E402 allows them, as ruff does).
# Silencing warnings before noisy imports (``warnings.simplefilter(...)``) is set-up too: the
# imports after it are the module's imports all the same.
SETUP = "setup"
# A call on an imported module between two imports (``os.makedirs(...)``,
# ``matplotlib.use("Agg")``): the imports after it still belong to the module's opening.
INTERLUDE = "interlude"
_HEADER_KINDS = frozenset({DOC, FUTURE, IMPORT, CONST, SETUP, INTERLUDE})
# The objects whose changes count as set-up: module, attribute.
_SETUP_OBJECTS = frozenset(
    {
        ("os", "environ"),
        ("sys", "path"),
        ("warnings", "filterwarnings"),
        ("warnings", "simplefilter"),
    }
)


@dataclass(frozen=True, slots=True)
class ImportName:
    """One name an import statement brings in: ``import module [as asname]`` or, with
    ``is_from``, ``from module import ...`` (``level`` leading dots)."""

    module: str
    asname: str | None = None
    level: int = 0
    is_from: bool = False
    # The name a ``from`` import a fix adds brings in (the header's own imports leave it out).
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Statement:
    """A top-level statement of the header: ``lead`` is the first row of the blank lines and
    comments above it, ``text`` the first row after those blank lines (its first comment, or
    the statement), ``row`` its own first row (a decorator's), ``end`` its last row."""

    lead: int
    text: int
    row: int
    end: int
    kind: str
    imports: tuple[ImportName, ...] = ()

    def to_json(self) -> list[Json]:
        names = [[i.module, i.asname, i.level, int(i.is_from)] for i in self.imports]
        return [self.lead, self.text, self.row, self.end, self.kind, names]

    @classmethod
    def from_json(cls, data: Sequence[Json]) -> Statement:
        lead, text, row, end, kind, names = data
        imports = tuple(
            ImportName(str(m), None if a is None else str(a), int(lv), bool(f))
            for m, a, lv, f in names
        )
        return cls(int(lead), int(text), int(row), int(end), str(kind), imports)


@dataclass(frozen=True)
class Header:
    """A module's header statements (docstring, ``__future__`` imports, imports, constants) in
    order, and the statement that ends the header (None: the file ends first)."""

    statements: tuple[Statement, ...]
    after: Statement | None

    def to_json(self) -> list[Json]:
        return [
            [s.to_json() for s in self.statements],
            None if self.after is None else self.after.to_json(),
        ]

    @classmethod
    def from_json(cls, data: Json) -> Header:
        if not data:
            return cls((), None)
        statements, after = data
        return cls(
            tuple(Statement.from_json(s) for s in statements),
            None if after is None else Statement.from_json(after),
        )


def is_docstring(node: cst.CSTNode) -> bool:
    """Whether a statement is a lone string (a docstring where it opens a block)."""
    return (
        type(node) is cst.SimpleStatementLine
        and len(node.body) == 1
        and type(node.body[0]) is cst.Expr
        and isinstance(node.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def is_future_import(node: cst.CSTNode) -> bool:
    """Whether a statement imports from ``__future__``."""
    return type(node) is cst.SimpleStatementLine and any(
        type(small) is cst.ImportFrom
        and type(small.module) is cst.Name
        and small.module.value == "__future__"
        for small in node.body
    )


class _HasCall(cst.CSTVisitor):
    found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = True
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.found = True
        return False


def _dotted(node: cst.BaseExpression) -> str:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _import_names(node: cst.Import | cst.ImportFrom) -> tuple[ImportName, ...]:
    if isinstance(node, cst.Import):
        out = []
        for alias in node.names:
            asname = alias.asname.name if alias.asname is not None else None
            out.append(
                ImportName(_dotted(alias.name), asname.value if type(asname) is cst.Name else None)
            )
        return tuple(out)
    module = _dotted(node.module) if node.module is not None else ""
    return (ImportName(module, None, len(node.relative), True),)


def _setup_object(node: cst.BaseExpression, imported: Sequence[ImportName]) -> bool:
    """Whether ``node`` is ``os.environ`` or ``sys.path`` (the module as the file imports it:
    ``import os``, ``import os as o``), possibly subscripted or with a method looked up."""
    while isinstance(node, cst.Subscript | cst.Attribute):
        if type(node) is cst.Attribute and type(node.value) is cst.Name:
            for name in imported:
                module = name.module if name.asname else name.module.split(".")[0]
                if not name.is_from and (name.asname or module) == node.value.value:
                    return (module, node.attr.value) in _SETUP_OBJECTS
            return False
        node = node.value
    return False


def _is_setup(node: cst.SimpleStatementLine, imported: Sequence[ImportName]) -> bool:
    for small in node.body:
        if type(small) is cst.Expr and type(small.value) is cst.Call:
            target: cst.BaseExpression = small.value.func
            if type(target) is not cst.Attribute:
                return False
        elif type(small) is cst.Assign and len(small.targets) == 1:
            target = small.targets[0].target
            if type(target) is not cst.Subscript:
                return False
        else:
            return False
        if not _setup_object(target, imported):
            return False
    return True


def _calls_module(node: cst.CSTNode, imported: Sequence[ImportName]) -> bool:
    """Whether a statement only calls functions of imported modules (``os.makedirs
    (...)``, ``matplotlib.use("Agg")``)."""
    if type(node) is not cst.SimpleStatementLine:
        return False
    modules = {n.asname or n.module.split(".")[0] for n in imported if not n.is_from}
    for small in node.body:
        if not (type(small) is cst.Expr and type(small.value) is cst.Call):
            return False
        func: cst.BaseExpression = small.value.func
        if type(func) is not cst.Attribute:
            return False
        while type(func) is cst.Attribute:
            func = func.value
        if not (type(func) is cst.Name and func.value in modules):
            return False
    return True


def statement_kind(
    node: cst.CSTNode, first: bool, imported: Sequence[ImportName] = ()
) -> tuple[str, tuple[ImportName, ...]]:
    """What a top-level statement is to the header, and the names it imports (``imported``:
    the names the statements before it import)."""
    if first and is_docstring(node):
        return DOC, ()
    if isinstance(node, cst.FunctionDef | cst.ClassDef):
        return DEF, ()
    if type(node) is not cst.SimpleStatementLine:
        return OTHER, ()
    if all(isinstance(s, cst.Import | cst.ImportFrom) for s in node.body):
        names = tuple(
            n
            for s in node.body
            if isinstance(s, cst.Import | cst.ImportFrom)
            for n in _import_names(s)
        )
        future = all(n.is_from and n.module == "__future__" and not n.level for n in names)
        return (FUTURE if future else IMPORT), names
    if _is_setup(node, imported):
        return SETUP, ()
    for small in node.body:
        if type(small) is cst.Assign:
            targets: list[cst.BaseExpression] = [t.target for t in small.targets]
            value: cst.BaseExpression | None = small.value
        elif type(small) is cst.AnnAssign:
            targets, value = [small.target], small.value
        else:
            return OTHER, ()
        if value is None or not all(type(t) is cst.Name for t in targets):
            return OTHER, ()
        finder = _HasCall()
        value.visit(finder)
        if finder.found:
            return OTHER, ()
    return CONST, ()


class HeaderRecorder:
    """Builds a ``Header`` from top-level statements seen in order (the summary collector
    feeds it during its traversal): ``enter`` with a statement's rows, ``leave`` with its last
    row. It stops listening once the header has ended."""

    def __init__(self) -> None:
        self._statements: list[Statement] = []
        self._imported: list[ImportName] = []
        self._after: Statement | None = None
        self._open: tuple[int, int, int, str, tuple[ImportName, ...]] | None = None
        # A call on an imported module after an import: an interlude if an import follows.
        self._held: Statement | None = None
        self.done = False

    def enter(self, node: cst.CSTNode, lead: int, leading: Sequence[cst.EmptyLine]) -> None:
        if self.done:
            return
        kind, names = statement_kind(node, first=not self._statements, imported=self._imported)
        text = lead + _blank_prefix(leading)
        row = lead + len(leading)
        held, self._held = self._held, None
        if held is not None:
            if kind not in (FUTURE, IMPORT):
                self._after, self.done = held, True
                return
            self._statements.append(dataclasses.replace(held, kind=INTERLUDE))
        if kind not in _HEADER_KINDS:
            if self._imported and _calls_module(node, self._imported):
                self._held = Statement(lead, text, row, row, kind)
                return
            self._after = Statement(lead, text, row, row, kind)
            self.done = True
            return
        self._open = (lead, text, row, kind, names)

    def leave(self, end: int) -> None:
        if self._held is not None and self._held.end < end:
            self._held = dataclasses.replace(self._held, end=end)
        if self._open is None:
            return
        lead, text, row, kind, names = self._open
        self._statements.append(Statement(lead, text, row, max(end, row), kind, names))
        self._imported.extend(names)
        self._open = None

    def header(self) -> Header:
        return Header(tuple(self._statements), self._after or self._held)


def _blank_prefix(leading: Sequence[cst.EmptyLine]) -> int:
    count = 0
    for line in leading:
        if line.comment is not None:
            break
        count += 1
    return count


# A notebook is linted as one module of its code cells (``notebooks``): each cell opens with a
# marker comment line, and each IPython line of it is a ``pass`` placeholder with a comment.
# Code a fix inserts must stay in the cell it is for, after the IPython lines a cell opens
# with (a cell magic such as ``%%capture`` must stay the cell's first line).
CELL_MARKER = re.compile(r"# repro-lint-\d+:cell:\d+")
IPYTHON_PLACEHOLDER = re.compile(r"# repro-lint-\d+:magic:\d+")


def is_joined_notebook(text: str) -> bool:
    """Whether ``text`` is a notebook's joined module: its first line is a cell marker."""
    found = CELL_MARKER.match(text)
    return found is not None and text[found.end() : found.end() + 1] in ("\n", "\r", "")


def is_cell_marker(line: cst.EmptyLine) -> bool:
    return line.comment is not None and CELL_MARKER.fullmatch(line.comment.value) is not None


def describing_comments(leading: Sequence[cst.EmptyLine]) -> int:
    """How many comment lines come right before a statement (no blank line between): they
    describe it, so code inserted before the statement goes above them. A notebook's cell
    marker describes nothing: the count stops there (code above it would be in another cell)."""
    count = 0
    for line in reversed(leading):
        if line.comment is None or is_cell_marker(line):
            break
        count += 1
    return count


def _is_placeholder(node: cst.CSTNode) -> bool:
    """Whether a statement stands for an IPython line of a notebook's cell."""
    if type(node) is not cst.SimpleStatementLine or len(node.body) != 1:
        return False
    comment = node.trailing_whitespace.comment
    return (
        type(node.body[0]) is cst.Pass
        and comment is not None
        and IPYTHON_PLACEHOLDER.fullmatch(comment.value) is not None
    )


@dataclass(frozen=True, slots=True)
class Cell:
    """A notebook's code cell in its joined module: ``first`` its first row (after its marker
    line), ``start`` its first row after the IPython lines it opens with, and ``header`` the
    opening of its own code (imports, constants) after those lines, as a module's header is
    the opening of a file. Comment lines right above its first statement are that
    statement's (imports go above them, as isort puts them), never the cell before's."""

    first: int
    start: int
    header: Header

    @property
    def header_end(self) -> int:
        """The row after the cell's header (its start when the header holds no statement):
        where an import goes when no statement follows the header."""
        return self.header.statements[-1].end + 1 if self.header.statements else self.start

    def to_json(self) -> list[Json]:
        return [self.first, self.start, self.header.to_json()]

    @classmethod
    def from_json(cls, data: Sequence[Json]) -> Cell:
        first, start, header = data
        return cls(int(first), int(start), Header.from_json(header))


def _marker_rows(lines: Sequence[cst.EmptyLine], row: int) -> list[int]:
    """The rows of the cell markers among ``lines``, which start at ``row``."""
    return [row + index for index, line in enumerate(lines) if is_cell_marker(line)]


def cell_headers(module: cst.Module) -> tuple[Cell, ...]:
    """The code cells of a notebook's joined module, in order; none for a Python file. A cell
    without a statement has no header worth the name and no fix puts code in it, but it is
    listed all the same (it ends the cell before)."""
    row = 1
    cells: list[Cell] = []
    recorder: HeaderRecorder | None = None
    first = start = 0
    opening = False  # still among the IPython lines the current cell opens with

    def close() -> None:
        if recorder is not None:
            cells.append(Cell(first, start, recorder.header()))

    for marker in _marker_rows(module.header, row):
        close()
        recorder, first, start, opening = HeaderRecorder(), marker + 1, marker + 1, True
    row += sum(len(_NEWLINE.findall(module.code_for_node(line))) for line in module.header)
    for statement in module.body:
        leading: Sequence[cst.EmptyLine] = getattr(statement, "leading_lines", ())
        lead = row
        for marker in _marker_rows(leading, row):
            close()
            recorder, first, start, opening = HeaderRecorder(), marker + 1, marker + 1, True
            leading = leading[marker + 1 - lead :]
            lead = marker + 1
        if recorder is None:
            return ()  # not a notebook: its first line is no marker
        lines = len(_NEWLINE.findall(module.code_for_node(statement)))
        end = row + max(lines, 1) - 1
        if opening and _is_placeholder(statement):
            start = end + 1
        else:
            opening = False
            recorder.enter(statement, lead, leading)
            if not recorder.done:
                recorder.leave(end)
        row += lines
    for marker in _marker_rows(module.footer, row):
        close()
        recorder, first, start = HeaderRecorder(), marker + 1, marker + 1
    close()
    return tuple(cells)


def cell_at(cells: Sequence[Cell], row: int) -> Cell | None:
    """The cell that holds ``row`` (None without cells)."""
    found = None
    for cell in cells:
        if cell.first > row:
            break
        found = cell
    return found


def header_of(module: cst.Module) -> Header:
    """The header of a parsed module (rows counted from the code of its statements)."""
    recorder = HeaderRecorder()
    row = 1 + sum(len(_NEWLINE.findall(module.code_for_node(line))) for line in module.header)
    for statement in module.body:
        leading: Sequence[cst.EmptyLine] = getattr(statement, "leading_lines", ())
        recorder.enter(statement, row, leading)
        if recorder.done:
            break
        lines = len(_NEWLINE.findall(module.code_for_node(statement)))
        recorder.leave(row + max(lines, 1) - 1)
        row += lines
    return recorder.header()


# -- import sections and order (isort's and ruff's defaults) -------------------------------------

SECTION_FUTURE, SECTION_STDLIB, SECTION_THIRD, SECTION_FIRST, SECTION_LOCAL = range(5)
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__future__"}


def first_party_finder(path: Path | None, root: Path | None) -> Callable[[str], bool]:
    """Whether a top-level module name is the project's own: a package or module beside the
    file, at the project root or under its ``src/`` (ruff's default ``src``)."""
    bases: list[Path] = []
    if path is not None:
        bases.append(Path(os.path.abspath(path)).parent)
    if root is not None:
        bases.extend((Path(root), Path(root) / "src"))

    @functools.lru_cache(maxsize=256)
    def first_party(top: str) -> bool:
        return any((b / top).is_dir() or (b / f"{top}.py").is_file() for b in bases)

    return first_party


def section_of(name: ImportName, first_party: Callable[[str], bool]) -> int:
    if name.level:
        return SECTION_LOCAL
    top = name.module.split(".", 1)[0]
    if name.module == "__future__":
        return SECTION_FUTURE
    if top in _STDLIB:
        return SECTION_STDLIB
    return SECTION_FIRST if first_party(top) else SECTION_THIRD


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part)
        for part in re.findall(r"\d+|\D+", text.lower())
    )


def _order(name: ImportName) -> tuple[Any, ...]:
    # Within a section, ``import x`` lines come before ``from x import y`` lines, each sorted
    # by module name case-insensitively (isort's and ruff's defaults).
    return (name.is_from, _natural(name.module), name.asname is not None, name.asname or "")


def _module_first(name: ImportName) -> tuple[Any, ...]:
    # ``import x`` and ``from x import y`` lines sorted together by module name
    # (isort's ``force_sort_within_sections``).
    return (_natural(name.module), name.is_from, name.asname or "")


def _case_sensitive(name: ImportName) -> tuple[Any, ...]:
    # The same, with capitals first (``from PIL import Image`` above ``import blobfile``).
    return (name.module, name.is_from, name.asname or "")


def _section_order(statements: Sequence[Statement]) -> Callable[[ImportName], tuple[Any, ...]]:
    """The order a section's imports keep: isort's default where they keep it (or too few
    to tell), else the first of the other usual orders that they keep."""
    for key in (_order, _module_first, _case_sensitive):
        firsts = [min(key(n) for n in s.imports) for s in statements]
        if firsts == sorted(firsts):
            return key
    return _order


def import_text(name: ImportName) -> str:
    alias = f" as {name.asname}" if name.asname else ""
    if name.is_from and name.name:
        return f"from {name.module} import {name.name}{alias}"
    return f"import {name.module}{alias}"


def parse_import(text: str) -> ImportName:
    """``"numpy"``, ``"numpy as np"`` or ``"from mpi4py import MPI"`` (how summaries name the
    imports a fix adds)."""
    text, _, asname = text.partition(" as ")
    if text.startswith("from "):
        module, _, name = text[len("from ") :].partition(" import ")
        return ImportName(module.strip(), asname.strip() or None, is_from=True, name=name.strip())
    return ImportName(text.strip(), asname.strip() or None)


def bound_name(name: ImportName) -> str:
    """The name an import a fix adds binds (``np`` for ``numpy as np``, ``MPI`` for ``from
    mpi4py import MPI``; the module's dotted name for a plain import)."""
    return name.asname or name.name or name.module


@dataclass(frozen=True, slots=True)
class Placement:
    """Text to insert at (row, column) (both 1-based)."""

    row: int
    column: int
    text: str


def place_import(
    header: Header,
    name: ImportName,
    newline: str,
    first_party: Callable[[str], bool],
    end: tuple[int, int, str] | None = None,
) -> Placement:
    """Where ``import name`` goes: in its section of the module's first import block, in
    sorted order; a new section goes after the sections before it, with a blank line between.
    Without imports it goes after the docstring and ``__future__`` imports. ``end`` is where a
    file without a statement after its header ends (row, column, text to start with)."""
    statement = import_text(name) + newline
    block = _import_block(header)
    wanted = section_of(name, first_party)
    sections = [(min(section_of(n, first_party) for n in s.imports), s) for s in block if s.imports]
    same = [s for section, s in sections if section == wanted]
    if same:
        order = _section_order(same)
        key = order(name)
        later = [s for s in same if min(order(n) for n in s.imports) > key]
        if later:
            return Placement(later[0].text, 1, statement)
        return Placement(same[-1].end + 1, 1, statement)
    before = [s for section, s in sections if section < wanted]
    if before:
        return Placement(before[-1].end + 1, 1, newline + statement)
    after = [s for section, s in sections if section > wanted]
    if after:
        return Placement(after[0].text, 1, statement + newline)
    # No import block: after the docstring (and any __future__ import, which ``before`` has).
    following = next((s for s in header.statements if s.kind != DOC), header.after)
    if following is None:
        last = header.statements[-1] if header.statements else None
        if end is not None:
            row, column, lead = end
            return Placement(row, column, lead + (newline if last else "") + statement)
        return Placement((last.end + 1) if last else 1, 1, (newline if last else "") + statement)
    gap = newline * (2 if following.kind == DEF else 1)
    return Placement(following.text, 1, statement + gap)


def _import_block(header: Header) -> list[Statement]:
    """The header's first run of import statements (``__future__`` imports included)."""
    block: list[Statement] = []
    for statement in header.statements:
        if statement.kind in (FUTURE, IMPORT):
            block.append(statement)
        elif block:
            break
    return block


def import_edits(
    header: Header,
    names: Iterable[ImportName],
    newline: str,
    first_party: Callable[[str], bool],
    end: tuple[int, int, str] | None = None,
) -> list[Placement]:
    """Placements for several imports; imports that land on the same spot are joined in
    section and sorted order, with a blank line between sections."""
    merged: dict[tuple[int, int], list[tuple[int, Any, Placement]]] = {}
    for name in names:
        placement = place_import(header, name, newline, first_party, end)
        section = section_of(name, first_party)
        merged.setdefault((placement.row, placement.column), []).append(
            (section, _order(name), placement)
        )
    out = []
    for (row, column), found in sorted(merged.items()):
        found.sort(key=lambda item: item[:2])
        if len(found) == 1:
            out.append(found[0][2])
            continue
        # Several new lines at one spot: a new section starts with a blank line (a text that
        # starts with one), a section before existing ones ends with one.
        text = newline if found[0][2].text.startswith(newline) else ""
        previous = found[0][0]
        for section, _, placement in found:
            if section != previous:
                text += newline
                previous = section
            text += placement.text.strip("\r\n") + newline
        if found[-1][2].text.endswith(newline * 2):
            text += newline
        out.append(Placement(row, column, text))
    return out


def after_imports(header: Header, row: int) -> bool:
    """Whether ``row`` is the line right after one of the module's import blocks (a run of
    imports, which a set-up statement or a constant may end; code inserted there needs a
    blank line before it, or isort reports the block)."""
    statements = header.statements
    return any(
        statement.kind in (FUTURE, IMPORT)
        and statement.end + 1 == row
        and (index + 1 == len(statements) or statements[index + 1].kind not in (FUTURE, IMPORT))
        for index, statement in enumerate(statements)
    )


def place_definition(header: Header, lines: Sequence[str], newline: str) -> Placement:
    """Where a new top-level function goes: after the imports and constants that open the
    module, with two blank lines before and after it (PEP 8)."""
    body = "".join(line + newline if line else newline for line in lines)
    after = header.after
    if not header.statements:
        row = after.text if after is not None else 1
        return Placement(row, 1, body + newline * 2)
    last = header.statements[-1]
    row = last.end + 1
    if after is None:
        return Placement(row, 1, newline * 2 + body)
    blank = after.text - row
    return Placement(row, 1, newline * 2 + body + newline * max(0, 2 - blank))


# -- a call that gains keyword arguments ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Room:
    """Where a call sits in its file: ``column`` (0-based) where it starts on its first line,
    ``indent`` the leading whitespace of that line, ``block`` the indentation of the statement
    holding it, ``tail`` how many characters follow it on its last line, and the file's
    ``width`` (line length); ``formatted`` when black or ruff formats the project
    (``formatted``)."""

    column: int
    indent: str
    block: str
    tail: int
    width: int = DEFAULT_LINE_LENGTH
    formatted: bool = False


def _line_break(indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        empty_lines=[],
        indent=False,
        last_line=cst.SimpleWhitespace(indent),
    )


def _has_break(whitespace: cst.BaseParenthesizableWhitespace | cst.MaybeSentinel) -> bool:
    return type(whitespace) is cst.ParenthesizedWhitespace


def _continuation(whitespace: cst.ParenthesizedWhitespace, block: str) -> str:
    return (block if whitespace.indent else "") + whitespace.last_line.value


def _bare(whitespace: cst.BaseParenthesizableWhitespace) -> cst.BaseParenthesizableWhitespace:
    """A line break with ``whitespace``'s indentation, without what its first line holds (a
    comment, trailing spaces) or the blank lines after it."""
    if type(whitespace) is not cst.ParenthesizedWhitespace:
        return whitespace
    return whitespace.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])


def _ending(
    original: cst.BaseParenthesizableWhitespace, separator: cst.BaseParenthesizableWhitespace
) -> cst.BaseParenthesizableWhitespace:
    """What follows the old last argument once a new one comes after it on a new line: its
    line keeps what it ended with (a comment stays with the argument it describes), and the
    next line starts at the separator's indentation."""
    if (
        type(original) is cst.ParenthesizedWhitespace
        and type(separator) is cst.ParenthesizedWhitespace
    ):
        return original.with_changes(indent=separator.indent, last_line=separator.last_line)
    return separator


def _append(
    call: cst.Call, extras: Sequence[cst.Arg], separator: cst.BaseParenthesizableWhitespace
) -> cst.Call:
    """``call`` with ``extras`` appended, each after ``separator`` (whose own comment, if it
    has one, is not copied); a trailing comma stays, a comment on the last argument's line
    stays there, and the closing parenthesis keeps its place."""
    args = list(call.args)
    if not args:
        return call.with_changes(args=list(extras))
    separator = _bare(separator)
    last = args[-1]
    fresh = [
        extra.with_changes(
            comma=cst.Comma(whitespace_after=separator),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        for extra in extras
    ]
    if type(last.comma) is cst.Comma:
        after = last.comma.whitespace_after
        args[-1] = last.with_changes(
            comma=last.comma.with_changes(whitespace_after=_ending(after, separator))
        )
        closing = _bare(after) if type(separator) is cst.ParenthesizedWhitespace else after
        fresh[-1] = fresh[-1].with_changes(comma=last.comma.with_changes(whitespace_after=closing))
    else:
        after = last.whitespace_after_arg
        if type(separator) is cst.ParenthesizedWhitespace:
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=_ending(after, separator)),
                whitespace_after_arg=cst.SimpleWhitespace(""),
            )
            closing = _bare(after)
        else:
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=separator),
                whitespace_after_arg=cst.SimpleWhitespace(""),
            )
            closing = after
        fresh[-1] = fresh[-1].with_changes(
            comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=closing
        )
    return call.with_changes(args=[*args, *fresh])


def append_inline(call: cst.Call, extras: Sequence[cst.Arg]) -> cst.Call:
    """``call`` with ``extras`` appended on its last line (``f(a, b=1)``)."""
    return _append(call, extras, cst.SimpleWhitespace(" "))


def _vertical(call: cst.Call) -> cst.BaseParenthesizableWhitespace | None:
    """The line break between arguments of a call written one argument per line."""
    args = call.args
    if not args or not _has_break(call.whitespace_before_args):
        return None
    if len(args) == 1:
        # ``f(\n    a\n)``: one argument on its own line, the parenthesis on the next.
        only = args[0]
        closing = (
            only.comma.whitespace_after if type(only.comma) is cst.Comma else None
        ) or only.whitespace_after_arg
        return call.whitespace_before_args if _has_break(closing) else None
    separators = [arg.comma.whitespace_after for arg in args[:-1] if type(arg.comma) is cst.Comma]
    if len(separators) != len(args) - 1 or not all(_has_break(s) for s in separators):
        return None
    return separators[-1]


def _last_line_indent(call: cst.Call, block: str) -> str | None:
    """The indentation of the line the last argument starts on, when that is a continuation
    line of the call (None when it is the call's first line)."""
    for arg in reversed(call.args[:-1]):
        if (
            type(arg.comma) is cst.Comma
            and type(arg.comma.whitespace_after) is cst.ParenthesizedWhitespace
        ):
            return _continuation(arg.comma.whitespace_after, block)
    before = call.whitespace_before_args
    if type(before) is cst.ParenthesizedWhitespace:
        return _continuation(before, block)
    return None


def fit_call(module: cst.Module, call: cst.Call, extras: Sequence[cst.Arg], room: Room) -> str:
    """The code of ``call`` with ``extras`` appended, laid out the way the call already is: a
    call written one argument per line, or whose last argument starts a line, gets one more
    line; otherwise the new arguments go on the last line when it stays within the line
    length, else on a new line indented like the arguments above (or aligned with the opening
    parenthesis); a call with no room for that either is exploded as black would. A new
    keyword argument is spaced as the call's own are (``equal_like``)."""

    def code(node: cst.Call) -> str:
        return expression_code(module, node, room.block)

    before = _lines(code(call), room)
    equal = equal_like(call)
    extras = [
        extra.with_changes(equal=equal) if type(extra.equal) is cst.AssignEqual else extra
        for extra in extras
    ]

    def fits(node: cst.Call) -> tuple[bool, str]:
        # A line may stay as long as it was (say a long first line that now ends in a comma),
        # but no line grows beyond the line length.
        text = code(node)
        lines = _lines(text, room)
        ok = all(
            len(line) <= room.width or (index < len(before) and len(line) <= len(before[index]))
            for index, line in enumerate(lines)
        )
        return ok, text

    vertical = _vertical(call)
    if vertical is not None:
        return code(_append(call, extras, vertical))
    args = call.args
    if (
        len(args) >= 2
        and type(args[-2].comma) is cst.Comma
        and _has_break(args[-2].comma.whitespace_after)
    ):
        # The last argument starts a line of its own: so does the new one.
        return code(_append(call, extras, args[-2].comma.whitespace_after))
    ok, inline = fits(append_inline(call, extras))
    if ok:
        return inline
    # In a project black or ruff formats, their layout (where the call is theirs to redo).
    flat = _flattened(module, call) if room.formatted else None
    if flat is not None:
        call = flat
    indent = None if flat is not None else _last_line_indent(call, room.block)
    if indent is None and flat is None:
        func = module.code_for_node(call.func) + module.code_for_node(call.whitespace_after_func)
        if "\n" not in func and "\r" not in func:
            # Aligned with the opening parenthesis: the line's own leading whitespace (a tab
            # stays a tab), then spaces up to the column.
            lead = room.indent if room.column >= len(room.indent) else ""
            indent = lead + " " * (room.column - len(lead) + len(func) + 1)
    if indent is not None:
        ok, broken = fits(_append(call, extras, _line_break(indent)))
        if ok or _has_break(call.whitespace_before_args) or _any_break(call):
            return broken
    # Everything on the first line and no room to align: the arguments on a line of their
    # own below the call, or one per line with a trailing comma (black's layout).
    inner = room.indent + (module.default_indent if module.default_indent.strip() == "" else "    ")
    packed = _append(
        call.with_changes(whitespace_before_args=_line_break(inner)),
        extras,
        cst.SimpleWhitespace(" "),
    )
    packed = _close_on_own_line(packed, room.indent)
    ok, text = fits(packed)
    if ok:
        return text
    exploded = call.with_changes(whitespace_before_args=_line_break(inner))
    exploded = _append(exploded, extras, _line_break(inner))
    exploded = _one_per_line(exploded, inner, room.indent)
    return code(exploded)


def wrapper_fits(module: cst.Module, call: cst.Call, room: Room) -> str | None:
    """The code of ``call``, a call that wraps the one-line expression at ``room`` (``sorted(x)``
    replacing ``x``), when it stays on one line: within the line length, or on a line that was
    already longer than that. None when the line would pass the line length."""
    text = expression_code(module, call, room.block)
    was = room.column + len(module.code_for_node(call.args[0].value)) + room.tail
    if was > room.width or all(len(line) <= room.width for line in _lines(text, room)):
        return text
    return None


def _step(module: cst.Module) -> str:
    return module.default_indent if module.default_indent.strip() == "" else "    "


def break_wrapper(module: cst.Module, call: cst.Call, room: Room) -> str:
    """``call`` (see ``wrapper_fits``) with its argument on a line of its own."""
    (arg,) = call.args
    broken = call.with_changes(
        whitespace_before_args=_line_break(room.indent + _step(module)),
        args=[
            arg.with_changes(
                comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=_line_break(room.indent)
            )
        ],
    )
    return expression_code(module, broken, room.block)


Comprehension = cst.ListComp | cst.SetComp | cst.DictComp


def split_brackets(module: cst.Module, node: Comprehension, room: Room) -> str | None:
    """A one-line comprehension at ``room`` with what its brackets hold on a line of its own
    (black's layout), when that line stays within the line length; else None."""
    inner = _line_break(room.indent + _step(module))
    outer = _line_break(room.indent)
    if isinstance(node, cst.ListComp):
        split: cst.BaseExpression = node.with_changes(
            lbracket=node.lbracket.with_changes(whitespace_after=inner),
            rbracket=node.rbracket.with_changes(whitespace_before=outer),
        )
    else:
        split = node.with_changes(
            lbrace=node.lbrace.with_changes(whitespace_after=inner),
            rbrace=node.rbrace.with_changes(whitespace_before=outer),
        )
    text = expression_code(module, split, room.block)
    if all(len(line) <= room.width for line in _lines(text, room)):
        return text
    return None


# What black treats as the end of a bracket, before a ``.`` it may split a chain at.
_BRACKETED = (
    cst.Call,
    cst.Subscript,
    cst.List,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
)


def chain_links(chain: cst.BaseExpression) -> list[cst.Attribute]:
    """The attribute accesses of a method chain that black may break the chain before: those
    right after a closing bracket (``.shuffle`` and ``.map`` in ``x["train"].shuffle().map(f)``,
    not ``.shuffle`` in ``x.shuffle().map(f)``), outside any parentheses within the chain."""
    links: list[cst.Attribute] = []
    node: cst.BaseExpression = chain
    while node is chain or not node.lpar:
        if type(node) is cst.Call:
            node = node.func
        elif type(node) is cst.Subscript:
            node = node.value
        elif type(node) is cst.Attribute:
            if node.value.rpar or isinstance(node.value, _BRACKETED):
                links.append(node)
            node = node.value
        else:
            break
    return links


class _BreakBefore(cst.CSTTransformer):
    def __init__(self, links: Sequence[cst.Attribute], indent: str) -> None:
        self.links = {id(link) for link in links}
        self.indent = indent

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.Attribute:
        if id(original_node) not in self.links:
            return updated_node
        dot = updated_node.dot
        assert type(dot) is cst.Dot
        return updated_node.with_changes(
            dot=dot.with_changes(whitespace_before=_line_break(self.indent))
        )


def split_chain(
    module: cst.Module, chain: cst.BaseExpression, room: Room, wrap: bool
) -> str | None:
    """A method chain written on one line at ``room`` that passes the line length now
    (``x["train"].shuffle(seed=0).map(f)``), laid out as black lays it out.

    With two links or more to break before (``chain_links``): one link per line
    (``x["train"]`` / ``.shuffle(seed=0)`` / ``.map(f)``) inside the chain's parentheses.
    ``wrap``: the chain is the whole value of an assignment or ``return``, without
    parentheses; black then puts it in parentheses, on a line of its own when it fits there.
    With fewer, and ``wrap``: what the chain's last call holds goes on a line of its own
    (``x.shuffle(seed=0).map(`` / ``f`` / ``)``). None for anything else, or when a line
    would still pass the line length (``chain``'s own parentheses, if it has them, are left
    out of the code)."""
    links = chain_links(chain)
    bare = chain.with_changes(lpar=[], rpar=[])
    inner = room.indent + _step(module) if wrap else room.indent
    candidates: list[cst.BaseExpression] = []
    if len(links) >= 2:
        fluent = bare.visit(_BreakBefore(links, inner))
        assert isinstance(fluent, cst.BaseExpression)
        candidates.append(fluent)
        if wrap:
            parens = {
                "lpar": [cst.LeftParen(whitespace_after=_line_break(inner))],
                "rpar": [cst.RightParen(whitespace_before=_line_break(room.indent))],
            }
            candidates = [bare.with_changes(**parens), fluent.with_changes(**parens)]
    elif (
        wrap and type(bare) is cst.Call and bare.args and type(bare.args[-1].comma) is not cst.Comma
    ):
        opened = bare.with_changes(whitespace_before_args=_line_break(inner))
        candidates.append(_close_on_own_line(opened, room.indent))
    for candidate in candidates:
        text = module.code_for_node(candidate)
        if all(len(line) <= room.width for line in _lines(text, room)):
            return text
    return None


def _any_break(call: cst.Call) -> bool:
    return any(
        type(arg.comma) is cst.Comma and _has_break(arg.comma.whitespace_after) for arg in call.args
    )


def _close_on_own_line(call: cst.Call, indent: str) -> cst.Call:
    args = list(call.args)
    last = args[-1]
    if type(last.comma) is cst.Comma:
        args[-1] = last.with_changes(
            comma=last.comma.with_changes(whitespace_after=_line_break(indent))
        )
    else:
        args[-1] = last.with_changes(whitespace_after_arg=_line_break(indent))
    return call.with_changes(args=args)


def _flattened(module: cst.Module, call: cst.Call) -> cst.Call | None:
    """``call`` with its arguments on one line, as black joins them before it lays a call out
    again; None where that is not its layout to redo: an argument spanning lines, a
    comment among them, or a trailing comma (black keeps such a call one argument per
    line)."""
    args = list(call.args)
    if not args or type(args[-1].comma) is cst.Comma:
        return None
    if any("\n" in module.code_for_node(arg.value) for arg in args):
        return None
    if "#" in module.code_for_node(call):
        # A comment (or a hash in a string: either way, not ours to move).
        return None
    flat = [
        arg.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            if type(arg.comma) is cst.Comma
            else arg.comma,
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        for arg in args
    ]
    return call.with_changes(args=flat, whitespace_before_args=cst.SimpleWhitespace(""))


def _one_per_line(call: cst.Call, inner: str, indent: str) -> cst.Call:
    args = [
        arg.with_changes(
            comma=cst.Comma(whitespace_after=_line_break(inner)),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        for arg in call.args
    ]
    args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=_line_break(indent)))
    return call.with_changes(args=args)


def _lines(code: str, room: Room) -> list[str]:
    """The file's lines that ``code`` at ``room`` makes (first and last with what surrounds
    the call on them, as lengths)."""
    lines = _NEWLINE.split(code)
    lines[0] = " " * room.column + lines[0]
    lines[-1] = lines[-1] + " " * room.tail
    return lines


def keyword_arg(keyword: str, value: str) -> cst.Arg:
    return cst.Arg(
        value=cst.parse_expression(value),
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def room_at(
    lines: Sequence[str],
    start: tuple[int, int],
    end: tuple[int, int],
    block: str,
    width: int,
    *,
    formatted: bool = False,
) -> Room:
    """The ``Room`` of an expression spanning ``start`` to ``end`` (1-based rows, 0-based
    columns) in a file of ``lines``."""
    first = lines[start[0] - 1] if 0 < start[0] <= len(lines) else ""
    last = lines[end[0] - 1] if 0 < end[0] <= len(lines) else ""
    indent = first[: len(first) - len(first.lstrip())]
    return Room(start[1], indent, block, max(0, len(last) - end[1]), width, formatted)


__all__ = [
    "CELL_MARKER",
    "CONVENTIONAL_ALIASES",
    "DEFAULT_LINE_LENGTH",
    "FROM_IMPORTED",
    "IPYTHON_PLACEHOLDER",
    "Cell",
    "Header",
    "HeaderRecorder",
    "ImportName",
    "Placement",
    "Room",
    "Statement",
    "after_imports",
    "append_inline",
    "bound_name",
    "break_wrapper",
    "cell_at",
    "cell_headers",
    "chain_links",
    "describing_comments",
    "first_party_finder",
    "fit_call",
    "header_of",
    "import_edits",
    "import_text",
    "is_docstring",
    "is_future_import",
    "is_joined_notebook",
    "keyword_arg",
    "line_length",
    "parse_import",
    "place_definition",
    "place_import",
    "room_at",
    "ruff_checks",
    "section_of",
    "split_brackets",
    "split_chain",
    "wrapper_fits",
]
