"""The per-file pass: decide from a file's text what it must be parsed for (the rules its text
triggers, and whether the project pass needs its summary), and hand it to ``tree_pass``,
which parses it once and runs those rules and its summary in one traversal.

A file that nothing triggers on is settled here, from Python's own check of the text: a run
whose files all are imports neither libcst nor any rule's code."""

from __future__ import annotations

import bisect
import contextlib
import functools
import io
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from repro_lint import rules as rule_table
from repro_lint.collector import importing, one_pass
from repro_lint.diagnostics import FileResult
from repro_lint.parsing import NEWLINE, Checked, Pieces, Span, check
from repro_lint.rule_info import RuleInfo
from repro_lint.settings import Settings
from repro_lint.source import SourceError, error_result, too_large
from repro_lint.summary_format import DEFERRED


class Triggers(Protocol):
    """What ``triggered`` reads of a rule (its class, or its ``RuleInfo``)."""

    @property
    def TRIGGERS(self) -> tuple[str, ...]: ...

    @property
    def TRIGGER_WORDS(self) -> bool: ...


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
    rules = settings.selected_for(path)
    active = [
        r
        for r in rules
        if r.CODE not in rule_table.ALWAYS_ON and not r.project and triggered(r, text)
    ]
    wanted = settings.needs_project and "import" in text
    collect = wanted and (summarise or bool(active) or _may_be_entry(text, path, settings))
    # Project rules with triggers judge the code of every file that mentions one (a file
    # that calls ``sampler.set_epoch`` need not import anything).
    collect = collect or any(
        r.TRIGGERS and triggered(r, text) for r in settings.project_infos if r in rules
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
        # The gate: what triggered the rules may sit only in documentation or in comments. (A
        # file summarised for the project phase is summarised whatever the gate says; its
        # rules are still only those the gate leaves, as in the per-file pass it was deferred
        # by.)

        def decided(code: str) -> tuple[list[RuleInfo], bool]:
            still = [r for r in active if triggered(r, code)]
            if summarise:
                return still, collect
            needed = wanted and (bool(still) or _may_be_entry(code, path, settings))
            needed = needed or any(
                r.TRIGGERS and triggered(r, code) for r in settings.project_infos if r in rules
            )
            return still, needed

        code = gate_text(text, checked.docstrings)
        if code is not text:
            active, collect = decided(code)
        if active or (collect and not summarise):
            bare = comments_gated(text, code, (active, collect), decided)
            if bare is not None:
                active, collect = decided(bare)
    if not active and not collect:
        return FileResult(filename, (), summary=dict(DEFERRED) if wanted else {})
    import_tree_pass()
    from repro_lint.tree_pass import lint_parsed

    with _recursion_headroom(), one_pass():
        return lint_parsed(
            text,
            filename,
            settings,
            path,
            rules,
            [r.load() for r in active],
            collect,
            checked.cuts,
            pieces,
        )


@functools.cache
def import_tree_pass() -> None:
    """libcst, the rules' base and the summary, imported by the first file parsed, once per
    process (``importing`` pauses the collector, and freezes what it holds in a one-shot
    process)."""
    with importing():
        import repro_lint.tree_pass  # noqa: F401


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
    reaches it (it is then summarised like any file deferred). Every other string stays:
    settings spelled in strings are triggers. Comments are blanked after this, where that can
    matter (``comments_gated``). The benchmark checks that the findings on the corpus are the
    same with and without these gates."""
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


# From a line's first hash to its end: more than its comment where a string holds the hash.
_AFTER_HASH = re.compile(r"#[^\r\n]*")


def comments_gated(
    text: str,
    code: str,
    decision: tuple[list[RuleInfo], bool],
    decided: Callable[[str], tuple[list[RuleInfo], bool]],
) -> str | None:
    """``code`` (``text`` after ``gate_text``) with its comments blanked out, when that can
    change what the file is parsed for (``decision``, which is ``decided(code)``); None when
    it cannot.

    A comment names what a rule looks for as often as a docstring does ("# save the best
    model", "# pad to a multiple of 8"), and no rule fires on a comment: only a noqa comment
    counts (RPL901 judges it, and it suppresses), and those stay. Where the comments are is
    asked (``_comments``) only when cutting every line at its first hash, which removes at
    least the comments, changes the answer: the triggers are found in less text no more
    often. That test only saves the asking; what is blanked is exactly the comments."""
    if "#" not in code or decided(_AFTER_HASH.sub("", code)) == decision:
        return None
    comments = _comments(text)
    if not comments:
        return None
    lines = NEWLINE.split(code)
    for row, column in comments:
        line = lines[row - 1]
        lines[row - 1] = line[:column] + " " * (len(line) - column)
    return "\n".join(lines)


def _comments(text: str) -> list[tuple[int, int]]:
    """Where the comments of ``text`` that are not noqa comments start (row from 1, column in
    characters); none where that cannot be told for sure (a lone carriage return, which
    ``tokenize`` does not end a line at, or a text the tokenizer fails on).

    Up to Python 3.11, a scan for strings and comments (``_STRING_OR_COMMENT``) tells exactly
    what its tokenizer does for a text that parses, about ten times faster than
    ``tokenize``, which is written in Python there. From 3.12 on an f-string may hold its own
    quotes, which such a scan cannot follow, and ``tokenize`` is the C tokenizer's."""
    if "\r" in text.replace("\r\n", ""):
        return []
    if sys.version_info < (3, 12):
        starts = [0]
        starts.extend(match.end() for match in NEWLINE.finditer(text))
        found: list[tuple[int, int]] = []
        for match in _STRING_OR_COMMENT.finditer(text):
            if match.lastgroup == "comment" and "noqa" not in match.group().lower():
                row = bisect.bisect_right(starts, match.start())
                found.append((row, match.start() - starts[row - 1]))
        return found
    import tokenize

    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and "noqa" not in token.string.lower():
                found.append(token.start)
    except (SyntaxError, tokenize.TokenError, ValueError):
        return []
    return found


# A comment, or a string literal (its prefix aside, which changes neither where it starts nor
# where it ends): Python 3.11's strings, whose f-strings cannot hold their own quotes. Outside
# them, a quote starts a string and a hash a comment; a backslash escapes the next character
# (a quote too, in a raw string), a line break included.
_STRING_OR_COMMENT = re.compile(
    r"(?P<comment>#[^\r\n]*)"
    r"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    r'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'[^'\\\r\n]*(?:\\(?:\r\n|.)[^'\\\r\n]*)*'"
    r'|"[^"\\\r\n]*(?:\\(?:\r\n|.)[^"\\\r\n]*)*"',
    re.S,
)


# Text every entry point contains: a __main__ guard, training calls at module level, or a
# call statement at the start of a line (``main()`` at the bottom of a script).
_ENTRY_TEXT = re.compile(r"__main__|\.backward\(|\.fit\(|\.step\(|^[A-Za-z_][\w.]*\s*\(", re.M)


def _may_be_entry(text: str, path: Path | None, settings: Settings) -> bool:
    if _ENTRY_TEXT.search(text) or (path is not None and path.suffix == ".ipynb"):
        return True
    matcher = settings.entry_point_matcher if path is not None else None
    return matcher is not None and path is not None and matcher(path)


# A rule's trigger test (see ``triggered``), made on first use.
_TRIGGER_TESTS: dict[Triggers, Callable[[str], bool]] = {}
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


def triggered(rule: Triggers, text: str) -> bool:
    """Whether ``text`` mentions one of the rule's triggers (whole words where the rule
    says ``TRIGGER_WORDS``: ``put`` must not fire on ``input``)."""
    if not rule.TRIGGERS:
        return True
    test = _TRIGGER_TESTS.get(rule)
    if test is None:
        test = _TRIGGER_TESTS[rule] = _trigger_test(rule)
    return test(text)


def _trigger_test(rule: Triggers) -> Callable[[str], bool]:
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


__all__ = [
    "RECURSION_LIMIT",
    "Triggers",
    "checked_text",
    "comments_gated",
    "gate_text",
    "import_tree_pass",
    "lint_one",
    "triggered",
]
