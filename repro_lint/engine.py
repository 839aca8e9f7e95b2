"""Lint one file (decode, parse, resolve names, run rules, suppress) and many (parallel, cache)."""

from __future__ import annotations

import ast
import codecs
import contextlib
import dataclasses
import io
import multiprocessing
import os
import re
import sys
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst
import pathspec
from libcst.metadata import CodeRange

from repro_lint import rules as rule_table
from repro_lint.cache import Cache
from repro_lint.config import Config
from repro_lint.diagnostics import Diagnostic, Edit, FileResult, Fix, FixSafety, Location
from repro_lint.files import SourceFile, display_name, module_name, real_path
from repro_lint.fixes import FixOutcome, fix_texts, touches
from repro_lint.names import Names
from repro_lint.positions import Positions
from repro_lint.project import (
    DEFERRED,
    DEFERRED_KEY,
    Loader,
    ProjectOptions,
    ProjectRule,
    SummaryCollector,
    Unit,
    analyse,
)
from repro_lint.project import SUMMARY_VERSION as _SUMMARY_VERSION
from repro_lint.rule import (
    AddImport,
    FileContext,
    InsertAfter,
    InsertBefore,
    NodeEdit,
    PendingReport,
    Replace,
    Rule,
)
from repro_lint.rules.syntax_error import SyntaxError as SyntaxErrorRule
from repro_lint.rules.unused_noqa import UnusedNoqa
from repro_lint.suppressions import EMPTY, Directive, Suppressions, parse_comment
from repro_lint.torch_versions import TargetTorch, resolve_target
from repro_lint.walker import walk

NEWLINE = re.compile(r"\r\n?|\n")
_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
# Below this many files a process pool costs more than it saves.
POOL_THRESHOLD = 16


# -- settings ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """A resolved configuration: the rules to run and the torch version to judge against."""

    config: Config
    rules: tuple[type[Rule], ...]
    target: TargetTorch
    _per_file: tuple[tuple[pathspec.GitIgnoreSpec, tuple[type[Rule], ...]], ...] = field(
        default=(), repr=False
    )
    _entry_points: pathspec.GitIgnoreSpec | None = field(default=None, repr=False)
    # ``--ignore-noqa``: report (and fix) as if no file had a noqa comment.
    ignore_noqa: bool = False

    @classmethod
    def from_config(cls, config: Config) -> Settings:
        """Resolve selection and target; raises ConfigError for selectors that match nothing."""
        source = config.source
        rule_table.validate_selectors("select", config.select or (), source)
        rule_table.validate_selectors("extend-select", config.extend_select, source)
        rule_table.validate_selectors("ignore", config.ignore, source)
        selected = rule_table.select(config.select, config.extend_select, config.ignore)
        per_file = []
        for pattern, codes in config.per_file_ignores:
            rule_table.validate_selectors(f"per-file-ignores.{pattern}", codes, source)
            ignored = tuple({rule for code in codes for rule in rule_table.matching(code)})
            spec = pathspec.GitIgnoreSpec.from_lines([pattern])
            per_file.append((spec, ignored))
        target = resolve_target(config.target_torch, config.root)
        entry_points = (
            pathspec.GitIgnoreSpec.from_lines(config.entry_points) if config.entry_points else None
        )
        return cls(config, selected, target, tuple(per_file), _entry_points=entry_points)

    @property
    def needs_project(self) -> bool:
        """Whether a project phase runs: project rules, or per-file rules that it settles."""
        return bool(self.project_rules) or any(rule.SETTLES for rule in self.rules)

    @property
    def project_rules(self) -> tuple[type[ProjectRule], ...]:
        """The selected rules judged on whole programs (run after every file is linted)."""
        return tuple(r for r in self.rules if issubclass(r, ProjectRule))

    def project_options(self) -> ProjectOptions:
        spec = self._entry_points
        matcher = None
        if spec is not None:
            root = self.config.root.resolve()

            def matcher(path: Path) -> bool:
                try:
                    relative = real_path(path).relative_to(root).as_posix()
                except ValueError:
                    relative = path.name
                return spec.match_file(relative)

        return ProjectOptions(
            seed=self.config.seed,
            seed_functions=frozenset(self.config.seed_functions),
            entry_points=matcher,
            known_codes=frozenset(rule_table.BY_CODE) | frozenset(rule_table.BY_NAME),
            target_torch=self.target.version,
            dataloader_worker_rng=self.config.dataloader_worker_rng,
        )

    def rules_for(self, path: Path | None) -> tuple[type[Rule], ...]:
        if path is None or not self._per_file:
            return self.rules
        try:
            relative = real_path(path).relative_to(self.config.root.resolve()).as_posix()
        except ValueError:
            relative = path.name
        ignored: set[type[Rule]] = set()
        for spec, rules in self._per_file:
            if spec.match_file(relative):
                ignored.update(rules)
        return tuple(r for r in self.rules if r not in ignored)

    def cache_key(self) -> str:
        codes = ",".join(rule.CODE for rule in self.rules)
        noqa = "|ignore-noqa" if self.ignore_noqa else ""
        return (
            f"{self.config.fingerprint()}|rules={codes}|torch={self.target.version}"
            f"|summary={_SUMMARY_VERSION}{noqa}"
        )


