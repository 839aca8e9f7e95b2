"""The fix review harness (``benchmarks/realworld_fixes.py``): how applied fixes meet the stored
verdicts, so that a fix that writes something new after a change of repro-lint shows up for
review again, with the verdict it had."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import realworld_fixes as rf


def verdict(code: str, inserted: str, name: str, family: str = "") -> rf.Verdict:
    return rf.Verdict("o/r", "c" * 40, "train.py", code, inserted, name, "why", family)


def applied(code: str, inserted: str) -> rf.AppliedFix:
    return rf.AppliedFix("o/r", "c" * 40, "train.py", code, inserted, "safe", 3, "msg", True)


def review(fixes: list[rf.AppliedFix], verdicts: list[rf.Verdict]) -> rf.Review:
    return rf.Review(fixes, {v.key: v for v in verdicts}, {("o/r", "train.py")}, {"o/r"})


def test_a_fix_that_changed_since_its_verdict_is_unreviewed_and_shows_the_old_one() -> None:
    fixes = [
        applied("RPL201", "False"),
        applied("RPL101", "torch.manual_seed(args.seed)"),
        applied("RPL302", "generator=g"),
    ]
    old = verdict("RPL101", "torch.manual_seed(0)", "edit", "seeding")
    result = review(fixes, [verdict("RPL201", "False", "merge"), old])
    assert [result.status(f) for f in fixes] == ["merge", "changed", "new"]
    assert result.previous[fixes[1].key[:4]] == [old]
    assert [result.family(f) for f in fixes] == ["determinism", "seeding", "data"]


def test_a_verdict_names_the_family_that_owns_the_problem() -> None:
    fix = applied("RPL302", "generator=g")
    result = review([fix], [verdict("RPL302", "generator=g", "edit", "fixes")])
    assert result.family(fix) == "fixes" and result.status(fix) == "edit"


def test_the_report_gives_figures_per_family(capsys: pytest.CaptureFixture[str]) -> None:
    fixes = [applied("RPL201", "False"), applied("RPL101", "torch.manual_seed(args.seed)")]
    result = review(fixes, [verdict("RPL201", "False", "merge")])
    run = rf.RepoFixes("o/r", "c" * 40, changed={"safe": ["train.py"]})
    assert not rf.report(result, [run], quiet=False)  # one unreviewed fix: targets missed
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert rows["determinism"] == ["1", "0", "0", "0", "0", "100%"]
    assert rows["seeding"] == ["0", "0", "0", "0", "1", "-"]
    assert "new, never reviewed (1):" in out


def test_pending_records_carry_the_previous_verdict(tmp_path: Path) -> None:
    fix = applied("RPL101", "torch.manual_seed(args.seed)")
    old = verdict("RPL101", "torch.manual_seed(0)", "edit", "seeding")
    out = tmp_path / "pending.jsonl"
    assert rf._pending(review([fix], [old]), out) == 1
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["verdict"] is None and record["inserted"] == fix.inserted
    assert [p["inserted"] for p in record["previous"]] == ["torch.manual_seed(0)"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"repo": "o/r"}', "`commit` must be a string"),
        (json.dumps({**dict.fromkeys(rf.KEYS, "x"), "verdict": "ok", "reason": "r"}), "one of"),
        (json.dumps({**dict.fromkeys(rf.KEYS, "x"), "verdict": "merge", "reason": "a\nb"}), "one"),
    ],
)
def test_verdict_records_are_checked(tmp_path: Path, line: str, problem: str) -> None:
    path = tmp_path / "verdicts.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(rf.VerdictError, match=problem):
        rf.load_verdicts(path)


def test_the_stored_verdicts_are_well_formed() -> None:
    verdicts = rf.load_verdicts()
    assert verdicts and all(v.family in {*rf.FAMILIES.values(), "fixes"} for v in verdicts.values())


def test_notebooks_are_fixed_cell_by_cell_with_each_fix_and_its_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "k", "display_name": "K", "language": "python"}
    sources = ["import torch", "print(1)", "torch.backends.cudnn.benchmark = True"]
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    (tmp_path / ".git").mkdir()
    nbformat.write(nb, str(tmp_path / "nb.ipynb"))
    (tmp_path / "train.py").write_text(
        "import torch\n\ntorch.backends.cudnn.benchmark = True\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)  # fix_in_place works from the project's root
    fixed, written = rf.fix_in_place(tmp_path, ["nb.ipynb", "train.py"], unsafe=False)
    assert written == ["nb.ipynb", "train.py"]
    by_name = {f.name: f for f in fixed}
    notebook = by_name["nb.ipynb"]
    [done] = notebook.applied
    assert done.diagnostic.code == "RPL201"
    assert dict(done.diagnostic.properties)["cell"] == 3
    assert notebook.hunks[0].startswith("--- a/nb.ipynb:cell 3\n")
    assert "+torch.backends.cudnn.benchmark = False" in notebook.hunks[0]
    cells = nbformat.read(str(tmp_path / "nb.ipynb"), as_version=4).cells
    assert cells[2].source == "torch.backends.cudnn.benchmark = False"
    assert by_name["train.py"].diff.startswith("--- a/train.py\n")


def test_a_notebook_fixs_hunk_includes_the_cell_it_made_above_its_cell() -> None:
    diff = (
        "--- a/nb.ipynb:new cell above cell 3\n+++ b/nb.ipynb:new cell above cell 3\n"
        "@@ -0,0 +1 @@\n+torch.manual_seed(0)\n"
        "--- a/nb.ipynb:cell 5\n+++ b/nb.ipynb:cell 5\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert rf._cell_diff(diff, 3) == diff[: diff.index("--- a/nb.ipynb:cell 5")]
    assert rf._cell_diff(diff, 5) == diff[diff.index("--- a/nb.ipynb:cell 5") :]
    assert rf._cell_diff(diff, 13) == diff


def test_a_fix_shown_in_another_hunk_than_its_reviewer_saw_is_unreviewed_again() -> None:
    # The same text, put elsewhere (a seed moved to a cell of its own): its verdict judged
    # the old place. A verdict without a digest (recorded before digests) still matches.
    hunk = "--- a/nb.ipynb:cell 6\n+++ b/nb.ipynb:cell 6\n@@ -1,2 +1,3 @@\n+torch.manual_seed(0)\n"
    moved = "--- a/nb.ipynb:new cell above cell 6\n@@ -0,0 +1 @@\n+torch.manual_seed(0)\n"
    seen = rf.hunk_digest(hunk)
    assert rf.hunk_digest(hunk.replace("@@ -1,2 +1,3 @@", "@@ -7,2 +7,3 @@")) == seen
    assert rf.hunk_digest(moved) != seen
    fix = rf.AppliedFix(
        "o/r", "c" * 40, "train.py", "RPL101", "torch.manual_seed(0)", "safe", 3, "m", True,
        hunk=moved, shown=rf.hunk_digest(moved),
    )  # fmt: skip
    old = rf.Verdict("o/r", "c" * 40, "train.py", "RPL101", fix.inserted, "edit", "why",
                     "seeding", shown=seen)  # fmt: skip
    result = review([fix], [old])
    assert result.status(fix) == "changed" and result.previous[fix.key[:4]] == [old]
    assert review([fix], [dataclasses.replace(old, shown=fix.shown)]).status(fix) == "edit"
    assert review([fix], [dataclasses.replace(old, shown="")]).status(fix) == "edit"
