"""The whole-run cache: one sealed record that answers a run whose inputs are all unchanged.

A record keeps what a run of ``repro-lint PATHS`` depended on: the stamps of the settings
files and of the files that decide the target torch, the mtimes of the directories discovery
listed and of the .gitignore files it read, every linted file's (path, mtime, size) and content
hash, and what the project pass read (``ProjectMemo``); and what it answered: the warnings and
every file's final findings. A later run with the same settings and paths that finds all of
those unchanged prints the stored answer without parsing anything, and without importing
libcst or the rules (this module imports neither). When only some files changed, the record
still says which ones, and whether discovery and the project pass can be reused.

The record sits in the results cache and is written and read like its shards: sealed plain
data (``cache.read_sealed``/``write_sealed``), every field checked on the way in, never through a
symlink. A record that fails any check is ignored (``-v`` says why) and rebuilt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro_lint import __version__, source
from repro_lint.cache import (
    CACHE_DIR_NAME,
    KEEP_RECORDS,
    RECORD_PREFIX,
    SUFFIX,
    digest,
    listing,
    listing_digest,
    prune,
    read_sealed,
    safe_directory,
    sealing_key,
    tool_fingerprint,
    write_sealed,
    write_tags,
)
from repro_lint.codec import FormatError, Rows, results_from_rows
from repro_lint.collector import decoding
from repro_lint.config import Config
from repro_lint.diagnostics import FileResult
from repro_lint.files import Discovery, SourceFile
from repro_lint.source import Stamp

_PREFIX = RECORD_PREFIX
# A stamp no file has: the file is checked again on every run (it could not be read).
UNKNOWN: Stamp = (-2, -2)
# Stamps within this much of the record's writing are not trusted on their own: a change in
# the same tick of the file system's clock would keep them (git's "racily clean" rule).
_RACY_NS = 2_000_000_000
Json = Any


def _content(path: str) -> str | None:
    """The content hash of a regular file (never blocks on a special file)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return digest(handle.read())
    except OSError:
        return None
    finally:
        os.close(fd)


def settings_inputs(config: Config) -> list[str]:
    """The files besides the linted ones that decide a run's settings: the settings file and
    where the target torch is inferred from (the project root is listed: a requirements file
    appearing there changes the target)."""
    root = config.root
    found = [str(root / "pyproject.toml"), str(root / "setup.cfg")]
    with contextlib.suppress(OSError):
        found += sorted(str(p) for p in root.glob("requirements*.txt"))
    if config.source is not None:
        found.append(str(config.source))
    return sorted(set(found))


