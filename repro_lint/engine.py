"""Lint files and texts: the stages in order (read, per-file pass, project pass), in parallel
and from the cache where it pays; the public entry points of the library."""

from __future__ import annotations

import dataclasses
import functools
import marshal
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro_lint import notebooks
from repro_lint.cache import Cache
from repro_lint.cache import digest as content_digest
from repro_lint.codec import FormatError
from repro_lint.collector import decoding, importing
from repro_lint.config import Config
from repro_lint.diagnostics import FileResult, FixSafety
from repro_lint.file_pass import checked_text, lint_one
from repro_lint.files import SourceFile, display_name, real_path
from repro_lint.fixes import FixOutcome, fix_texts
from repro_lint.helper import Helper, Work, fork_work
from repro_lint.moved_lines import shift_prefix
from repro_lint.parsing import Checked, Pieces
from repro_lint.project_pass import (
    ProjectMemo,
    memoized_loader,
    per_file_part,
    project_pass,
    reused,
    summary_loader,
    with_project,
)
from repro_lint.run_cache import RunRecord, project_from_json, project_to_json
from repro_lint.settings import Settings
from repro_lint.source import SourceError, Stamp, decode, error_result, read_bytes
from repro_lint.summary_format import DEFERRED_KEY

if TYPE_CHECKING:
    from concurrent.futures import Future
    from multiprocessing.connection import Connection

    from repro_lint.program import Loader

# Without the record of an earlier pass, the per-file pass's workers summarise the deferred
# files they lint, up to this many bytes of them in all (a share each), and the rest are
# summarised beside the project pass (``_summarised_ahead``). Measured on 2 cores: training
# projects read most of theirs (mmpretrain 196 of 240 files, 1.1 MB; mmyolo 0.38 MB,
# Lightning 0.36 MB), and summarising all of them beside the pass made their cold runs 6
# to 20% slower; libraries read few (timm 48 of 142 files, 1.8 MB; the benchmark corpus
# 331 of 1,803, 11.8 MB), and summarising all of them first made theirs 6 to 20% slower.
AHEAD_BYTES = 1_500_000
# The most workers that summarise beside the project pass (``_Alongside``): the pass reads one
# summary at a time, and each worker is a fresh process of its own (about 70 MiB on the
# benchmark corpus), whatever the machine's cores.
BESIDE_WORKERS = 2
# Below this many files a process pool costs more than it saves.
POOL_THRESHOLD = 16
# The source bytes whose parses a run after an edit keeps for the lint behind the shift
# prefix (``_moved``): a parse holds about 400 bytes of memory per byte of source, up to 1,400.
KEPT_PARSES_BYTES = 256 * 1024


def import_analysis() -> None:
    """Import what a run imports only once it parses a file or analyses a program (libcst,
    every rule, the program model): a process that stays (the daemon, the language server)
    does it before its first request instead of during it."""
    with importing():
        from repro_lint import program, tree_pass  # noqa: F401
        from repro_lint.rules import table  # noqa: F401


def helper_handler(make_settings: Callable[[], Settings]) -> Callable[[Any], Any]:
    """What a helper process (``helper``) answers for a run after an edit (``lint_run``), once
    it has imported the per-file pass, with the settings ``make_settings`` gives (the run's
    own, made again there from the same configuration). Two requests: a file through the read
    stage and the per-file pass (``_lint_file_alone``, keeping its parse when asked: see
    ``_per_file``), and a text linted with the parse kept for that file (``_moved``). The
    first file whose parse is kept also begins the lint of its text behind the shift prefix
    in a process of its own (``_lint_behind``), whose result answers the text when it is
    that same text."""
    from repro_lint.file_pass import import_tree_pass

    import_tree_pass()
    settings = make_settings()
    kept: dict[str, Pieces] = {}
    # The lint behind the shift prefix, begun on another core (``_lint_behind``).
    behind: dict[str, Work] = {}

    def handle(request: tuple[Any, ...]) -> Any:
        if request[0] == "file":
            _, display, path, summarise, keep, ahead = request
            if keep and not behind and not path.endswith(notebooks.NOTEBOOK_SUFFIX):
                # A file whose parse is kept is one a run after an edit lints again, and then
                # most often asks for behind the shift prefix: that lint is begun now, in a
                # process of its own (the check waits meanwhile, and its core is free).
                work = fork_work(functools.partial(_lint_behind, display, path, settings))
                if work is not None:
                    behind[display] = work
            pieces = kept.setdefault(display, Pieces()) if keep else None
            file = SourceFile(display, Path(path))
            linted = _lint_file_alone(file, settings, summarise, ahead, pieces=pieces)
            return _packed(linted)
        _, text, display, path = request
        work = behind.pop(display, None)
        if work is not None:
            done, answer = work.result()
            if done and answer is not None and answer[0] == text:
                return answer[1]
        return lint_one(text, display, settings, Path(path), pieces=kept.pop(display, None))

    return handle


def _lint_behind(display: str, path: str, settings: Settings) -> tuple[str, FileResult] | None:
    """The text of the file at ``path`` behind ``shift_prefix``, and its per-file result
    (None when the file cannot be read): what ``_moved`` asks a helper for, made before it
    asks, and answered only for that same text."""
    try:
        data, _ = read_bytes(Path(path), settings.config.max_file_size)
        text = decode(data).text
    except SourceError:
        return None
    shifted = shift_prefix(text) + text
    return shifted, lint_one(shifted, display, settings, Path(path))


def check_helper(config: Config, ignore_noqa: bool) -> Callable[[Any], Any]:
    """``helper_handler`` for a check's helper process, with the check's settings: made there
    from the check's configuration (a ``ConfigError`` ends the helper, and the check, which
    made its own, does the work itself)."""
    return helper_handler(lambda: Settings.from_config(config, ignore_noqa=ignore_noqa))


def lint_text(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None = None,
    load: Loader | None = None,
) -> FileResult:
    """Lint decoded source text as part of its project: project rules see the modules it
    imports (read from disk when ``path`` is known; ``load`` gives their summaries, by
    default parsing them). Never raises for bad input: that becomes RPL000."""
    loader = load if load is not None else summary_loader(settings)
    return _linted_text(text, filename, settings, path, loader)[0]


def _linted_text(
    text: str, filename: str, settings: Settings, path: Path | None, load: Loader
) -> tuple[FileResult, ProjectMemo]:
    """``lint_text``, with what its project pass read (without the digests a run record
    keeps)."""
    result = lint_one(text, filename, settings, path)
    merged, memo = project_pass([result], {filename: path}, settings, load, recorded=False)
    return _with_text(merged[0], text), memo


def _with_text(result: FileResult, text: str) -> FileResult:
    if result.diagnostics and result.source is None:
        return dataclasses.replace(result, source=text)
    return result