# -- decoding ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DecodedSource:
    """A file's text and what is needed to write it back byte-faithfully."""

    text: str
    encoding: str
    bom: bool

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


class SourceError(Exception):
    """A file that cannot be read or decoded; becomes an RPL000 diagnostic."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.column = column


def decode(data: bytes) -> DecodedSource:
    """Decode per PEP 263 (BOM, coding cookie, else UTF-8), keeping line endings as they are."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode file: {exc.msg}", exc.lineno or 1) from exc
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        row = body.count(b"\n", 0, exc.start) + 1
        line_start = body.rfind(b"\n", 0, exc.start) + 1
        raise SourceError(
            f"cannot decode file as {codec}: {exc.reason} at byte {exc.start}",
            row,
            exc.start - line_start + 1,
        ) from exc
    return DecodedSource(text, codec, bom)


def read_source(path: Path) -> DecodedSource:
    try:
        data = path.read_bytes()
    except IsADirectoryError as exc:
        raise SourceError("cannot read file: it is a directory") from exc
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if not path.exists() and path.is_symlink():
            reason = "broken symbolic link"
        raise SourceError(f"cannot read file: {reason}") from exc
    return decode(data)


# -- syntax errors ----------------------------------------------------------------------------


def _syntax_error(text: str, filename: str, libcst_error: Exception | None) -> SourceError | None:
    """Where and why ``text`` does not parse (Python's own message when it has one)."""
    if "\0" in text:
        before = text[: text.index("\0")]
        row = len(NEWLINE.findall(before)) + 1
        column = len(NEWLINE.split(before)[-1]) + 1
        return SourceError("source contains a null byte", row, column)
    try:
        # No file name: Python would read the error's line from a file of that name on disk,
        # which is not the text linted here (an editor buffer, a notebook, stdin).
        ast.parse(text)
    except SyntaxError as exc:
        return SourceError(f"SyntaxError: {exc.msg}", exc.lineno or 1, max(exc.offset or 1, 1))
    except (ValueError, RecursionError, MemoryError) as exc:
        return SourceError(f"cannot parse file: {exc}")
    if libcst_error is None:
        return None
    # Python accepts it but libcst does not (newer syntax than libcst supports).
    if isinstance(libcst_error, cst.ParserSyntaxError):
        return SourceError(
            f"libcst cannot parse this file: {libcst_error.message}",
            libcst_error.raw_line,
            libcst_error.raw_column + 1,
        )
    return SourceError(f"libcst cannot parse this file: {libcst_error}")


# What libcst is known not to reproduce: a form feed, or a line that is only a backslash
# continuation. Only files containing one are compared with libcst's code (a full codegen).
_UNFAITHFUL = re.compile(r"\f|^[ \t]*\\\r?$", re.M)


def _misplaced(text: str, code: str, diagnostics: Iterable[Diagnostic]) -> SourceError | None:
    """Where libcst's code stops matching the text, if a finding or a fix lies on a row that
    the difference makes unreliable (that row, or any row after a lost line)."""
    if code == text:
        return None
    ours, theirs = NEWLINE.split(text), NEWLINE.split(code)
    bad = {row for row, (a, b) in enumerate(zip(ours, theirs, strict=False), start=1) if a != b}
    if len(ours) != len(theirs):
        bad.update(range(min(bad, default=min(len(ours), len(theirs)) + 1), len(ours) + 1))
    used: set[int] = set()
    for diagnostic in diagnostics:
        used.update((diagnostic.location.row, diagnostic.end_location.row))
        for edit in diagnostic.fix.edits if diagnostic.fix else ():
            used.update((edit.location.row, edit.end_location.row))
    if not bad & used:
        return None
    row = min(bad)
    return SourceError(
        f"libcst cannot reproduce line {row} exactly (a form feed or a lone backslash?), so "
        "findings and fixes would be misplaced; file not analysed",
        row,
        1,
    )


def error_result(filename: str, error: SourceError, source: str | None = None) -> FileResult:
    rule = SyntaxErrorRule
    location = Location(error.row, error.column)
    diagnostic = Diagnostic(
        code=rule.CODE,
        name=rule.name,
        message=error.message,
        filename=filename,
        location=location,
        end_location=location,
        noqa_row=None,
        url=rule.url(),
    )
    return FileResult(filename, (diagnostic,), source=source)


# -- traversal --------------------------------------------------------------------------------


_HOOKS: dict[type, tuple[tuple[str, str], ...]] = {}


