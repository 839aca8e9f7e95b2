"""Jupyter notebooks: code cells joined into one module with a cell-aware position map, IPython
syntax masked, and fixed text written back into the cells (outputs and metadata untouched).

The code cells are joined in order, each after a marker comment line, so the engine sees one
module (imports in cell 1 resolve names in cell 5) and every row of it maps back to a cell and
a row in that cell. Line magics (``%time``), shell escapes (``!pip``), help (``obj?``) and the
first line of Python cell magics (``%%time``) become ``pass`` placeholders of the same number
of lines, so positions stay exact; cells run by another interpreter (``%%bash``) are left out.
In a cell that does not parse so, line magics called without their ``%`` (IPython's automagic:
``ls /data/``) become placeholders too.
A cell that still does not parse is reported as RPL000 on its own and left out, so one typo
does not hide the findings of the other cells.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro_lint.diagnostics import Diagnostic, Edit, FileResult, Fix, FixSafety, Location
from repro_lint.fixes import AppliedFix, apply_edits, fix_texts, unified_diff
from repro_lint.source import SourceError, error_result
from repro_lint.suppressions import noqa_edits, noqa_wanted

if TYPE_CHECKING:
    import ast

# Lints a text as one module: (text, filename) -> result. The caller binds the settings and
# the file's path (the engine's ``text_linter``), so notebooks never import the engine.
TextLinter = Callable[[str, str], FileResult]

NOTEBOOK_SUFFIX = ".ipynb"
# Cell magics whose body is Python run by this kernel (the magic line itself is masked).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_CELL_MAGIC = re.compile(r"\s*%%(\w*)")
# ``files = !ls`` and ``out = %timeit -o f()``: an IPython escape as the value of an assignment.
_ASSIGNED_ESCAPE = re.compile(r"\s*[\w.,\s\[\]()*]+=\s*[%!]")
_HELP = re.compile(r"\s*(?:\?{1,2}[\w.]+|[\w.\[\]()]+\?{1,2})\s*$")
# A line's first word, followed by a space or nothing (not ``ls.sort()`` nor ``cd(x)``).
_FIRST_WORD = re.compile(r"[ \t]*([A-Za-z_]\w*)(?=[ \t\r\n]|$)")
# IPython's line magics (and those of the extensions notebooks load most), which automagic
# runs without their ``%``.
AUTOMAGICS = frozenset(
    {
        "aimport", "alias", "alias_magic", "autoawait", "autocall", "automagic", "autoreload",
        "autosave", "bookmark", "cat", "cd", "clear", "colors", "conda", "config", "cp",
        "debug", "dhist", "dirs", "doctest_mode", "ed", "edit", "env", "gui", "hist",
        "history", "killbgscripts", "ldir", "less", "lf", "lk", "ll", "load", "load_ext",
        "loadpy", "logoff", "logon", "logstart", "logstate", "logstop", "ls", "lsmagic", "lx",
        "macro", "magic", "man", "matplotlib", "mkdir", "more", "mv", "notebook", "page",
        "pastebin", "pdb", "pdef", "pdoc", "pfile", "pinfo", "pinfo2", "pip", "popd",
        "pprint", "precision", "prun", "psearch", "psource", "pushd", "pwd", "pycat", "pylab",
        "qtconsole", "quickref", "recall", "rehashx", "reload_ext", "rep", "rerun", "reset",
        "reset_selective", "rm", "rmdir", "run", "save", "sc", "set_env", "store", "sx",
        "system", "tb", "tensorboard", "time", "timeit", "unalias", "unload_ext", "who",
        "who_ls", "whos", "xdel", "xmode",
    }
)  # fmt: skip


# A notebook's file also holds what its cells printed and drew (images as base64, tables,
# logs), none of which is parsed: it is read up to this many bytes, and ``max-file-size``
# applies to the code of its cells (``file_pass.lint_one`` refuses a longer joined text).
NOTEBOOK_READ_LIMIT = 64 * 1024 * 1024


def is_notebook(path: Path | str | None) -> bool:
    return path is not None and str(path).endswith(NOTEBOOK_SUFFIX)


def read_limit(path: Path | str, max_file_size: int) -> int:
    """How many bytes of the file at ``path`` are read at most, with ``max-file-size`` set
    to ``max_file_size``: that, but for a notebook (``NOTEBOOK_READ_LIMIT``)."""
    return max(max_file_size, NOTEBOOK_READ_LIMIT) if is_notebook(path) else max_file_size


def _lines(text: str) -> list[str]:
    """Lines with their endings (``\\r\\n``, ``\\r`` or ``\\n``, as the engine counts rows)."""
    return _LINE.findall(text)


def _escape(line: str, automagic: bool = False) -> bool:
    """Whether a line that starts a statement is IPython syntax rather than Python; with
    ``automagic``, a line magic called without its ``%`` too (``_automagic``)."""
    stripped = line.strip()
    return (
        stripped.startswith(("%", "!"))
        or _HELP.fullmatch(line) is not None
        or _ASSIGNED_ESCAPE.match(line) is not None
        or (automagic and _automagic(line))
    )


def _automagic(line: str) -> bool:
    """IPython's automagic (on by default): a line that starts with the name of a line magic
    runs that magic (``ls /data/``, ``pip install timm``, ``cd src``) unless a variable
    shadows the name, which only running the cell tells; IPython keeps an assignment
    (``ls = ...``, ``ls, n = ...``) as Python. Asked only of a cell that does not parse as
    Python otherwise."""
    found = _FIRST_WORD.match(line)
    if found is None or found.group(1) not in AUTOMAGICS:
        return False
    rest = line[found.end() :].strip()
    return not (rest[:1] in ("=", ",") and rest[1:2] != "=")


@dataclass
class _Scan:
    """Where a line-by-line walk through a cell is: inside a string, brackets or a
    backslash continuation (a line there cannot start a statement)."""

    string: str | None = None
    depth: int = 0
    continued: bool = False

    def at_statement_start(self) -> bool:
        return self.string is None and self.depth == 0 and not self.continued

    def feed(self, line: str) -> None:
        text = line.rstrip("\r\n")
        i, comment = 0, False
        while i < len(text):
            char = text[i]
            if self.string is not None:
                if char == "\\":
                    i += 2
                    continue
                if text.startswith(self.string, i):
                    i += len(self.string)
                    self.string = None
                    continue
                i += 1
                continue
            if char == "#":
                comment = True
                break
            if char in "\"'":
                triple = text[i : i + 3]
                self.string = triple if triple in ('"""', "'''") else char
                i += len(self.string)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            i += 1
        backslash = not comment and text.endswith("\\")
        if self.string in ('"', "'") and not backslash:
            self.string = None  # an unterminated one-line string: a syntax error anyway
        self.continued = backslash and self.string is None


