"""RPL402 across files: the programs that reach a call decide, and the fix goes to the entry
point, which may be another file than the finding."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result
from projects import relative_json

from repro_lint.cli import main

MODEL = """\
import torch


def count(labels):
    totals = torch.zeros(10)
    totals.index_add_(0, labels, torch.ones(len(labels)))
    return totals
"""
TRAIN = """\
import torch

from model import count


def main():
    print(count(torch.tensor([1, 2, 2])))


if __name__ == "__main__":
    main()
"""
ENABLED = TRAIN.replace(
    'if __name__ == "__main__":\n',
    'if __name__ == "__main__":\n    torch.use_deterministic_algorithms(True)\n',
)


def write(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\ndependencies = ["torch>=2.10"]\n'
        '[tool.repro-lint]\nselect = ["RPL402"]\n',
        encoding="utf-8",
    )
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")


def run(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(root)
    return CliRunner().invoke(main, ["check", ".", "--no-cache", *args], catch_exceptions=False)


def findings(result: Result) -> list[dict[str, object]]:
    data: list[dict[str, object]] = relative_json(result.stdout)
    return data


def test_the_fix_for_a_call_in_a_module_goes_to_the_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": TRAIN})
    found = findings(run(tmp_path, monkeypatch, "--output-format", "json"))
    assert [(f["filename"], f["code"], f["location"]["row"]) for f in found] == [  # type: ignore[index]
        ("model.py", "RPL402", 6)
    ]
    edits = found[0]["fix"]["edits"]  # type: ignore[index]
    assert [(e["filename"], e["location"]["row"]) for e in edits] == [("train.py", 11)]
    result = run(tmp_path, monkeypatch, "--fix")
    assert result.exit_code == 0, result.stdout
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == MODEL
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == TRAIN.replace(
        "    main()\n", "    torch.use_deterministic_algorithms(True, warn_only=True)\n    main()\n"
    )
    assert run(tmp_path, monkeypatch).exit_code == 0


def test_no_finding_when_every_entry_point_turns_the_mode_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": ENABLED})
    assert run(tmp_path, monkeypatch).exit_code == 0


def test_only_the_entry_points_that_need_it_are_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": ENABLED, "evaluate.py": TRAIN})
    found = findings(run(tmp_path, monkeypatch, "--output-format", "json"))
    assert len(found) == 1
    edits = found[0]["fix"]["edits"]  # type: ignore[index]
    assert {e["filename"] for e in edits} == {"evaluate.py"}
    run(tmp_path, monkeypatch, "--fix")
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == ENABLED
    assert "use_deterministic_algorithms(True, warn_only=True)" in (
        tmp_path / "evaluate.py"
    ).read_text(encoding="utf-8")


def test_a_module_checked_alone_is_judged_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What pre-commit does with a changed library module: no entry point is in the run.
    The hazard is reported, but library code gets no fix (no global mode set on import)."""
    write(tmp_path, {"model.py": MODEL, "train.py": ENABLED})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["check", "model.py", "--no-cache", "--output-format", "json"]
    )
    found = findings(result)
    assert [(f["code"], f["location"]["row"]) for f in found] == [("RPL402", 6)]  # type: ignore[index]
    assert found[0]["fix"] is None
    # A script doing the same at module level is fixed in place.
    (tmp_path / "script.py").write_text(
        "import torch\n\nlabels = torch.tensor([0, 1, 1])\n"
        "totals = torch.zeros(10).index_add_(0, labels, torch.ones(3))\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        main, ["check", "script.py", "--no-cache", "--output-format", "json"]
    )
    (script,) = findings(result)
    assert script["fix"]["applicability"] == "safe"  # type: ignore[index]
    assert all("filename" not in e for e in script["fix"]["edits"])  # type: ignore[index]


def test_sarif_carries_a_fix_in_another_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sarif_schema: dict[str, object]
) -> None:
    write(tmp_path, {"model.py": MODEL, "train.py": TRAIN})
    document = json.loads(run(tmp_path, monkeypatch, "--output-format", "sarif").stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(document)
    (result,) = document["runs"][0]["results"]
    changes = result["fixes"][0]["artifactChanges"]
    assert [c["artifactLocation"]["uri"] for c in changes] == ["train.py"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "model.py"