def _hooks(rule: type) -> tuple[tuple[str, str], ...]:
    """(node type, method name) for every visit_/leave_ method of a rule class (cached)."""
    hooks = _HOOKS.get(rule)
    if hooks is None:
        hooks = tuple(
            (attr.split("_", 1)[1], attr)
            for attr in dir(rule)
            if attr.startswith(("visit_", "leave_")) and callable(getattr(rule, attr))
        )
        _HOOKS[rule] = hooks
    return hooks


_STATEMENT, _FUNCTION, _COMMENT, _NEWLINE, _SPACE, _TEXT, _BLOCK = 1, 2, 4, 8, 16, 32, 64
_KINDS: dict[type, int] = {}
_TEXTS = (cst.SimpleString, cst.FormattedStringText, cst.TemplatedStringText)


def _kind(node_type: type) -> int:
    """What the traversal tracks about a node type (cached: isinstance against libcst's
    abstract classes is slow)."""
    kind = _KINDS.get(node_type)
    if kind is None:
        kind = 0
        if issubclass(node_type, _STATEMENTS):
            kind |= _STATEMENT
        if issubclass(node_type, cst.FunctionDef):
            kind |= _FUNCTION
        if issubclass(node_type, cst.Comment):
            kind |= _COMMENT
        if issubclass(node_type, cst.Newline):
            kind |= _NEWLINE
        if issubclass(node_type, cst.SimpleWhitespace):
            kind |= _SPACE
        if issubclass(node_type, _TEXTS):
            kind |= _TEXT
        if issubclass(node_type, cst.IndentedBlock):
            kind |= _BLOCK
        _KINDS[node_type] = kind
    return kind