def _python(source: str, placeholder: str, originals: list[str]) -> tuple[str, bool] | None:
    """The cell as Python reads it (``_mask``) and whether that parses, or None for a cell
    another interpreter runs. A cell that does not parse is masked again with IPython's
    automagic lines (``ls /data/``) as placeholders too, and taken so if it then parses:
    only where the text is not Python can such a line be told from a call or a name."""
    start = len(originals)
    masked = _mask(source, placeholder, originals)
    if masked is None or _parses(masked):
        return None if masked is None else (masked, True)
    plain = originals[start:]
    del originals[start:]
    magic = _mask(source, placeholder, originals, automagic=True)
    if magic is not None and magic != masked and _parses(magic):
        return magic, True
    del originals[start:]
    originals.extend(plain)
    return masked, False


def _mask(
    source: str, placeholder: str, originals: list[str], automagic: bool = False
) -> str | None:
    """The cell with IPython syntax replaced by placeholder lines (the originals are appended
    to ``originals``), or None for a cell another interpreter runs (``%%bash``);
    ``automagic``: also lines that call a line magic without its ``%``."""
    lines = _lines(source)
    out: list[str] = []
    scan = _Scan()
    masking_indent: str | None = None
    first_code = next((i for i, line in enumerate(lines) if line.strip()), None)
    for index, line in enumerate(lines):
        ending = line[len(line.rstrip("\r\n")) :]
        magic = _CELL_MAGIC.match(line) if index == first_code else None
        if magic is not None:
            if magic.group(1) not in PYTHON_CELL_MAGICS:
                return None
            masking_indent = ""
        elif masking_indent is None and scan.at_statement_start() and _escape(line, automagic):
            masking_indent = line[: len(line) - len(line.lstrip())]
        if masking_indent is not None:
            out.append(f"{masking_indent}pass  # {placeholder}:{len(originals)}{ending}")
            originals.append(line)
            # A trailing backslash continues the escape on the next line.
            if not line.rstrip("\r\n").endswith("\\"):
                masking_indent = None
            continue
        scan.feed(line)
        out.append(line)
    return "".join(out)


