"""The project pass: the run's module summaries (and those of the project modules they import,
loaded on demand) joined into programs, whose rules add and settle findings per file."""

from __future__ import annotations

import dataclasses
import json
import marshal
import os
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from repro_lint import source
from repro_lint.cache import CACHE_DIR_NAME, Cache, digest, listing, listing_digest
from repro_lint.codec import diagnostic_to_json
from repro_lint.collector import analysing
from repro_lint.diagnostics import Diagnostic, FileResult
from repro_lint.file_pass import lint_one
from repro_lint.files import SourceFile, display_name, leftover_of, real_path
from repro_lint.moved_lines import Refused, RowMap, row_map, touches
from repro_lint.moved_lines import moved as move
from repro_lint.rules import FIX_PARTNERS
from repro_lint.settings import Settings
from repro_lint.source import SourceError, Stamp, decode, is_internal_error, read_bytes
from repro_lint.summary_format import DEFERRED, DEFERRED_KEY

if TYPE_CHECKING:
    # The program model (and the rules, and libcst with them) is imported when a pass has a
    # summary to analyse: a run whose files are all settled from their text needs none of it,
    # nor one that checks an earlier pass's text answers (``text_questions``).
    from repro_lint.program import Loader
    from repro_lint.text_questions import TextAnswers, TextQuestion


def summary_loader(
    settings: Settings,
    cache: Cache | None = None,
    ahead: Mapping[str, tuple[FileResult, str]] | None = None,
    keep: MutableMapping[str, tuple[FileResult, str]] | None = None,
) -> Loader:
    """Loads the summary of a file on disk for the project phase: imported project files that
    were not passed, and passed files whose summary was deferred (parsed for that only).
    ``ahead``: files already summarised (``lint_one(..., summarise=True)`` of the same path),
    by path, with the content hash of the bytes they were summarised from. ``keep``: where
    the files this loader summarises are added, in the same form (``keep`` given as
    ``ahead`` too, a file is summarised once for as long as its bytes stay the same)."""
    # Words without which a module's top-level code cannot seed anything.
    seeding_words = (
        "seed",
        "determinism",
        *(n.rsplit(".", 1)[-1] for n in settings.config.seed_functions),
    )

    def load(path: Path, imported: bool) -> tuple[str, Mapping[str, Any]] | None:
        file = SourceFile(display_name(path), path)
        read: tuple[bytes, Stamp, str] | None = None
        if imported:
            # Reading the text to find no seeding word in it is cheaper than decoding the
            # cache shard that holds the file's summary (a one-file run in a large project
            # asks for thousands of imported modules), and answers the same.
            read = _read(path)
            if read is None:
                return None
            if not any(word in read[2] for word in seeding_words):
                return file.display, DEFERRED
        result = cache.get(file) if cache is not None else None
        if result is not None and not result.summary.get(DEFERRED_KEY):
            return (result.filename, result.summary) if result.summary else None
        read = read or _read(path)
        if read is None:
            return None
        data, stamp, text = read
        content = digest(data)
        ready = ahead.get(str(path)) if ahead is not None else None
        if ready is not None and ready[0].filename == file.display and ready[1] == content:
            result = ready[0]
        else:
            result = lint_one(text, file.display, settings, path, summarise=True)
            if keep is not None:
                keep[str(path)] = (result, content)
        for diagnostic in result.diagnostics:
            if is_internal_error(diagnostic):
                # Only the per-file pass reports a file the analysis failed on and goes on:
                # here the summary would be missing silently, and with it, findings.
                raise RuntimeError(f"{file.display}: {diagnostic.message}")
        if cache is not None:
            cache.store(file, result, stamp, content)
        return (result.filename, result.summary) if result.summary else None

    def _read(path: Path) -> tuple[bytes, Stamp, str] | None:
        try:
            data, stamp = read_bytes(path, settings.config.max_file_size)
            return data, stamp, decode(data).text
        except SourceError:
            return None

    return load