class _Dispatcher(cst.CSTVisitor):
    """One traversal that feeds every node to each interested rule (and to the project
    summary collector, which rides along the same way)."""

    def __init__(
        self,
        visitors: Sequence[object],
        context: FileContext,
        comments: list[tuple[cst.Comment, int]] | None,
    ) -> None:
        self._visit: dict[str, list[Callable[[cst.CSTNode], object]]] = {}
        self._leave: dict[str, list[Callable[[cst.CSTNode], object]]] = {}
        for visitor in visitors:
            for node_type, attr in _hooks(type(visitor)):
                table = self._visit if attr.startswith("visit_") else self._leave
                table.setdefault(node_type, []).append(getattr(visitor, attr))
        self._stack = context.statement_stack
        self._names = context.names
        self._comments = comments
        self._cursor = context.cursor
        self._default_indent = context.module.default_indent
        self._indents: list[str] = []
        self._elifs: set[cst.CSTNode] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = _kind(type(node))
        if kind:
            self._track(node, kind)
        hooks = self._visit.get(type(node).__name__)
        if hooks:
            for hook in hooks:
                hook(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        hooks = self._leave.get(type(original_node).__name__)
        if hooks:
            for hook in hooks:
                hook(original_node)
        kind = _kind(type(original_node))
        if kind & _STATEMENT:
            self._stack.pop()
            if kind & _FUNCTION:
                self._names.leave_function()
        elif kind & _BLOCK:
            self._indents.pop()

    def _track(self, node: cst.CSTNode, kind: int) -> None:
        """Statements, rows (newlines passed) and indentation, for positions and summaries."""
        cursor = self._cursor
        if kind & _NEWLINE:
            cursor.row += 1
        elif kind & _SPACE:
            # A backslash continuation is the only way plain whitespace spans lines.
            value = node.value  # type: ignore[attr-defined]
            if "\\" in value:
                cursor.row += len(NEWLINE.findall(value))
        elif kind & _TEXT:
            value = node.value  # type: ignore[attr-defined]
            if "\n" in value or "\r" in value:
                cursor.row += len(NEWLINE.findall(value))
        elif kind & _STATEMENT:
            self._stack.append(node)
            if node in self._elifs:
                # An ``elif`` prints as ``if`` on its own: it is positioned with its ``if``.
                self._elifs.discard(node)
            else:
                cursor.starts[node] = (cursor.row, "".join(self._indents))
            if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
                self._elifs.add(node.orelse)
            if kind & _FUNCTION:
                self._names.enter_function(node)  # type: ignore[arg-type]
        elif kind & _BLOCK:
            indent = node.indent  # type: ignore[attr-defined]
            self._indents.append(self._default_indent if indent is None else indent)
        elif kind & _COMMENT and self._comments is not None:
            if "noqa" in node.value.lower():  # type: ignore[attr-defined]
                self._comments.append((node, cursor.row))  # type: ignore[arg-type]

    def run(self, module: cst.Module) -> None:
        """One read-only walk of the tree (see walker.py for why not ``module.visit``)."""
        walk(module, self.on_visit, self.on_leave)

    # libcst calls these for every child attribute of every node; the defaults look up
    # ``visit_<Node>_<attr>`` methods by name, which we never define.
    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        return None

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        return None


def _start(rng: CodeRange) -> Location:
    return Location(rng.start.line, rng.start.column + 1)


def _end(rng: CodeRange) -> Location:
    return Location(rng.end.line, rng.end.column + 1)


# -- fixes: CST intents -> text edits -----------------------------------------------------------


class _EditBuilder:
    """Turns a rule's NodeEdits into text Edits for one file."""

    def __init__(self, text: str, module: cst.Module, names: Names, positions: Positions):
        self.module = module
        self.names = names
        self.positions = positions
        self.newline = module.default_newline
        self._lines: list[str] | None = None
        self._text = text

    def _line(self, row: int) -> str:
        if self._lines is None:
            self._lines = NEWLINE.split(self._text)
        return self._lines[row - 1] if row - 1 < len(self._lines) else ""

    def _indent(self, node: cst.CSTNode) -> str:
        start = self.positions.syntactic(node).start
        prefix = self._line(start.line)[: start.column]
        return prefix if prefix.strip() == "" else ""

    def _lines_of(self, code: str, indent: str) -> list[str]:
        return [indent + line if line else line for line in code.strip("\n").split("\n")]

    def build(self, edits: Iterable[NodeEdit]) -> list[Edit]:
        out: list[Edit] = []
        for edit in edits:
            built = self._build_one(edit)
            if built is not None:
                out.append(built)
        return _merge_inserts(out)

    def _build_one(self, edit: NodeEdit) -> Edit | None:
        newline = self.newline
        if isinstance(edit, Replace):
            rng = self.positions.inclusive(edit.node)
            return Edit(self.module.code_for_node(edit.new), _start(rng), _end(rng))
        if isinstance(edit, InsertBefore):
            start = _start(self.positions.syntactic(edit.statement))
            indent = self._indent(edit.statement)
            lines = self._lines_of(edit.code, indent)
            # The first line lands where the statement starts, after its indentation.
            content = newline.join(
                line[len(indent) :] if i == 0 else line for i, line in enumerate(lines)
            )
            return Edit(content + newline + indent, start, start)
        if isinstance(edit, InsertAfter):
            end = _end(self.positions.inclusive(edit.statement))
            indent = self._indent(edit.statement)
            content = "".join(line + newline for line in self._lines_of(edit.code, indent))
            if end.column != 1:
                content = newline + content.removesuffix(newline)
            return Edit(content, end, end)
        return self._add_import(edit)

    def _add_import(self, edit: AddImport) -> Edit | None:
        top = edit.module.split(".", 1)[0]
        local = edit.asname or top
        binding = self.names.binding(local)
        wanted = edit.module if edit.asname else top
        if (
            binding is not None
            and binding.is_import
            and binding.module_level
            and (binding.qualified == wanted)
        ):
            if edit.before is None:
                return None
            bound_at = self.positions.syntactic(binding.statement).start.line
            if bound_at < self.positions.syntactic(edit.before).start.line:
                return None
        statement = f"import {edit.module}" + (f" as {edit.asname}" if edit.asname else "")
        location, prefix = self._import_anchor()
        return Edit(prefix + statement + self.newline, location, location)

    def _import_anchor(self) -> tuple[Location, str]:
        """Where new imports go: after the docstring and ``from __future__`` imports."""
        for index, statement in enumerate(self.module.body):
            if index == 0 and _is_docstring(statement):
                continue
            if _is_future_import(statement):
                continue
            start = self.positions.syntactic(statement).start
            return Location(start.line, 1), ""
        lines = NEWLINE.split(self._text)
        if len(lines) == 1 and lines[0] == "":
            return Location(1, 1), ""
        if lines[-1] == "":
            return Location(len(lines), 1), ""
        return Location(len(lines), len(lines[-1]) + 1), self.newline


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


def _merge_inserts(edits: list[Edit]) -> list[Edit]:
    """Join insertions at the same point (in the order given) so edits never tie."""
    merged: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.location, e.end_location)):
        if merged and edit.location == edit.end_location == merged[-1].location == (
            merged[-1].end_location
        ):
            if edit.content not in merged[-1].content:
                previous = merged.pop()
                merged.append(Edit(previous.content + edit.content, edit.location, edit.location))
            continue
        merged.append(edit)
    return merged


# -- one file ---------------------------------------------------------------------------------


def lint_text(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None = None,
) -> FileResult:
    """Lint decoded source text as part of its project: project rules see the modules it
    imports (read from disk when ``path`` is known). Never raises for bad input: that becomes
    RPL000."""
    result = _lint_one(text, filename, settings, path)
    merged = _with_project([result], {filename: path}, settings, summary_loader(settings))[0]
    if merged.diagnostics and merged.source is None:
        merged = dataclasses.replace(merged, source=text)
    return merged