@dataclass(frozen=True)
class Document:
    """A text linted as part of its project, with what its project pass read: the next
    version of the text (an editor's buffer after an edit) reuses that pass when none of
    it changed."""

    settings: Settings
    text: str
    result: FileResult
    memo: ProjectMemo


def lint_document(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None,
    load: Loader,
    previous: Document | None = None,
    pieces: Pieces | None = None,
) -> Document:
    """``lint_text`` for a document linted again and again: only the per-file pass runs
    when the project pass of ``previous`` (the last version linted) still holds, and the
    pieces of the text unchanged since are not parsed again (``pieces``)."""
    result = lint_one(text, filename, settings, path, pieces=pieces)
    if previous is not None and previous.settings is settings:
        again = reused(previous.memo, {filename: previous.result}, [(result, path)], settings, load)
        if again is not None:
            return Document(settings, text, _with_text(again[filename], text), previous.memo)
    merged, memo = project_pass([result], {filename: path}, settings, load)
    return Document(settings, text, _with_text(merged[0], text), memo)


def text_linter(
    settings: Settings, path: Path | None, load: Loader | None = None
) -> notebooks.TextLinter:
    """``lint_text`` with the settings, the file's path and the loader of the modules it
    imports bound (what notebooks lint with); by default the loader this process's
    notebooks share (``notebook_loader``)."""
    loader = load if load is not None else notebook_loader(settings)

    def lint(text: str, filename: str) -> FileResult:
        return lint_text(text, filename, settings, path, loader)

    return lint


# The loader of the notebooks a run lints after its other files, which takes the summaries
# the run made of those (``_RunSummaries``); set while they are linted (in this process, or
# in the workers it forks for them).
_RUN_LOADER: Loader | None = None
# The loader the notebooks this process lints share (``notebook_loader``), with the settings
# and the cache it was made for.
_NOTEBOOK_LOADER: tuple[Settings, Cache | None, Loader] | None = None
# The cache of the run under way (``lint_run``), which that loader takes imported modules'
# summaries from and adds those it makes to; in a worker, the same cache read from disk
# (``_init_worker``: what it adds there is not written).
_NOTEBOOK_CACHE: Cache | None = None


def notebook_loader(settings: Settings) -> Loader:
    """The loader of imported modules for the notebooks this process lints with
    ``settings``: one for all of them, which answers again from memory for a module whose
    stamp has not changed (``memoized_loader``), and summarises a module once while its bytes
    stay the same (asked for its import-time code and then whole, say).

    A notebook is linted with a project pass of its own (its rows are cell rows), and each
    pass loads the summaries of the modules the notebook imports. With a loader per
    notebook, a project's tutorials, which all import its library, had the library
    summarised once per notebook, and again for each broken cell and each round of
    ``--fix``: 48 notebooks importing peft took a cold run to 131 s, 92% of it in those
    summaries. Only the last settings' loader is kept (a long-lived process holds one
    project's summaries). In a run with a cache, summaries come from it where it holds them
    (``_NOTEBOOK_CACHE``): notebooks linted again after an edit of a module they import do
    not summarise the rest of the library again."""
    global _NOTEBOOK_LOADER
    cache = _NOTEBOOK_CACHE
    if (
        _NOTEBOOK_LOADER is None
        or _NOTEBOOK_LOADER[0] is not settings
        or _NOTEBOOK_LOADER[1] is not cache
    ):
        made: dict[str, tuple[FileResult, str]] = {}
        load = summary_loader(settings, cache, ahead=made, keep=made)
        _NOTEBOOK_LOADER = (settings, cache, memoized_loader(load))
    return _NOTEBOOK_LOADER[2]


def _lint_notebook(
    file: SourceFile, data: bytes, settings: Settings
) -> tuple[FileResult, list[dict[str, Any]] | None]:
    """A notebook's code cells, linted as one module (with their own project phase, so the
    result carries no summary for the run's project phase: its rows are cell rows), and what
    those project passes read (``ProjectMemo`` data as ``run_cache.project_to_json`` writes
    it, one per pass: the cells joined, and each broken cell alone; None without project
    rules). The result holds only while that does (``_notebook_holds``): its findings
    depend on the modules it imports, which a run may not even lint. The modules are loaded
    by the run's loader (``_RUN_LOADER``) while a run lints its notebooks, else by
    ``notebook_loader``'s."""
    load = _RUN_LOADER if _RUN_LOADER is not None else notebook_loader(settings)
    memos: list[ProjectMemo] = []

    def lint(text: str, filename: str) -> FileResult:
        result, memo = _linted_text(text, filename, settings, file.path, load)
        memos.append(memo)
        return result

    result = notebooks.lint(data, file.display, lint)
    if result.summary:
        result = dataclasses.replace(result, summary={})
    if not settings.needs_project:
        return result, None
    return result, [project_to_json(**_memo_data(memo)) for memo in memos]


def _notebook_holds(project: list[Any] | None, load: Loader) -> bool:
    """Whether what a notebook's project passes read (``_lint_notebook``) is as it was: the
    directories listed and the text asked of are unchanged, and the modules loaded give
    the same answers (``ProjectMemo.still_valid``: loaded again through ``load`` where
    their stamps changed). An edit of a module that changes no answer a notebook had (a
    function added to a package's ``__init__``, which its notebooks ask only whether it
    seeds at import) keeps the notebook's result."""
    if project is None:
        return True
    try:
        memos = [project_from_json(data) for data in project]
    except FormatError:
        return False
    return all(memo is not None and ProjectMemo(**memo).still_valid(load) for memo in memos)


def _with_notebook_reads(
    data: dict[str, Any] | None, projects: Mapping[str, list[Any] | None]
) -> dict[str, Any] | None:
    """The run's project pass's memo data (``_memo_data``), with the modules loaded (their
    stamps and answers) and the directories listed by the notebooks' own passes
    (``_lint_notebook``; ``projects``, by notebook) added: the run's record then answers, and
    its pass is reused, only while those hold too."""
    if data is None or not any(projects.values()):
        return data
    loaded = dict(data["loaded"])
    probed = dict(data["probed"])
    summaries = list(data["summaries"])
    seen = {(path, imported) for path, imported, _ in summaries}
    for project in projects.values():
        for part in project or ():
            try:
                memo = project_from_json(part)
            except FormatError:
                continue
            if memo is None:
                continue
            for path, stamp in memo["loaded"].items():
                loaded.setdefault(path, stamp)
            for directory, listed in memo["probed"].items():
                probed.setdefault(directory, listed)
            for path, imported, answer in memo["summaries"]:
                if (path, imported) not in seen:
                    seen.add((path, imported))
                    summaries.append((path, imported, answer))
    return {**data, "loaded": loaded, "probed": probed, "summaries": summaries}


