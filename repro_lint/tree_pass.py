"""The per-file pass over a parsed file: libcst's tree, its per-file rules and its summary in
one traversal, and the rules' reports turned into positioned, suppressed findings. Imported
only for a file that ``file_pass.lint_one`` finds something to parse for."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import libcst as cst

from repro_lint import rules as rule_table
from repro_lint.cst_parse import parse_module
from repro_lint.diagnostics import Diagnostic, FileResult, Fix, FixSafety
from repro_lint.edits import EditBuilder, end_of, start_of
from repro_lint.files import module_name
from repro_lint.fixes import touches
from repro_lint.names import Names
from repro_lint.parsing import NEWLINE, Pieces, python_tree
from repro_lint.positions import Positions
from repro_lint.rule import (
    DropComments,
    FileContext,
    InsertAfter,
    InsertBefore,
    PendingReport,
    Replace,
    Rule,
)
from repro_lint.rule_info import RuleInfo
from repro_lint.rules.unused_noqa import UnusedNoqa
from repro_lint.settings import Settings
from repro_lint.source import SourceError, error_result, internal_error
from repro_lint.summary import SummaryCollector
from repro_lint.suppressions import EMPTY, Directive, Suppressions, parse_comment
from repro_lint.traversal import Dispatcher


def _syntax_error(text: str, filename: str, libcst_error: Exception | None) -> SourceError | None:
    """Where and why ``text`` does not parse (Python's own message when it has one)."""
    tree = python_tree(text)
    if isinstance(tree, SourceError):
        return tree
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


def lint_parsed(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None,
    rules: Sequence[RuleInfo],
    active: list[type[Rule]],
    collect: bool,
    cuts: Sequence[int],
    pieces: Pieces | None = None,
) -> FileResult:
    """``text`` parsed (in the pieces that start at ``cuts``), walked once by the ``active``
    rules and, with ``collect``, the summary collector. ``rules``: the records of every rule
    that applies to the file, whose codes RPL901 judges noqa comments against."""
    try:
        module = parse_module(text, cuts, pieces)
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
    visitors: list[object] = []
    # Whether the traversal is under way: a failure is then placed on the row it had reached.
    walking = True
    try:
        visitors.extend(rule(context) for rule in active)
        collector = None
        if collect:
            collector = SummaryCollector(context, text, frozenset(settings.config.seed_functions))
            visitors.append(collector)
        try:
            Dispatcher(visitors, context, comments).run(module)
        except RecursionError:
            return error_result(filename, SourceError("file is nested too deeply to analyse"))
        walking = False
        summary = collector.summary() if collector is not None else {}
        # RPL901 judges the noqa comments even where nothing was reported.
        # Whole-program findings are settled after this file is linted, so a noqa for a project
        # rule cannot be judged here: RPL901 leaves those codes alone.
        unused_noqa = (
            [r for r in rules if not r.project] if UnusedNoqa in active and comments else None
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
            context.positions,
            path,
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
    except Exception as exc:  # a defect met on one file must not end the run
        # As ruff does with a panic: this file is reported unanalysed, the others are not
        # affected, and the run ends with status 2 (``report.exit_code``). (KeyboardInterrupt
        # and SystemExit are not Exceptions: they still end the run.)
        return error_result(
            filename, internal_error(exc, context.cursor.row if walking else 1), text
        )
    finally:
        _release(visitors, context)


def _release(visitors: Sequence[object], context: FileContext) -> None:
    """Drop what the pass's objects hold once its result is made. Rules and the context refer
    to each other (a rule to its context, the context to the rule that leads a shared
    traversal), and bindings to their scopes: left to the garbage collector, those cycles keep
    the whole tree until a collection walks all of it. Dropped, reference counting frees it."""
    for visitor in visitors:
        release = getattr(visitor, "release", None)
        if release is not None:
            release()
        vars(visitor).clear()
    vars(context).clear()


def _diagnostics(
    text: str,
    filename: str,
    module: cst.Module,
    names: Names,
    reports: list[PendingReport],
    comments: list[tuple[cst.Comment, int]] | None,
    unused_noqa: Sequence[RuleInfo] | None,
    positions: Positions,
    path: Path | None = None,
) -> list[Diagnostic]:
    """Positioned, suppressed and de-duplicated findings; with ``unused_noqa`` (the rules that
    ran), also RPL901's findings for noqa entries that suppressed none of them. Every node is
    told to ``positions`` before the first is asked for, so one pass positions them all."""
    for report in reports:
        # Where the fix's nodes are: a statement is positioned as itself; a replaced node or
        # the node an import must come before is nearly always inside the reported statement.
        inside = [report.node]
        for edit in report.edits:
            if isinstance(edit, Replace):
                inside.append(edit.node)
            elif isinstance(edit, InsertBefore | InsertAfter | DropComments):
                positions.within(edit.statement, edit.statement)
            elif edit.before is not None:
                inside.append(edit.before)
        for node in inside:
            if report.statement is not None:
                positions.within(node, report.statement)
            positions.hint(node, report.top)
        if report.statement is not None:
            positions.hint(report.statement, report.top)
    suppressions = _suppressions(comments or [], text)
    known = {code for code in rule_table.BY_CODE} | set(rule_table.BY_NAME)
    protected = suppressions.protected_rows(known)
    builder = EditBuilder(text, module, names, positions, path)
    out: list[Diagnostic] = []
    seen: set[tuple[str, int, int, str]] = set()
    used: dict[Directive, set[str]] = {}
    # One string per rule, shared by its findings (a file may hold tens of thousands).
    urls: dict[type[Rule], str] = {}
    for report in reports:
        rule = report.rule
        rng = positions.syntactic(report.node)
        start, end = start_of(rng), end_of(rng)
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
        url = urls.get(rule)
        if url is None:
            url = urls[rule] = rule.url()
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
                url=url,
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


__all__ = ["lint_parsed"]