@dataclass
class ProjectMemo:
    """What a project pass read: a digest of each linted file's part in it (name, path,
    summary, the findings it settles, the project rules enabled there), the stamps of the
    files it loaded for their summaries, the mtimes of the directories its module lookups
    listed, and what it asked of the project's text (which files name a function), with the
    stamps of the files that text came from. A later pass whose inputs all match would add
    exactly the same findings."""

    digests: dict[str, str] = field(default_factory=dict)
    loaded: dict[str, Stamp] = field(default_factory=dict)
    # What the loader answered for each file it was asked for: (path, imported, digest).
    summaries: list[tuple[str, bool, str]] = field(default_factory=list)
    # Directory -> (mtime, digest of its entries): an entry added or removed changes both.
    probed: dict[str, tuple[int, str]] = field(default_factory=dict)
    texts: dict[str, Stamp] = field(default_factory=dict)
    asked: list[TextQuestion] = field(default_factory=list)
    # Files of the run, by real path, whose summary a per-file lint defers and whose whole
    # summary an earlier pass asked the loader for, which this pass had whole from the cache
    # (the result that loader stored) instead: read whole as well (``engine.asked_whole``).
    whole: list[str] = field(default_factory=list)

    def still_valid(self, load: Loader | None = None) -> bool:
        """Whether the directories listed are as they were, the files loaded give the same
        summaries (loaded again through ``load`` if their stamps changed; without it, a
        changed stamp is a change), and the project's text answers what was asked of it as
        it did. An edit that leaves all of these (a comment, a line moved in a file read
        only as text or only for its import-time code) keeps the analysis. The stamps
        are brought up to date when it holds."""
        if not all(
            source.mtime(directory) == mtime or listing(directory) == names
            for directory, (mtime, names) in self.probed.items()
        ):
            return False
        loaded = {path: source.stamp(path) for path in self.loaded}
        changed = {path for path, stamp in loaded.items() if stamp != self.loaded[path]}
        if changed:
            if load is None or not changed <= {path for path, _, _ in self.summaries}:
                return False  # (a load that never answered has nothing to compare with)
            for path, imported, known in self.summaries:
                if path in changed and answer_digest(load(Path(path), imported)) != known:
                    return False
        texts = {path: source.stamp(path) for path in self.texts}
        if texts != self.texts:
            from repro_lint.text_questions import answer_again, answer_changed

            edited = [path for path, stamp in texts.items() if stamp != self.texts[path]]
            fresh = answer_changed(self.asked, texts, edited)
            if fresh is None:
                read: dict[str, Stamp] = {}
                fresh, texts = answer_again(self.asked, read), read
            if [q[3] for q in fresh] != [q[3] for q in self.asked]:
                return False
            # The same answers; their evidence is what shows them now.
            self.asked = fresh
        self.loaded, self.texts = loaded, texts
        return True

    def answers_now(self) -> TextAnswers | None:
        """What this pass asked of the project's text, answered as the text is now from the
        files that changed since (``answer_changed``), for a pass that runs again: it takes
        them for the trees whose files are still those (``Program``), not reading the trees
        for each question. None when they cannot be worked out so."""
        if not self.asked:
            return None
        from repro_lint.text_questions import TextAnswers, answer_changed

        texts = {path: source.stamp(path) for path in self.texts}
        edited = [path for path, stamp in texts.items() if stamp != self.texts[path]]
        fresh = answer_changed(self.asked, texts, edited) if edited else self.asked
        if fresh is None:
            return None
        return TextAnswers({(q[0], q[1], q[2]): q for q in fresh}, texts)


def answer_digest(answer: tuple[str, Mapping[str, Any]] | None) -> str:
    """A digest of what a loader answered for a file (its name and summary, or None). Equal
    digests mean equal answers; equal answers built differently (a tuple where another
    gives a list) may differ, which only costs a project pass. marshal's format 2 writes
    no back-references, so the same data gives the same bytes; it is several times faster
    than JSON, and a one-file run loads thousands of summaries."""
    try:
        data = marshal.dumps(cast(Any, answer), 2)
    except ValueError:  # a type marshal does not write
        data = json.dumps(answer, sort_keys=True, separators=(",", ":"), default=repr).encode()
    return digest(data)