def lint_file(file: SourceFile, settings: Settings) -> FileResult:
    """Read, decode and lint one file (a notebook's code cells, for ``.ipynb``)."""
    try:
        data, _ = read_bytes(
            file.path, notebooks.read_limit(file.path, settings.config.max_file_size)
        )
    except SourceError as error:
        return error_result(file.display, error)
    if file.path.suffix == ".ipynb":
        return _lint_notebook(file, data, settings)[0]
    try:
        text = decode(data).text
    except SourceError as error:
        return error_result(file.display, error)
    return lint_text(text, file.display, settings, file.path)


@dataclass(frozen=True, slots=True)
class _Linted:
    """One file through the read stage and the per-file pass: its result, and the stamp and
    content hash of the bytes it was linted from (None when they could not be read)."""

    file: SourceFile
    result: FileResult
    stamp: Stamp | None = None
    digest: str | None = None
    # The result's summary on its way from a worker (``_packed``); the result's is then empty.
    packed: bytes | None = None
    # A deferred file summarised at once (``ahead``: see ``_per_file``), as
    # ``_summarised_ahead`` summarises it: by its real path.
    ahead: _Linted | None = None
    # For a notebook, what its project passes read (``_lint_notebook``).
    project: list[dict[str, Any]] | None = None


def _lint_file_alone(
    file: SourceFile,
    settings: Settings,
    summarise: bool = False,
    ahead: bool = False,
    pieces: Pieces | None = None,
) -> _Linted:
    try:
        limit = notebooks.read_limit(file.path, settings.config.max_file_size)
        data, stamp = read_bytes(file.path, limit)
    except SourceError as error:
        return _Linted(file, error_result(file.display, error))
    digest = content_digest(data)
    made = None
    project = None
    if file.path.suffix == ".ipynb":
        result, project = _lint_notebook(file, data, settings)
    else:
        try:
            text = decode(data).text
        except SourceError as error:
            result = error_result(file.display, error)
        else:
            checked = checked_text(text, pieces) if ahead else None
            result = _lint_decoded(text, file, settings, summarise, checked, pieces)
            if ahead and result.summary.get(DEFERRED_KEY):
                real = real_path(file.path)
                summarised = SourceFile(display_name(real), real)
                again = _lint_decoded(text, summarised, settings, True, checked)
                made = _Linted(summarised, again, stamp, digest)
    return _Linted(file, result, stamp, digest, ahead=made, project=project)


def _lint_decoded(
    text: str,
    file: SourceFile,
    settings: Settings,
    summarise: bool,
    checked: Checked | SourceError | None,
    pieces: Pieces | None = None,
) -> FileResult:
    result = lint_one(
        text, file.display, settings, file.path, summarise=summarise, checked=checked, pieces=pieces
    )
    if result.source is not None:
        # Not carried: a run holds every file's result until it ends (``_sourced`` reads the
        # text again, checked against the digest, where it is wanted).
        result = dataclasses.replace(result, source=None)
    if result.summary and not result.summary.get(DEFERRED_KEY):
        # The run holds every file's summary until its project pass ends, and the cache
        # keeps them as they are: each name, key and kind is then held once.
        result = dataclasses.replace(result, summary=_interned(result.summary))
    return result


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
            r.filename: (texts[r.filename], per_file_part(r, settings))
            for r in results
            if r.filename in texts and (not r.diagnostics or r.source == texts[r.filename])
        }

    def __call__(self, texts: Mapping[str, str]) -> dict[str, FileResult]:
        results = []
        for name, text in texts.items():
            memo = self._memo.get(name)
            if memo is None or memo[0] != text:
                memo = (text, lint_one(text, name, self._settings, self._paths.get(name)))
                self._memo[name] = memo
            results.append(memo[1])
        paths: dict[str, Path | None] = {name: self._paths.get(name) for name in texts}
        merged = with_project(results, paths, self._settings, self._load)
        return {result.filename: result for result in merged}


# -- many files -------------------------------------------------------------------------------

_WORKER_SETTINGS: Settings | None = None
# The bytes of deferred files this worker may still summarise at once (``ahead``).
_WORKER_AHEAD = 0


def _init_worker(settings: Settings, ahead: int = 0, cache: tuple[Path, str] | None = None) -> None:
    """``cache``: the root and key of the run's cache, which notebooks take summaries from
    (``_NOTEBOOK_CACHE``)."""
    global _WORKER_SETTINGS, _WORKER_AHEAD, _NOTEBOOK_CACHE
    _WORKER_SETTINGS = settings
    _WORKER_AHEAD = ahead
    _NOTEBOOK_CACHE = None if cache is None else Cache(*cache)


def _lint_in_worker(
    files: Sequence[SourceFile], summarise: bool = False, ahead: bool = False
) -> list[_Linted]:
    global _WORKER_AHEAD
    assert _WORKER_SETTINGS is not None
    done = []
    for file in files:
        linted = _lint_file_alone(file, _WORKER_SETTINGS, summarise, ahead and _WORKER_AHEAD > 0)
        if linted.ahead is not None:
            _WORKER_AHEAD -= _size(file)
        done.append(_packed(linted))
    return done


def _packed(linted: _Linted) -> _Linted:
    """A worker's result with its summary marshalled (its strings are interned).

    The run holds every file's summary until its project pass ends (about 100 KB apiece
    as pickle rebuilds them). ``marshal`` rebuilds lists at their exact size and keeps
    interned strings interned: the receiving process shares each name, key and kind among
    all the summaries, which then take about two thirds of the memory."""
    if linted.ahead is not None:
        linted = dataclasses.replace(linted, ahead=_packed(linted.ahead))
    summary = linted.result.summary
    if not summary or summary.get(DEFERRED_KEY):
        return linted  # (a deferred summary is a few bytes, and is looked at before the rest)
    try:
        data = marshal.dumps(summary)
    except ValueError:  # (not plain data: sent as it is)
        return linted
    result = dataclasses.replace(linted.result, summary={})
    return dataclasses.replace(linted, result=result, packed=data)


def _unpacked(linted: _Linted) -> _Linted:
    if linted.packed is None:
        return linted
    with decoding():
        summary = marshal.loads(linted.packed)
    result = dataclasses.replace(linted.result, summary=summary)
    return dataclasses.replace(linted, result=result, packed=None)


def _interned(value: Any) -> Any:
    """``value`` (plain data) with every string in it interned."""
    kind = type(value)
    if kind is str:
        return sys.intern(value)
    if kind is list:
        return [_interned(item) for item in value]
    if kind is dict:
        return {
            sys.intern(key) if type(key) is str else key: _interned(item)
            for key, item in value.items()
        }
    if kind is tuple:
        return tuple(_interned(item) for item in value)
    return value


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _size(file: SourceFile) -> int:
    try:
        return os.stat(file.path).st_size
    except OSError:
        return 0