def _lint_one(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None = None,
    *,
    summarise: bool = False,
) -> FileResult:
    """Lint one file on its own: per-file rules and its summary for the project phase.

    A summary is needed for any file that can take part in a program; a file that imports
    nothing can neither use RNG nor call into a module that does. A file that no per-file
    rule parses and that cannot be an entry point gets a deferred summary: the project
    phase summarises it (``summarise=True``) only if an entry point reaches it.
    """
    rules = settings.rules_for(path)
    active = [
        r
        for r in rules
        if r.CODE not in rule_table.ALWAYS_ON
        and not issubclass(r, ProjectRule)
        and _triggered(r, text)
    ]
    wanted = settings.needs_project and "import" in text
    collect = wanted and (summarise or bool(active) or _may_be_entry(text, path, settings))
    # Project rules with triggers judge the code of every file that mentions one (a file
    # that calls ``sampler.set_epoch`` need not import anything).
    collect = collect or any(
        r.TRIGGERS and _triggered(r, text) for r in settings.project_rules if r in rules
    )
    # ast comes first even for files libcst will parse: libcst's native parser overflows the C
    # stack (a segfault, not an exception) on expressions nested ~5,000 deep, which ast rejects
    # with RecursionError from ~3,000 levels on. That guard scales with the recursion limit, so
    # ast runs before the limit is raised for libcst.
    error = _syntax_error(text, filename, None)
    if error is not None:
        return error_result(filename, error, text)
    if not active and not collect:
        return FileResult(filename, (), summary=dict(DEFERRED) if wanted else {})
    with _recursion_headroom():
        return _lint_parsed(text, filename, settings, path, rules, active, collect)


def _lint_parsed(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None,
    rules: Sequence[type[Rule]],
    active: list[type[Rule]],
    collect: bool,
) -> FileResult:
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, ValueError) as exc:
        error = _syntax_error(text, filename, exc) or SourceError(f"cannot parse file: {exc}")
        return error_result(filename, error, text)
    if path is not None:
        name, is_package = module_name(path)
    else:
        name, is_package = "__main__", False
    names = Names(module, name, is_package)
    context = FileContext(module, names, settings.config, settings.target.version, path, name)
    comments: list[tuple[cst.Comment, int]] | None = (
        [] if "noqa" in text.lower() and not settings.ignore_noqa else None
    )
    visitors: list[object] = [rule(context) for rule in active]
    collector = None
    if collect:
        collector = SummaryCollector(context, text, frozenset(settings.config.seed_functions))
        visitors.append(collector)
    try:
        _Dispatcher(visitors, context, comments).run(module)
    except RecursionError:
        return error_result(filename, SourceError("file is nested too deeply to analyse"))
    summary = collector.summary() if collector is not None else {}
    # RPL901 judges the noqa comments even where nothing was reported.
    # Whole-program findings are settled after this file is linted, so a noqa for a project
    # rule cannot be judged here: RPL901 leaves those codes alone.
    unused_noqa = (
        [r for r in rules if not issubclass(r, ProjectRule)]
        if UnusedNoqa in active and comments
        else None
    )
    if not context.reports and unused_noqa is None:
        return FileResult(filename, (), summary=summary)
    diagnostics = _diagnostics(
        text,
        filename,
        module,
        names,
        context.reports,
        comments,
        unused_noqa,
        context.cursor.starts,
    )
    # Positions come from libcst's tree, which does not always reproduce the file: it drops a
    # form feed that starts a line (columns on that line shift; a fix once wrote "=Falsee") and
    # a line holding only a backslash continuation (later rows shift). Checked only for files
    # with findings: it costs a code generation.
    misplaced = (
        _misplaced(text, module.code, diagnostics)
        if diagnostics and _UNFAITHFUL.search(text)
        else None
    )
    if misplaced is not None:
        return error_result(filename, misplaced, text)
    return FileResult(
        filename, tuple(diagnostics), source=text if diagnostics else None, summary=summary
    )


# Text every entry point contains: a __main__ guard, training calls at module level, or a
# call statement at the start of a line (``main()`` at the bottom of a script).
_ENTRY_TEXT = re.compile(r"__main__|\.backward\(|\.fit\(|\.step\(|^[A-Za-z_][\w.]*\s*\(", re.M)


def _may_be_entry(text: str, path: Path | None, settings: Settings) -> bool:
    if _ENTRY_TEXT.search(text):
        return True
    matcher = settings.project_options().entry_points if path is not None else None
    return matcher is not None and path is not None and matcher(path)


_TRIGGER_PATTERNS: dict[type[Rule], re.Pattern[str]] = {}


# libcst walks trees by recursion, about four frames per level of nesting (more to position
# and print them); ast admits ~3,000 levels, so the default limit of 1,000 frames made valid
# files with a few hundred chained operators an RPL000 ("nested too deeply").
RECURSION_LIMIT = 20_000


