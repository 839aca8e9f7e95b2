"""Questions asked of the project's text (which files name a helper; whether a function is
named only where it is defined), answered again after an edit from the edited files alone:
always what reading the whole tree again answers."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from repro_lint.program import (
    TextQuestion,
    answer_again,
    answer_changed,
    named_elsewhere,
    naming_files,
    read_tree,
    text_answer,
)
from repro_lint.source import Stamp

WORDS = ("upscale", "helper", "_pos_embed")
DEFINITIONS = (
    "def upscale(x):\n    return x\n",
    "def helper():\n    pass\n",
    "def _pos_embed(self):\n    return 0\n",
    "z = 1\n",
)
LINES = (
    *DEFINITIONS,
    "y = upscale(1)\n",
    "helper()\n",
    "self._pos_embed()\n",
    "# upscale is mentioned in a comment\n",
)


def ask(root: Path) -> tuple[list[TextQuestion], dict[str, Stamp]]:
    """Every question about ``WORDS``, as a program asks them, with the stamps read."""
    read: dict[str, Stamp] = {}
    tree = read_tree(root, None, read)
    assert tree is not None
    asked: list[TextQuestion] = []
    for word in WORDS:
        naming = [str(path) for path, _ in naming_files(tree, word)]
        answer = text_answer("mentioning", tree, word)
        evidence = naming[:25] if answer is None else None
        asked.append(("mentioning", str(root), word, answer, evidence))
        elsewhere = named_elsewhere(tree, word)
        answer = text_answer("unreferenced", tree, word)
        evidence = None if elsewhere is None else [str(elsewhere)]
        asked.append(("unreferenced", str(root), word, answer, evidence))
    return asked, read


def stamps(texts: dict[str, Stamp]) -> dict[str, Stamp]:
    now = {}
    for path in texts:
        info = os.stat(path)
        now[path] = (info.st_mtime_ns, info.st_size)
    return now


def test_answers_worked_out_from_the_edited_files_are_those_of_a_full_read(
    tmp_path: Path,
) -> None:
    chooser = random.Random(3)
    # More files than a word is followed through (24), so some words are too common.
    files = [tmp_path / f"m{index}.py" for index in range(26)]
    (tmp_path / "pkg").mkdir()
    files += [tmp_path / "pkg" / f"n{index}.py" for index in range(4)]
    for path in files:
        # At first every word is named only where it is defined.
        path.write_text("".join(chooser.sample(DEFINITIONS, 2)), encoding="utf-8")
    worked_out = 0
    # Each kind of answer (files, too many files, yes, no), once worked out from the edited
    # files alone.
    seen: set[tuple[str, object]] = set()
    for step in range(160):
        asked, texts = ask(tmp_path)
        edited = chooser.sample(files, chooser.choice((1, 1, 2, 3)))
        for path in edited:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            if lines and chooser.random() < 0.4:
                del lines[chooser.randrange(len(lines))]
            else:
                lines.insert(chooser.randrange(len(lines) + 1), chooser.choice(LINES))
            path.write_text("".join(lines), encoding="utf-8")
            os.utime(path, ns=(step, 10**9 * (step + 1)))
        now = stamps(texts)
        changed = [p for p, stamp in now.items() if stamp != texts[p]]
        answers = answer_changed(asked, now, changed)
        if answers is not None:
            worked_out += 1
            assert answers == answer_again(asked), (step, changed)
            seen.update((q[0], _kind(q[3])) for q in asked)
    kinds = {("unreferenced", True), ("unreferenced", False), ("mentioning", None)}
    assert kinds | {("mentioning", "files")} <= seen
    assert worked_out > 100


def _kind(answer: object) -> object:
    return answer if answer is None or isinstance(answer, bool) else "files"


def test_a_no_stands_while_its_evidence_names_the_word(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def helper():\n    pass\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("helper()\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("x = 1\n", encoding="utf-8")
    asked, texts = ask(tmp_path)
    question = next(q for q in asked if q[0] == "unreferenced" and q[2] == "helper")
    assert question[3] is False and question[4] == [str(tmp_path / "b.py")]
    # Another file changes: the evidence still holds.
    (tmp_path / "c.py").write_text("x = 2  # longer\n", encoding="utf-8")
    answers = answer_changed(asked, stamps(texts), [str(tmp_path / "c.py")])
    assert answers is not None and answers == answer_again(asked)
    # The evidence itself no longer names it: only a full read can tell.
    (tmp_path / "b.py").write_text("pass  # nothing here\n", encoding="utf-8")
    changed = [str(tmp_path / "b.py"), str(tmp_path / "c.py")]
    assert answer_changed(asked, stamps(texts), changed) is None
    assert answer_again(asked)[asked.index(question)] is True


def test_nested_roots_and_unreadable_files_are_read_again(tmp_path: Path) -> None:
    (tmp_path / "inner").mkdir()
    (tmp_path / "a.py").write_text("helper()\n", encoding="utf-8")
    (tmp_path / "inner" / "b.py").write_text("def helper():\n    pass\n", encoding="utf-8")
    outer, texts = ask(tmp_path)
    inner, _ = ask(tmp_path / "inner")
    assert answer_changed([*outer, *inner], texts, []) is None
    assert answer_changed(outer, texts, []) == [q[3] for q in outer]
    (tmp_path / "a.py").unlink()
    (tmp_path / "a.py").mkdir()
    assert answer_changed(outer, texts, [str(tmp_path / "a.py")]) is None


def test_the_run_record_keeps_evidence_only_for_negative_answers() -> None:
    from repro_lint.codec import FormatError
    from repro_lint.run_cache import _project_from_json, project_to_json

    asked: list[TextQuestion] = [
        ("mentioning", "/p", "helper", ["/p/a.py"], None),
        ("mentioning", "/p", "common", None, ["/p/a.py", "/p/b.py"]),
        ("unreferenced", "/p", "_embed", False, ["/p/c.py"]),
        ("unreferenced", "/p", "_orphan", True, None),
    ]
    data = project_to_json({}, {}, [], {}, {}, asked)
    back = _project_from_json(data)
    assert back is not None and back["asked"] == asked
    for index, evidence in [(0, ["/p/a.py"]), (3, ["/p/c.py"]), (2, "/p/c.py"), (2, [])]:
        wrong = [list(q) for q in data["asked"]]
        wrong[index][4] = evidence
        with pytest.raises(FormatError):
            _project_from_json({**data, "asked": wrong})
