"""Per-file results cache under ``.repro_lint_cache/`` (tool version x settings x file content).

The cache lives inside the linted tree, which may be anyone's: a cloned repository or a pull
request can commit files there. So a cache file is sealed with a key that only this user's
repro-lint knows (kept outside the tree, in the user's cache directory), and its payload is
decoded only once the seal matches: a planted or edited file is ignored, so it can neither run
code nor hide findings. The payload is plain data (dicts, lists, strings, numbers) in
``marshal``'s format 4, which runs nothing as it decodes, read back through the validating
constructors of ``codec``. ``marshal`` rather than JSON: it keeps interned
strings interned, so the names repeated across thousands of summaries are held once by the
run that reads them back (the benchmark corpus's shards: 476 MiB held as JSON, 310 MiB so),
and it is faster both ways. Writes never follow a symlink."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import marshal
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro_lint import __version__
from repro_lint.codec import FormatError, result_from_json, result_to_json
from repro_lint.collector import decoding
from repro_lint.diagnostics import FileResult
from repro_lint.files import SourceFile, leftover_of, make_temp
from repro_lint.source import SourceError, Stamp, is_internal_error, read_bytes

CACHE_DIR_NAME = ".repro_lint_cache"
# A run record's name: this prefix, 16 hex digits of its key, ``SUFFIX`` (``run_cache``).
RECORD_PREFIX = "run-"
# Bumped whenever the layout of a shard changes: older shards are then ignored and rebuilt.
SCHEMA = 2
_MAGIC = b"repro-lint-cache"
SUFFIX = ".marshal"
# marshal's format 4 (Python 3.4 on): every Python that runs repro-lint reads and writes it.
_MARSHAL_VERSION = 4
# A shard holds one source directory's results; anything larger than this is not ours.
_MAX_SHARD_BYTES = 512 * 1024 * 1024
# Not on every platform: where missing, the checks they add are skipped.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
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
    # For a notebook, what each of its own project passes read (``project_pass.ProjectMemo``
    # data, as ``run_cache.project_to_json`` writes it): its result holds only while that
    # does (``engine._notebook_holds``). None for other files.
    project: list[Any] | None = None


def _racy(mtime_ns: int) -> bool:
    return mtime_ns >= time.time_ns() - 2_000_000_000


def digest(data: bytes) -> str:
    """The content hash the caches keep for a file."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


_FINGERPRINT: str | None = None


def tool_fingerprint(fresh: bool = False) -> str:
    """A digest of repro-lint's own code files (names, sizes, mtimes): results cached by one
    build are never read by another, even when the version number stayed the same (an
    editable install being worked on). Worked out once per process, unless ``fresh`` (the
    daemon asks whether its code is still the code on disk)."""
    global _FINGERPRINT
    if _FINGERPRINT is None or fresh:
        package = Path(__file__).resolve().parent
        parts = [__version__]
        for directory, subdirectories, names in os.walk(package):
            subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
            for name in sorted(names):
                if name.endswith(".py"):
                    info = os.stat(os.path.join(directory, name))
                    relative = os.path.relpath(os.path.join(directory, name), package)
                    parts.append(f"{relative}:{info.st_size}:{info.st_mtime_ns}")
        _FINGERPRINT = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return _FINGERPRINT


def listing_digest(names: Iterable[str]) -> str:
    """A digest of a directory's entries, what discovery and module lookups depend on. The
    cache directory itself and the temporary files of --fix are left out: they come and go
    with repro-lint's own runs and change nothing those would find."""
    kept = sorted(n for n in names if n != CACHE_DIR_NAME and leftover_of(n) is None)
    return digest("\0".join(kept).encode())


def listing(directory: str) -> str | None:
    """The digest of a directory's entries now (None when it cannot be listed)."""
    try:
        return listing_digest(entry.name for entry in os.scandir(directory))
    except OSError:
        return None