def _parses(text: str) -> bool:
    import ast

    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@dataclass(frozen=True)
class _Cell:
    """A code cell that is part of the joined module."""

    number: int  # 1-based position among all cells of the notebook
    source: str  # as stored
    first_row: int  # row of its first line in the joined module
    rows: int  # how many lines it has there


@dataclass(frozen=True)
class Notebook:
    """A parsed notebook and the module its code cells make."""

    document: dict[str, Any]
    text: str  # the joined module
    cells: tuple[_Cell, ...]
    # Code cells left out because they do not parse: (number, masked source).
    broken: tuple[tuple[int, str], ...]
    # Every cell's source by number - 1 (empty for cells that are not code): code frames.
    sources: tuple[str, ...]
    token: str
    originals: tuple[str, ...]
    # Joined row -> (cell number, row in the cell); row 0 marks a cell's marker line.
    owners: tuple[tuple[int, int], ...] = field(repr=False)
    indent: int | None = None
    final_newline: bool = True

    @classmethod
    def parse(cls, data: bytes) -> Notebook:
        """Read a notebook file's bytes; a SourceError for anything that is not one."""
        try:
            raw = data.decode("utf-8-sig")
            document = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SourceError(f"cannot read notebook: not valid JSON: {exc}") from exc
        except RecursionError as exc:
            raise SourceError("cannot read notebook: JSON nested too deeply") from exc
        if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
            raise SourceError("cannot read notebook: no list of cells")
        for number, cell in enumerate(document["cells"], 1):
            if not isinstance(cell, dict) or not isinstance(cell.get("cell_type", ""), str):
                raise SourceError(f"cannot read notebook: cell {number} is not a cell")
            source = cell.get("source", "")
            if not isinstance(source, str) and not (
                isinstance(source, list) and all(isinstance(part, str) for part in source)
            ):
                raise SourceError(f"cannot read notebook: cell {number}'s source is not text")
        sources = [_source(cell) for cell in document["cells"]]
        token = _token(sources)
        originals: list[str] = []
        parts: list[str] = []
        owners: list[tuple[int, int]] = [(0, 0)]  # rows are 1-based
        cells: list[_Cell] = []
        broken: list[tuple[int, str]] = []
        code = _is_python(document)
        for number, (cell, source) in enumerate(zip(document["cells"], sources, strict=True), 1):
            if not code or not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            python = _python(source, f"{token}:magic", originals)
            if python is None:
                continue
            masked, parses = python
            if not parses:
                broken.append((number, masked))
                continue
            if masked and not masked.endswith(("\n", "\r")):
                masked += "\n"
            lines = _lines(masked)
            parts.append(f"# {token}:cell:{number}\n")
            owners.append((number, 0))
            cells.append(_Cell(number, source, len(owners), len(lines)))
            owners.extend((number, row) for row in range(1, len(lines) + 1))
            parts.append(masked)
        return cls(
            document=document,
            text="".join(parts),
            cells=tuple(cells),
            broken=tuple(broken),
            sources=tuple(
                source if _is_code(c) else ""
                for c, source in zip(document["cells"], sources, strict=True)
            ),
            token=token,
            originals=tuple(originals),
            owners=tuple(owners),
            indent=_indent(raw),
            final_newline=raw.endswith("\n"),
        )

    # -- positions ----------------------------------------------------------------------------

    def _cell(self, number: int) -> _Cell:
        return next(cell for cell in self.cells if cell.number == number)

    def locate(self, location: Location) -> tuple[int, Location]:
        """The cell number and the position in that cell of a position in the joined module.
        A marker row (an insertion between two cells) belongs to the end of the cell before."""
        if not self.cells:
            return 1, location
        if location.row >= len(self.owners):
            last = self.cells[-1]
            return last.number, Location(last.rows + 1, 1)
        number, row = self.owners[location.row]
        if row > 0:
            return number, Location(row, location.column)
        index = next(i for i, cell in enumerate(self.cells) if cell.number == number)
        if index == 0:
            return number, Location(1, 1)
        before = self.cells[index - 1]
        return before.number, Location(before.rows + 1, 1)

    def to_cells(self, result: FileResult, lint: TextLinter) -> FileResult:
        """Findings of the joined module in cell coordinates, plus the broken cells' RPL000."""
        out = [self._in_cell(d) for d in result.diagnostics]
        for number, masked in self.broken:
            for d in lint(masked, result.filename).diagnostics:
                out.append(replace(d, properties=(*d.properties, ("cell", number))))
        out.sort(key=lambda d: d.sort_key)
        return FileResult(result.filename, tuple(out), cells=self.sources)

    def _in_cell(self, d: Diagnostic) -> Diagnostic:
        number, start = self.locate(d.location)
        end_number, end = self.locate(d.end_location)
        if end_number != number:
            end = Location(self._cell(number).rows + 1, 1)
        fix = d.fix
        if fix is not None:
            placed = [(self.locate(e.location), self.locate(e.end_location), e) for e in fix.edits]
            # An edit has no cell of its own in the output: a fix that also edits other cells
            # (a seed put after the imports of an earlier cell) is listed without its edits;
            # --fix applies it.
            in_cell = all(start[0] == end[0] == number for start, end, _ in placed)
            edits = (
                tuple(Edit(e.content, start[1], end[1]) for start, end, e in placed)
                if in_cell
                else ()
            )
            fix = Fix(fix.applicability, fix.message, edits)
        noqa_row = self.locate(Location(d.noqa_row, 1))[1].row if d.noqa_row else None
        if fix is not None:
            fix = Fix(fix.applicability, self.cite(fix.message, d.filename), fix.edits)
        return replace(
            d,
            message=self.cite(d.message, d.filename),
            location=start,
            end_location=end,
            fix=fix,
            noqa_row=noqa_row,
            properties=(*d.properties, ("cell", number)),
        )

    def cite(self, text: str, filename: str) -> str:
        """``text`` with its references to rows of the joined module (``nb.ipynb:46``) as the
        cells' rows (``cell 3:4``)."""
        if not text or filename + ":" not in text:
            return text

        def cell_row(match: re.Match[str]) -> str:
            number, where = self.locate(Location(int(match.group(1)), 1))
            return f"cell {number}:{where.row}"

        return re.sub(rf"{re.escape(filename)}:(\d+)\b", cell_row, text)

    # -- writing back -------------------------------------------------------------------------

    def rewritten(self, text: str) -> bytes | None:
        """The notebook file with its code cells replaced by those of ``text`` (an edited
        joined module); None when nothing changed. Raises SourceError when the edits broke
        the cell structure (a marker or placeholder went missing)."""
        document, _ = self._rebuilt(text, own_cells=False)
        return None if document is None else self._dump(document)

    def _rebuilt(
        self, text: str, *, own_cells: bool
    ) -> tuple[dict[str, Any] | None, list[tuple[str, str, str]]]:
        """The notebook document with the code cells of ``text`` (None when nothing
        changed) and what changed, each as (label, before, after): ``cell N``, or ``new
        cell above cell N`` for code that fixes put above a cell's own code, which becomes a
        cell of its own with ``own_cells`` (``_own_cell``; ``_setup_place`` says where)."""
        marker = re.compile(rf"# {re.escape(self.token)}:cell:(\d+)\r?\n?")
        magic = re.compile(rf"\s*pass  # {re.escape(self.token)}:magic:(\d+)(\r\n|\r|\n)?")
        by_cell: dict[int, list[str]] = {}
        current: list[str] | None = None
        restored = 0
        for line in _lines(text):
            found = marker.fullmatch(line)
            if found is not None:
                current = by_cell.setdefault(int(found.group(1)), [])
                continue
            placeholder = magic.fullmatch(line)
            if current is None:
                raise SourceError("fixes moved code out of the notebook's cells; not written")
            if placeholder is not None:
                current.append(self.originals[int(placeholder.group(1))])
                restored += 1
            else:
                current.append(line)
        if set(by_cell) != {cell.number for cell in self.cells}:
            raise SourceError("fixes removed a cell boundary; not written")
        masked_in_cells = len(re.findall(rf"{re.escape(self.token)}:magic:\d+", self.text))
        if restored != masked_in_cells:
            raise SourceError("fixes removed an IPython line; not written")
        document = copy.deepcopy(self.document)
        changes: list[tuple[str, str, str]] = []
        added: list[tuple[int, dict[str, Any]]] = []
        for cell in self.cells:
            new = "".join(by_cell[cell.number])
            if not cell.source.endswith(("\n", "\r")) and new.endswith("\n"):
                new = new[:-1]
            if new == cell.source:
                continue
            stored = document["cells"][cell.number - 1]
            above = _own_cell(cell.source, new) if own_cells else None
            if above is not None:
                number = _setup_place(self.document["cells"], cell.number)
                added.append((number, self._new_cell(stored, above, document, added)))
                changes.append((f"new cell above cell {number}", "", above))
                continue
            opening = _first_code_line(cell.source)
            if _CELL_MAGIC.match(opening) and _first_code_line(new) != opening:
                # IPython runs a cell magic only from the cell's first line.
                raise SourceError(
                    f"fixes put code above the cell magic of cell {cell.number}; not written"
                )
            changes.append((f"cell {cell.number}", cell.source, new))
            stored["source"] = (
                new.splitlines(keepends=True) if isinstance(stored.get("source"), list) else new
            )
        if not changes:
            return None, []
        for number, made in reversed(added):
            document["cells"].insert(number - 1, made)
        return document, changes

    @staticmethod
    def _new_cell(
        beside: dict[str, Any],
        source: str,
        document: dict[str, Any],
        added: list[tuple[int, dict[str, Any]]],
    ) -> dict[str, Any]:
        """A code cell holding ``source``, stored as ``beside`` stores its source, with an
        id where the notebook's cells have ids (nbformat 4.5): one derived from its source,
        so that fixing twice writes the same file."""
        made: dict[str, Any] = {"cell_type": "code", "execution_count": None}
        if "id" in beside:
            taken = {c.get("id") for c in document["cells"] if isinstance(c, dict)}
            taken |= {cell.get("id") for _, cell in added}
            digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
            start = 0
            while digest[start : start + 8] in taken and start + 8 < len(digest):
                start += 1
            made["id"] = digest[start : start + 8]
        made["metadata"] = {}
        made["outputs"] = []
        made["source"] = (
            source.splitlines(keepends=True) if isinstance(beside.get("source"), list) else source
        )
        return made

    def _dump(self, document: dict[str, Any]) -> bytes:
        text = json.dumps(document, indent=self.indent, ensure_ascii=False)
        return (text + ("\n" if self.final_newline else "")).encode("utf-8")


