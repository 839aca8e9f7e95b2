"""Questions asked of a project's text: which files name a word, and whether a name is used
anywhere but where it is defined (``TextQuestion``). The program model asks them when it
follows a name across files (``Program``); a later run answers them again from the files that
changed (``answer_changed``) to tell whether an earlier project pass still holds. Nothing here
parses code: a run after an edit checks those answers without importing libcst."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro_lint.files import DEFAULT_EXCLUDES
from repro_lint.source import Stamp

# A question asked of the project's text: (kind, project root or "" for a text without a
# path, word, answer, evidence); kind is "mentioning" (the files naming the word, sorted;
# None when too many or unreadable) or "unreferenced" (whether it is named only where it is
# defined). ``evidence`` backs a negative answer read from a tree: for "too many" files
# naming the word, the first ``_MAX_MENTIONING + 1`` of them; for "not unreferenced", a
# file naming it elsewhere than where it is defined. While those files are unchanged, the
# answer stands whatever other files do. None otherwise.
TextQuestion = tuple[str, str, str, Any, list[str] | None]


# Reading a project's text to find a name's users is worth it up to this size; and a name
# found in more files than this is too common to follow (each may need parsing).
_MAX_TREE_FILES = 5000
_MAX_TREE_BYTES = 64 * 1024 * 1024
_MAX_MENTIONING = 24


# Up to this many bytes, a tree's files are held once read; a larger tree is only listed,
# and its files are read for each question (a cold run of a 60 MB project asks about ten,
# 0.07 s each, and would otherwise hold all of its text until the end).
_HELD_TREE_BYTES = 16 * 1024 * 1024


class Tree:
    """The Python files under a project root, in a fixed order, and their bytes: what names
    used across files are looked up in. The stamps of the files when listed or first read
    are what a record of the answers keeps (``read``): a file read later and found changed
    since has another stamp, so an answer it gave is asked again by the next run."""

    def __init__(self, paths: list[Path], held: list[bytes] | None) -> None:
        self._paths = paths
        self._held = held

    @property
    def paths(self) -> Sequence[Path]:
        """The files, in the tree's order (those held: the ones that could be read)."""
        return self._paths

    def __iter__(self) -> Iterator[tuple[Path, bytes]]:
        if self._held is not None:
            yield from zip(self._paths, self._held, strict=True)
            return
        for path in self._paths:
            found = _read_regular(path)
            if found is not None:
                yield path, found[0]


@dataclass
class TextAnswers:
    """What an earlier pass asked of the project's text, answered as the text is now
    (``answer_changed``), by (kind, root, word); and the stamps of the files they were
    worked out for (every file of the trees it read)."""

    answers: dict[tuple[str, str, str], TextQuestion]
    stamps: dict[str, Stamp]


def read_tree(
    root: Path, probed: set[str] | None = None, read: dict[str, Stamp] | None = None
) -> Tree | None:
    """The Python files under ``root`` and their bytes, in a fixed order, or None when the
    tree holds more than ``_MAX_TREE_FILES`` files or ``_MAX_TREE_BYTES`` bytes. ``probed``
    receives the directories walked, ``read`` the files listed with their stamps."""
    listed: list[Path] = []
    stamps: dict[str, Stamp] = read if read is not None else {}
    size = 0
    for folder, names, filenames in os.walk(root):
        names[:] = sorted(name for name in names if _walks_into(folder, name))
        if probed is not None:
            probed.add(folder)
        for filename in sorted(filenames):
            if not filename.endswith(".py"):
                continue
            path = Path(folder, filename)
            stamp = _regular_stamp(path)
            if stamp is None:
                continue
            stamps[str(path)] = stamp
            size += stamp[1]
            if len(listed) >= _MAX_TREE_FILES or size > _MAX_TREE_BYTES:
                return None
            listed.append(path)
    if size > _HELD_TREE_BYTES:
        return Tree(listed, None)
    paths, held = [], []
    for path in listed:
        found = _read_regular(path)
        if found is None:
            stamps.pop(str(path), None)
            continue
        paths.append(path)
        held.append(found[0])
        stamps[str(path)] = found[1]
    return Tree(paths, held)