@contextlib.contextmanager
def _recursion_headroom() -> Iterator[None]:
    previous = sys.getrecursionlimit()
    if previous >= RECURSION_LIMIT:
        yield
        return
    sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def _triggered(rule: type[Rule], text: str) -> bool:
    """Whether ``text`` mentions one of the rule's triggers (one regex pass per rule)."""
    if not rule.TRIGGERS:
        return True
    pattern = _TRIGGER_PATTERNS.get(rule)
    if pattern is None:
        words = sorted(set(rule.TRIGGERS), key=len, reverse=True)
        alternatives = "|".join(map(re.escape, words))
        if rule.TRIGGER_WORDS:
            # Whole words: ``put`` must not fire on ``input``.
            alternatives = rf"\b(?:{alternatives})\b"
        pattern = _TRIGGER_PATTERNS[rule] = re.compile(alternatives)
    return pattern.search(text) is not None


def _diagnostics(
    text: str,
    filename: str,
    module: cst.Module,
    names: Names,
    reports: list[PendingReport],
    comments: list[tuple[cst.Comment, int]] | None,
    unused_noqa: Sequence[type[Rule]] | None = None,
    starts: Mapping[cst.CSTNode, tuple[int, str]] | None = None,
) -> list[Diagnostic]:
    """Positioned, suppressed and de-duplicated findings; with ``unused_noqa`` (the rules that
    ran), also RPL901's findings for noqa entries that suppressed none of them."""
    positions = Positions(module, starts)
    for report in reports:
        if report.statement is not None:
            positions.within(report.node, report.statement)
            for edit in report.edits:
                if isinstance(edit, Replace):
                    positions.within(edit.node, report.statement)
        if report.top is not None:
            positions.hint(report.node, report.top)
            if report.statement is not None:
                positions.hint(report.statement, report.top)
    suppressions = _suppressions(comments or [], text)
    known = {code for code in rule_table.BY_CODE} | set(rule_table.BY_NAME)
    protected = suppressions.protected_rows(known)
    builder = _EditBuilder(text, module, names, positions)
    out: list[Diagnostic] = []
    seen: set[tuple[str, int, int, str]] = set()
    used: dict[Directive, set[str]] = {}
    for report in reports:
        rule = report.rule
        rng = positions.syntactic(report.node)
        start, end = _start(rng), _end(rng)
        rows = {start.row}
        if report.statement is not None:
            rows.add(positions.syntactic(report.statement).start.line)
        directive = suppressions.suppressing(rule.CODE, rule.name, sorted(rows))
        if directive is not None:
            used.setdefault(directive, set()).update(directive.matched(rule.CODE, rule.name))
            continue
        key = (rule.CODE, start.row, start.column, report.message)
        if key in seen:
            continue
        seen.add(key)
        fix = None
        if report.edits and report.fix_safety is not None:
            edits = builder.build(report.edits)
            if edits and not touches(edits, protected):
                fix = Fix(report.fix_safety, report.fix_title or "", tuple(edits))
        elif rule.FIX_SAFETY is FixSafety.DISPLAY_ONLY and rule.FIX_TITLE:
            # Advice with nothing to apply (e.g. "set PYTHONHASHSEED in the launcher").
            fix = Fix(FixSafety.DISPLAY_ONLY, report.fix_title or rule.FIX_TITLE, ())
        out.append(
            Diagnostic(
                code=rule.CODE,
                name=rule.name,
                message=report.message,
                filename=filename,
                location=start,
                end_location=end,
                fix=fix,
                noqa_row=start.row,
                url=rule.url(),
            )
        )
    if unused_noqa is not None:
        active = {r.CODE for r in unused_noqa} | {r.name for r in unused_noqa}
        out.extend(UnusedNoqa.diagnostics(text, filename, suppressions, used, active, known))
    out.sort(key=lambda d: d.sort_key)
    return out


def _suppressions(comments: list[tuple[cst.Comment, int]], text: str) -> Suppressions:
    if not comments:
        return EMPTY
    directives: list[Directive] = []
    lines = NEWLINE.split(text)
    for comment, row in comments:
        # The traversal counted the row; a comment is the rest of its line, so its column is
        # where its text last occurs there.
        line = lines[row - 1] if 0 < row <= len(lines) else ""
        directive = parse_comment(comment.value, row, line.rfind(comment.value) + 1 or 1)
        if directive is not None:
            directives.append(directive)
    return Suppressions.from_directives(directives)


def _lint_notebook(file: SourceFile, settings: Settings) -> FileResult:
    """A notebook's code cells, linted as one module (with their own project phase, so the
    result carries no summary for the run's project phase: its rows are cell rows)."""
    from repro_lint import notebooks

    try:
        data = file.path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return error_result(file.display, SourceError(f"cannot read file: {reason}"))
    result = notebooks.lint(data, file.display, settings, file.path)
    return dataclasses.replace(result, summary={}) if result.summary else result