def user_cache_home() -> Path:
    """Where this user's own repro-lint state lives (never inside a linted tree)."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "repro-lint"


def _read_key(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    try:
        info = os.fstat(fd)
        owner = os.getuid() if hasattr(os, "getuid") else info.st_uid
        if not stat.S_ISREG(info.st_mode) or info.st_uid != owner:
            raise OSError(f"{path} is not a regular file of this user")
        if info.st_mode & 0o077:
            raise OSError(f"{path} is readable by other users")
        key = os.read(fd, 256).strip()
    finally:
        os.close(fd)
    if len(key) < 32:
        raise OSError(f"{path} is too short")
    return key


def _random_key() -> bytes:
    """A new secret key: 32 random bytes, as 64 hexadecimal digits."""
    return os.urandom(32).hex().encode()


def _new_sealing_key() -> tuple[bytes, str | None]:
    """This user's secret cache key, created on first use; with a note when it cannot be kept
    (then a key for this process only: nothing is reused, and nothing planted is trusted)."""
    home = user_cache_home()
    path = home / "cache-key"
    try:
        return _read_key(path), None
    except FileNotFoundError:
        pass
    except OSError as exc:
        return _random_key(), f"cache key unusable ({exc}); results not reused"
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(_random_key() + b"\n")
    except FileExistsError:
        pass  # another process created it first: use theirs
    except OSError as exc:
        note = f"cannot keep a cache key ({exc}); results not reused"
        return _random_key(), note
    try:
        return _read_key(path), None
    except OSError as exc:
        return _random_key(), f"cache key unusable ({exc}); results not reused"


_KEY: tuple[bytes, str | None] | None = None


def sealing_key() -> tuple[bytes, str | None]:
    """This user's secret key for sealing cache files, and a note when it cannot be kept."""
    global _KEY
    if _KEY is None:
        _KEY = _new_sealing_key()
    return _KEY


def forget_key() -> None:
    """Read the key again when next needed (a process that outlives one run: ``XDG_CACHE_HOME``
    may differ in the next)."""
    global _KEY
    _KEY = None


