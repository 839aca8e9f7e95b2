"""The project pass: the run's module summaries (and those of the project modules they import,
loaded on demand) joined into programs, whose rules add and settle findings per file."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from repro_lint.cache import Cache
from repro_lint.diagnostics import Diagnostic, FileResult
from repro_lint.file_pass import lint_one
from repro_lint.files import SourceFile, display_name
from repro_lint.program import Loader, ProjectRule, SettledRule, Unit, analyse
from repro_lint.settings import Settings
from repro_lint.source import SourceError, error_result, read_source
from repro_lint.summary import DEFERRED, DEFERRED_KEY


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
        result = _summarised(file, settings)
        if cache is not None:
            cache.put(file, result, stamp)
        return (result.filename, result.summary) if result.summary else None

    return load


def _summarised(file: SourceFile, settings: Settings) -> FileResult:
    """A file on disk linted on its own, with its summary even where it could be deferred."""
    try:
        source = read_source(file.path)
    except SourceError as error:
        return error_result(file.display, error)
    return lint_one(source.text, file.display, settings, file.path, summarise=True)


def with_project(
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
    settling = list(settings.settling_rules)
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


def per_file_part(result: FileResult, settings: Settings) -> FileResult:
    """A result without what the project phase added or revised (what linting the file
    alone gives)."""
    codes = {rule.CODE for rule in settings.rules if issubclass(rule, ProjectRule | SettledRule)}
    if not result.unsettled and not any(d.code in codes for d in result.diagnostics):
        return result
    kept = [d for d in result.diagnostics if d.code not in codes]
    diagnostics = tuple(sorted((*kept, *result.unsettled), key=lambda d: d.sort_key))
    return dataclasses.replace(result, diagnostics=diagnostics, unsettled=())


__all__ = ["per_file_part", "summary_loader", "with_project"]
