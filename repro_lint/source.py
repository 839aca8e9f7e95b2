"""The read stage: a file's bytes decoded to text (PEP 263), or the RPL000 that says why not."""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

from repro_lint.diagnostics import Diagnostic, FileResult, Location
from repro_lint.rules.syntax_error import SyntaxError as SyntaxErrorRule


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


def read_source(path: Path) -> DecodedSource:
    try:
        data = path.read_bytes()
    except IsADirectoryError as exc:
        raise SourceError("cannot read file: it is a directory") from exc
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if not path.exists() and path.is_symlink():
            reason = "broken symbolic link"
        raise SourceError(f"cannot read file: {reason}") from exc
    return decode(data)


def error_result(filename: str, error: SourceError, source: str | None = None) -> FileResult:
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


__all__ = ["DecodedSource", "SourceError", "decode", "error_result", "read_source"]