def balanced(files: Sequence[SourceFile], jobs: int) -> list[list[SourceFile]]:
    """The files in chunks for ``jobs`` workers, biggest first, each chunk about as much text
    as the others (a file bigger than that is a chunk of its own): the work is balanced by
    size, and no worker is left with a big file at the end while the others wait."""
    sized = sorted(((_size(file), file) for file in files), key=lambda pair: -pair[0])
    total = sum(size for size, _ in sized)
    # Enough chunks per worker that the last ones are small; few enough that passing them
    # to the workers costs nothing next to linting them.
    target = max(1, total // (jobs * 16))
    chunks: list[list[SourceFile]] = []
    current: list[SourceFile] = []
    weight = 0
    for size, file in sized:
        current.append(file)
        weight += size
        if weight >= target or len(current) >= 64:
            chunks.append(current)
            current, weight = [], 0
    if current:
        chunks.append(current)
    return chunks


# Told (files done, files in all) as the per-file pass goes.
Progress = Callable[[int, int], None]
# Parsing takes up to 1,400 bytes of memory per byte of source (code dense with calls; about
# 400 for ordinary code): chunks are handed to workers only while the ones in flight are
# estimated below this, so that several big files are not parsed at once (a chunk is always
# started when none is in flight).
MEMORY_BUDGET = 900 * 1024 * 1024
_BYTES_PER_BYTE = 1500


def _per_file(
    files: Sequence[SourceFile],
    settings: Settings,
    jobs: int,
    progress: Progress | None = None,
    summarise: bool = False,
    fresh: bool = False,
    ahead: bool = False,
    parses: dict[str, Pieces] | None = None,
    helper: Helper | None = None,
    ahead_of: AbstractSet[str] = frozenset(),
) -> list[_Linted]:
    """The read stage and the per-file pass over ``files``, in parallel when it pays
    (``summarise``: every file's summary made, as ``lint_one`` says). ``ahead``: in parallel,
    each file whose summary is deferred is also summarised at once, from the text and the
    check already made (``_Linted.ahead``), for ``_summarised_ahead``, up to ``AHEAD_BYTES``
    of such files (an equal share per worker). ``fresh``: workers
    started afresh rather than forked, for a process that already holds much: a forked
    worker shares its pages, and copies them as Python touches the objects (a cold run of
    the benchmark corpus peaked at 1.4 GB summed over its processes, 0.66 GB with fresh
    ones). What workers linted comes with its summary packed (``_unpacked`` unpacks it).
    ``parses``: where the parse of each file is left, by file (see ``parsing.Pieces``), when
    the files are fewer than ``POOL_THRESHOLD`` (and so linted in this process), up to
    ``KEPT_PARSES_BYTES`` of source. ``helper``: a helper (``helper_handler``) that lints the
    files instead, when they are linted in this process (a parse kept is then kept there).
    ``ahead_of``: when the files are linted in this process (or by ``helper``), the real paths
    of those summarised at once where their summary is deferred, as ``ahead`` does for all
    (see ``asked_whole``)."""
    done: list[_Linted] = []
    if jobs <= 1 or len(files) < POOL_THRESHOLD:
        keeping = parses if len(files) < POOL_THRESHOLD else None
        for file, keep in zip(files, _kept(files, keeping is not None), strict=True):
            now = _summarised_now(file, ahead_of)
            linted = None
            if helper is not None:
                linted = helper.ask(_file_request(file, summarise, keep, now))
            if linted is None:
                kept = None
                if keep and keeping is not None:
                    kept = keeping.setdefault(file.display, Pieces())
                linted = _lint_file_alone(file, settings, summarise, now, pieces=kept)
            done.append(linted)
            if progress is not None:
                progress(len(done), len(files))
        return done
    if helper is not None:
        helper.stop()  # (not held, nor inherited by the workers)
    # Imported only for a pool (a one-file run, an edit or a hook, has none).
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    context = multiprocessing.get_context("fork" if os.name == "posix" and not fresh else "spawn")
    waiting = balanced(files, jobs)
    waiting.reverse()  # biggest first, taken from the end
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_init_worker,
        initargs=(
            settings,
            AHEAD_BYTES // jobs if ahead else 0,
            None if _NOTEBOOK_CACHE is None else (_NOTEBOOK_CACHE.root, _NOTEBOOK_CACHE.key),
        ),
    ) as pool:
        running: dict[Future[list[_Linted]], int] = {}
        while waiting or running:
            # Keep every worker busy (a few chunks queued), within the memory budget.
            while waiting and len(running) < 2 * jobs:
                chunk = waiting[-1]
                cost = _BYTES_PER_BYTE * max(_size(file) for file in chunk)
                if running and sum(running.values()) + cost > MEMORY_BUDGET:
                    break
                waiting.pop()
                running[pool.submit(_lint_in_worker, chunk, summarise, ahead)] = cost
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                del running[future]
                done.extend(future.result())
            if progress is not None:
                progress(len(done), len(files))
    return done


def _kept(files: Sequence[SourceFile], keeping: bool) -> list[bool]:
    """Whether the parse of each of ``files`` is kept, when parses are (``keeping``): the
    first ones, in order, up to ``KEPT_PARSES_BYTES`` of source."""
    budget = KEPT_PARSES_BYTES
    kept = []
    for file in files:
        keep = keeping and (size := _size(file)) <= budget
        if keep:
            budget -= size
        kept.append(keep)
    return kept


def _file_request(file: SourceFile, summarise: bool, keep: bool, ahead: bool) -> tuple[Any, ...]:
    """A helper's request to lint ``file`` (``helper_handler``)."""
    return ("file", file.display, str(file.path), summarise, keep, ahead)


def _summarised_now(file: SourceFile, ahead_of: AbstractSet[str]) -> bool:
    """Whether ``file``, linted in this process, is summarised at once (``_per_file``)."""
    return (
        bool(ahead_of)
        and file.path.suffix != notebooks.NOTEBOOK_SUFFIX
        and (str(real_path(file.path)) in ahead_of)
    )


def asked_whole(previous: RunRecord | None) -> frozenset[str]:
    """The files whose whole summary the project pass of ``previous`` read (not only their
    import-time code), by real path (asked of its loader, or had from the cache:
    ``_still_whole``): after an edit, a changed one whose summary is deferred
    is summarised by the per-file pass as it lints it (``_per_file``'s ``ahead_of``), from
    the text it has read and the check it has made, and in the helper when there is one.
    The pass (or its reuse) then takes that summary instead of reading, checking and parsing
    the file in this process again, after importing the per-file pass only for that."""
    if previous is None or previous.project is None:
        return frozenset()
    project = previous.project
    return frozenset(
        (*(str(e[0]) for e in project.get("summaries", ()) if not e[1]), *project.get("whole", ()))
    )


