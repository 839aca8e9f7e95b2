"""Compiled code of the methods that ``dataclasses`` writes, kept from one run to the next.

``@dataclass`` writes a class's ``__init__``, ``__eq__``, ``__repr__``, ``__hash__`` and the
rest as Python source and compiles it when the class is made, on every start of the process.
libcst's node classes and ours are about 300 of them, and compiling their methods is half of
what a run that parses a file spends importing (measured: libcst and the per-file pass
import in 160 ms, 80 ms with the compiled code at hand). Code compiled from the same source
text by the same interpreter is the same, so the console script (``launch.run``) keeps what
was compiled in a file next to this package's own bytecode, and the next start execs it.

How: ``dataclasses`` calls ``exec`` on the source it writes, a name it looks up among its
module's globals before the builtins, on every Python this package supports. ``install``
puts a global ``exec`` there that looks the source up in the stored code and compiles it
(as ``exec`` would: no inherited ``__future__`` flags) when it is not there; any other call
of it is ``exec`` itself. What a run compiled is added to the file when the process exits.
Each entry's code is marshalled on its own and read when it is first used: a check starts by
making only its own few dataclasses, and reading all 1,200-odd entries at once took it 6 ms.

The file is trusted as the ``.pyc`` files beside it are: it lives in this package's
``__pycache__``, is named for the exact interpreter version and optimisation level, and is
read only when it belongs to this user (or root) and only its owner may write it. It is
written atomically, and not at all where Python writes no bytecode
(``sys.dont_write_bytecode``). A file that cannot be read, or is not one of ours, is
ignored; nothing here can change what a run reports, only how soon it starts.
"""

from __future__ import annotations

import builtins
import contextlib
import marshal
import os
import sys
from types import CodeType
from typing import Any

# Entries kept when the file is rewritten; above this, only those the process used are kept
# (the file then forgets the classes of versions no longer installed).
LIMIT = 4096


def _header() -> bytes:
    # (v2: each entry's code marshalled on its own, read when it is used.)
    return f"repro-lint dataclass code v2 {sys.hexversion:x} O{sys.flags.optimize}\n".encode()


def default_path() -> str:
    """The file for this interpreter, in this package's ``__pycache__``."""
    tag = sys.implementation.cache_tag or sys.implementation.name
    name = f"dataclass-code.{tag}.{sys.hexversion:x}.opt{sys.flags.optimize}.bin"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", name)


def _trusted(descriptor: int) -> bool:
    if os.name != "posix":
        return True
    info = os.fstat(descriptor)
    return info.st_uid in (os.geteuid(), 0) and not info.st_mode & 0o022


def _load(path: str) -> dict[str, bytes]:
    try:
        with open(path, "rb") as stream:
            if not _trusted(stream.fileno()):
                return {}
            data = stream.read()
    except OSError:
        return {}
    header = _header()
    if not data.startswith(header):
        return {}
    try:
        table = marshal.loads(data[len(header) :])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {
        key: value
        for key, value in table.items()
        if isinstance(key, str) and isinstance(value, bytes)
    }


class Store:
    """The stored code of one file (each entry marshalled, read when it is first used: a
    process that makes few dataclasses reads little of the file), what this process used of
    it, and what it compiled."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.stored = _load(path)
        self.used: set[str] = set()
        self.compiled: dict[str, CodeType] = {}

    def code(self, source: str) -> CodeType:
        found = self.compiled.get(source)
        if found is not None:
            return found
        data = self.stored.get(source)
        if data is not None:
            found = _code(data)
            if found is not None:
                self.used.add(source)
                return found
        # As ``exec`` compiles a string in ``dataclasses``: that module imports no
        # ``__future__`` feature, and this one's must not be inherited.
        found = compile(source, "<string>", "exec", dont_inherit=True)
        self.compiled[source] = found
        return found

    def save(self) -> bool:
        """Add what was compiled to the file; whether it was written."""
        if not self.compiled or sys.dont_write_bytecode:
            return False
        made = {key: marshal.dumps(code) for key, code in self.compiled.items()}
        table = {**self.stored, **made}
        if len(table) > LIMIT:
            table = {key: self.stored[key] for key in self.used}
            table.update(made)
        directory = os.path.dirname(self.path)
        # (A name no other process, nor one that died writing, can have taken.)
        temporary = f"{self.path}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        try:
            if directory:
                os.makedirs(directory, exist_ok=True)
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(_header())
                marshal.dump(table, stream)
            os.replace(temporary, self.path)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return False
        self.stored, self.compiled = table, {}
        return True


def _code(data: bytes) -> CodeType | None:
    """The code marshalled in ``data``; None if it is not code."""
    try:
        code = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


_installed: Store | None = None


def compiled(source: str) -> CodeType:
    """``source`` compiled as ``dataclasses`` compiles what it writes: taken from the stored
    code where ``install`` has run (and added to it when it was not there)."""
    if _installed is not None:
        return _installed.code(source)
    return compile(source, "<string>", "exec", dont_inherit=True)


def install(path: str | None = None) -> Store:
    """Have ``dataclasses`` take its methods' code from ``path`` (``default_path()``), and
    add what it compiles to that file when the process exits. Installed once per process."""
    global _installed
    if _installed is not None:
        return _installed
    import atexit
    import dataclasses

    store = Store(path or default_path())

    def exec_stored(source: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(source, str):
            source = store.code(source)
        builtins.exec(source, *args, **kwargs)

    dataclasses.exec = exec_stored  # type: ignore[attr-defined]
    atexit.register(store.save)
    _installed = store
    return store