def probed_stamps(probed: Iterable[str]) -> dict[str, tuple[int, str]]:
    """The (mtime, digest of its entries) of each directory the module lookups listed, for
    ``ProjectMemo.probed``. A directory that does not exist stands for itself through its
    nearest existing ancestor, whose entries lack the next part of its path: while that
    ancestor's entries are the same, the directory still does not exist. Most lookups name a
    library's module, missing from the project (a large project probes tens of thousands of
    such paths), and these have a few ancestors between them. Anything else (a file where a
    directory was looked for, a directory that cannot be listed, a name the digest leaves
    out) is kept as itself, as it was seen."""
    seen: dict[str, tuple[int, frozenset[str]] | None] = {}
    stand_ins: dict[str, str | None] = {}

    def entries(directory: str) -> tuple[int, frozenset[str]] | None:
        if directory not in seen:
            try:
                mtime = os.stat(directory).st_mtime_ns
                with os.scandir(directory) as found:
                    seen[directory] = (mtime, frozenset(entry.name for entry in found))
            except OSError:
                seen[directory] = None
        return seen[directory]

    def stand_in(path: str) -> str | None:
        """The nearest ancestor whose entries show that ``path`` does not exist (None when
        none shows it). The parent's entries are looked at first: a path they lack is never
        looked up itself."""
        if path in stand_ins:
            return stand_ins[path]
        cut = path.rfind(os.sep)
        parent, name = path[:cut] or os.sep, path[cut + 1 :]
        found = None
        if cut >= 0 and name and name != CACHE_DIR_NAME and leftover_of(name) is None:
            listed = entries(parent)
            if listed is None:
                found = stand_in(parent) if parent != path else None
            elif name not in listed[1]:
                found = parent
        stand_ins[path] = found
        return found

    stamps: dict[str, tuple[int, str]] = {}
    for directory in sorted(probed):
        kept = stand_in(directory) or directory
        if kept not in stamps:
            listed = entries(kept)
            # (what cannot be listed is kept by its mtime: a file, or nothing)
            stamps[kept] = (
                (listed[0], listing_digest(listed[1]))
                if listed is not None
                else (source.mtime(kept), "")
            )
    return stamps


def project_codes(settings: Settings) -> frozenset[str]:
    """The codes whose findings the project pass adds or settles."""
    return frozenset(rule.CODE for rule in settings.selected if rule.project or rule.settled)


def _enabled_codes(settings: Settings, path: Path | None) -> frozenset[str]:
    """The project rules enabled in ``path``'s file, and the per-file rules whose fixes they
    count on (``Unit.codes``)."""
    return frozenset(
        r.CODE for r in settings.selected_for(path) if r.project or r.CODE in FIX_PARTNERS
    )


def unit_part(result: FileResult, path: Path | None, settings: Settings) -> list[Any]:
    """What the project pass reads of one linted file (see ``ProjectMemo``)."""
    settled = {rule.CODE for rule in settings.selected if rule.settled}
    enabled = sorted(_enabled_codes(settings, path))
    return [
        result.filename,
        None if path is None else str(path),
        result.summary,
        [diagnostic_to_json(d) for d in result.diagnostics if d.code in settled],
        enabled,
    ]


def unit_digest(result: FileResult, path: Path | None, settings: Settings) -> str:
    """A digest of what the project pass reads of one linted file (``unit_part``)."""
    return _part_digest(unit_part(result, path, settings))