def _first_code_line(source: str) -> str:
    """The first line of a cell's source that is not blank (empty when there is none)."""
    return next((line for line in _lines(source) if line.strip()), "").rstrip("\r\n")


def _own_cell(source: str, new: str) -> str | None:
    """The code fixes added to a cell, when it should be a cell of its own above it: ``new``
    is ``source`` with whole lines inserted, all of them above the cell's first statement
    that is not an import; together they parse and seed a generator (the seeds a program
    lacks go after its imports, before the first statement that does anything, which in a
    notebook opens a cell that does something else: playing audio, showing a filterbank),
    with the settings and imports fixed with them; and they use no name that the cell's own
    imports bind (those run after them once they are moved). Settings put before a cell's
    own seed stay in that cell. Blank lines around the new cell's code go."""
    import ast
    import difflib

    # The cell with its IPython lines as placeholders (as many lines): what Python reads.
    python = _python(source, "magic", [])
    opening = None if python is None else _opening(python[0])
    if opening is None:
        return None
    header, own_imports = opening
    old_lines, new_lines = _lines(source), _lines(new)
    added: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, _, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag != "insert" or i1 > header:
            return None
        added.extend(new_lines[j1:j2])
    text = "".join(added)
    if not text.strip():
        return None
    if not text.endswith(("\n", "\r")):
        text += "\n"
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not any(_seeds(node) for node in tree.body):
        return None
    bound = {
        (alias.asname or alias.name).split(".", 1)[0]
        for node in own_imports
        for alias in node.names
    }
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    if used & bound:
        return None
    # Lines added apart (imports on top of the cell, code below its own imports) meet here:
    # a blank line still closes the import block.
    lines = _lines(text)
    imports = 0
    while imports < len(tree.body) and isinstance(tree.body[imports], ast.Import | ast.ImportFrom):
        imports += 1
    if 0 < imports < len(tree.body):
        end = tree.body[imports - 1].end_lineno or 0
        if lines[end].strip():
            lines.insert(end, _newline(lines[end - 1]))
    return "".join(lines).strip("\r\n")


