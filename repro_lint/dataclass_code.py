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
The entries are kept in groups, by the top-level package of the class (``Store``), each read
when the process first needs it.

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
from typing import Any, TypeVar

# Entries a group keeps when it is rewritten; above this, only those the process used are
# kept (the group then forgets the classes of versions no longer installed).
LIMIT = 4096

_Value = TypeVar("_Value")


def _header() -> bytes:
    # (v3: the entries in groups, each group marshalled on its own and read when needed.)
    return f"repro-lint dataclass code v3 {sys.hexversion:x} O{sys.flags.optimize}\n".encode()


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
    """The file's groups, each still marshalled (read when first needed)."""
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
    return _unmarshalled(data[len(header) :], bytes)


def _unmarshalled(data: bytes, kind: type[_Value]) -> dict[str, _Value]:
    """The table marshalled in ``data``: its values of type ``kind``, by string key (none if
    ``data`` is not such a table). The file's groups, and each group's entries (source to
    code), are such tables."""
    try:
        table = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {
        key: value
        for key, value in table.items()
        if isinstance(key, str) and isinstance(value, kind)
    }


class Store:
    """The stored code of one file, what this process used of it, and what it compiled.

    Entries are kept in groups, one per top-level package whose dataclasses they are made for
    (and one for ``cst_nodes``' constructors); a group is read as a whole when the process
    first looks something up in it. A check's start makes only this package's few
    dataclasses, and reading all 1,200-odd entries at once took it 6 ms; read one by one, a
    run that imports libcst took 3 ms longer (one table shares its strings)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._groups = _load(path)
        # The entries of the groups read so far, by group, and all of them by source.
        self._tables: dict[str, dict[str, CodeType]] = {}
        self.stored: dict[str, CodeType] = {}
        self.used: set[str] = set()
        # What this process compiled, and the group each belongs to.
        self.compiled: dict[str, CodeType] = {}
        self._compiled_in: dict[str, str] = {}

    @property
    def groups(self) -> list[str]:
        """The groups the file holds."""
        return sorted(self._groups)

    def entries(self) -> set[str]:
        """The sources the file holds (every group read)."""
        for group in self._groups:
            self._read(group)
        return set(self.stored)

    def _read(self, group: str) -> None:
        if group in self._tables:
            return
        table = _unmarshalled(self._groups.get(group, b""), CodeType)
        self._tables[group] = table
        self.stored.update(table)

    def code(self, source: str, group: str = "") -> CodeType:
        found = self.compiled.get(source)
        if found is not None:
            return found
        self._read(group)
        found = self.stored.get(source)
        if found is not None:
            self.used.add(source)
            return found
        # As ``exec`` compiles a string in ``dataclasses``: that module imports no
        # ``__future__`` feature, and this one's must not be inherited.
        found = compile(source, "<string>", "exec", dont_inherit=True)
        self.compiled[source] = found
        self._compiled_in[source] = group
        return found

    def save(self) -> bool:
        """Add what was compiled to the file; whether it was written."""
        if not self.compiled or sys.dont_write_bytecode:
            return False
        groups = dict(self._groups)
        tables = {}
        for group in sorted(set(self._compiled_in.values())):
            table = dict(self._tables.get(group, {}))
            table.update(
                (source, code)
                for source, code in self.compiled.items()
                if self._compiled_in[source] == group
            )
            if len(table) > LIMIT:
                table = {
                    source: code
                    for source, code in table.items()
                    if source in self.used or source in self.compiled
                }
            tables[group] = table
            groups[group] = marshal.dumps(table)
        directory = os.path.dirname(self.path)
        # (A name no other process, nor one that died writing, can have taken.)
        temporary = f"{self.path}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        try:
            if directory:
                os.makedirs(directory, exist_ok=True)
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(_header())
                marshal.dump(groups, stream)
            os.replace(temporary, self.path)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return False
        self._groups = groups
        self._tables.update(tables)
        self.compiled, self._compiled_in = {}, {}
        self.stored = {}
        for table in self._tables.values():
            self.stored.update(table)
        return True


_installed: Store | None = None


def compiled(source: str, group: str) -> CodeType:
    """``source`` compiled as ``dataclasses`` compiles what it writes: taken from the stored
    code (in ``group``) where ``install`` has run, and added to it when it was not there."""
    if _installed is not None:
        return _installed.code(source, group)
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
            # ``dataclasses`` runs its code in the globals of the class's module.
            scope = args[0] if args else kwargs.get("globals")
            name = scope.get("__name__") if isinstance(scope, dict) else None
            group = name.partition(".")[0] if isinstance(name, str) else ""
            source = store.code(source, group)
        builtins.exec(source, *args, **kwargs)

    dataclasses.exec = exec_stored  # type: ignore[attr-defined]
    atexit.register(store.save)
    _installed = store
    return store