def _still_whole(
    ordered: Sequence[SourceFile],
    results: Sequence[FileResult],
    asked: AbstractSet[str],
    memo: ProjectMemo,
) -> list[str]:
    """The files of ``asked`` (``asked_whole`` of the last pass) that a project pass had
    whole from the cache rather than from its loader (``memo``'s summaries): the loader
    stores a summarised result in the cache, which answers the file with it from then on, so
    the pass has its summary whole without asking for it. The next run after an edit of one
    still summarises it as it lints it. (Which units' summaries the program read is not
    known, so a file the program stopped reading stays listed while its summary is whole:
    an edit of it is then summarised ahead for nothing, a parse in the helper.)"""
    if not asked:
        return []
    loaded = {path for path, imported, _ in memo.summaries if not imported}
    whole = []
    for file, result in zip(ordered, results, strict=True):
        if result.summary and not result.summary.get(DEFERRED_KEY):
            path = str(real_path(file.path))
            if path in asked and path not in loaded:
                whole.append(path)
    return sorted(whole)


def lint_ahead(
    helper: Helper, changed: Sequence[SourceFile], previous: RunRecord | None = None
) -> None:
    """Send ``helper`` the requests that a run after an edit (``lint_run`` with ``changed``)
    will make for the files changed, as soon as they are known: the helper lints them while
    this process gets the run ready (its settings, the record's discovery, the cache), and
    ``_per_file`` then takes the answers. The requests are those ``_per_file`` makes for a
    few files changed; one it then does not make (a file the cache answers) is answered for
    nothing, and the answer dropped. ``previous``: the run record, which says which files
    are summarised as they are linted (``asked_whole``)."""
    ordered = sorted(changed)
    if not 0 < len(ordered) < POOL_THRESHOLD:
        return
    ahead_of = asked_whole(previous)
    for file, keep in zip(ordered, _kept(ordered, True), strict=True):
        helper.send(_file_request(file, False, keep, _summarised_now(file, ahead_of)))


def lint_files(
    files: Sequence[SourceFile],
    settings: Settings,
    *,
    jobs: int | None = None,
    cache: Cache | None = None,
    project: bool = True,
    sources: bool = True,
) -> list[FileResult]:
    """Lint files (from the cache where unchanged), in parallel when it pays, then run the
    project phase over them (unless ``project`` is false: per-file results with their
    summaries); sorted output. The cache holds per-file results only. ``sources``: attach
    the text of files with findings (fixes and code frames need it; a report can read it
    later instead)."""
    if not project:
        per_file = _per_file_results(files, settings, jobs, cache, {})
        return [
            _sourced(per_file[f.display][0], f, sources, per_file[f.display][1])
            for f in sorted(files)
        ]
    return lint_run(
        files, settings, jobs=jobs, cache=cache, sources=sources, recorded=False
    ).results


@dataclass
class RunOutcome:
    """A run's final results (sorted by file), with what a whole-run record keeps of it:
    per file the stamp and content hash of the bytes linted (None when unknown), and what
    the project pass read (``RunRecord.project``'s data; None without a project pass)."""

    results: list[FileResult]
    stamps: dict[str, tuple[Stamp, str] | None]
    project: dict[str, Any] | None
    # What it took: files linted now (the others came from the cache or the record), and
    # whether the project pass ran or an earlier one was reused.
    linted: int = 0
    project_reused: bool = False


def lint_run(
    files: Sequence[SourceFile],
    settings: Settings,
    *,
    jobs: int | None = None,
    cache: Cache | None = None,
    previous: RunRecord | None = None,
    changed: set[str] | None = None,
    sources: bool = True,
    progress: Progress | None = None,
    helper: Helper | None = None,
    recorded: bool = True,
) -> RunOutcome:
    """Lint the files of a run. With the record of an earlier run over the same files
    (``previous``) and the files changed since (``changed``), only those are linted again,
    and the project pass is reused when nothing it read changed. ``helper``: a helper
    (``helper_handler``) that lints the files linted again, and the texts behind the shift
    prefix; stopped before the project pass, if it has to run. ``recorded``: whether the
    caller may keep what the project pass read (``RunOutcome.project``: None if not)."""
    global _NOTEBOOK_CACHE
    _NOTEBOOK_CACHE = cache
    ordered = sorted(files)
    fresh: dict[str, tuple[FileResult, tuple[Stamp, str] | None]] = {}
    # What the notebooks' own project passes read (``_with_notebook_reads``).
    projects: dict[str, list[Any] | None] = {}
    # Deferred files that changed, summarised as they were linted (``asked_whole``).
    summarised: dict[str, _Linted] = {}
    ahead_of = asked_whole(previous)
    if previous is not None and changed is not None:
        again = [f for f in ordered if f.display in changed]
        # What the cache holds of the last versions (taken before the new ones replace it).
        stored = {f.display: cache.stored(f) for f in again} if cache is not None else {}
        # Their parses, when they are few: the lint behind ``shift_prefix`` (``_moved``) takes
        # the pieces that prefix leaves unchanged.
        parses: dict[str, Pieces] = {}
        fresh = _per_file_results(
            again,
            settings,
            jobs,
            cache,
            {},
            progress=progress,
            ahead=summarised if ahead_of else None,
            parses=parses,
            helper=helper,
            ahead_of=ahead_of,
            projects=projects,
        )
        moved = _moved(previous, again, stored, fresh, settings, parses, helper)
        outcome = _reuse(
            previous,
            ordered,
            fresh,
            settings,
            sources,
            cache,
            moved,
            _Unpacking(summarised),
            projects,
        )
        if outcome is not None:
            return outcome
        parses.clear()  # (not held through the project pass)
    if helper is not None:
        helper.stop()
    linted: list[int] = [len(fresh)]
    linted_now: set[str] = set()
    packed: dict[str, bytes] = {}
    # Without the record of an earlier pass, the pass may summarise any file whose summary
    # is deferred (``_summarised_ahead``): the workers summarise those they lint while they
    # hold their text, up to ``AHEAD_BYTES`` of them.
    made: dict[str, _Linted] | None = None
    if settings.needs_project and (previous is None or previous.project is None):
        made = {}
    per_file = _per_file_results(
        ordered,
        settings,
        jobs,
        cache,
        fresh,
        linted,
        progress,
        linted_now,
        packed,
        made,
        projects=projects,
    )
    paths: dict[str, Path | None] = {file.display: file.path for file in ordered}
    # The files that are unchanged and answered from the cache have the per-file results
    # the last pass digested (one linted again, its entry lost, is digested again).
    known = {}
    if previous is not None and changed is not None and previous.project is not None:
        known = {
            name: value
            for name, value in previous.project.get("digests", {}).items()
            if name not in fresh and name not in linted_now
        }
    ahead = _summarised_ahead(
        ordered, per_file, settings, jobs, previous, cache, {**summarised, **(made or {})}, ahead_of
    )
    _with_summaries(per_file, packed)
    results = [per_file[file.display][0] for file in ordered]
    load = summary_loader(settings, cache, ahead)
    # What the last pass asked of the project's text, answered as it is now from the files
    # that changed: the trees are then listed, not read for each question again.
    answers = None
    if previous is not None and previous.project is not None and settings.needs_project:
        answers = ProjectMemo(**previous.project).answers_now()
    try:
        merged, memo = project_pass(
            results, paths, settings, load, known, answers, recorded=recorded
        )
    finally:
        if isinstance(ahead, _Alongside):
            ahead.close()
    data = None
    if settings.needs_project and recorded:
        memo.whole = _still_whole(ordered, results, ahead_of, memo)
        data = _with_notebook_reads(_memo_data(memo), projects)
    return RunOutcome(
        [
            _sourced(r, f, sources, per_file[f.display][1])
            for r, f in zip(merged, ordered, strict=True)
        ],
        {display: known for display, (_, known) in per_file.items()},
        data,
        linted[0],
    )