def lint_file(file: SourceFile, settings: Settings) -> FileResult:
    """Read, decode and lint one file (a notebook's code cells, for ``.ipynb``)."""
    if file.path.suffix == ".ipynb":
        return _lint_notebook(file, settings)
    try:
        source = read_source(file.path)
    except SourceError as error:
        return error_result(file.display, error)
    return lint_text(source.text, file.display, settings, file.path)


def _lint_file_alone(
    file: SourceFile, settings: Settings, *, summarise: bool = False
) -> FileResult:
    if file.path.suffix == ".ipynb":
        return _lint_notebook(file, settings)
    try:
        source = read_source(file.path)
    except SourceError as error:
        return error_result(file.display, error)
    return _lint_one(source.text, file.display, settings, file.path, summarise=summarise)


# -- the project phase ------------------------------------------------------------------------


def summary_loader(settings: Settings, cache: Cache | None = None) -> Loader:
    """Loads the summary of a file on disk for the project phase: imported project files that
    were not passed, and passed files whose summary was deferred (parsed for that only)."""
    # Words without which a module's top-level code cannot seed anything.
    seeding_words = (
        "seed",
        "determinism",
        *(n.rsplit(".", 1)[-1] for n in settings.config.seed_functions),
    )

    def load(path: Path, imported: bool) -> tuple[str, Mapping[str, Any]] | None:
        file = SourceFile(display_name(path), path)
        result = cache.get(file) if cache is not None else None
        if result is not None and not result.summary.get(DEFERRED_KEY):
            return (result.filename, result.summary) if result.summary else None
        if imported:
            try:
                text = read_source(path).text
            except SourceError:
                return None
            if not any(word in text for word in seeding_words):
                return file.display, DEFERRED
        stamp = Cache.stamp(file)
        result = _lint_file_alone(file, settings, summarise=True)
        if cache is not None:
            cache.put(file, result, stamp)
        return (result.filename, result.summary) if result.summary else None

    return load


def _with_project(
    results: Sequence[FileResult],
    paths: Mapping[str, Path | None],
    settings: Settings,
    load: Loader | None,
) -> list[FileResult]:
    """Add the project rules' findings to per-file results (those files are the linted
    ones; anything else they import is loaded for its summary only)."""
    rules = settings.project_rules
    if not settings.needs_project:
        return list(results)
    codes = {rule.CODE for rule in rules}
    settling = [rule for rule in settings.rules if rule.SETTLES]
    settled_codes = {rule.CODE for rule in settling}
    units = []
    findings: dict[str, list[Diagnostic]] = {}
    for result in results:
        path = paths.get(result.filename)
        enabled = frozenset(r.CODE for r in settings.rules_for(path) if r.CODE in codes)
        units.append(Unit(result.filename, path, result.summary, linted=True, codes=enabled))
        mine = [d for d in result.diagnostics if d.code in settled_codes]
        if mine:
            findings[result.filename] = mine
    found, settled = analyse(units, rules, settings.project_options(), load, findings, settling)
    merged = []
    for result in results:
        extra = found.get(result.filename, [])
        if result.filename not in findings and not extra:
            merged.append(result)
            continue
        kept = [d for d in result.diagnostics if d.code not in settled_codes]
        kept.extend(settled.get(result.filename, []))
        diagnostics = sorted((*kept, *extra), key=lambda d: d.sort_key)
        unsettled = tuple(findings.get(result.filename, ()))
        merged.append(
            dataclasses.replace(result, diagnostics=tuple(diagnostics), unsettled=unsettled)
        )
    return merged


def _per_file_part(result: FileResult, settings: Settings) -> FileResult:
    """A result without what the project phase added or revised (what linting the file
    alone gives)."""
    codes = {rule.CODE for rule in settings.rules if issubclass(rule, ProjectRule) or rule.SETTLES}
    if not result.unsettled and not any(d.code in codes for d in result.diagnostics):
        return result
    kept = [d for d in result.diagnostics if d.code not in codes]
    diagnostics = tuple(sorted((*kept, *result.unsettled), key=lambda d: d.sort_key))
    return dataclasses.replace(result, diagnostics=diagnostics, unsettled=())


