"""Per-file results cache under ``.repro_lint_cache/`` (tool version x settings x file content)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import pickle
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from repro_lint import __version__
from repro_lint.diagnostics import FileResult
from repro_lint.files import SourceFile

CACHE_DIR_NAME = ".repro_lint_cache"
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by repro-lint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


@dataclass(frozen=True, slots=True)
class _Entry:
    mtime_ns: int
    size: int
    digest: str
    result: FileResult
    # Written within the file system's timestamp granularity of the file's mtime: a same-size
    # edit in the same tick would keep the mtime, so such entries are always checked by hash
    # (git's "racily clean" rule).
    racy: bool


def _racy(mtime_ns: int) -> bool:
    return mtime_ns >= time.time_ns() - 2_000_000_000


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class Cache:
    """Results of unchanged files. A file hits when its (mtime, size) match, or when its size
    matches and its content hash does (a touched but unchanged file).

    Entries are kept in one pickle per source directory under a folder per settings key, so
    a run that checks one file (pre-commit, an editor) reads and rewrites only the shards it
    touches, not the whole project's. Each shard is replaced atomically, so concurrent runs
    never see a torn file (last writer wins; a lost entry only costs speed)."""

    def __init__(self, root: Path, key: str) -> None:
        self.directory = root / CACHE_DIR_NAME
        name = hashlib.sha256(key.encode()).hexdigest()[:16]
        self.path = self.directory / __version__ / name
        self._shards: dict[str, dict[str, _Entry]] = {}
        self._dirty: set[str] = set()

    def _shard(self, file: SourceFile) -> tuple[str, dict[str, _Entry]]:
        shard = hashlib.sha256(str(file.path.parent).encode()).hexdigest()[:16]
        entries = self._shards.get(shard)
        if entries is None:
            entries = self._shards[shard] = self._load(self.path / f"{shard}.pickle")
        return shard, entries

    @staticmethod
    def _load(path: Path) -> dict[str, _Entry]:
        try:
            with path.open("rb") as handle:
                data = pickle.load(handle)
        except (
            OSError,
            EOFError,
            pickle.UnpicklingError,
            AttributeError,
            ImportError,
            TypeError,
            ValueError,
        ):
            return {}
        return data if isinstance(data, dict) else {}

    @staticmethod
    def _key(file: SourceFile) -> str:
        return str(file.path)

    def get(self, file: SourceFile) -> FileResult | None:
        shard, entries = self._shard(file)
        entry = entries.get(self._key(file))
        if entry is None:
            return None
        try:
            info = file.path.stat()
        except OSError:
            return None
        if info.st_size != entry.size:
            return None
        if info.st_mtime_ns != entry.mtime_ns or entry.racy:
            try:
                if _digest(file.path.read_bytes()) != entry.digest:
                    return None
            except OSError:
                return None
            if info.st_mtime_ns != entry.mtime_ns:
                entries[self._key(file)] = dataclasses.replace(
                    entry, mtime_ns=info.st_mtime_ns, racy=_racy(info.st_mtime_ns)
                )
                self._dirty.add(shard)
        # Results are stored per absolute path but shown relative to the current directory.
        if entry.result.filename != file.display:
            return _renamed(entry.result, file.display)
        return entry.result

    @staticmethod
    def stamp(file: SourceFile) -> tuple[int, int] | None:
        """The file's (mtime, size) before it is read for linting; ``put`` needs it."""
        try:
            info = file.path.stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def put(self, file: SourceFile, result: FileResult, stamp: tuple[int, int] | None) -> None:
        """Remember ``result`` unless the file changed since ``stamp`` was taken (before it
        was read for linting): another process may be fixing the same tree, and a result
        stored under the new content's hash would then be wrong for that content."""
        if stamp is None or any(
            d.code == "RPL000" and d.message.startswith("cannot read") for d in result.diagnostics
        ):
            return
        try:
            before = file.path.stat()
            data = file.path.read_bytes()
            after = file.path.stat()
        except OSError:
            return
        if not stamp == (before.st_mtime_ns, before.st_size) == (after.st_mtime_ns, after.st_size):
            return
        stored = dataclasses.replace(result, source=None)
        shard, entries = self._shard(file)
        entries[self._key(file)] = _Entry(
            after.st_mtime_ns, after.st_size, _digest(data), stored, _racy(after.st_mtime_ns)
        )
        self._dirty.add(shard)

    def save(self) -> None:
        if not self._dirty:
            return
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            tag = self.directory / "CACHEDIR.TAG"
            if not tag.exists():
                tag.write_text(_TAG, encoding="utf-8")
                (self.directory / ".gitignore").write_text("*\n", encoding="utf-8")
        except OSError:
            # A cache that cannot be written only costs speed next time.
            self._dirty.clear()
            return
        for shard in sorted(self._dirty):
            temp = None
            try:
                fd, temp = tempfile.mkstemp(dir=self.path, prefix=".tmp-", suffix=".pickle")
                with os.fdopen(fd, "wb") as handle:
                    pickle.dump(self._shards[shard], handle, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temp, self.path / f"{shard}.pickle")
            except OSError:
                if temp is not None:
                    with contextlib.suppress(OSError):
                        os.unlink(temp)
        self._dirty.clear()


def _renamed(result: FileResult, filename: str) -> FileResult:
    diagnostics = tuple(dataclasses.replace(d, filename=filename) for d in result.diagnostics)
    return dataclasses.replace(result, filename=filename, diagnostics=diagnostics)


def clean(root: Path) -> list[Path]:
    """Remove the cache directories at and below ``root``; return what was removed."""
    removed = []
    for directory in [root / CACHE_DIR_NAME, *root.rglob(CACHE_DIR_NAME)]:
        if directory.is_dir() and directory not in removed:
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory)
    return removed