def _reuse(
    previous: RunRecord,
    ordered: Sequence[SourceFile],
    fresh: Mapping[str, tuple[FileResult, tuple[Stamp, str] | None]],
    settings: Settings,
    sources: bool,
    cache: Cache | None,
    moved: Callable[[str], tuple[FileResult, FileResult] | None] | None = None,
    ahead: Mapping[str, tuple[FileResult, str]] | None = None,
    projects: Mapping[str, list[Any] | None] | None = None,
) -> RunOutcome | None:
    """The earlier run's answer with the files linted again put in, if its project pass
    still holds for them, their lines moved or not (see ``project_pass.reused``).
    ``ahead``: files summarised already, as ``summary_loader`` takes them. ``projects``:
    what the notebooks linted again read (``_with_notebook_reads``)."""
    if settings.needs_project and previous.project is None:
        return None
    memo = ProjectMemo(**previous.project) if previous.project is not None else ProjectMemo()
    before = {result.filename: result for result in previous.results}
    if [f.display for f in ordered] != [f.display for f in previous.files]:
        return None
    again = [(fresh[f.display][0], f.path) for f in ordered if f.display in fresh]
    load = summary_loader(settings, cache, ahead)
    now = reused(memo, before, again, settings, load, moved, on_disk=True)
    if now is None:
        return None
    # The digests still hold for the other files: their per-file results are unchanged.
    stamps: dict[str, tuple[Stamp, str] | None] = {
        f.display: (f.stamp, f.digest) for f in previous.files
    }
    stamps.update((display, known) for display, (_, known) in fresh.items())
    results = [
        _sourced(now.get(f.display, before[f.display]), f, sources, stamps[f.display])
        for f in ordered
    ]
    # The memo's stamps were brought up to date: the next run need not look again.
    project = _memo_data(memo) if previous.project is not None else None
    project = _with_notebook_reads(project, projects or {})
    return RunOutcome(results, stamps, project, len(fresh), project_reused=True)


def _moved(
    previous: RunRecord,
    again: Sequence[SourceFile],
    stored: Mapping[str, tuple[FileResult, str] | None],
    fresh: Mapping[str, tuple[FileResult, tuple[Stamp, str] | None]],
    settings: Settings,
    parses: dict[str, Pieces],
    helper: Helper | None = None,
) -> Callable[[str], tuple[FileResult, FileResult] | None]:
    """For a file linted again whose last version's per-file result the cache held (the
    version the record's project pass read: same content hash), that result and the
    per-file result of the new text behind ``shift_prefix`` (see ``moved_lines``), parsed
    again only where the prefix changed the text's pieces (``parses``: the files' parses
    by the per-file pass, where kept; each is dropped once used), by ``helper`` when there is
    one (with the parse it kept)."""
    hashes = {f.display: f.digest for f in previous.files}
    files = {f.display: f for f in again}

    def moved(display: str) -> tuple[FileResult, FileResult] | None:
        file, old, now = files.get(display), stored.get(display), fresh[display][1]
        if file is None or old is None or now is None or old[1] != hashes.get(display):
            return None
        if file.path.suffix == ".ipynb":
            return None
        try:
            data, _ = read_bytes(file.path, settings.config.max_file_size)
            if content_digest(data) != now[1]:
                return None  # changed again since it was linted
            text = decode(data).text
        except SourceError:
            return None
        shifted = shift_prefix(text) + text
        if helper is not None:
            behind = helper.ask(("text", shifted, display, str(file.path)))
            if behind is not None:
                return old[0], behind
        pieces = parses.pop(display, None)
        return old[0], lint_one(shifted, display, settings, file.path, pieces=pieces)

    return moved


def _summarised_ahead(
    ordered: Sequence[SourceFile],
    per_file: Mapping[str, tuple[FileResult, tuple[Stamp, str] | None]],
    settings: Settings,
    jobs: int | None,
    previous: RunRecord | None,
    cache: Cache | None,
    made: Mapping[str, _Linted],
    asked: AbstractSet[str] | None = None,
) -> Mapping[str, tuple[FileResult, str]]:
    """The linted files whose summary was deferred and that the project pass may summarise,
    summarised in parallel: by path (as module lookups spell it, symlinks resolved), the
    result and the content hash it was made from. The pass's loader takes one of these
    instead of linting the file itself when the file still holds those bytes
    (``summary_loader``), so the answers are the same, only made on other cores. ``made``:
    those the per-file pass's workers summarised already (``_per_file_results``).
    ``asked``: the files the last pass read whole (``asked_whole`` of ``previous``, worked
    out here when not given).

    With the record of an earlier pass, the files it summarised whole are summarised now,
    before the pass, on every core. Without one, which the pass will reach is not known: on
    the benchmark corpus it reached 331 of 1,803 (a library's lazy ``__init__`` names every
    module, for type checkers only), in timm 48 of 142, but in Lightning 98 of 111 and in a
    training project most of them. The per-file pass's workers summarised up to
    ``AHEAD_BYTES`` of them as they linted them (what the pass never reads costs little);
    the rest are summarised beside the pass (``_Alongside``), on the cores it leaves free (at
    most ``BESIDE_WORKERS``), and the pass takes those done by the time it reaches them.
    Files whose summary the cache holds are left to the loader (its own entries: by resolved
    path)."""
    count = jobs or default_jobs()
    if not settings.needs_project:
        return {}
    found = {path: linted for path, linted in made.items() if linted.digest is not None}
    if count <= 1:
        return _Unpacking(found) if found else {}
    deferred = [
        file
        for file in ordered
        if per_file[file.display][0].summary.get(DEFERRED_KEY)
        and file.path.suffix != notebooks.NOTEBOOK_SUFFIX
    ]
    real = [real_path(file.path) for file in deferred]
    if previous is not None and previous.project is not None:
        # (Asked for their import-time code only, files that never seed are answered from
        # their text, unsummarised.)
        asked = asked_whole(previous) if asked is None else asked
        real = [path for path in real if str(path) in asked]
    files = [SourceFile(display_name(path), path) for path in real]
    files = [file for file in files if str(file.path) not in made]
    if cache is not None:
        # Those the loader finds summarised in the cache (from an earlier pass) are left to it.
        files = [file for file in files if not _summarised_in(cache, file)]
    if len(files) >= POOL_THRESHOLD:
        if previous is None or previous.project is None:
            return _Alongside(files, settings, min(count - 1, BESIDE_WORKERS), found)
        found.update(
            (str(linted.file.path), linted)
            # Fresh workers: this process holds every file's result by now.
            for linted in _per_file(files, settings, count, summarise=True, fresh=True)
            if linted.digest is not None
        )
    return _Unpacking(found) if found else {}