def run_key(config: Config, paths: Sequence[str], force_exclude: bool, ignore_noqa: bool) -> str:
    """What makes two runs the same run: the code, the settings (everything that changes a
    finding or which files are linted), the paths as given and where they were given."""
    parts = [
        __version__,
        tool_fingerprint(),
        config.fingerprint(),
        f"root={config.root}",
        f"source={config.source}",
        f"exclude={config.exclude}|{config.extend_exclude}",
        f"include={config.include}|{config.extend_include}",
        f"gitignore={config.respect_gitignore}",
        f"ignore_noqa={ignore_noqa}",
        f"force_exclude={force_exclude}",
        f"cwd={os.getcwd()}",
        *(os.path.abspath(p) for p in paths),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class RecordedFile:
    """A linted file as the record saw it: its stamp and content hash when it was linted."""

    display: str
    path: str
    stamp: Stamp
    digest: str


@dataclass(frozen=True, slots=True)
class StoredRows:
    """Results as a record's file held them (see ``RunRecord.stored_rows``)."""

    kinds: list[list[Json]]
    rows: dict[str, tuple[FileResult, list[Json]]]


@dataclass
class RunRecord:
    """What one run depended on and what it answered (see the module's docstring).

    ``inputs``: settings files and .gitignore files, path -> (mtime, size, content hash; a
    missing file is (-1, -1, "")). ``directories``: directory -> (mtime, digest of its
    entries' names). A stamp taken within two seconds of writing the record is not trusted on
    its own: a file's content, or a directory's entries, are then compared instead.
    """

    key: str
    written_ns: int
    inputs: dict[str, tuple[int, int, str]]
    directories: dict[str, tuple[int, str]]
    files: list[RecordedFile]
    warnings: list[str]
    results: list[FileResult]
    # The project pass's inputs (``project_pass.ProjectMemo`` as data), None without one.
    project: dict[str, Json] | None = None
    # The .gitignore files discovery looked for (their stamps are among ``inputs``).
    ignores: list[str] = field(default_factory=list)
    # What discovery passed over (shown with -v).
    notes: list[str] = field(default_factory=list)
    # Set when a check had to compare contents: rewriting the record spares that next time.
    stale: bool = False
    # What ``discovery_holds`` and ``changed`` found, once asked: a run asks when it looks for
    # a stored answer, and again when it lints what changed.
    _holds: bool | None = field(default=None, init=False, repr=False, compare=False)
    _changed: tuple[set[str], list[int]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    # The files as discovery gives them, made once (``prepare`` makes them ahead).
    _sources: list[SourceFile] | None = field(default=None, init=False, repr=False, compare=False)
    # The results as a record's file held them, by file, each with its row, and the table of
    # kinds those rows index: a record written again writes a result unchanged since as that
    # row (``record_to_json``).
    stored_rows: StoredRows | None = field(default=None, init=False, repr=False, compare=False)

    def _racy(self, mtime_ns: int) -> bool:
        return mtime_ns >= self.written_ns - _RACY_NS

    def discovery_holds(self) -> bool:
        """Whether discovery would find the same files: the settings files, the listed
        directories and the .gitignore files read are as they were (looked at once)."""
        if self._holds is None:
            self._holds = self._discovery_holds()
        return self._holds

    def _discovery_holds(self) -> bool:
        for path, (mtime, size, content) in self.inputs.items():
            now = source.stamp(path)
            if now != (mtime, size) or (mtime >= 0 and self._racy(mtime)):
                if now[1] != size or (mtime >= 0 and _content(path) != content):
                    return False
                if now[0] < 0 and mtime >= 0:
                    return False
                self.inputs[path] = (now[0], size, content)
                self.stale = True
        for directory, (mtime, names) in self.directories.items():
            now_mtime = source.mtime(directory)
            if now_mtime != mtime or self._racy(mtime):
                if listing(directory) != names:
                    return False
                self.directories[directory] = (now_mtime, names)
                self.stale = True
        return True

    def changed(self) -> set[str]:
        """The files (display names) whose content may differ from what was linted.

        Asked again (a run asks when it looks for a stored answer, then when it lints what
        changed), only the files whose content had to be compared are looked at again: the
        others' stamps are as first taken (``source.one_look``), and a file whose content
        was compared may have been edited or deleted meanwhile (it is then read, not answered
        for from the record)."""
        if self._changed is None:
            self._changed = self._changed_now(range(len(self.files)))
        found, compared = self._changed
        if compared:
            again, _ = self._changed_now(compared)
            return found | again
        return set(found)

    def _changed_now(self, indices: Iterable[int]) -> tuple[set[str], list[int]]:
        """Those of ``indices`` that changed, and those whose content was compared."""
        found = set()
        compared = []
        for index in indices:
            recorded = self.files[index]
            info = source.status(recorded.path)
            if info is None or not stat.S_ISREG(info.st_mode) or info.st_size != recorded.stamp[1]:
                found.add(recorded.display)
            elif info.st_mtime_ns != recorded.stamp[0] or self._racy(recorded.stamp[0]):
                if _content(recorded.path) != recorded.digest:
                    found.add(recorded.display)
                    continue
                compared.append(index)
                now = (info.st_mtime_ns, info.st_size)
                self.files[index] = dataclasses.replace(recorded, stamp=now)
                self.stale = True
        return found, compared

    def project_holds(self) -> bool:
        """Whether what the project pass loaded and listed is unchanged."""
        if self.project is None:
            return True
        loaded: Mapping[str, Stamp] = self.project["loaded"]
        probed: Mapping[str, tuple[int, str]] = self.project["probed"]
        return all(source.stamp(path) == stamp for path, stamp in loaded.items()) and all(
            source.mtime(directory) == mtime or listing(directory) == names
            for directory, (mtime, names) in probed.items()
        )

    def answer(self) -> list[FileResult] | None:
        """The stored results, if nothing the run depended on changed."""
        if self.discovery_holds() and not self.changed() and self.project_holds():
            return self.results
        return None

    def refreshed(self) -> RunRecord:
        """The same record, written now: the stamps it verified by content are trusted
        again on their own."""
        record = dataclasses.replace(self, written_ns=time.time_ns(), stale=False)
        record.stored_rows = self.stored_rows
        return record

    def discovery(self) -> Discovery:
        """What discovery found (valid while ``discovery_holds``)."""
        if self._sources is None:
            self._sources = [SourceFile(f.display, Path(f.path)) for f in self.files]
        return Discovery(
            files=list(self._sources),
            warnings=list(self.warnings),
            ignore_files=set(self.ignores),
            notes=list(self.notes),
        )


# -- where records live ---------------------------------------------------------------------


def _name(key: str) -> str:
    return f"{_PREFIX}{key[:16]}{SUFFIX}"


def record_path(root: Path, key: str) -> Path:
    return root / CACHE_DIR_NAME / __version__ / _name(key)


# In a process that runs one command after another (the daemon), the records its last command
# read or wrote, and those records decoded again between commands (``prepare``), each with
# the identity of the file it was decoded from and the sealing key it was checked with.
_resident = False
_used: set[tuple[Path, str]] = set()
_prepared: dict[Path, tuple[tuple[int, ...], bytes, RunRecord]] = {}


def resident() -> None:
    """Declare this process one that runs command after command (see ``prepare``)."""
    global _resident
    _resident = True


def _identity(path: Path) -> tuple[int, ...] | None:
    """What tells one file at ``path`` from another: an atomic write makes a new inode."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def prepare() -> None:
    """Decode ahead, between two commands, the records the last one read or wrote: a run
    after an edit then starts from its record at once. A prepared record is used once (a run
    updates its record in place), and only if its file is still the one it was read from."""
    used = sorted(_used)
    _used.clear()
    _prepared.clear()
    for root, key in used:
        path = record_path(root, key)
        identity = _identity(path)  # (before reading: a file replaced meanwhile never matches)
        record = _load(root, key, [])
        if identity is not None and record is not None:
            record.discovery()  # (the paths of its files, thousands in a large project, made now)
            _prepared[path] = (identity, sealing_key()[0], record)


def load(root: Path, key: str, notes: list[str]) -> RunRecord | None:
    """The record of this run, if there is a valid one (``notes`` says why not). (A caller
    that may run just after a check waits for that check's writing first: ``settled``.)"""
    if _resident:
        _used.add((root, key))
        path = record_path(root, key)
        prepared = _prepared.pop(path, None)
        if prepared is not None:
            identity, secret, record = prepared
            # (Another key, another XDG_CACHE_HOME: the record is checked again, as a run in a
            # process of its own would.)
            if identity == _identity(path) and secret == sealing_key()[0]:
                return record
    return _load(root, key, notes)


def _load(root: Path, key: str, notes: list[str]) -> RunRecord | None:
    path = record_path(root, key)
    secret, problem = sealing_key()
    if problem is not None:
        notes.append(problem)
        return None
    try:
        data = read_sealed(path, secret)
        with decoding():  # (thousands of findings rebuilt: records without cycles)
            return record_from_json(data, key)
    except FileNotFoundError:
        return None
    except (OSError, FormatError) as exc:
        notes.append(f"cache: ignored {_shown(root, path)}: {exc}; it will be rebuilt")
        return None


def save(root: Path, record: RunRecord, notes: list[str]) -> None:
    """Write the record (atomically, never through a symlink); a failure costs speed only."""
    if _resident:
        _used.add((root, record.key))
    secret, problem = sealing_key()
    if problem is not None:
        notes.append(problem)
        return
    try:
        directory = safe_directory(root, (CACHE_DIR_NAME, __version__))
        write_tags(root / CACHE_DIR_NAME)
        path = directory / _name(record.key)
        new = not os.path.lexists(path)
        write_sealed(directory, path.name, record_to_json(record), secret)
    except (OSError, ValueError) as exc:  # (ValueError: not plain data)
        notes.append(f"cache: run record not written ({exc})")
        return
    if new:
        removed = prune(root / CACHE_DIR_NAME, True, path)
        if removed:
            notes.append(
                f"cache: removed {len(removed)} older run record(s) (it keeps the "
                f"{KEEP_RECORDS} last written)"
            )


def _shown(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def build(
    key: str,
    config: Config,
    discovery: Discovery,
    results: Sequence[FileResult],
    stamps: Mapping[str, tuple[Stamp, str] | None],
    project: dict[str, Json] | None,
    previous: RunRecord | None = None,
) -> RunRecord:
    """A record of a run that just happened. ``stamps``: per file (display name), the stamp
    and content hash of the bytes it was linted from (None: unknown, checked every time).
    ``previous``: the record whose discovery this run reused (its directories still hold)."""
    written = time.time_ns()
    inputs = {}
    for path in [*settings_inputs(config), *sorted(discovery.ignore_files)]:
        mtime, size = source.stamp(path)
        inputs[path] = (mtime, size, (_content(path) or "") if mtime >= 0 else "")
    if previous is not None:
        directories = dict(previous.directories)
    else:
        directories = {}
        for directory, (mtime, names) in discovery.directories.items():
            directories[str(directory)] = (mtime, listing_digest(names))
    # Where a requirements file appearing would change the target torch.
    root = str(config.root)
    if root not in directories:
        directories[root] = (source.mtime(root), listing(root) or "")
    files = []
    for file in discovery.files:
        known = stamps.get(file.display)
        stamp, content = known if known is not None else (UNKNOWN, "")
        files.append(RecordedFile(file.display, str(file.path), stamp, content))
    record = RunRecord(
        key=key,
        written_ns=written,
        inputs=inputs,
        directories=directories,
        files=files,
        warnings=list(discovery.warnings),
        results=list(results),
        project=project,
        ignores=sorted(discovery.ignore_files),
        notes=list(discovery.notes),
    )
    if previous is not None:
        record.stored_rows = previous.stored_rows
    return record


# -- as data -------------------------------------------------------------------------------


def record_to_json(record: RunRecord) -> dict[str, Json]:
    stored = record.stored_rows
    rows = Rows(stored.kinds if stored is not None else ())

    def row(result: FileResult) -> list[Json]:
        if stored is not None:
            found = stored.rows.get(result.filename)
            if found is not None and _unchanged(found[0], result):
                return found[1]
        return rows.result(result)

    return {
        "version": __version__,
        "code": tool_fingerprint(),
        "key": record.key,
        "written_ns": record.written_ns,
        "inputs": [[path, *stamp] for path, stamp in record.inputs.items()],
        "directories": [[path, *seen] for path, seen in record.directories.items()],
        "files": [[f.display, f.path, *f.stamp, f.digest] for f in record.files],
        "warnings": record.warnings,
        "ignores": record.ignores,
        "notes": record.notes,
        # Files without findings are most of a run: only the others are stored.
        "results": [row(r) for r in record.results if _worth_storing(r)],
        "kinds": rows.kinds,
        # (Encoded here, once: the part is held as the pass's memo holds it, or as read back.)
        "project": None if record.project is None else project_to_json(**record.project),
    }


def _unchanged(stored: FileResult, result: FileResult) -> bool:
    """Whether ``result`` is what the record read back as ``stored`` (a result carried over
    holds the same findings, not copies)."""
    return (
        result.diagnostics is stored.diagnostics
        and result.unsettled is stored.unsettled
        and result.cells == stored.cells
    )


def _worth_storing(result: FileResult) -> bool:
    return bool(result.diagnostics or result.unsettled or result.cells)


def _int(value: Json, what: str) -> int:
    if type(value) is not int:
        raise FormatError(f"{what} is not an integer")
    return value


def _str(value: Json, what: str) -> str:
    if not isinstance(value, str):
        raise FormatError(f"{what} is not a string")
    return value


def _rows(value: Json, what: str, width: int) -> list[list[Json]]:
    if not isinstance(value, list) or not all(
        isinstance(row, list) and len(row) == width for row in value
    ):
        raise FormatError(f"{what} is not a list of {width}-item lists")
    return value


def record_from_json(value: Json, key: str) -> RunRecord:
    """Rebuild a record, checking every field; FormatError if anything is off, or if it was
    written by other code or for another run."""
    if not isinstance(value, dict):
        raise FormatError("not an object")
    if value.get("version") != __version__ or value.get("code") != tool_fingerprint():
        raise FormatError("written by another version of repro-lint")
    if value.get("key") != key:
        raise FormatError("written for another run")
    inputs = {
        _str(p, "an input"): (_int(m, "a stamp"), _int(n, "a stamp"), _str(c, "a hash"))
        for p, m, n, c in _rows(value.get("inputs"), "inputs", 4)
    }
    directories = {
        _str(p, "a directory"): (_int(m, "a directory's mtime"), _str(c, "a listing"))
        for p, m, c in _rows(value.get("directories"), "directories", 3)
    }
    files = []
    for display, path, mtime, size, content in _rows(value.get("files"), "files", 5):
        # (One test per row: a record holds every file of a large project.)
        if not (
            type(display) is str
            and type(path) is str
            and type(mtime) is int
            and type(size) is int
            and type(content) is str
        ):
            raise FormatError("a file is not (name, path, mtime, size, content hash)")
        files.append(RecordedFile(display, path, (mtime, size), content))
    warnings = value.get("warnings")
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise FormatError("warnings are not a list of strings")
    ignores = value.get("ignores")
    if not isinstance(ignores, list) or not all(isinstance(p, str) for p in ignores):
        raise FormatError("ignore files are not a list of strings")
    notes = value.get("notes")
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise FormatError("notes are not a list of strings")
    if not set(ignores) <= set(inputs):
        raise FormatError("an ignore file without a stamp")
    kinds, rows = value.get("kinds"), value.get("results")
    decoded = results_from_rows(kinds, rows)
    stored = {r.filename: r for r in decoded}
    if not set(stored) <= {f.display for f in files}:
        raise FormatError("a result for a file the run did not lint")
    results = [stored.get(f.display) or FileResult(f.display, ()) for f in files]
    record = RunRecord(
        key=key,
        written_ns=_int(value.get("written_ns"), "the time written"),
        inputs=inputs,
        directories=directories,
        files=files,
        warnings=list(warnings),
        results=results,
        project=project_from_json(value.get("project")),
        ignores=list(ignores),
        notes=list(notes),
    )
    # (``results_from_rows`` checked that both are lists, a result per row.)
    assert isinstance(kinds, list) and isinstance(rows, list)
    record.stored_rows = StoredRows(
        kinds, {result.filename: (result, row) for result, row in zip(decoded, rows, strict=True)}
    )
    return record


def project_to_json(
    digests: Mapping[str, str],
    loaded: Mapping[str, Stamp],
    summaries: Sequence[tuple[str, bool, str]],
    probed: Mapping[str, tuple[int, str]],
    texts: Mapping[str, Stamp],
    asked: Sequence[tuple[str, str, str, Json, list[str] | None]],
    whole: Sequence[str],
) -> dict[str, Json]:
    return {
        "digests": dict(digests),
        "loaded": {path: list(stamp) for path, stamp in loaded.items()},
        "summaries": [list(entry) for entry in summaries],
        "probed": {path: list(seen) for path, seen in probed.items()},
        "texts": {path: list(stamp) for path, stamp in texts.items()},
        "asked": [list(question) for question in asked],
        "whole": list(whole),
    }


def _stamps(value: Json, what: str) -> dict[str, Stamp]:
    if not isinstance(value, dict) or not all(
        isinstance(v, list) and len(v) == 2 and all(type(n) is int for n in v)
        for v in value.values()
    ):
        raise FormatError(f"{what} are not pairs of integers")
    return {str(path): (stamp[0], stamp[1]) for path, stamp in value.items()}


def _answer_valid(kind: Json, answer: Json) -> bool:
    if kind == "mentioning":
        return answer is None or (
            isinstance(answer, list) and all(isinstance(p, str) for p in answer)
        )
    return kind == "unreferenced" and isinstance(answer, bool)


def _evidence_valid(kind: Json, answer: Json, evidence: Json) -> bool:
    """Evidence backs only a negative answer (see ``text_questions.TextQuestion``): file paths."""
    if evidence is None:
        return True
    negative = answer is None if kind == "mentioning" else answer is False
    return (
        negative
        and isinstance(evidence, list)
        and bool(evidence)
        and all(isinstance(path, str) for path in evidence)
    )


def project_from_json(value: Json) -> dict[str, Json] | None:
    """``project_to_json``'s data checked and rebuilt as ``ProjectMemo``'s fields (None for
    None); FormatError where anything is off."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FormatError("the project part is not an object")
    digests, probed, asked = value.get("digests"), value.get("probed"), value.get("asked")
    summaries = value.get("summaries")
    if not isinstance(summaries, list) or not all(
        isinstance(e, list)
        and len(e) == 3
        and isinstance(e[0], str)
        and isinstance(e[1], bool)
        and isinstance(e[2], str)
        for e in summaries
    ):
        raise FormatError("summaries loaded by the project pass are malformed")
    if not isinstance(digests, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in digests.items()
    ):
        raise FormatError("project digests are not strings")
    if not isinstance(probed, dict) or not all(
        isinstance(v, list) and len(v) == 2 and type(v[0]) is int and isinstance(v[1], str)
        for v in probed.values()
    ):
        raise FormatError("project directories are not (mtime, listing) pairs")
    if not isinstance(asked, list) or not all(
        isinstance(q, list)
        and len(q) == 5
        and isinstance(q[1], str)
        and isinstance(q[2], str)
        and _answer_valid(q[0], q[3])
        and _evidence_valid(q[0], q[3], q[4])
        for q in asked
    ):
        raise FormatError("questions asked of the project's text are malformed")
    whole = value.get("whole")
    if not isinstance(whole, list) or not all(isinstance(path, str) for path in whole):
        raise FormatError("the files read whole are not paths")
    return {
        "digests": dict(digests),
        "loaded": _stamps(value.get("loaded"), "project stamps"),
        "summaries": [(e[0], e[1], e[2]) for e in summaries],
        "probed": {str(path): (seen[0], seen[1]) for path, seen in probed.items()},
        "texts": _stamps(value.get("texts"), "stamps of the project's text"),
        "asked": [
            (str(q[0]), q[1], q[2], q[3], None if q[4] is None else list(q[4])) for q in asked
        ],
        "whole": list(whole),
    }


__all__ = [
    "RecordedFile",
    "RunRecord",
    "build",
    "load",
    "project_from_json",
    "project_to_json",
    "record_from_json",
    "record_path",
    "record_to_json",
    "run_key",
    "save",
    "settings_inputs",
]