# A shell or magic line that installs packages (a set-up cell must run after it) or runs
# Python (``%run``); and a note that asks to restart the kernel (which loses a cell's state).
_INSTALLS = re.compile(
    r"\b(?:pip3?|conda|mamba|micromamba|apt|apt-get|uv)\b[^\r\n]*\binstall\b|^\s*%run\b",
    re.IGNORECASE | re.MULTILINE,
)
_RESTART = re.compile(r"\brestart", re.IGNORECASE)


def _setup_place(cells: list[Any], number: int) -> int:
    """Where a set-up cell for cell ``number`` goes (the number of the cell it goes above):
    above that cell and above the cells right before it that hold no Python and install
    nothing, the markdown that introduces it and shell lines such as a download (it would
    split that text from its code), but below a cell that installs packages or runs Python,
    and below a note that asks to restart the kernel."""
    while number > 1:
        cell = cells[number - 2]
        source = _source(cell)
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        if kind == "code":
            # Python lines: those of the masked cell that are code, less the placeholders
            # of its IPython lines (a cell another interpreter runs, ``%%bash``, has none).
            masked_lines: list[str] = []
            python = _python(source, "setup", masked_lines)
            code = 0 if python is None else sum(_is_code_line(line) for line in _lines(python[0]))
            if code > len(masked_lines) or _INSTALLS.search(source):
                break
        elif kind not in ("markdown", "raw") or _RESTART.search(source):
            break
        number -= 1
    return number