class _Unpacking(Mapping[str, tuple[FileResult, str]]):
    """Results linted by workers, by path, each with the content hash it was made from;
    a summary is unpacked when its result is first looked up (by the project pass's
    loader, which asks once for each file it reaches), so that the run does not hold all
    of them unpacked while the workers still run."""

    def __init__(self, linted: dict[str, _Linted]) -> None:
        self._linted = linted

    def __getitem__(self, path: str) -> tuple[FileResult, str]:
        linted = self._linted[path]
        if linted.packed is not None:
            linted = self._linted[path] = _unpacked(linted)
        assert linted.digest is not None
        return linted.result, linted.digest

    def __iter__(self) -> Iterator[str]:
        # (A snapshot: ``_Alongside``'s readers add entries meanwhile.)
        return iter(list(self._linted))

    def __len__(self) -> int:
        return len(self._linted)


class _Alongside(_Unpacking):
    """Files summarised by ``workers`` fresh worker processes while this process runs the
    project pass: by path, the result and the content hash it was made from, for the files
    done so far and those ``done`` already (a file not done yet is not in the mapping: the
    loader summarises it itself). ``close`` stops the workers, whatever they are still
    doing.

    The pass needs a summary the moment it reaches the file, and which files it reaches is
    known only as it goes; the workers take the files smallest first (the most files done
    soonest). On two cores one worker runs beside the pass: what it summarises and the pass
    never asks for costs the core the pass leaves idle, not the pass's time.

    Each worker is a process of its own that sends what it summarises down a pipe, which a
    thread here reads as it comes (a full pipe would stop the worker). No pool: a pool's
    workers wait for the sentinels its shutdown sends from a thread, and a run may end
    with ``os._exit``; they would outlive it, holding its stdout."""

    def __init__(
        self,
        files: Sequence[SourceFile],
        settings: Settings,
        workers: int,
        done: Mapping[str, _Linted] | None = None,
    ) -> None:
        import multiprocessing
        import threading

        # Fresh workers: this process holds every file's result by now (see ``_per_file``).
        context = multiprocessing.get_context("spawn")
        ordered = sorted(files, key=_size)
        super().__init__(dict(done or {}))
        self._workers = []
        for index in range(workers):
            receiving, sending = context.Pipe(duplex=False)
            share = ordered[index::workers]
            worker = context.Process(
                target=_summarise_beside, args=(sending, share, settings), daemon=True
            )
            worker.start()
            sending.close()
            reader = threading.Thread(target=self._read, args=(receiving,), daemon=True)
            reader.start()
            self._workers.append((worker, reader))

    def _read(self, receiving: Connection) -> None:
        with receiving:
            try:
                while True:
                    sent: _Linted = receiving.recv()
                    if sent.digest is not None:  # (a file that could not be read is left out)
                        self._linted[str(sent.file.path)] = sent
            except (EOFError, OSError):
                return  # (the worker is done, or stopped)

    def close(self) -> None:
        for worker, _ in self._workers:
            worker.terminate()
        for worker, reader in self._workers:
            worker.join()
            reader.join()


def _summarise_beside(sending: Connection, files: Sequence[SourceFile], settings: Settings) -> None:
    """An ``_Alongside`` worker: each file summarised and sent, until all are or the run
    stops it."""
    with sending:
        for file in files:
            try:
                sending.send(_packed(_lint_file_alone(file, settings, True)))
            except (BrokenPipeError, OSError):
                return  # (the run is over)


def _with_summaries(
    per_file: dict[str, tuple[FileResult, tuple[Stamp, str] | None]], packed: dict[str, bytes]
) -> None:
    """Put the summaries left packed (see ``_per_file_results``) back in their results."""
    if not packed:
        return
    with decoding():
        while packed:
            display, data = packed.popitem()
            result, stamped = per_file[display]
            per_file[display] = (dataclasses.replace(result, summary=marshal.loads(data)), stamped)
    _trim_heap()


