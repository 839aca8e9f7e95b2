"""Expand the paths a user gives into the Python files to lint (excludes, .gitignore)."""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from repro_lint.config import Config
from repro_lint.source import read_small

if TYPE_CHECKING:
    import pathspec

DEFAULT_EXCLUDES = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
    ".repro_lint_cache", ".svn", ".tox", ".venv", ".vscode", "__pycache__", "__pypackages__",
    "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)  # fmt: skip
# What a directory walk picks up unless ``include`` says otherwise (as ruff does since 0.6:
# notebooks too; ``extend-exclude = ["*.ipynb"]`` leaves them out).
DEFAULT_INCLUDE = ("*.py", "*.pyi", "*.ipynb")
# The temporary file --fix writes a file's new content to, next to it, before renaming it into
# place: ``.NAME.PID.XXXXXXXX.repro-lint-tmp``. One left by an interrupted run is removed by
# a later run that lints NAME (older releases wrote ``.NAME.XXXXXXXX.repro-lint``).
TEMP_SUFFIX = ".repro-lint-tmp"
_LEFTOVER = re.compile(r"\.(?P<name>.+?)\.(?:(?P<pid>\d+)\.)?[\w-]{8}\.repro-lint(?:-tmp)?")


def temp_prefix(name: str) -> str:
    """The start of the name of a temporary file --fix writes ``name``'s content to."""
    return f".{name}.{os.getpid()}."


def make_temp(directory: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new file in ``directory``, readable and writable by this user alone, opened for
    writing: its descriptor and path. Named ``prefix``, eight random characters, ``suffix``
    (as ``tempfile.mkstemp`` names it, whose module, with the ``shutil`` and ``random`` it
    imports, costs a check about 8 ms to import)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{os.urandom(4).hex()}{suffix}")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary file name in {directory}")


def leftover_of(name: str) -> tuple[str, int | None] | None:
    """(the file it was for, the process that wrote it) if ``name`` is one of our
    temporary files."""
    match = _LEFTOVER.fullmatch(name)
    if match is None:
        return None
    pid = match.group("pid")
    return match.group("name"), int(pid) if pid else None


@dataclass(frozen=True, slots=True, order=True)
class SourceFile:
    """A file to lint: its absolute path and the name shown to the user."""

    display: str
    path: Path