def _walks_into(folder: str, name: str) -> bool:
    """Whether ``read_tree``'s walk keeps the directory ``name`` of ``folder``: not a hidden
    or excluded one, nor a virtual environment. (A symbolic link it keeps is still not
    entered, as ``os.walk`` follows none: ``_in_tree`` checks for those.)"""
    return (
        not name.startswith(".")
        and name not in DEFAULT_EXCLUDES
        and not os.path.isfile(os.path.join(folder, name, "pyvenv.cfg"))
    )


def _in_tree(root: str, path: str) -> bool:
    """Whether the file at ``path``, under ``root``, is one of the files of
    ``read_tree(root)``: its walk enters every directory between the two."""
    folder = root
    for name in Path(os.path.relpath(os.path.dirname(path), root)).parts:
        if not _walks_into(folder, name):
            return False
        folder = os.path.join(folder, name)
        if os.path.islink(folder):
            return False
    return True


def _regular_stamp(path: Path) -> Stamp | None:
    """A regular file's stamp (None when it is not one, is too large or is gone)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_TREE_BYTES:
        return None
    return (info.st_mtime_ns, info.st_size)


def naming_files(tree: Tree, word: str) -> list[tuple[Path, int]]:
    """The files of ``tree`` whose bytes name ``word`` as a whole identifier, with their
    sizes."""
    pattern = _word(word)
    text = word.encode()
    return [(path, len(data)) for path, data in tree if text in data and pattern.search(data)]


def named_elsewhere(tree: Tree, name: str) -> Path | None:
    """The first file of ``tree`` that names ``name`` other than in ``def name`` statements;
    None when none does."""
    for path, data in tree:
        if _names_elsewhere(data, name):
            return path
    return None


def _names_elsewhere(data: bytes, name: str) -> bool:
    """Whether a file's bytes name ``name`` other than in ``def name`` statements."""
    if name.encode() not in data:
        return False
    defined = re.compile(rb"\bdef\s+" + re.escape(name.encode()) + rb"\b")
    return len(_word(name).findall(data)) != len(defined.findall(data))


def mentioning(root: str, word: str, naming: list[tuple[Path, int]] | None) -> TextQuestion:
    """The question which files name ``word``, answered from ``naming`` (the files of the
    tree naming it; None without a tree): the paths, sorted; None when there are too many
    (backed by the first ``_MAX_MENTIONING + 1`` of them) or no tree."""
    if naming is None:
        return ("mentioning", root, word, None, None)
    if len(naming) <= _MAX_MENTIONING:
        return ("mentioning", root, word, sorted(str(path) for path, _ in naming), None)
    return ("mentioning", root, word, None, [str(p) for p, _ in naming[: _MAX_MENTIONING + 1]])


def unreferenced(root: str, word: str, tree: Tree | None) -> TextQuestion:
    """The question whether ``word`` is named only where it is defined, answered from
    ``tree`` (None: no tree, or too large): "no" is backed by a file naming it elsewhere."""
    elsewhere = named_elsewhere(tree, word) if tree is not None and word else None
    answer = tree is not None and bool(word) and elsewhere is None
    return ("unreferenced", root, word, answer, None if elsewhere is None else [str(elsewhere)])


def ask_tree(kind: str, root: str, tree: Tree | None, word: str) -> TextQuestion:
    """A question of ``kind`` about ``word`` (see ``TextQuestion``) asked of ``tree`` (None:
    no tree, or too large), with its answer and evidence."""
    if kind == "mentioning":
        return mentioning(root, word, naming_files(tree, word) if tree is not None else None)
    return unreferenced(root, word, tree)


def answer_again(
    asked: Sequence[TextQuestion], read: dict[str, Stamp] | None = None
) -> list[TextQuestion]:
    """The questions a program asked (``Program.asked``) asked again of the project's text
    as it is now, with the answers and evidence it gives; each tree read afresh once (its
    files noted in ``read``)."""
    trees: dict[str, Tree | None] = {}
    for _, root, _, _, _ in asked:
        if root and root not in trees:
            trees[root] = read_tree(Path(root), None, read)
    return [ask_tree(kind, root, trees.get(root), word) for kind, root, word, _, _ in asked]


