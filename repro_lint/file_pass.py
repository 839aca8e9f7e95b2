"""The per-file pass: parse a file once, run its per-file rules and its summary in one
traversal, and turn the rules' reports into positioned, suppressed findings."""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import libcst as cst

from repro_lint import rules as rule_table
from repro_lint.collector import one_pass
from repro_lint.diagnostics import Diagnostic, FileResult, Fix, FixSafety
from repro_lint.edits import EditBuilder, end_of, start_of
from repro_lint.files import module_name
from repro_lint.fixes import touches
from repro_lint.names import Names
from repro_lint.parsing import (
    NEWLINE,
    Checked,
    Pieces,
    Span,
    check,
    parse_module,
    python_tree,
)
from repro_lint.positions import Positions
from repro_lint.program import ProjectRule
from repro_lint.rule import (
    DropComments,
    FileContext,
    InsertAfter,
    InsertBefore,
    PendingReport,
    Replace,
    Rule,
)
from repro_lint.rules.unused_noqa import UnusedNoqa
from repro_lint.settings import Settings
from repro_lint.source import SourceError, error_result, internal_error, too_large
from repro_lint.summary import DEFERRED, SummaryCollector
from repro_lint.suppressions import EMPTY, Directive, Suppressions, parse_comment
from repro_lint.traversal import Dispatcher

# -- syntax errors ----------------------------------------------------------------------------


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


def lint_one(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None = None,
    *,
    summarise: bool = False,
    pieces: Pieces | None = None,
    checked: Checked | SourceError | None = None,
) -> FileResult:
    """Lint one file on its own: per-file rules and its summary for the project phase.

    A summary is needed for any file that can take part in a program; a file that imports
    nothing can neither use RNG nor call into a module that does. A file that no per-file
    rule parses and that cannot be an entry point gets a deferred summary: the project
    phase summarises it (``summarise=True``) only if an entry point reaches it.

    A text of more than ``max-file-size`` bytes is an RPL000, never parsed (files on disk are
    refused before they are read; this is for editors' buffers and stdin).

    ``pieces``: the last version's parse of the same buffer (see ``parsing.Pieces``).
    ``checked``: ``check(text)`` when the caller made it already (it depends on the text
    alone: a file linted, then summarised, is checked once).
    """
    size = _size_above(text, settings.config.max_file_size)
    if size is not None:
        return error_result(filename, too_large(size, settings.config.max_file_size))
    rules = settings.rules_for(path)
    active = [
        r
        for r in rules
        if r.CODE not in rule_table.ALWAYS_ON
        and not issubclass(r, ProjectRule)
        and triggered(r, text)
    ]
    wanted = settings.needs_project and "import" in text
    collect = wanted and (summarise or bool(active) or _may_be_entry(text, path, settings))
    # Project rules with triggers judge the code of every file that mentions one (a file
    # that calls ``sampler.set_epoch`` need not import anything).
    collect = collect or any(
        r.TRIGGERS and triggered(r, text) for r in settings.project_rules if r in rules
    )
    # ast comes first even for files libcst will parse: libcst's native parser overflows the C
    # stack (a segfault, not an exception) on expressions nested ~5,000 deep, which ast rejects
    # with RecursionError from ~3,000 levels on. That guard scales with the recursion limit, so
    # ast runs before the limit is raised for libcst.
    if checked is None:
        checked = checked_text(text, pieces)
    if isinstance(checked, SourceError):
        return error_result(filename, checked, text)
    if active or collect:
        # The gate: what triggered the rules may sit only in documentation. (A file
        # summarised for the project phase is summarised whatever the gate says; its rules
        # are still only those the gate leaves, as in the per-file pass it was deferred by.)
        code = gate_text(text, checked.docstrings)
        if code is not text:
            active = [r for r in active if triggered(r, code)]
            if not summarise:
                collect = wanted and (bool(active) or _may_be_entry(code, path, settings))
                collect = collect or any(
                    r.TRIGGERS and triggered(r, code) for r in settings.project_rules if r in rules
                )
    if not active and not collect:
        return FileResult(filename, (), summary=dict(DEFERRED) if wanted else {})
    with _recursion_headroom(), one_pass():
        return _lint_parsed(
            text, filename, settings, path, rules, active, collect, checked.cuts, pieces
        )


def checked_text(text: str, pieces: Pieces | None = None) -> Checked | SourceError:
    """Python's check of ``text`` (``parsing.check``), as the per-file pass makes it.
    Automatic collection is paused while ast builds its tree (see ``collector.one_pass``):
    that tree holds no cycles, and a collection started by its allocations would walk all
    that the process holds (in a run, every file's result so far)."""
    with one_pass():
        return check(text, pieces)


