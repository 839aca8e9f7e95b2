"""Questions asked of the project's text (which files name a helper; whether a function is
named only where it is defined), answered again after an edit from the edited files alone:
always what reading the whole tree again answers."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest

from repro_lint.project_pass import ProjectMemo
from repro_lint.source import Stamp
from repro_lint.text_questions import (
    TextQuestion,
    answer_again,
    answer_changed,
    ask_tree,
    read_tree,
)

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


def ask(
    root: Path, kinds: tuple[str, ...] = ("mentioning", "unreferenced")
) -> tuple[list[TextQuestion], dict[str, Stamp]]:
    """Every question about ``WORDS``, as a program asks them, with the stamps read."""
    read: dict[str, Stamp] = {}
    tree = read_tree(root, None, read)
    assert tree is not None
    return [ask_tree(kind, str(root), tree, word) for word in WORDS for kind in kinds], read


def shown(question: TextQuestion) -> bool:
    """Whether a negative answer's evidence shows it in the files as they are now."""
    kind, _, word, answer, evidence = question
    if evidence is None:
        return True
    texts = [Path(path).read_text(encoding="utf-8") for path in evidence]
    named = [re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) for text in texts]
    if kind == "mentioning":
        return answer is None and len(evidence) == 25 and all(named)
    uses = [len(re.findall(rf"(?<!\w){re.escape(word)}(?!\w)", text)) for text in texts]
    defs = [len(re.findall(rf"\bdef\s+{re.escape(word)}\b", text)) for text in texts]
    return answer is False and len(evidence) == 1 and uses[0] != defs[0]