def answer_changed(
    asked: Sequence[TextQuestion], texts: Mapping[str, Stamp], changed: Collection[str]
) -> list[TextQuestion] | None:
    """The questions a program asked with the answers the project's text gives now, worked
    out from the answers it gave and the files of ``changed`` alone (the evidence is brought
    up to date with them: only files that show the answer now); None when they cannot be.

    This holds when every tree has the same files as when they were asked (the directories
    walked are unchanged) and only the files of ``changed`` have another stamp now
    (``texts``: every file's stamp now). The files naming a word are then those named before
    that did not change, and those that changed and name it now; a word named only where it
    is defined still is if no changed file names it elsewhere; one named elsewhere still is
    while the file that did so (the question's evidence) does or a changed file does, and
    one named in too many files still is while enough of them are unchanged or name it now.
    A question that cannot be answered so (a tree too large, evidence that changed and no
    longer shows it, a changed file that cannot be read) makes the trees be read again
    (``answer_again``). Where one root holds another, a changed file under both is one of
    the outer tree's files only where that tree's walk reaches it (``_in_tree``)."""
    roots = sorted({root for _, root, _, _, _ in asked if root})
    contents: dict[str, bytes] = {}
    for path in changed:
        found = _read_regular(Path(path))
        if found is None or found[1] != texts.get(path):
            return None
        contents[path] = found[0]
    within: dict[str, dict[str, bytes]] = {}
    for root in roots:
        prefix = os.path.join(root, "")
        # (Where roots nest, the files of an inner tree count for the outer one too: more
        # than its own, so a tree near the limit is read again rather than worked out.)
        if sum(stamp[1] for path, stamp in texts.items() if path.startswith(prefix)) > (
            _MAX_TREE_BYTES
        ):
            return None
        nested = any(other.startswith(prefix) for other in roots)
        within[root] = {
            p: data
            for p, data in contents.items()
            if p.startswith(prefix) and (not nested or _in_tree(root, p))
        }
    fresh: list[TextQuestion] = []
    for kind, root, word, known, evidence in asked:
        if not root:
            fresh.append(ask_tree(kind, "", None, word))
            continue
        mine = within[root]
        kept = [path for path in evidence or () if path not in mine]
        if kind == "mentioning":
            text, pattern = word.encode(), _word(word)
            now = [p for p, data in mine.items() if text in data and pattern.search(data)]
            if known is not None:
                named = [path for path in known if path not in mine] + now
            elif evidence is not None and len(kept) + len(now) > _MAX_MENTIONING:
                named = kept + now
            else:
                return None
            if len(named) <= _MAX_MENTIONING:
                fresh.append((kind, root, word, sorted(named), None))
            else:
                fresh.append((kind, root, word, None, named[: _MAX_MENTIONING + 1]))
        else:
            elsewhere = [p for p, data in mine.items() if _names_elsewhere(data, word)]
            if known is True or (evidence is not None and (kept or elsewhere)):
                shown = (kept or elsewhere)[:1]
                fresh.append((kind, root, word, not shown, shown or None))
            else:
                return None
    return fresh


def _read_regular(path: Path) -> tuple[bytes, Stamp] | None:
    """A regular file's bytes and stamp, opened without blocking (a FIFO is refused, not
    waited for); None when it is not one, is too large or cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_TREE_BYTES:
            return None
        # (a directory opens too, but cannot be wrapped in a file object: checked first)
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    return data, (info.st_mtime_ns, info.st_size)


def _word(name: str) -> re.Pattern[bytes]:
    """``name`` as a whole identifier in source bytes."""
    return re.compile(rb"(?<![\w])" + re.escape(name.encode()) + rb"(?![\w])")


__all__ = [
    "TextAnswers",
    "TextQuestion",
    "Tree",
    "answer_again",
    "answer_changed",
    "ask_tree",
    "mentioning",
    "named_elsewhere",
    "naming_files",
    "read_tree",
    "unreferenced",
]
