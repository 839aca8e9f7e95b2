"""Lint files and texts: the stages in order (read, per-file pass, project pass), in parallel
and from the cache where it pays; the public entry points of the library."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from repro_lint import notebooks
from repro_lint.cache import Cache
from repro_lint.config import Config
from repro_lint.diagnostics import FileResult, FixSafety
from repro_lint.file_pass import lint_one
from repro_lint.files import SourceFile
from repro_lint.fixes import FixOutcome, fix_texts
from repro_lint.project_pass import per_file_part, summary_loader, with_project
from repro_lint.settings import Settings
from repro_lint.source import SourceError, error_result, read_source

# Below this many files a process pool costs more than it saves.
POOL_THRESHOLD = 16


def lint_text(
    text: str,
    filename: str,
    settings: Settings,
    path: Path | None = None,
) -> FileResult:
    """Lint decoded source text as part of its project: project rules see the modules it
    imports (read from disk when ``path`` is known). Never raises for bad input: that becomes
    RPL000."""
    result = lint_one(text, filename, settings, path)
    merged = with_project([result], {filename: path}, settings, summary_loader(settings))[0]
    if merged.diagnostics and merged.source is None:
        merged = dataclasses.replace(merged, source=text)
    return merged


def text_linter(settings: Settings, path: Path | None) -> notebooks.TextLinter:
    """``lint_text`` with the settings and the file's path bound (what notebooks lint with)."""

    def lint(text: str, filename: str) -> FileResult:
        return lint_text(text, filename, settings, path)

    return lint


def _lint_notebook(file: SourceFile, settings: Settings) -> FileResult:
    """A notebook's code cells, linted as one module (with their own project phase, so the
    result carries no summary for the run's project phase: its rows are cell rows)."""
    try:
        data = file.path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return error_result(file.display, SourceError(f"cannot read file: {reason}"))
    result = notebooks.lint(data, file.display, text_linter(settings, file.path))
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


def _lint_file_alone(file: SourceFile, settings: Settings) -> FileResult:
    if file.path.suffix == ".ipynb":
        return _lint_notebook(file, settings)
    try:
        source = read_source(file.path)
    except SourceError as error:
        return error_result(file.display, error)
    return lint_one(source.text, file.display, settings, file.path)


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
    merged = with_project(ordered, paths, settings, summary_loader(settings, cache))
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
    "Relinter",
    "default_jobs",
    "fix_source",
    "lint_file",
    "lint_files",
    "lint_paths",
    "lint_source",
    "lint_text",
    "text_linter",
]
