"""The whole-run cache: an unchanged run is answered from its record, byte for byte what a run
without the cache prints; every kind of change the record depends on is noticed."""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path

import libcst
import pytest
from click.testing import CliRunner
from projects import HELPERS, TRAIN_WITH_HELPERS

from repro_lint import codec, engine, project_pass, source
from repro_lint.cache import CACHE_DIR_NAME, KEEP_RECORDS, SUFFIX, settled, writing
from repro_lint.cli import main
from repro_lint.diagnostics import FileResult
from repro_lint.moved_lines import shift_prefix
from repro_lint.settings import Settings

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FORMATS = ("full", "concise", "json")


def age(tree: Path) -> None:
    """Date the tree an hour back, as a checkout that is not being edited this second."""
    past = os.stat(tree).st_mtime - 3600
    for path in [tree, *tree.rglob("*")]:
        if CACHE_DIR_NAME not in path.parts:
            os.utime(path, (past, past), follow_symlinks=False)


def run(tree: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(tree)
    result = CliRunner().invoke(main, ["check", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def same_as_without_cache(
    tree: Path, monkeypatch: pytest.MonkeyPatch, *args: str, fmt: str = "full"
) -> str:
    """Run with the cache and without it; assert identical output; return the -v notes."""
    code, out, err = run(tree, monkeypatch, ".", "-v", "--output-format", fmt, *args)
    want_code, want_out, _ = run(
        tree, monkeypatch, ".", "--no-cache", "--output-format", fmt, *args
    )
    assert (code, out) == (want_code, want_out)
    return err


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    age(project)
    return project


def answered(notes: str) -> bool:
    return "answered from the run record" in notes


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unchanged_run_is_answered_from_its_record(
    tree: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    assert not answered(same_as_without_cache(tree, monkeypatch, fmt=fmt))
    notes = same_as_without_cache(tree, monkeypatch, fmt=fmt)
    assert answered(notes)


def test_an_edit_that_moves_nothing_reuses_the_project_pass(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same_as_without_cache(tree, monkeypatch)
    assert_comment_reuses_the_pass(tree, monkeypatch, "train.py")


def test_a_run_after_an_edit_looks_at_each_file_once(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run asks the record whether discovery holds (the settings files, the .gitignore
    files looked for, the directories listed) and which files changed when it looks for a
    stored answer, again when it lints what changed, and the project pass asks whether the
    files it loaded changed: each file is looked at once (``source.one_look``), and the run
    answers for the files as they were then."""
    same_as_without_cache(tree, monkeypatch)
    with (tree / "train.py").open("a") as handle:
        handle.write("# edited\n")
    looked: list[str] = []

    class Counting:
        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        def stat(self, path: str) -> os.stat_result:
            looked.append(os.fspath(path))
            return os.stat(path)

    monkeypatch.setattr(source, "os", Counting())
    # (Concise: the full format's code frames read the files with findings.)
    code, out, err = run(tree, monkeypatch, ".", "-v", "--output-format", "concise")
    assert "project pass reused" in err
    linted = sorted(str(p) for p in tree.rglob("*.py") if CACHE_DIR_NAME not in p.parts)
    assert len(linted) > 3
    # (The edited file is also looked at as it is read: ``read_bytes`` always looks afresh.)
    assert sorted(p for p in looked if p.endswith(".py")) == sorted(
        [*linted, str(tree / "train.py")]
    )
    # (The settings and .gitignore files are looked at again when the new record is made.)
    listed = [p for p in looked if os.path.isdir(p)]
    assert str(tree) in listed
    assert sorted(listed) == sorted(set(listed))
    monkeypatch.undo()
    fresh = run(tree, monkeypatch, ".", "--no-cache", "--output-format", "concise")
    assert (code, out) == fresh[:2]


def test_a_comment_in_a_module_read_whole_reuses_the_pass_after_another_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module the program reads whole, parsed for no rule of its own: after an edit
    elsewhere made the project pass run again, the cache answers it with the result the
    pass's loader stored (its summary made), and that pass digested it so. A comment
    appended to it leaves its summary, and the pass still holds."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN_WITH_HELPERS, encoding="utf-8")
    (project / "helpers.py").write_text(HELPERS, encoding="utf-8")
    age(project)
    same_as_without_cache(project, monkeypatch)
    with (project / "train.py").open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef added():\n    return 1\n")
    assert "project pass run" in same_as_without_cache(project, monkeypatch)
    assert_comment_reuses_the_pass(project, monkeypatch, "helpers.py")


def test_the_record_keeps_the_files_read_whole_from_the_cache() -> None:
    """The files a pass had whole from the cache (``ProjectMemo.whole``) are read back from
    the record as they were written; anything but a list of paths makes the record unread."""
    from repro_lint.codec import FormatError
    from repro_lint.run_cache import project_from_json, project_to_json

    data = project_to_json({}, {}, [], {}, {}, [], ["/p/helpers.py", "/p/models/net.py"])
    back = project_from_json(json.loads(json.dumps(data)))
    assert back is not None and back["whole"] == ["/p/helpers.py", "/p/models/net.py"]
    for wrong in ("/p/helpers.py", [["/p/helpers.py"]], [1], None):
        with pytest.raises(FormatError, match="read whole"):
            project_from_json({**data, "whole": wrong})


def assert_comment_reuses_the_pass(tree: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A comment appended to ``name`` moves nothing: only it is linted again, and the last
    project pass holds."""
    with (tree / name).open("a", encoding="utf-8") as handle:
        handle.write("# a comment at the end\n")
    notes = same_as_without_cache(tree, monkeypatch)
    assert "linted 1 of" in notes and "project pass reused" in notes


def test_a_record_written_after_an_edit_encodes_only_the_results_that_changed(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other files' results are written back as the rows the record held."""
    same_as_without_cache(tree, monkeypatch)
    encoded: list[str] = []
    real = codec.Rows.result

    def spy(self: codec.Rows, result: FileResult) -> list[object]:
        encoded.append(Path(result.filename).name)
        return real(self, result)

    monkeypatch.setattr(codec.Rows, "result", spy)
    with (tree / "train.py").open("a", encoding="utf-8") as handle:
        handle.write("# a comment at the end\n")
    code, out, notes = run(tree, monkeypatch, ".", "-v")
    assert "linted 1 of" in notes and "project pass reused" in notes
    assert encoded == ["train.py"]
    monkeypatch.setattr(codec.Rows, "result", real)
    # What was written reads back as the same answer.
    _, again, notes = run(tree, monkeypatch, ".", "-v")
    assert answered(notes) and again == out
    assert (code, out) == run(tree, monkeypatch, ".", "--no-cache")[:2]


def test_a_record_written_again_as_it_was_read_is_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files written just before a run have stamps the record cannot trust on their own:
    the next run checks them by content, answers, and writes the record it read again with
    the stamps now trusted. That record, the last pass's part included, is read back: an
    edit after it reuses the pass."""
    fresh = tmp_path / "project"
    # Copied without their times: the files' stamps are this second's.
    shutil.copytree(EXAMPLES, fresh, copy_function=shutil.copyfile)
    assert not answered(same_as_without_cache(fresh, monkeypatch))
    assert answered(same_as_without_cache(fresh, monkeypatch))
    with (fresh / "train.py").open("a", encoding="utf-8") as handle:
        handle.write("# a comment at the end\n")
    notes = same_as_without_cache(fresh, monkeypatch)
    assert "ignored" not in notes
    assert "linted 1 of" in notes and "project pass reused" in notes


def test_an_edit_that_only_moves_lines_moves_the_last_pass_findings(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same_as_without_cache(tree, monkeypatch)
    for name in ("model.py", "train.py"):
        path = tree / name
        path.write_text("# a new first line\n\n" + path.read_text(encoding="utf-8"))
    notes = same_as_without_cache(tree, monkeypatch)
    assert "linted 2 of" in notes and "project pass reused" in notes
    # A file that another file's finding names, and edits (train.py's RPL101 fix seeds next
    # to seeding.py's seed): the edits' rows and the message move too.
    path = tree / "seeding.py"
    path.write_text("# a new first line\n" + path.read_text(encoding="utf-8"))
    notes = same_as_without_cache(tree, monkeypatch, fmt="json")
    assert "linted 1 of" in notes and "project pass reused" in notes
    # Lines that move apart: only rows between which no line came are placed by distance.
    path = tree / "train.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for at in range(len(lines), 0, -7):
        lines.insert(at, "\n")
    path.write_text("".join(lines), encoding="utf-8")
    same_as_without_cache(tree, monkeypatch)


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "above-the-budget"])
def test_the_lint_behind_the_shift_prefix_parses_only_the_piece_the_prefix_changed(
    tree: Path, monkeypatch: pytest.MonkeyPatch, kept: bool
) -> None:
    """The file linted again is parsed in pieces, and the lint of its text behind
    ``shift_prefix`` takes every piece but the first from that parse; a file whose parse
    would hold too much memory is parsed whole, twice."""
    path = tree / "train.py"
    # Long enough to be parsed in pieces.
    helpers = "".join(f"\n\ndef helper_{n}(x):\n    return x + {n}\n" for n in range(200))
    path.write_text(path.read_text(encoding="utf-8") + helpers, encoding="utf-8")
    same_as_without_cache(tree, monkeypatch)
    text = "# a new first line\n" + path.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    if not kept:
        monkeypatch.setattr(engine, "KEPT_PARSES_BYTES", len(text) - 1)
    parsed: list[str] = []
    real = libcst.parse_module

    def spy(source: str, *args: object, **kwargs: object) -> libcst.Module:
        parsed.append(source)
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(libcst, "parse_module", spy)
    _, _, notes = run(tree, monkeypatch, ".", "-v")
    monkeypatch.setattr(libcst, "parse_module", real)
    assert "linted 1 of" in notes and "project pass reused" in notes
    prefix = shift_prefix(text)
    if not kept:
        assert parsed == [text, prefix + text]
        return
    shifted = [source for source in parsed if source.startswith(prefix)]
    assert len(shifted) == 1 and len(shifted[0]) < len(prefix + text)
    assert len(parsed) == len(set(parsed)) > 2
    assert "".join(source for source in parsed if source not in shifted) == text


def test_lines_moved_in_a_file_with_crlf_endings_keep_the_pass(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tree / "train.py"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    same_as_without_cache(tree, monkeypatch)
    path.write_bytes(b"# a new first line\r\n\r\n" + path.read_bytes())
    notes = same_as_without_cache(tree, monkeypatch, fmt="json")
    assert "linted 1 of" in notes and "project pass reused" in notes


def test_an_edit_that_moves_lines_and_changes_code_runs_the_project_pass_again(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same_as_without_cache(tree, monkeypatch)
    path = tree / "train.py"
    path.write_text("import os\n" + path.read_text(encoding="utf-8"))
    notes = same_as_without_cache(tree, monkeypatch)
    assert "linted 1 of" in notes and "project pass run" in notes


def _lines_moved_digesting(tree: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, set[str]]:
    """Insert an import as the first line of train.py and run again: the -v notes, and the
    names of the files whose ``unit_digest`` the run computed."""
    path = tree / "train.py"
    path.write_text("import os\n" + path.read_text(encoding="utf-8"))
    digested: set[str] = set()
    real = project_pass.unit_digest

    def spy(result: FileResult, path: Path | None, settings: Settings) -> str:
        digested.add(Path(result.filename).name)
        return real(result, path, settings)

    monkeypatch.setattr(project_pass, "unit_digest", spy)
    _, _, notes = run(tree, monkeypatch, ".", "-v")
    monkeypatch.setattr(project_pass, "unit_digest", real)
    return notes, digested


def test_a_pass_run_again_digests_only_the_files_linted_again(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same_as_without_cache(tree, monkeypatch)
    notes, digested = _lines_moved_digesting(tree, monkeypatch)
    assert "project pass run" in notes
    assert digested == {"train.py"}
    # The digests kept for the other files are right: an edit to one of them that moves
    # nothing finds the pass still holding.
    assert_comment_reuses_the_pass(tree, monkeypatch, "model.py")


def test_a_file_whose_cache_entry_was_lost_is_digested_again(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linted again, a file that did not change may still differ from what the last pass
    digested (its summary reads the project tree's listing): its digest is taken anew."""
    same_as_without_cache(tree, monkeypatch)
    shards = list((tree / CACHE_DIR_NAME).glob(f"*/*/*{SUFFIX}"))
    assert shards
    for shard in shards:  # the per-file results, not the run record
        shard.unlink()
    notes, digested = _lines_moved_digesting(tree, monkeypatch)
    assert "project pass run" in notes
    assert {"model.py", "seeding.py", "train.py"} <= digested


def test_a_seed_removed_from_a_helper_is_noticed(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project pass depends on other files: a helper that stops seeding changes the
    findings of the entry points that call it."""
    same_as_without_cache(tree, monkeypatch, fmt="concise")
    helper = tree / "seeding.py"
    text = helper.read_text(encoding="utf-8")
    helper.write_text(text.replace("manual_seed", "initial_seed"), encoding="utf-8")
    notes = same_as_without_cache(tree, monkeypatch, fmt="concise")
    assert "project pass run" in notes


def test_a_module_outside_the_linted_directory_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`repro-lint scripts/`: the helper the script imports is loaded for its summary, not
    linted; when it changes, the record no longer answers."""
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (project / "helpers.py").write_text(
        "import torch\n\ndef seed_all():\n    torch.manual_seed(0)\n", encoding="utf-8"
    )
    (project / "scripts" / "train.py").write_text(
        "import torch\nfrom helpers import seed_all\n\nif __name__ == '__main__':\n"
        "    seed_all()\n    x = torch.rand(3)\n",
        encoding="utf-8",
    )
    age(project)
    monkeypatch.chdir(project)

    def lint() -> tuple[int, str, str]:
        return run(project, monkeypatch, "scripts", "-v", "--output-format", "concise")

    assert lint()[0] == 0
    assert answered(lint()[2])
    (project / "helpers.py").write_text(
        "import torch\n\ndef seed_all():\n    pass\n", encoding="utf-8"
    )
    code, out, notes = lint()
    assert not answered(notes)
    assert code == 1 and "RPL101" in out


@pytest.mark.parametrize(
    "change", ["new file", "removed file", "gitignore", "settings", "exclude on the command line"]
)
def test_what_decides_which_files_are_linted_is_checked(
    tree: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    same_as_without_cache(tree, monkeypatch, fmt="concise")
    assert answered(same_as_without_cache(tree, monkeypatch, fmt="concise"))
    extra: tuple[str, ...] = ()
    if change == "new file":
        (tree / "sub").mkdir()
        (tree / "sub" / "extra.py").write_text(
            "import torch\ntorch.backends.cudnn.benchmark = True\n", encoding="utf-8"
        )
    elif change == "removed file":
        (tree / "evaluate.py").unlink()
    elif change == "gitignore":
        (tree / ".gitignore").write_text("train.py\n", encoding="utf-8")
    elif change == "settings":
        with (tree / "pyproject.toml").open("a", encoding="utf-8") as handle:
            handle.write('\n[tool.repro-lint]\nignore = ["RPL201"]\n')
    else:
        extra = ("--extend-exclude", "model.py")
    notes = same_as_without_cache(tree, monkeypatch, *extra, fmt="concise")
    assert not answered(notes)


def test_a_change_within_the_same_second_is_seen(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stamps taken moments before the record was written are checked by content: an edit
    that keeps the size and lands in the same clock tick is still noticed."""
    same_as_without_cache(tree, monkeypatch, fmt="concise")
    path = tree / "model.py"
    text = path.read_text(encoding="utf-8")
    # Fresh stamps: the record written now cannot trust them on their own.
    os.utime(path)
    same_as_without_cache(tree, monkeypatch, fmt="concise")
    stamp = os.stat(path)
    changed = text.replace("import torch\n", "import torcH\n", 1)
    assert len(changed) == len(text) and changed != text
    path.write_text(changed, encoding="utf-8")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    notes = same_as_without_cache(tree, monkeypatch, fmt="concise")
    assert not answered(notes)


def test_random_edits_never_leave_stale_findings(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits of every kind, one after another: each run with the cache prints what a run
    without it prints."""
    chooser = random.Random(7)
    lines = [
        "torch.backends.cudnn.benchmark = True\n",
        "# a comment\n",
        "import numpy as np\n",
        "x = torch.rand(3)\n",
        "torch.manual_seed(0)\n",
        "\n",
    ]
    same_as_without_cache(tree, monkeypatch, fmt="concise")
    for _ in range(12):
        path = tree / chooser.choice(["train.py", "model.py", "seeding.py", "data.py"])
        text = path.read_text(encoding="utf-8").splitlines(keepends=True)
        where = chooser.randrange(len(text) + 1)
        if chooser.random() < 0.3 and text:
            del text[min(where, len(text) - 1)]
        else:
            # Only at module level: the edits keep the file valid Python.
            if where < len(text) and text[where][:1] in (" ", "\t"):
                where = len(text)
            text.insert(where, chooser.choice(lines))
        path.write_text("".join(text), encoding="utf-8")
        same_as_without_cache(tree, monkeypatch, fmt="concise")


OPS = """\
import torch.nn.functional as F


def upscale(x, factor):
    return F.interpolate(x, scale_factor=factor, mode="bicubic")
"""
FRAMES = """\
import torch
from torch.utils.data import Dataset

from ops import upscale


class Frames(Dataset):
    def __getitem__(self, index):
        return upscale(torch.load(f"{index}.pt"), 4)
"""
TRAIN = """\
import torch

from ops import upscale


def step(model, images, target, optimizer):
    loss = (upscale(model(images), 2) - target).abs().mean()
    loss.backward()
    optimizer.step()
"""


def test_text_read_for_callers_is_judged_by_its_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RPL401 asks which files name a helper, from the project's text. A comment that leaves
    the answers as they were keeps the project pass; one that makes another file name the
    helper runs it again (and either way the findings are those of a run without cache)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\n[tool.repro-lint]\nselect = ["RPL401"]\n', encoding="utf-8"
    )
    for name, text in {"ops.py": OPS, "frames.py": FRAMES, "notes.py": "import torch\n"}.items():
        (project / name).write_text(text, encoding="utf-8")
    age(project)
    assert same_as_without_cache(project, monkeypatch, fmt="concise")
    with (project / "frames.py").open("a", encoding="utf-8") as handle:
        handle.write("# frames are read lazily\n")
    notes = same_as_without_cache(project, monkeypatch, fmt="concise")
    assert "linted 1 of" in notes and "project pass reused" in notes
    with (project / "notes.py").open("a", encoding="utf-8") as handle:
        handle.write("# upscale\n")
    notes = same_as_without_cache(project, monkeypatch, fmt="concise")
    assert "linted 1 of" in notes and "project pass run" in notes
    # A training step that calls the helper: now it is reported, the record notwithstanding.
    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    code, out, _ = run(project, monkeypatch, ".", "--output-format", "concise")
    assert code == 1 and "ops.py:5:" in out


def test_a_changed_file_the_loader_never_answered_for_is_a_change(tmp_path: Path) -> None:
    """A loaded file's stamp is noted before it is read: if no answer was recorded for it,
    there is nothing to compare its new summary with, so a change to it is a change."""
    from repro_lint.project_pass import ProjectMemo, answer_digest

    helper = tmp_path / "helper.py"
    helper.write_text("import torch\n", encoding="utf-8")
    memo = ProjectMemo(loaded={str(helper): (0, 0)})

    def load(path: Path, imported: bool) -> tuple[str, dict[str, object]] | None:
        return ("helper.py", {"v": 1})

    assert not memo.still_valid(load)
    answered = ProjectMemo(
        loaded={str(helper): (0, 0)},
        summaries=[(str(helper), True, answer_digest(load(helper, True)))],
    )
    assert answered.still_valid(load)
    assert answered.loaded[str(helper)] != (0, 0)  # brought up to date


def test_a_missing_directory_stands_in_through_its_nearest_existing_ancestor(
    tmp_path: Path,
) -> None:
    """Lookups of library modules probe thousands of paths the project lacks: the memo keeps
    their nearest existing ancestor instead, and still notices any of them appearing."""
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "mod.py").write_text("", encoding="utf-8")
    missing = [
        tmp_path / "pkg" / "sub" / "a",
        tmp_path / "pkg" / "sub" / "b",
        tmp_path / "pkg" / "numpy" / "random",
        tmp_path / "pkg" / "numpy" / "linalg" / "deep",
    ]
    probed = {str(p) for p in missing} | {str(tmp_path / "pkg"), str(tmp_path / "pkg" / "mod.py")}
    stamps = project_pass.probed_stamps(probed)
    # The missing paths are stood for by pkg/sub and pkg; the file is kept as itself.
    assert set(stamps) == {
        str(tmp_path / "pkg"),
        str(tmp_path / "pkg" / "sub"),
        str(tmp_path / "pkg" / "mod.py"),
    }

    def holds() -> bool:
        memo = project_pass.ProjectMemo(probed=dict(stamps))
        return memo.still_valid()

    assert holds()
    for created in [missing[1], missing[3]]:
        top = created
        while not top.parent.exists():
            top = top.parent
        created.mkdir(parents=True)
        assert not holds(), created
        shutil.rmtree(top if top != created else created)
        assert holds()
    (tmp_path / "pkg" / "mod.py").unlink()
    (tmp_path / "pkg" / "mod.py").mkdir()
    assert not holds()


def test_a_module_appearing_where_an_import_looked_is_noticed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`repro-lint scripts/` with an import the project could not resolve: once the module
    appears, however deep below a directory discovery never listed, the record no longer
    answers and the seeding it does is seen."""
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    (project / "lib").mkdir()
    (project / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (project / "scripts" / "train.py").write_text(
        "import torch\nfrom lib.tools.seeding import seed_all\n\n"
        "if __name__ == '__main__':\n    seed_all()\n    x = torch.rand(3)\n",
        encoding="utf-8",
    )
    age(project)

    def lint() -> tuple[int, str, str]:
        return run(project, monkeypatch, "scripts", "-v", "--output-format", "concise")

    before = lint()
    assert answered(lint()[2])
    (project / "lib" / "tools").mkdir()
    (project / "lib" / "tools" / "seeding.py").write_text(
        "import torch\n\ndef seed_all():\n    torch.manual_seed(0)\n", encoding="utf-8"
    )
    code, out, notes = lint()
    assert not answered(notes)
    fresh = run(project, monkeypatch, "scripts", "--no-cache", "--output-format", "concise")
    assert (code, out) == fresh[:2] != before[:2]


def test_one_look_stats_each_path_once_and_only_within_it(tmp_path: Path) -> None:
    """Within ``one_look`` a path's first status stands (a missing file stays missing);
    a nested block shares it; outside, every call looks afresh."""
    module = tmp_path / "a.py"
    module.write_text("x = 1\n")
    missing = tmp_path / "b.py"
    with source.one_look():
        first = source.stamp(str(module))
        assert first[1] == 6
        module.write_text("x = 22\n")
        assert source.stamp(str(module)) == first
        assert source.stamp(str(missing)) == (-1, -1)
        missing.write_text("")
        assert source.status(str(missing)) is None
        with source.one_look():
            assert source.mtime(str(module)) == first[0]
            assert source.status(str(missing)) is None
        assert source.stamp(str(module)) == first
    assert source.stamp(str(module))[1] == 7
    assert source.stamp(str(missing))[1] == 0


def test_only_the_last_run_records_written_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct run (here, one per directory named) keeps a record of its own; the cache
    keeps the ``KEEP_RECORDS`` last written."""
    project = tmp_path / "project"
    count = KEEP_RECORDS + 2
    for number in range(count):
        (project / f"d{number}").mkdir(parents=True)
        (project / f"d{number}" / "train.py").write_text("import random\n", encoding="utf-8")
    age(project)
    notes = []
    dated: set[Path] = set()
    for number in range(count):
        code, _, err = run(project, monkeypatch, f"d{number}", "-v")
        assert code == 0
        notes.append(err)
        # (Dated apart: records written within one clock tick would be told apart by chance.)
        (written,) = set((project / CACHE_DIR_NAME).glob(f"*/run-*{SUFFIX}")) - dated
        os.utime(written, (1e9 + number, 1e9 + number))
        dated.add(written)
    records = list((project / CACHE_DIR_NAME).glob(f"*/run-*{SUFFIX}"))
    assert len(records) == KEEP_RECORDS
    assert "removed 1 older run record(s)" in notes[-1]
    assert "removed" not in notes[KEEP_RECORDS - 1]


def test_a_whole_summary_is_compared_only_for_a_file_as_it_is_on_disk(tmp_path: Path) -> None:
    """The loader summarises a file's text on disk: a run's fresh result is of that text,
    an editor's buffer (the language server's) need not be, and its part is then compared
    as it is."""
    from repro_lint.config import Config
    from repro_lint.file_pass import lint_one
    from repro_lint.summary_format import DEFERRED_KEY

    settings = Settings.from_config(Config(root=tmp_path))
    path = tmp_path / "helpers.py"
    path.write_text(HELPERS, encoding="utf-8")
    whole = lint_one(HELPERS, "helpers.py", settings, path, summarise=True)
    deferred = lint_one(HELPERS, "helpers.py", settings, path)
    assert deferred.summary.get(DEFERRED_KEY) and not whole.summary.get(DEFERRED_KEY)

    def load(_: Path, imported: bool) -> tuple[str, dict[str, object]]:
        return whole.filename, whole.summary

    def reused(on_disk: bool) -> object:
        memo = project_pass.ProjectMemo(
            digests={"helpers.py": project_pass.unit_digest(whole, path, settings)}
        )
        fresh = [(deferred, path)]
        return project_pass.reused(
            memo, {"helpers.py": whole}, fresh, settings, load, on_disk=on_disk
        )

    assert reused(on_disk=True) is not None
    assert reused(on_disk=False) is None


def test_a_record_being_written_is_waited_for_and_only_one_writer_holds_the_lock(
    tmp_path: Path,
) -> None:
    settled(tmp_path)  # (nothing ever written here: no wait)
    held = writing(tmp_path)
    assert held is not None
    try:
        # Another run's writing is under way: this one writes its own now.
        assert writing(tmp_path) is None
        # A reader waits, at most as long as it is told to.
        started = time.monotonic()
        settled(tmp_path, seconds=0.2)
        assert time.monotonic() - started >= 0.2
    finally:
        os.close(held)
    again = writing(tmp_path)
    assert again is not None
    os.close(again)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no process can be forked here")
def test_a_run_reads_the_record_that_the_check_before_it_is_still_writing(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a check leaves a process of its own to write (``launch.defer``) is written
    before the next run reads it: that process holds the lock (``cache.writing``) until
    the record is in place, and the run waits for it (``cache.settled``)."""
    assert not answered(same_as_without_cache(tree, monkeypatch))
    records = list((tree / CACHE_DIR_NAME).rglob(f"run-*{SUFFIX}"))
    for record in records:
        record.rename(record.with_name("aside-" + record.name))
    held = writing(tree)
    assert held is not None
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked writer
        try:
            time.sleep(1.0)
            for record in records:
                record.with_name("aside-" + record.name).rename(record)
        finally:
            os._exit(0)
    os.close(held)  # (the writer keeps it)
    try:
        assert answered(same_as_without_cache(tree, monkeypatch))
    finally:
        os.waitpid(pid, 0)