def _is_code_line(line: str) -> bool:
    """Whether a line holds code (not blank, not only a comment)."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _newline(line: str) -> str:
    """The line break ``line`` ends with (a newline when none)."""
    return line[len(line.rstrip("\r\n")) :] or "\n"


# The calls that seed a generator (``torch.manual_seed``, ``np.random.seed``, ``random.seed``,
# Lightning's ``seed_everything``, ``transformers.set_seed``), by their last name.
_SEEDING = frozenset({"manual_seed", "seed", "seed_everything", "set_seed"})


def _seeds(node: Any) -> bool:
    """Whether a top-level statement is a call of a seeding function."""
    import ast

    if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
        return False
    func = node.value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in _SEEDING


def _opening(source: str) -> tuple[int, list[ast.Import | ast.ImportFrom]] | None:
    """How many lines open a cell (IPython masked) before its first statement that is not an
    import (its imports, with the blank lines and comments among them), and those imports;
    None when it does not parse."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = _lines(source)
    imports: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            # Comments right above the statement describe it: they stay with it.
            row = node.lineno - 1
            while row > 0 and lines[row - 1].lstrip().startswith("#"):
                row -= 1
            return row, imports
        imports.append(node)
    return len(lines), imports


def _source(cell: Any) -> str:
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return source if isinstance(source, str) else ""