@dataclass
class Discovery:
    """The files found, what to warn about, and what the finding depended on: the mtimes of
    the directories listed (a file appears or goes only if its directory's mtime changes)
    and the ignore files read, so that a later run can reuse the result unchanged."""

    files: list[SourceFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Each directory listed: its mtime before listing, and the names it held.
    directories: dict[Path, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    # Every .gitignore looked for (present or not), as a path string.
    ignore_files: set[str] = field(default_factory=set)
    # What was passed over, for -v: special files, and the temporary files an interrupted
    # --fix left next to files linted now (the command removes the stale ones).
    notes: list[str] = field(default_factory=list)
    leftovers: list[Path] = field(default_factory=list)


def display_name(path: Path, cwd: Path | None = None) -> str:
    """Relative to the working directory when below it, else absolute."""
    cwd = cwd or Path.cwd()
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


def _spec(patterns: Iterable[str]) -> pathspec.GitIgnoreSpec:
    # pathspec is imported only when patterns are matched (files named on the command line
    # without --force-exclude never are).
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


class _Matcher:
    """Exclude patterns (anchored at the config root) plus the .gitignore files on the way."""

    def __init__(self, config: Config) -> None:
        excludes = config.exclude if config.exclude is not None else DEFAULT_EXCLUDES
        self.root = config.root.resolve()
        self.exclude = _spec([*excludes, *config.extend_exclude])
        includes = config.include if config.include is not None else DEFAULT_INCLUDE
        self.include = _spec([*includes, *config.extend_include])
        self.respect_gitignore = config.respect_gitignore
        self._gitignores: dict[Path, pathspec.GitIgnoreSpec | None] = {}
        self._chains: dict[Path, tuple[tuple[Path, pathspec.GitIgnoreSpec], ...]] = {}
        # Every .gitignore looked for (present or not), for the whole-run cache.
        self.ignore_files: set[str] = set()

    def _gitignore(self, directory: Path) -> pathspec.GitIgnoreSpec | None:
        if directory not in self._gitignores:
            spec = None
            path = directory / ".gitignore"
            self.ignore_files.add(str(path))
            data = read_small(path)
            try:
                spec = _spec(data.decode("utf-8").splitlines()) if data is not None else None
            except UnicodeDecodeError:
                spec = None
            self._gitignores[directory] = spec
        return self._gitignores[directory]

    def included(self, path: Path) -> bool:
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            relative = path.name
        return self.include.match_file(relative) or self.include.match_file(path.name)

    def excluded(self, path: Path, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            relative = path.name
        if self.exclude.match_file(relative + suffix) or self.exclude.match_file(
            path.name + suffix
        ):
            return True
        if not self.respect_gitignore:
            return False
        # Every .gitignore from the project root (or the filesystem root) down to the file.
        for directory, spec in self._gitignores_above(path.parent):
            rel = path.relative_to(directory).as_posix() + suffix
            if spec.match_file(rel):
                return True
        return False

    def _gitignores_above(self, directory: Path) -> tuple[tuple[Path, pathspec.GitIgnoreSpec], ...]:
        """The .gitignore files that apply in ``directory``, root first (cached: the files of
        one directory share them)."""
        chain = self._chains.get(directory)
        if chain is None:
            chain = tuple(
                (ancestor, spec)
                for ancestor in _ancestors_below(directory, self.root)
                if (spec := self._gitignore(ancestor)) is not None
            )
            self._chains[directory] = chain
        return chain


def _ancestors_below(directory: Path, root: Path) -> list[Path]:
    chain = [directory]
    if directory == root or root not in directory.parents:
        return chain
    for parent in directory.parents:
        chain.append(parent)
        if parent == root:
            break
    return chain[::-1]


def discover(paths: Sequence[Path], config: Config, *, force_exclude: bool = False) -> Discovery:
    """Files to lint under ``paths``, sorted by display name, each once. Files named
    explicitly are taken as they are: no directory is listed and no pattern or .gitignore is
    matched for them, except with ``force_exclude``."""
    matcher: _Matcher | None = None

    def matching() -> _Matcher:
        nonlocal matcher
        if matcher is None:
            matcher = _Matcher(config)
        return matcher

    found: dict[Path, SourceFile] = {}
    result = Discovery()
    cwd = Path.cwd()
    for given in paths:
        absolute = Path(os.path.abspath(given))
        if absolute.is_dir():
            if force_exclude and matching().excluded(absolute, is_dir=True):
                continue
            _walk(absolute, matching(), found, result, cwd, {}, set())
        else:
            # Explicit files are linted even when excluded, unless --force-exclude (what
            # pre-commit needs: it passes every staged file by name). Missing or unreadable
            # files stay in the list: reading them yields an RPL000 diagnostic.
            if force_exclude and matching().excluded(absolute, is_dir=False):
                continue
            found.setdefault(absolute, SourceFile(display_name(absolute, cwd), absolute))
    result.files = sorted(found.values())
    if matcher is not None:
        result.ignore_files = matcher.ignore_files
    return result


def _walk(
    directory: Path,
    matcher: _Matcher,
    found: dict[Path, SourceFile],
    result: Discovery,
    cwd: Path,
    visited: dict[tuple[int, int], Path],
    within: set[tuple[int, int]],
) -> None:
    """Add the files under ``directory`` to ``found``. ``visited``: every directory walked
    so far (by device and inode) and the path it was walked by; ``within``: those this one
    is inside. A directory reached again through a link is walked once: a link to one of
    the directories it is inside is a loop (a warning); a link to another directory walked
    already (documentation that links one language's pages into another's) only repeats
    files linted there (a note, shown with -v)."""
    try:
        info = directory.stat()
        key = (info.st_dev, info.st_ino)
        if key in within:
            result.warnings.append(f"skipped {display_name(directory, cwd)}: symlink loop")
            return
        if key in visited:
            first = display_name(visited[key], cwd)
            result.notes.append(
                f"skipped {display_name(directory, cwd)}: the same directory as {first}"
            )
            return
        visited[key] = directory
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
        result.directories[directory] = (info.st_mtime_ns, tuple(e.name for e in entries))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        result.warnings.append(f"cannot read directory {display_name(directory, cwd)}: {reason}")
        return
    here: set[str] = set()
    candidates: list[Path] = []
    for entry in entries:
        path = directory / entry.name
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            if not matcher.excluded(path, is_dir=True):
                within.add(key)
                _walk(path, matcher, found, result, cwd, visited, within)
                within.discard(key)
            continue
        if leftover_of(entry.name) is not None:
            candidates.append(path)
            continue
        if not matcher.included(path) or matcher.excluded(path, is_dir=False):
            continue
        special = _special(entry)
        if special is not None:
            # Reading a FIFO blocks until someone writes to it; a device may never end.
            result.notes.append(
                f"skipped {display_name(path, cwd)}: not a regular file ({special})"
            )
            continue
        here.add(entry.name)
        found.setdefault(path, SourceFile(display_name(path, cwd), path))
    for path in candidates:
        owner = leftover_of(path.name)
        if owner is not None and owner[0] in here:
            result.leftovers.append(path)


def leftovers_next_to(files: Sequence[SourceFile]) -> list[Path]:
    """Our temporary files next to ``files`` (their directories listed once each)."""
    names: dict[Path, set[str]] = {}
    for file in files:
        names.setdefault(file.path.parent, set()).add(file.path.name)
    found = []
    for directory, here in sorted(names.items()):
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            owner = leftover_of(entry.name)
            if owner is not None and owner[0] in here:
                found.append(directory / entry.name)
    return sorted(found)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _special(entry: os.DirEntry[str]) -> str | None:
    """What kind of special file the entry is (following a symlink), None for a regular
    file and for a broken symlink (reading that one gives its RPL000)."""
    try:
        mode = entry.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a file")


def real_path(path: Path) -> Path:
    """The path with symlinks resolved; unlike ``Path.resolve()`` on Python 3.11, a symlink
    loop does not raise (the looping part is kept as it is)."""
    return Path(os.path.realpath(path))


@functools.lru_cache(maxsize=4096)
def _is_package_dir(directory: Path) -> bool:
    return (directory / "__init__.py").is_file() or (directory / "__init__.pyi").is_file()


def module_name(path: Path) -> tuple[str, bool]:
    """Dotted module name of ``path`` (walking up through packages) and whether it is one."""
    is_package = path.stem == "__init__"
    parts: list[str] = [] if is_package else [path.stem]
    directory = path.parent
    while _is_package_dir(directory) and directory.name:
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts), is_package