def _part_digest(part: list[Any]) -> str:
    data = json.dumps(part, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return digest(data.encode())


def _digest(
    result: FileResult, path: Path | None, settings: Settings, known: Mapping[str, str] | None
) -> str:
    """``unit_digest`` of a linted file's result, taken from ``known`` (an earlier pass's
    digest of the same file's result, which the cache answered unchanged) where that holds.

    It does not hold for a file whose summary was deferred when the earlier pass digested it
    and that the pass then summarised: the cache keeps the whole summary from then on, and
    this pass reads it. Taking the old digest would record the deferred one, and a later
    edit that leaves the file deferred would match it and keep a pass that read the whole
    summary. Such a digest is the one of this result with its summary deferred, which is
    cheap to work out and compare."""
    taken = (known or {}).get(result.filename)
    if taken is None:
        return unit_digest(result, path, settings)
    if result.summary.get(DEFERRED_KEY) or not result.summary:
        return taken
    deferred = dataclasses.replace(result, summary=dict(DEFERRED))
    if _part_digest(unit_part(deferred, path, settings)) == taken:
        return unit_digest(result, path, settings)
    return taken


def reused(
    memo: ProjectMemo,
    previous: Mapping[str, FileResult],
    fresh: Sequence[tuple[FileResult, Path | None]],
    settings: Settings,
    load: Loader | None = None,
    moved: Callable[[str], tuple[FileResult, FileResult] | None] | None = None,
    on_disk: bool = False,
) -> dict[str, FileResult] | None:
    """The final results of files linted again (``fresh``, per-file results), when the last
    project pass still holds: the other linted files are unchanged, and neither these files'
    parts in it nor anything it loaded (through ``load``, when a stamp changed), listed or
    asked of the text changed (``ProjectMemo.still_valid``, which brings ``memo``'s stamps up
    to date). Their project findings are then the ones the last pass added (``previous``:
    its final results). None otherwise.

    A file whose part changed only in its rows (``moved``: for a file, the per-file result
    of its last version and that of its text behind ``moved_lines.shift_prefix``) keeps the last
    pass's findings with their rows moved, wherever they name it; the result then also holds
    the other files whose findings moved, and ``memo`` takes the file's new digest.
    ``on_disk``: the fresh results are of the files as they are on disk (a run's, not an
    editor's buffer), so that ``load`` summarises the same text (see ``_same_when_whole``)."""
    if not settings.needs_project:
        return {result.filename: result for result, _ in fresh}
    maps: dict[str, RowMap] = {}
    digests: dict[str, str] = {}
    for result, path in fresh:
        now = unit_digest(result, path, settings)
        if memo.digests.get(result.filename) == now:
            continue
        if on_disk and _same_when_whole(memo, result, path, settings, load):
            continue
        found = moved(result.filename) if moved is not None else None
        if found is None:
            return None
        old, shifted = found
        if unit_digest(old, path, settings) != memo.digests.get(result.filename):
            return None
        try:
            rows = row_map(
                unit_part(old, path, settings),
                unit_part(result, path, settings),
                unit_part(shifted, path, settings),
            )
        except Refused:
            return None
        if not rows.identity:
            maps[result.filename] = rows
        digests[result.filename] = now
    if not memo.still_valid(load):
        return None
    codes = project_codes(settings)
    settled = {rule.CODE for rule in settings.selected if rule.settled}
    out: dict[str, FileResult] = {}
    try:
        again = {result.filename for result, _ in fresh}
        for name, before in previous.items() if maps else ():
            # Only what the pass added can name another file.
            if (
                name not in again
                and before.diagnostics
                and any(d.code in codes and touches(d, maps) for d in before.diagnostics)
            ):
                diagnostics = tuple(
                    move(d, maps) if d.code in codes else d for d in before.diagnostics
                )
                out[name] = dataclasses.replace(before, diagnostics=diagnostics)
        for result, _ in fresh:
            before = previous[result.filename]
            added = [move(d, maps) for d in before.diagnostics if d.code in codes]
            kept = [d for d in result.diagnostics if d.code not in settled]
            unsettled = tuple(d for d in result.diagnostics if d.code in settled)
            if not added and not unsettled:
                out[result.filename] = result
                continue
            diagnostics = tuple(sorted((*kept, *added), key=lambda d: d.sort_key))
            out[result.filename] = dataclasses.replace(
                result, diagnostics=diagnostics, unsettled=unsettled
            )
    except Refused:
        return None
    memo.digests.update(digests)
    return out


def _same_when_whole(
    memo: ProjectMemo,
    result: FileResult,
    path: Path | None,
    settings: Settings,
    load: Loader | None,
) -> bool:
    """Whether a file linted again with its summary deferred had the same part in the last
    pass with its whole summary (``load``'s, made now from the file on disk, the text the
    result is of). The cache answers an unchanged file
    with the result the project pass's loader stored, summarised (``summary_loader``), so a
    pass that ran after another file's edit digested that one; an edit that leaves the
    summary as it was (a comment) then leaves the part as it was."""
    known = memo.digests.get(result.filename)
    if known is None or load is None or path is None or not result.summary.get(DEFERRED_KEY):
        return False
    answer = load(real_path(path), False)
    if answer is None or answer[0] != result.filename:
        return False
    whole = dataclasses.replace(result, summary=dict(answer[1]))
    return unit_digest(whole, path, settings) == known


def memoized_loader(load: Loader) -> Loader:
    """``load``, answering again from memory for a file whose stamp has not changed (what a
    long-lived process, the language server, keeps of the modules its documents import)."""
    seen: dict[tuple[str, bool], tuple[Stamp, tuple[str, Mapping[str, Any]] | None]] = {}

    def cached(path: Path, imported: bool) -> tuple[str, Mapping[str, Any]] | None:
        key = (str(path), imported)
        stamp = source.stamp(str(path))
        hit = seen.get(key)
        # A stamp from the last two seconds could hide an edit in the same clock tick.
        settled = stamp[0] >= 0 and stamp[0] < time.time_ns() - 2_000_000_000
        if hit is not None and hit[0] == stamp and settled:
            return hit[1]
        value = load(path, imported)
        seen[key] = (stamp, value)
        return value

    return cached


def with_project(
    results: Sequence[FileResult],
    paths: Mapping[str, Path | None],
    settings: Settings,
    load: Loader | None,
) -> list[FileResult]:
    """Add the project rules' findings to per-file results (those files are the linted
    ones; anything else they import is loaded for its summary only)."""
    return project_pass(results, paths, settings, load, recorded=False)[0]


def project_pass(
    results: Sequence[FileResult],
    paths: Mapping[str, Path | None],
    settings: Settings,
    load: Loader | None,
    digests: Mapping[str, str] | None = None,
    answers: TextAnswers | None = None,
    *,
    recorded: bool = True,
) -> tuple[list[FileResult], ProjectMemo]:
    """``with_project``, and what the pass read (to reuse it while that stays the same).
    ``digests``: the ``unit_digest`` of files whose per-file results are known unchanged
    since an earlier pass (taken, not computed again); ``answers``: what an earlier pass
    asked of the project's text, answered as it is now (``ProjectMemo.answers_now``).
    ``recorded``: whether the memo is kept (in a run record); without, it holds no digests,
    which are about a fifth of the pass over a large project."""
    memo = ProjectMemo()
    if not settings.needs_project:
        return list(results), memo
    settled_codes = {rule.CODE for rule in settings.selected if rule.settled}
    findings: dict[str, list[Diagnostic]] = {}
    for result in results:
        mine = [d for d in result.diagnostics if d.code in settled_codes]
        if mine:
            findings[result.filename] = mine
    found: Mapping[str, list[Diagnostic]] = {}
    settled: Mapping[str, list[Diagnostic]] = {}
    if findings or any(_summarised(result) for result in results):
        found, settled = _analysed(results, paths, settings, load, findings, memo, answers)
    if recorded:
        memo.digests = {
            r.filename: _digest(r, paths.get(r.filename), settings, digests) for r in results
        }
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
    return merged, memo


def _summarised(result: FileResult) -> bool:
    """Whether the file's result holds a summary: a file linted without one (it imports
    nothing, or nothing in it is an entry point's or a rule's, so its summary is deferred) can
    start no program, and takes part in one only as a module that a summarised file
    imports. A pass whose files hold no summary and no finding to settle finds nothing."""
    return bool(result.summary) and not result.summary.get(DEFERRED_KEY)


def _analysed(
    results: Sequence[FileResult],
    paths: Mapping[str, Path | None],
    settings: Settings,
    load: Loader | None,
    findings: Mapping[str, list[Diagnostic]],
    memo: ProjectMemo,
    answers: TextAnswers | None,
) -> tuple[dict[str, list[Diagnostic]], dict[str, list[Diagnostic]]]:
    """The program model's findings (``program.analyse``) on the run's files, and the
    per-file ``findings`` it settles; ``memo`` takes what the analysis read."""
    from repro_lint.program import Unit, analyse

    if load is not None:
        load = _recording(load, memo)
    units = []
    for result in results:
        path = paths.get(result.filename)
        enabled = _enabled_codes(settings, path)
        units.append(Unit(result.filename, path, result.summary, linted=True, codes=enabled))
    probed: set[str] = set()
    with analysing():
        analysed = analyse(
            units,
            settings.project_rules,
            settings.project_options(),
            load,
            findings,
            settings.settling_rules,
            probed,
            memo.texts,
            memo.asked,
            answers,
        )
    memo.probed = probed_stamps(probed)
    return analysed


def _recording(load: Loader, memo: ProjectMemo) -> Loader:
    """``load``, noting in ``memo`` the stamp of every file it is asked for (taken before it
    reads it) and a digest of each answer."""

    asked: set[tuple[str, bool]] = set()

    def recorded(path: Path, imported: bool) -> tuple[str, Mapping[str, Any]] | None:
        memo.loaded.setdefault(str(path), source.stamp(str(path)))
        answer = load(path, imported)
        if (str(path), imported) not in asked:
            asked.add((str(path), imported))
            memo.summaries.append((str(path), imported, answer_digest(answer)))
        return answer

    return recorded


def per_file_part(result: FileResult, settings: Settings) -> FileResult:
    """A result without what the project phase added or revised (what linting the file
    alone gives)."""
    codes = project_codes(settings)
    if not result.unsettled and not any(d.code in codes for d in result.diagnostics):
        return result
    kept = [d for d in result.diagnostics if d.code not in codes]
    diagnostics = tuple(sorted((*kept, *result.unsettled), key=lambda d: d.sort_key))
    return dataclasses.replace(result, diagnostics=diagnostics, unsettled=())


__all__ = [
    "ProjectMemo",
    "answer_digest",
    "memoized_loader",
    "per_file_part",
    "project_codes",
    "project_pass",
    "reused",
    "summary_loader",
    "unit_digest",
    "unit_part",
    "with_project",
]