def _is_code(cell: Any) -> bool:
    return isinstance(cell, dict) and cell.get("cell_type") == "code"


def _is_python(document: Mapping[str, Any]) -> bool:
    """Whether the notebook's kernel runs Python (no language recorded counts as Python)."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for key, sub in (("language_info", "name"), ("kernelspec", "language")):
        table = metadata.get(key)
        if isinstance(table, dict) and isinstance(table.get(sub), str):
            return str(table[sub]).lower() == "python"
    return True


def _token(sources: list[str]) -> str:
    """A marker text that occurs in no cell."""
    number = 0
    while any(f"repro-lint-{number}" in source for source in sources):
        number += 1
    return f"repro-lint-{number}"


def _indent(raw: str) -> int | None:
    """The JSON indentation the file was written with (nbformat writes 1)."""
    match = re.match(r"\s*\{\r?\n( +)\"", raw)
    return len(match.group(1)) if match else None


# -- what the CLI and the engine call -----------------------------------------------------------


def lint(data: bytes, filename: str, lint_text: TextLinter) -> FileResult:
    """Lint a notebook file's bytes; findings carry a ``cell`` property and cell rows."""
    try:
        notebook = Notebook.parse(data)
    except SourceError as error:
        return error_result(filename, error)
    joined = lint_text(notebook.text, filename)
    return notebook.to_cells(joined, lint_text)


@dataclass
class NotebookFix:
    """What fixing did to one notebook."""

    data: bytes | None  # the new file, None when nothing changed
    result: FileResult  # what remains, in cell coordinates
    fixed: Counter[str]
    diff: str
    # The fixes applied, in order; each finding in cell coordinates (those a fix created
    # are placed in the cells of the notebook as it was).
    applied: list[AppliedFix] = field(default_factory=list)


def fix(
    data: bytes, filename: str, lint_text: TextLinter, safeties: frozenset[FixSafety]
) -> NotebookFix:
    """Apply fixes to the cells until nothing changes; raises SourceError when the notebook
    cannot be read or the fixed text cannot be put back into its cells."""
    notebook = Notebook.parse(data)

    def relint(texts: Mapping[str, str]) -> dict[str, FileResult]:
        return {name: lint_text(text, name) for name, text in texts.items()}

    first = lint_text(notebook.text, filename)
    outcome = fix_texts({filename: notebook.text}, {filename: first}, relint, safeties)[filename]
    document, changes = (
        notebook._rebuilt(outcome.text, own_cells=True) if outcome.changed else (None, [])
    )
    if document is None:
        return NotebookFix(None, notebook.to_cells(outcome.result, lint_text), Counter(), "")
    new = notebook._dump(document)
    after = Notebook.parse(new)
    diff = "".join(
        unified_diff(f"{filename}:{label}", before, changed) for label, before, changed in changes
    )
    result = after.to_cells(lint_text(after.text, filename), lint_text)
    applied = [replace(a, diagnostic=notebook._in_cell(a.diagnostic)) for a in outcome.applied]
    return NotebookFix(new, result, outcome.fixed, diff, applied)


def add_noqa(
    data: bytes, filename: str, lint_text: TextLinter
) -> tuple[bytes | None, int, list[tuple[int, int]]]:
    """The notebook with ``# noqa`` added for every finding; how many comments were added or
    extended; and the (cell, row) of findings no comment could be put on."""
    notebook = Notebook.parse(data)
    joined = lint_text(notebook.text, filename)
    edits, skipped = noqa_edits(notebook.text, noqa_wanted(joined.diagnostics))
    places = []
    for row in skipped:
        number, location = notebook.locate(Location(row, 1))
        places.append((number, location.row))
    if not edits:
        return None, 0, places
    return notebook.rewritten(apply_edits(notebook.text, edits)), len(edits), places