def edit(path: Path, chooser: random.Random, step: int) -> None:
    """Delete a line of ``path`` or insert one of ``LINES``, dated by ``step``."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if lines and chooser.random() < 0.4:
        del lines[chooser.randrange(len(lines))]
    else:
        lines.insert(chooser.randrange(len(lines) + 1), chooser.choice(LINES))
    path.write_text("".join(lines), encoding="utf-8")
    os.utime(path, ns=(step, 10**9 * (step + 1)))


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
    # The questions carried from one edit to the next, as the project pass's memo carries
    # them: a negative answer's evidence must be what shows it after every edit.
    asked, texts = ask(tmp_path)
    for step in range(160):
        edited = chooser.sample(files, chooser.choice((1, 1, 2, 3)))
        for path in edited:
            edit(path, chooser, step)
        now = stamps(texts)
        changed = [p for p, stamp in now.items() if stamp != texts[p]]
        fresh = answer_changed(asked, now, changed)
        truth = answer_again(asked)
        assert all(shown(q) for q in truth)
        if fresh is not None:
            worked_out += 1
            assert [q[3] for q in fresh] == [q[3] for q in truth], (step, changed)
            assert all(shown(q) for q in fresh), (step, changed)
            seen.update((q[0], _kind(q[3])) for q in fresh)
        asked, texts = fresh or truth, now
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
    fresh = answer_changed(asked, stamps(texts), [str(tmp_path / "c.py")])
    assert fresh is not None and fresh == answer_again(asked)
    # The evidence itself no longer names it: only a full read can tell.
    (tmp_path / "b.py").write_text("pass  # nothing here\n", encoding="utf-8")
    changed = [str(tmp_path / "b.py"), str(tmp_path / "c.py")]
    assert answer_changed(asked, stamps(texts), changed) is None
    assert answer_again(asked)[asked.index(question)][3] is True


def test_the_memo_keeps_the_evidence_that_shows_its_answers_now(tmp_path: Path) -> None:
    """The file that named a helper stops naming it while another starts: the answer is the
    same, and the memo keeps the new file as its evidence. When that one stops too, the
    answer changes, and the memo no longer holds."""
    (tmp_path / "a.py").write_text("def helper():\n    pass\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("helper()\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("x = 1\n", encoding="utf-8")
    asked, texts = ask(tmp_path, ("unreferenced",))
    memo = ProjectMemo(texts=texts, asked=asked)
    (tmp_path / "b.py").write_text("x = 0  #\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("helper()  # c\n", encoding="utf-8")
    for index, name in enumerate(["b.py", "c.py"]):
        os.utime(tmp_path / name, ns=(1, 10**9 * (index + 1)))
    assert memo.still_valid()
    assert [q[4] for q in memo.asked if q[2] == "helper"] == [[str(tmp_path / "c.py")]]
    (tmp_path / "c.py").write_text("y = 0\n", encoding="utf-8")
    os.utime(tmp_path / "c.py", ns=(2, 3 * 10**9))
    assert not memo.still_valid()


def test_nested_roots_answer_as_a_full_read(tmp_path: Path) -> None:
    """Roots within one another (a project whose subprojects have their own roots): a
    changed file under both counts for the outer tree only where its walk reaches it, not
    in a hidden or excluded directory, a virtual environment or a linked directory."""
    chooser = random.Random(5)
    outer = tmp_path / "outer"
    inner = [
        outer / "projects" / "sub",  # walked by both
        outer / "build" / "sub",  # excluded from the outer walk
        outer / ".hidden" / "sub",
        outer / "env" / "sub",  # a virtual environment (pyvenv.cfg)
        outer / "linked",  # a link to a directory outside
    ]
    for root in inner[:4]:
        root.mkdir(parents=True)
    (outer / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    inner[4].symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    files = [outer / f"m{index}.py" for index in range(3)]
    files += [root / f"n{index}.py" for root in inner for index in range(2)]
    for path in files:
        path.write_text("".join(chooser.sample(DEFINITIONS, 2)), encoding="utf-8")

    def ask_all() -> tuple[list[TextQuestion], dict[str, Stamp]]:
        asked, texts = ask(outer)
        for root in inner:
            more, read = ask(root)
            asked += more
            texts.update(read)
        return asked, texts

    asked, texts = ask_all()
    worked_out = 0
    for step in range(120):
        for path in chooser.sample(files, chooser.choice((1, 2))):
            edit(path, chooser, step)
        now = stamps(texts)
        changed = [p for p, stamp in now.items() if stamp != texts[p]]
        fresh = answer_changed(asked, now, changed)
        truth = answer_again(asked)
        if fresh is not None:
            worked_out += 1
            assert [q[3] for q in fresh] == [q[3] for q in truth], (step, changed)
            assert all(shown(q) for q in fresh), (step, changed)
        asked, texts = fresh or truth, now
    assert worked_out > 80


def test_unreadable_files_are_read_again(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("helper()\n", encoding="utf-8")
    outer, texts = ask(tmp_path)
    assert answer_changed(outer, texts, []) == outer
    (tmp_path / "a.py").unlink()
    (tmp_path / "a.py").mkdir()
    assert answer_changed(outer, texts, [str(tmp_path / "a.py")]) is None


def test_the_run_record_keeps_evidence_only_for_negative_answers() -> None:
    from repro_lint.codec import FormatError
    from repro_lint.run_cache import project_from_json, project_to_json

    asked: list[TextQuestion] = [
        ("mentioning", "/p", "helper", ["/p/a.py"], None),
        ("mentioning", "/p", "common", None, ["/p/a.py", "/p/b.py"]),
        ("unreferenced", "/p", "_embed", False, ["/p/c.py"]),
        ("unreferenced", "/p", "_orphan", True, None),
    ]
    data = project_to_json({}, {}, [], {}, {}, asked, [])
    back = project_from_json(data)
    assert back is not None and back["asked"] == asked
    for index, evidence in [(0, ["/p/a.py"]), (3, ["/p/c.py"]), (2, "/p/c.py"), (2, [])]:
        wrong = [list(q) for q in data["asked"]]
        wrong[index][4] = evidence
        with pytest.raises(FormatError):
            project_from_json({**data, "asked": wrong})


def test_a_tree_too_large_to_hold_is_read_again_for_each_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large project's text is not kept through the run: its files are read again for
    each question, and give the answers the held text gives (until one of them changes)."""
    from repro_lint import text_questions

    chooser = random.Random(5)
    for index in range(30):
        lines = chooser.sample(LINES, 3)
        (tmp_path / f"m{index}.py").write_text("".join(lines), encoding="utf-8")
    held, read_held = ask(tmp_path)
    monkeypatch.setattr(text_questions, "_HELD_TREE_BYTES", 0)
    again, read_again = ask(tmp_path)
    assert again == held and read_again == read_held
    assert any(q[3] for q in held if q[0] == "mentioning")

    # The text as it is when asked: a file edited after the tree was read is read as it is.
    big = read_tree(tmp_path)
    monkeypatch.setattr(text_questions, "_HELD_TREE_BYTES", 1 << 30)
    small = read_tree(tmp_path)
    assert big is not None and small is not None
    (tmp_path / "m0.py").write_text("only_here = 1\n", encoding="utf-8")
    assert ask_tree("mentioning", str(tmp_path), big, "only_here")[3] == [str(tmp_path / "m0.py")]
    assert ask_tree("mentioning", str(tmp_path), small, "only_here")[3] == []
