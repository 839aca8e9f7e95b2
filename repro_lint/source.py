"""The read stage: a file's bytes decoded to text (PEP 263), or the RPL000 that says why not."""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import stat
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from repro_lint.diagnostics import Diagnostic, FileResult, Location


@dataclass(frozen=True, slots=True)
class DecodedSource:
    """A file's text and what is needed to write it back byte-faithfully."""

    text: str
    encoding: str
    bom: bool

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


class SourceError(Exception):
    """A file that cannot be read or decoded; becomes an RPL000 diagnostic."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.row = row
        self.column = column


def decode(data: bytes) -> DecodedSource:
    """Decode per PEP 263 (BOM, coding cookie, else UTF-8), keeping line endings as they are."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode file: {exc.msg}", exc.lineno or 1) from exc
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    codec = "utf-8" if encoding == "utf-8-sig" else encoding
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        row = body.count(b"\n", 0, exc.start) + 1
        line_start = body.rfind(b"\n", 0, exc.start) + 1
        raise SourceError(
            f"cannot decode file as {codec}: {exc.reason} at byte {exc.start}",
            row,
            exc.start - line_start + 1,
        ) from exc
    return DecodedSource(text, codec, bom)


# Not on every platform: where missing, opening cannot block anyway (no FIFOs).
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
# A file's (mtime in ns, size) when it was read: what the caches compare it with later.
Stamp = tuple[int, int]

# Within ``one_look``, each path's status as first taken. A check answered from its run record
# asks about the same thousands of files several times (which changed, then which of them the
# project pass loaded or read), and a run answers for the files as they were when it first
# looked at them.
_looked: dict[str, os.stat_result | None] | None = None


@contextlib.contextmanager
def one_look() -> Iterator[None]:
    """Within this block, ``status``, ``stamp`` and ``mtime`` stat each path once. For a run
    that writes no file: what it reads is read afresh (``read_bytes``), and stamps taken early
    are older than any content they stand for, so a later run compares again, never less."""
    global _looked
    outer = _looked
    if outer is None:
        _looked = {}
    try:
        yield
    finally:
        _looked = outer


def status(path: str) -> os.stat_result | None:
    """``os.stat(path)``, or None when it fails (within ``one_look``: its first answer)."""
    looked = _looked
    if looked is not None and path in looked:
        return looked[path]
    try:
        info: os.stat_result | None = os.stat(path)
    except OSError:
        info = None
    if looked is not None:
        looked[path] = info
    return info


def stamp(path: str) -> Stamp:
    """A path's (mtime in ns, size); (-1, -1) when it cannot be looked at."""
    info = status(path)
    return (-1, -1) if info is None else (info.st_mtime_ns, info.st_size)


def mtime(path: str) -> int:
    """A path's mtime in ns; -1 when it cannot be looked at."""
    info = status(path)
    return -1 if info is None else info.st_mtime_ns


def too_large(size: int, limit: int) -> SourceError:
    """The RPL000 of a file above ``max-file-size``."""
    return SourceError(
        f"too large ({_megabytes(size)}, the limit is {_megabytes(limit)}), skipped "
        "(raise `max-file-size` to lint it)"
    )


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def read_bytes(path: Path, limit: int | None = None) -> tuple[bytes, Stamp]:
    """A regular file's bytes and its stamp, taken from the same open file before reading.

    Never blocks: a FIFO, socket or device (also behind a symlink) is refused before it is
    read, and it is opened non-blocking in case one replaced the file meanwhile. A file of
    more than ``limit`` bytes is refused unread."""
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError("cannot read file: it is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise SourceError("cannot read file: not a regular file")
        if limit is not None and info.st_size > limit:
            raise too_large(info.st_size, limit)
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if not path.exists() and path.is_symlink():
            reason = "broken symbolic link"
        raise SourceError(f"cannot read file: {reason}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SourceError("cannot read file: not a regular file")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise SourceError(f"cannot read file: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
    if limit is not None and len(data) > limit:
        raise too_large(len(data), limit)
    return data, (info.st_mtime_ns, info.st_size)


def read_source(path: Path, limit: int | None = None) -> DecodedSource:
    """A file's decoded text (see :func:`read_bytes`)."""
    return decode(read_bytes(path, limit)[0])


def read_small(path: Path, limit: int = 1_000_000) -> bytes | None:
    """The bytes of a small regular file a setting is read from (a .gitignore, a requirements
    file); None for anything else, without blocking on a special file."""
    try:
        return read_bytes(path, limit)[0]
    except SourceError:
        return None


# How the RPL000 of a file the analysis failed on begins (see ``internal_error``).
INTERNAL_ERROR = "internal error in repro-lint"


def internal_error(exc: Exception, row: int = 1) -> SourceError:
    """The RPL000 of a file that a rule or the analysis failed on: the exception, and the
    innermost place in repro-lint's code it came from (relative to the package, so a report
    names no machine path). The file is then left unanalysed, and the run goes on."""
    import traceback

    package = Path(__file__).resolve().parent
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        try:
            relative = Path(frame.filename).resolve().relative_to(package)
        except ValueError:
            continue
        where = f" at {package.name}/{relative.as_posix()}:{frame.lineno} in {frame.name}"
        break
    lines = str(exc).splitlines()
    message = f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__
    return SourceError(
        f"{INTERNAL_ERROR} ({message}{where}); this file was not analysed. Please report it "
        "with `repro-lint --version` and the smallest code that shows it",
        row,
        1,
    )


def is_internal_error(diagnostic: Diagnostic) -> bool:
    """Whether a finding is the RPL000 of a file the analysis failed on."""
    return diagnostic.code == "RPL000" and diagnostic.message.startswith(INTERNAL_ERROR)


def error_result(filename: str, error: SourceError, source: str | None = None) -> FileResult:
    """The RPL000 result of a file that cannot be read, decoded or parsed."""
    # Imported here: reading stays free of the rules (and of libcst, which they import).
    from repro_lint.rules.syntax_error import SyntaxError as SyntaxErrorRule

    rule = SyntaxErrorRule
    location = Location(error.row, error.column)
    diagnostic = Diagnostic(
        code=rule.CODE,
        name=rule.name,
        message=error.message,
        filename=filename,
        location=location,
        end_location=location,
        noqa_row=None,
        url=rule.url(),
    )
    return FileResult(filename, (diagnostic,), source=source)


__all__ = [
    "DecodedSource",
    "SourceError",
    "Stamp",
    "decode",
    "error_result",
    "internal_error",
    "is_internal_error",
    "mtime",
    "one_look",
    "read_bytes",
    "read_small",
    "read_source",
    "stamp",
    "status",
    "too_large",
]