def _size_above(text: str, limit: int) -> int | None:
    """The text's size in UTF-8 bytes if it is above ``limit`` (encoded only when unsure)."""
    if len(text) * 4 <= limit:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


def gate_text(text: str, docstrings: Sequence[Span]) -> str:
    """The text rules' triggers are looked for in once the file is known to parse: ``text``
    with its docstrings blanked out (``text`` itself when it has none).

    Documentation names ops, loaders and seeds everywhere (a model's docstring says "pad",
    "gather", "interpolate"), and no rule fires on a docstring: a file whose triggers occur
    only there is finding-free without libcst, and needs a summary only if an entry point
    reaches it (it is then summarised like any file deferred). Comments and every other
    string stay: noqa comments and settings spelled in strings are triggers. The benchmark
    checks that the findings on the corpus are the same with and without this gate."""
    if not docstrings:
        return text
    lines = NEWLINE.split(text)
    for first, first_column, last, last_column in docstrings:
        for row in range(first, last + 1):
            line = lines[row - 1]
            data = line.encode("utf-8")
            # ast counts columns in UTF-8 bytes.
            start = len(data[:first_column].decode("utf-8", "ignore")) if row == first else 0
            end = len(data[:last_column].decode("utf-8", "ignore")) if row == last else len(line)
            lines[row - 1] = line[:start] + " " * (end - start) + line[end:]
    return "\n".join(lines)


def _lint_parsed(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None,
    rules: Sequence[type[Rule]],
    active: list[type[Rule]],
    collect: bool,
    cuts: Sequence[int],
    pieces: Pieces | None = None,
) -> FileResult:
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


# Text every entry point contains: a __main__ guard, training calls at module level, or a
# call statement at the start of a line (``main()`` at the bottom of a script).
_ENTRY_TEXT = re.compile(r"__main__|\.backward\(|\.fit\(|\.step\(|^[A-Za-z_][\w.]*\s*\(", re.M)


def _may_be_entry(text: str, path: Path | None, settings: Settings) -> bool:
    if _ENTRY_TEXT.search(text):
        return True
    matcher = settings.project_options().entry_points if path is not None else None
    return matcher is not None and path is not None and matcher(path)


# A rule's trigger test (see ``triggered``), made on first use.
_TRIGGER_TESTS: dict[type[Rule], Callable[[str], bool]] = {}
# Up to this many triggers, each is looked for as a substring first (memchr speed), and only a
# file holding one is searched with a regex: most files hold none.
_FEW_TRIGGERS = 12
# The last text each regex of many triggers was searched, and the answer: rules with the same
# triggers (RPL401 and RPL402) share one search. The text itself is kept, so that an identity
# test cannot match another text that took the place of a freed one.
_SEARCHED: dict[re.Pattern[str], tuple[str, bool]] = {}


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


def triggered(rule: type[Rule], text: str) -> bool:
    """Whether ``text`` mentions one of the rule's triggers (whole words where the rule
    says ``TRIGGER_WORDS``: ``put`` must not fire on ``input``)."""
    if not rule.TRIGGERS:
        return True
    test = _TRIGGER_TESTS.get(rule)
    if test is None:
        test = _TRIGGER_TESTS[rule] = _trigger_test(rule)
    return test(text)


def _trigger_test(rule: type[Rule]) -> Callable[[str], bool]:
    words = tuple(sorted(set(rule.TRIGGERS), key=len, reverse=True))
    whole = rule.TRIGGER_WORDS
    if len(words) <= _FEW_TRIGGERS:
        if not whole:
            return lambda text: any(word in text for word in words)

        def as_words(text: str) -> bool:
            present = tuple(word for word in words if word in text)
            return bool(present) and _trigger_pattern(present, True).search(text) is not None

        return as_words
    pattern = _trigger_pattern(words, whole)

    def shared(text: str) -> bool:
        last = _SEARCHED.get(pattern)
        if last is not None and last[0] is text:
            return last[1]
        found = pattern.search(text) is not None
        _SEARCHED[pattern] = (text, found)
        return found

    return shared


@functools.lru_cache(maxsize=256)
def _trigger_pattern(words: tuple[str, ...], whole: bool) -> re.Pattern[str]:
    """One regex for ``words`` (longest first), as whole words when ``whole``."""
    alternatives = "|".join(map(re.escape, words))
    return re.compile(rf"\b(?:{alternatives})\b" if whole else alternatives)


def _diagnostics(
    text: str,
    filename: str,
    module: cst.Module,
    names: Names,
    reports: list[PendingReport],
    comments: list[tuple[cst.Comment, int]] | None,
    unused_noqa: Sequence[type[Rule]] | None,
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


__all__ = ["RECURSION_LIMIT", "gate_text", "lint_one", "triggered"]