def _seal(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def read_sealed(path: Path, key: bytes) -> Any:
    """The plain data in a sealed file; OSError when it cannot be read as a regular file
    (symlinks are not followed, FIFOs never block), FormatError when it is not ours."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FormatError("not a regular file")
        if info.st_size > _MAX_SHARD_BYTES:
            raise FormatError("too large")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(_MAX_SHARD_BYTES + 1)
    finally:
        os.close(fd)
    header, newline, payload = data.partition(b"\n")
    parts = header.split(b" ")
    if not newline or len(parts) != 3 or parts[0] != _MAGIC:
        raise FormatError("not a repro-lint cache file")
    if parts[1] != str(SCHEMA).encode():
        raise FormatError(f"schema {parts[1].decode(errors='replace')}, not {SCHEMA}")
    if not hmac.compare_digest(parts[2], _seal(key, payload).encode()):
        raise FormatError("seal does not match (not written by this user's repro-lint)")
    try:
        with decoding():
            return marshal.loads(payload)
    except (ValueError, EOFError, TypeError) as exc:
        raise FormatError(f"not plain data ({exc})") from exc


def write_sealed(directory: Path, name: str, data: Any, key: bytes) -> None:
    """Replace ``directory/name`` atomically with sealed plain data (the directory must have
    been checked by :func:`safe_directory`; a symlink at ``name`` is replaced, not followed).
    ValueError when ``data`` holds anything but plain data."""
    payload = marshal.dumps(data, _MARSHAL_VERSION)
    header = b" ".join([_MAGIC, str(SCHEMA).encode(), _seal(key, payload).encode()])
    fd, temp = make_temp(directory, ".tmp-", SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(header + b"\n" + payload)
        os.replace(temp, directory / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def safe_directory(root: Path, parts: tuple[str, ...]) -> Path:
    """``root/parts...``, created as needed; OSError if any part is a symlink or not a
    directory, so that writes cannot be redirected outside the cache (``root`` itself is the
    project's own choice)."""
    current = root
    for part in parts:
        current = current / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(current, 0o755)
        info = os.lstat(current)
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            raise OSError(f"{current} is not a plain directory")
    return current


def _write_once(path: Path, text: str) -> None:
    """Create a small file unless something (even a dangling symlink) is already there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def write_tags(directory: Path) -> None:
    """Mark the cache directory as one (CACHEDIR.TAG) and keep it out of git."""
    _write_once(directory / "CACHEDIR.TAG", _TAG)
    _write_once(directory / ".gitignore", "*\n")


def _entry_to_json(entry: _Entry) -> dict[str, Any]:
    return {
        "mtime_ns": entry.mtime_ns,
        "size": entry.size,
        "digest": entry.digest,
        "racy": entry.racy,
        "result": result_to_json(entry.result),
        **({} if entry.project is None else {"project": entry.project}),
    }


def _entry_from_json(value: Any) -> _Entry:
    if not isinstance(value, dict):
        raise FormatError("an entry is not an object")
    mtime_ns, size = value.get("mtime_ns"), value.get("size")
    digest, racy = value.get("digest"), value.get("racy")
    if type(mtime_ns) is not int or type(size) is not int or size < 0:
        raise FormatError("an entry's stamp is not two integers")
    if not isinstance(digest, str) or not isinstance(racy, bool):
        raise FormatError("an entry's digest or racy flag has the wrong type")
    project = value.get("project")
    if project is not None and not (
        isinstance(project, list) and all(isinstance(p, dict) for p in project)
    ):
        raise FormatError("an entry's project reads are not a list of objects")
    return _Entry(mtime_ns, size, digest, result_from_json(value.get("result")), racy, project)


class Cache:
    """Results of unchanged files. A file hits when its (mtime, size) match, or when its size
    matches and its content hash does (a touched but unchanged file).

    Entries are kept in one sealed file per source directory under a folder per settings
    key, so a run that checks one file (pre-commit, an editor) reads and rewrites only the
    shards it touches, not the whole project's. Each shard is replaced atomically, so
    concurrent runs never see a torn file (last writer wins; a lost entry only costs speed).
    A shard that is unreadable, truncated, from another schema or version, or not sealed by
    this user is ignored (and rebuilt), with a note in :attr:`notes` for ``-v``."""

    def __init__(self, root: Path, key: str) -> None:
        self.root = root
        self.key = key
        self.directory = root / CACHE_DIR_NAME
        # The code itself is part of the key: an edited rule never reads older results.
        self.settings = hashlib.sha256(f"{key}|code={tool_fingerprint()}".encode()).hexdigest()[:16]
        self.path = self.directory / __version__ / self.settings
        self.notes: list[str] = []
        self._shards: dict[str, dict[str, _Entry]] = {}
        self._dirty: set[str] = set()

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _shard(self, file: SourceFile) -> tuple[str, dict[str, _Entry]]:
        shard = hashlib.sha256(str(file.path.parent).encode()).hexdigest()[:16]
        entries = self._shards.get(shard)
        if entries is None:
            entries = self._shards[shard] = self._load(shard)
        return shard, entries

    def _load(self, shard: str) -> dict[str, _Entry]:
        path = self.path / f"{shard}{SUFFIX}"
        key, problem = sealing_key()
        if problem is not None:
            self._note(problem)
        try:
            data = read_sealed(path, key)
            if not isinstance(data, dict):
                raise FormatError("not an object")
            if data.get("version") != __version__ or data.get("settings") != self.settings:
                raise FormatError("written for another version or other settings")
            raw = data.get("entries")
            if not isinstance(raw, dict):
                raise FormatError("no entries")
            with decoding():
                return {str(name): _entry_from_json(value) for name, value in raw.items()}
        except FileNotFoundError:
            return {}
        except (OSError, FormatError) as exc:
            self._note(f"cache: ignored {self._shown(path)}: {exc}; it will be rebuilt")
            return {}

    def _shown(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    @staticmethod
    def _key(file: SourceFile) -> str:
        return str(file.path)

    def get(self, file: SourceFile) -> FileResult | None:
        found = self.lookup(file)
        return None if found is None else found[0]

    def lookup(self, file: SourceFile) -> tuple[FileResult, Stamp, str] | None:
        """The result of an unchanged file, with the stamp and content hash it was linted
        at (what the whole-run record keeps of it)."""
        shard, entries = self._shard(file)
        entry = entries.get(self._key(file))
        if entry is None:
            return None
        try:
            info = file.path.stat()
        except OSError:
            return None
        if info.st_size != entry.size or not stat.S_ISREG(info.st_mode):
            return None
        if info.st_mtime_ns != entry.mtime_ns or entry.racy:
            try:
                if digest(read_bytes(file.path)[0]) != entry.digest:
                    return None
            except SourceError:
                return None
            if info.st_mtime_ns != entry.mtime_ns:
                entry = entries[self._key(file)] = dataclasses.replace(
                    entry, mtime_ns=info.st_mtime_ns, racy=_racy(info.st_mtime_ns)
                )
                self._dirty.add(shard)
        result = entry.result
        # Results are stored per absolute path but shown relative to the current directory.
        if result.filename != file.display:
            result = _renamed(result, file.display)
        return result, (entry.mtime_ns, entry.size), entry.digest

    def project_of(self, file: SourceFile) -> list[Any] | None:
        """What the project passes of the notebook's stored result read (see ``_Entry``)."""
        _, entries = self._shard(file)
        entry = entries.get(self._key(file))
        return None if entry is None else entry.project

    def stored(self, file: SourceFile) -> tuple[FileResult, str] | None:
        """The result last stored for the file, whatever the file holds now, with the content
        hash it was linted from (what an edit changed is judged against it)."""
        _, entries = self._shard(file)
        entry = entries.get(self._key(file))
        if entry is None:
            return None
        result = entry.result
        if result.filename != file.display:
            result = _renamed(result, file.display)
        return result, entry.digest

    def store(
        self,
        file: SourceFile,
        result: FileResult,
        stamp: Stamp,
        digest: str,
        project: list[Any] | None = None,
    ) -> None:
        """Remember ``result``, linted from bytes with this ``digest`` read when the file had
        this ``stamp``, unless the file has changed since (another process may be fixing the
        same tree: a result stored for content it was not computed from would be wrong).
        ``project``: for a notebook, what its project passes read (see ``_Entry``)."""
        if any(
            (d.code == "RPL000" and d.message.startswith("cannot read")) or is_internal_error(d)
            for d in result.diagnostics
        ):
            return  # (a file that could not be read, or that the analysis failed on, is retried)
        try:
            info = file.path.stat()
        except OSError:
            return
        if (info.st_mtime_ns, info.st_size) != stamp:
            return
        stored = dataclasses.replace(result, source=None)
        shard, entries = self._shard(file)
        entries[self._key(file)] = _Entry(
            stamp[0], stamp[1], digest, stored, _racy(stamp[0]), project
        )
        self._dirty.add(shard)

    def save(self) -> None:
        if not self._dirty:
            return
        key, problem = sealing_key()
        if problem is not None:
            # Nothing written now could be trusted by a later run.
            self._note(problem)
            self._dirty.clear()
            return
        new = not os.path.lexists(self.path)
        try:
            directory = safe_directory(self.root, (CACHE_DIR_NAME, __version__, self.settings))
            write_tags(self.directory)
        except OSError as exc:
            # A cache that cannot be written only costs speed next time.
            self._note(f"cache: not written ({exc})")
            self._dirty.clear()
            return
        for shard in sorted(self._dirty):
            data = {
                "version": __version__,
                "settings": self.settings,
                "entries": {
                    name: _entry_to_json(entry) for name, entry in self._shards[shard].items()
                },
            }
            try:
                write_sealed(directory, f"{shard}{SUFFIX}", data, key)
            except (OSError, ValueError) as exc:  # (ValueError: not plain data)
                self._note(f"cache: shard not written ({exc})")
        self._dirty.clear()
        if new:
            removed = prune(self.directory, False, directory)
            if removed:
                self._note(
                    f"cache: removed {len(removed)} older set(s) of results (it keeps the "
                    f"{KEEP_RESULTS} last written)"
                )


# What a project's cache keeps, the most recently written first: the results of this many
# versions of the tool's code and settings (each set holds every file's results: tens of MB
# in a large project), and this many run records. Older ones go when a new one is written.
KEEP_RESULTS = 4
KEEP_RECORDS = 8
_HEX16 = frozenset("0123456789abcdef")


def _ours(name: str, records: bool) -> bool:
    """Whether ``name`` is one the cache writes: a run record or a set of results."""
    if records:
        stem = name[len(RECORD_PREFIX) : -len(SUFFIX)] if name.endswith(SUFFIX) else ""
        return name.startswith(RECORD_PREFIX) and len(stem) == 16 and set(stem) <= _HEX16
    return len(name) == 16 and set(name) <= _HEX16


def prune(directory: Path, records: bool, keep: Path) -> list[Path]:
    """Remove all but the ``KEEP_RECORDS`` most recently written run records (``records``)
    or the ``KEEP_RESULTS`` most recently written sets of results from ``directory`` (a
    project's ``.repro_lint_cache``), over every version; ``keep``, just written, stays.
    Only names the cache writes are looked at, and nothing is removed through a symlink (a
    symlinked version directory is passed over); a version directory left empty goes too.
    What cannot be removed stays (a run that still writes there loses speed only). Returns
    what was removed."""
    found: list[tuple[int, Path]] = []
    versions: list[Path] = []
    try:
        with os.scandir(directory) as listed:
            versions = [Path(e.path) for e in listed if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    for version in versions:
        try:
            with os.scandir(version) as listed:
                for entry in listed:
                    if not _ours(entry.name, records):
                        continue
                    if entry.is_symlink() or entry.is_dir() == records:
                        continue
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, Path(entry.path)))
        except OSError:
            continue
    found.sort(key=lambda item: (item[1] != keep, -item[0]))
    limit = KEEP_RECORDS if records else KEEP_RESULTS
    removed = []
    for _, path in found[limit:]:
        try:
            if records:
                path.unlink()
            else:
                import shutil

                shutil.rmtree(path)
        except OSError:
            continue
        removed.append(path)
    for version in versions:
        with contextlib.suppress(OSError):
            if not any(version.iterdir()):
                version.rmdir()
    return removed


def _renamed(result: FileResult, filename: str) -> FileResult:
    diagnostics = tuple(dataclasses.replace(d, filename=filename) for d in result.diagnostics)
    return dataclasses.replace(result, filename=filename, diagnostics=diagnostics)


# -- what a check leaves to be written after it has ended -----------------------------------

# Held, exclusively, by the process that writes a check's results and run record once the
# check has ended (``launch.defer``): a later run reads a record, and ``clean`` removes the
# cache, only once it is free (``settled``).
LOCK_NAME = "run.lock"
# How long a run waits for that writing to end before it reads what is there (an older
# record or none, which costs speed only).
SETTLE_SECONDS = 10.0
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def writing(root: Path) -> int | None:
    """Take the lock that makes later runs of ``root`` wait (``settled``) until what this run
    leaves to be written is written: an open file descriptor that holds it until it is
    closed in every process that has it (the process a check forks as it ends keeps it, and
    ends when done). None where it cannot be taken (not a POSIX system, a cache directory
    that cannot be written, another run's writing under way): the caller writes now."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        directory = safe_directory(root, (CACHE_DIR_NAME,))
        write_tags(directory)
        fd = _lock_file(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _lock_file(path: Path, flags: int) -> int:
    """The lock file at ``path`` opened with ``flags``: never through a symlink, never
    waiting (a FIFO planted there would block a plain open), and only a regular file
    (OSError otherwise)."""
    fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd


def settled(root: Path, seconds: float = SETTLE_SECONDS) -> None:
    """Return once nothing is being written for a run of ``root`` (``writing``), or after
    ``seconds``."""
    try:
        import fcntl
    except ImportError:
        return
    try:
        fd = _lock_file(root / CACHE_DIR_NAME / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return  # (nothing was ever written behind a check here)
    try:
        deadline = time.monotonic() + seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.002)
            except OSError:
                return
    finally:
        os.close(fd)


def clean(root: Path) -> list[Path]:
    """Remove the cache directories at and below ``root``; return what was removed. A cache
    directory that is a symlink loses the link, never what it points to."""
    removed = []
    for directory in [root / CACHE_DIR_NAME, *root.rglob(CACHE_DIR_NAME)]:
        if directory in removed:
            continue
        if directory.is_symlink():
            with contextlib.suppress(OSError):
                directory.unlink()
                removed.append(directory)
        elif directory.is_dir():
            import shutil

            settled(directory.parent)  # (what a check left to be written is written first)
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory)
    return removed