class Relinter:
    """The fix loop's ``relint`` for a multi-file run: re-lints only texts that changed and
    runs the project phase over all of them, so project findings follow every edit."""

    def __init__(
        self,
        settings: Settings,
        paths: Mapping[str, Path],
        texts: Mapping[str, str],
        results: Iterable[FileResult],
        cache: Cache | None = None,
    ) -> None:
        self._settings = settings
        self._paths = paths
        self._load = summary_loader(settings, cache)
        # Only results known to come from these very texts are reused (findings carry their
        # source); the others are linted again on the first call.
        self._memo: dict[str, tuple[str, FileResult]] = {
            r.filename: (texts[r.filename], _per_file_part(r, settings))
            for r in results
            if r.filename in texts and (not r.diagnostics or r.source == texts[r.filename])
        }

    def __call__(self, texts: Mapping[str, str]) -> dict[str, FileResult]:
        results = []
        for name, text in texts.items():
            memo = self._memo.get(name)
            if memo is None or memo[0] != text:
                memo = (text, _lint_one(text, name, self._settings, self._paths.get(name)))
                self._memo[name] = memo
            results.append(memo[1])
        paths: dict[str, Path | None] = {name: self._paths.get(name) for name in texts}
        merged = _with_project(results, paths, self._settings, self._load)
        return {result.filename: result for result in merged}


# -- many files -------------------------------------------------------------------------------

_WORKER_SETTINGS: Settings | None = None


def _init_worker(settings: Settings) -> None:
    global _WORKER_SETTINGS
    _WORKER_SETTINGS = settings


def _lint_in_worker(file: SourceFile) -> FileResult:
    assert _WORKER_SETTINGS is not None
    return _lint_file_alone(file, _WORKER_SETTINGS)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def lint_files(
    files: Sequence[SourceFile],
    settings: Settings,
    *,
    jobs: int | None = None,
    cache: Cache | None = None,
    project: bool = True,
) -> list[FileResult]:
    """Lint files (from the cache where unchanged), in parallel when it pays, then run the
    project phase over them (unless ``project`` is false: per-file results with their
    summaries); sorted output. The cache holds per-file results only."""
    results: dict[str, FileResult] = {}
    todo: list[SourceFile] = []
    for file in files:
        hit = cache.get(file) if cache is not None else None
        if hit is not None and hit.diagnostics:
            hit = _with_source(hit, file)
        if hit is not None:
            results[file.display] = hit
        else:
            todo.append(file)
    stamps = [Cache.stamp(file) for file in todo] if cache is not None else []
    jobs = jobs or default_jobs()
    if jobs > 1 and len(todo) >= POOL_THRESHOLD:
        context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
        chunksize = max(1, len(todo) // (jobs * 8))
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_init_worker, initargs=(settings,)
        ) as pool:
            fresh = list(pool.map(_lint_in_worker, todo, chunksize=chunksize))
    else:
        fresh = [_lint_file_alone(file, settings) for file in todo]
    for index, (file, result) in enumerate(zip(todo, fresh, strict=True)):
        results[file.display] = result
        if cache is not None:
            cache.put(file, result, stamps[index])
    ordered = [results[file.display] for file in sorted(files)]
    if not project:
        return ordered
    paths: dict[str, Path | None] = {file.display: file.path for file in files}
    merged = _with_project(ordered, paths, settings, summary_loader(settings, cache))
    # Project findings can land on files that had none of their own: attach their text.
    return [
        (_with_source(result, file) or result)
        if result.diagnostics and result.source is None
        else result
        for result, file in zip(merged, sorted(files), strict=True)
    ]


def _with_source(result: FileResult, file: SourceFile) -> FileResult | None:
    """A cached result with the file's text attached (code frames and fixes need it)."""
    if result.cells:
        return result  # a notebook: its frames come from the cells, which were cached
    try:
        source = read_source(file.path)
    except SourceError:
        return None
    return dataclasses.replace(result, source=source.text)


def lint_source(source: str, filename: str = "<stdin>", config: Config | None = None) -> FileResult:
    """Public API: lint a string of Python source with the given (or default) settings."""
    settings = Settings.from_config(config or Config())
    return lint_text(source, filename, settings)


def fix_source(
    source: str,
    settings: Settings,
    safeties: frozenset[FixSafety] = frozenset({FixSafety.SAFE}),
    filename: str = "<stdin>",
    path: Path | None = None,
) -> FixOutcome:
    """Apply fixes of the given safeties to one source text until nothing changes."""

    def relint(texts: Mapping[str, str]) -> dict[str, FileResult]:
        return {name: lint_text(text, name, settings, path) for name, text in texts.items()}

    first = lint_text(source, filename, settings, path)
    return fix_texts({filename: source}, {filename: first}, relint, safeties)[filename]


def lint_paths(paths: Sequence[str | Path], config: Config | None = None) -> list[FileResult]:
    """Public API: lint files and directories with the given (or default) settings."""
    from repro_lint.files import discover

    settings = Settings.from_config(config or Config())
    found = discover([Path(p) for p in paths], settings.config)
    return lint_files(found.files, settings)


__all__ = [
    "DecodedSource",
    "Relinter",
    "Settings",
    "SourceError",
    "decode",
    "display_name",
    "fix_source",
    "lint_file",
    "lint_files",
    "lint_paths",
    "lint_source",
    "lint_text",
    "read_source",
    "summary_loader",
]