def _trim_heap() -> None:
    """Give the heap's free pages back to the system, where the C library can (glibc).

    The packed summaries are bytes objects from the C heap, while what they unpack to lives
    in Python's own arenas: once they are freed the heap is mostly holes, which the C library
    keeps (a cold run of the benchmark corpus peaked 37 MiB higher without this)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError):  # (musl has no malloc_trim)
        return
    trim(0)


def _summarised_in(cache: Cache, file: SourceFile) -> bool:
    found = cache.get(file)
    return found is not None and not found.summary.get(DEFERRED_KEY)


def _memo_data(memo: ProjectMemo) -> dict[str, Any]:
    """What the project pass read (``RunOutcome.project``): the memo's fields, plain data
    (``run_cache.project_to_json`` encodes them once, as the record is written)."""
    return {field.name: getattr(memo, field.name) for field in dataclasses.fields(memo)}


def _per_file_results(
    files: Sequence[SourceFile],
    settings: Settings,
    jobs: int | None,
    cache: Cache | None,
    known: Mapping[str, tuple[FileResult, tuple[Stamp, str] | None]],
    count: list[int] | None = None,
    progress: Progress | None = None,
    linted_now: set[str] | None = None,
    packed: dict[str, bytes] | None = None,
    ahead: dict[str, _Linted] | None = None,
    parses: dict[str, Pieces] | None = None,
    helper: Helper | None = None,
    ahead_of: AbstractSet[str] = frozenset(),
    projects: dict[str, list[Any] | None] | None = None,
) -> dict[str, tuple[FileResult, tuple[Stamp, str] | None]]:
    """Per-file results of ``files`` (``known`` ones as given, unchanged ones from the
    cache, the others linted now, counted into ``count`` and named in ``linted_now``), each
    with the stamp and hash of the bytes behind it. ``packed``: where the summaries that
    workers sent packed are left, by file, their results' summaries empty until
    ``_with_summaries`` (without a cache, which holds the whole results anyway). ``ahead``:
    where the deferred files that workers summarised at once are left (``_per_file``), by
    real path; None to summarise none. ``parses``, ``helper``, ``ahead_of``: see ``_per_file``
    (with ``ahead_of``, only those files are summarised, and put in ``ahead``).
    ``projects``: where what each notebook's own project passes read is left, by notebook
    (``_lint_notebook``); the cache answers for a notebook only while that holds."""
    found = dict(known)
    todo: list[SourceFile] = []
    load: Loader | None = None
    for file in files:
        if file.display in found:
            continue
        hit = cache.lookup(file) if cache is not None else None
        if hit is not None and cache is not None and file.path.suffix == ".ipynb":
            project = cache.project_of(file)
            if load is None:
                load = memoized_loader(summary_loader(settings, cache))
            if not _notebook_holds(project, load):
                hit = None
            elif projects is not None:
                projects[file.display] = project
        if hit is not None:
            result, stamp, content = hit
            found[file.display] = (result, (stamp, content))
        else:
            todo.append(file)
    if count is not None:
        count[0] += len(todo)
    if linted_now is not None:
        linted_now.update(file.display for file in todo)
    # Notebooks are linted last, with the summaries the run made of the other files, when
    # other files are linted with them (see ``_RunSummaries``); one linted alone goes where
    # the files go (a helper, say).
    later = [file for file in todo if file.path.suffix == notebooks.NOTEBOOK_SUFFIX]
    if helper is not None or len(later) == len(todo):
        later = []
    elif later:
        todo = [file for file in todo if file.path.suffix != notebooks.NOTEBOOK_SUFFIX]

    def take(sent: _Linted) -> None:
        if sent.ahead is not None and ahead is not None:
            ahead[str(sent.ahead.file.path)] = sent.ahead
        if packed is not None and cache is None and sent.packed is not None:
            packed[sent.file.display] = sent.packed
            linted = sent
        else:
            linted = _unpacked(sent)
        stamped = None
        if linted.stamp is not None and linted.digest is not None:
            stamped = (linted.stamp, linted.digest)
            if cache is not None:
                cache.store(linted.file, linted.result, linted.stamp, linted.digest, linted.project)
        if projects is not None and linted.project is not None:
            projects[linted.file.display] = linted.project
        found[linted.file.display] = (linted.result, stamped)

    summarising = ahead is not None
    for sent in _per_file(
        todo,
        settings,
        jobs or default_jobs(),
        _counting_too(progress, 0, len(later)),
        ahead=summarising and not ahead_of,
        parses=parses,
        helper=helper,
        ahead_of=ahead_of,
    ):
        take(sent)
    if later:
        global _RUN_LOADER
        made: dict[str, tuple[FileResult, str]] = {}
        summaries = _RunSummaries(files, found, packed or {}, ahead or {}, made)
        _RUN_LOADER = memoized_loader(summary_loader(settings, cache, ahead=summaries, keep=made))
        try:
            for sent in _per_file(
                later, settings, jobs or default_jobs(), _counting_too(progress, len(todo), 0)
            ):
                take(sent)
        finally:
            _RUN_LOADER = None
        if ahead is not None:
            # What the notebooks' loader summarised here, the project pass takes too.
            for path, (summarised, digest) in made.items():
                if path not in ahead:
                    result = dataclasses.replace(summarised, source=None)
                    file = SourceFile(result.filename, Path(path))
                    ahead[path] = _Linted(file, result, None, digest)
    return found


def _counting_too(progress: Progress | None, before: int, after: int) -> Progress | None:
    """``progress`` told of ``before`` files done before those it is told of, and of
    ``after`` files still to come after them."""
    if progress is None or not (before or after):
        return progress
    told = progress

    def counting(done: int, total: int) -> None:
        told(before + done, before + total + after)

    return counting


class _RunSummaries(Mapping[str, tuple[FileResult, str]]):
    """The summaries a run has made so far, as ``summary_loader`` takes them ahead: by real
    path, each result with the content hash of the bytes it was made from.

    A notebook is linted with a project pass of its own, whose loader summarises the modules
    it imports; in a run those are mostly the run's own files. Linted by the per-file pass's
    workers, each worker's loader summarised them again (a cold run of a library with three
    notebooks that import it took 152 s where the same run without them took 56 s). Linted
    after the other files (in this process, or in workers forked then, which inherit this
    mapping), the notebooks take the summaries the run made: the whole ones of the files
    linted (``found``, with the summaries still ``packed`` by worker), the deferred files
    that workers summarised at once (``ahead``), and those their own loader made (``made``,
    each process its own). A file linted is taken only when its path is its real path
    and its summary is whole: its result is then the one the loader would make (as the
    cache, which stores each file's result by path, already answers it)."""

    def __init__(
        self,
        files: Sequence[SourceFile],
        found: Mapping[str, tuple[FileResult, tuple[Stamp, str] | None]],
        packed: Mapping[str, bytes],
        ahead: Mapping[str, _Linted],
        made: Mapping[str, tuple[FileResult, str]],
    ) -> None:
        self._files = files
        self._found = found
        self._packed = packed
        self._ahead = ahead
        self._made = made
        self._linted: dict[str, str] | None = None

    def _displays(self) -> dict[str, str]:
        if self._linted is None:
            self._linted = {}
            for file in self._files:
                if file.path.suffix == notebooks.NOTEBOOK_SUFFIX:
                    continue
                real = os.path.realpath(file.path)
                if real == os.path.abspath(file.path):
                    self._linted[real] = file.display
        return self._linted

    def __getitem__(self, path: str) -> tuple[FileResult, str]:
        if path in self._made:
            return self._made[path]
        display = self._displays().get(path)
        if display is not None and display in self._found:
            result, stamped = self._found[display]
            if stamped is not None:
                if not result.summary and display in self._packed:
                    with decoding():
                        summary = marshal.loads(self._packed[display])
                    result = dataclasses.replace(result, summary=summary)
                if result.summary and not result.summary.get(DEFERRED_KEY):
                    return result, stamped[1]
        linted = self._ahead.get(path)
        if linted is not None and linted.digest is not None:
            return _unpacked(linted).result, linted.digest
        raise KeyError(path)

    def __iter__(self) -> Iterator[str]:
        # (Never asked by the loader, which only looks files up: each candidate is tried.)
        candidates = {*self._made, *self._displays(), *self._ahead}
        return iter([path for path in candidates if path in self])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _sourced(
    result: FileResult, file: SourceFile, sources: bool, known: tuple[Stamp, str] | None
) -> FileResult:
    """The result with the file's text when it has findings (and ``sources`` is asked)."""
    if not sources or not result.diagnostics or result.source is not None or result.cells:
        return result
    return _with_source(result, file, None if known is None else known[1]) or result


def _with_source(result: FileResult, file: SourceFile, content: str | None) -> FileResult | None:
    """A cached result with the file's text attached (code frames and fixes need it), only
    when the file still holds the bytes the result was computed from (hash ``content``):
    another process may have fixed it since, and findings paired with text they were not
    computed from would put their fixes in the wrong place. None otherwise (the text is
    then read again, and the file linted again, by whoever needs it)."""
    if result.cells:
        return result  # a notebook: its frames come from the cells, which were cached
    try:
        data, _ = read_bytes(file.path)
        if content is None or content_digest(data) != content:
            return None
        source = decode(data)
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
    "Document",
    "Relinter",
    "asked_whole",
    "default_jobs",
    "fix_source",
    "lint_document",
    "lint_file",
    "lint_files",
    "lint_paths",
    "lint_source",
    "lint_text",
    "text_linter",
]
