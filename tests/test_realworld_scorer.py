"""The real-world scorer (benchmarks/realworld.py) on a tiny corpus of our own: a real git
mirror, real labels and the real linter, so its precision and recall arithmetic is checked."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("realworld", ROOT / "benchmarks" / "realworld.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["realworld"] = module
    spec.loader.exec_module(module)
    return module


realworld = _scorer()

TRAIN = """\
import random

import numpy as np
import torch


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    x = np.random.rand(3)
    y = random.random()
    loader = torch.utils.data.DataLoader(range(10), shuffle=True)
    return x, y, loader


if __name__ == "__main__":
    main()
"""
CLEAN = "import torch\n\ntorch.backends.cudnn.benchmark = False\n"
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Explore\n"]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["import torch\n", "\n", "torch.backends.cudnn.benchmark = True\n"],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["x = 1\n", "torch.backends.cudnn.benchmark = True\n"],
        },
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def mirror(tmp_path: Path) -> tuple[Path, str]:
    work = tmp_path / "src"
    work.mkdir()
    (work / "train.py").write_text(TRAIN, encoding="utf-8")
    (work / "clean.py").write_text(CLEAN, encoding="utf-8")
    (work / "unreviewed.py").write_text(CLEAN.replace("False", "True"), encoding="utf-8")
    (work / "explore.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    git(work, "init", "-q")
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    commit = git(work, "rev-parse", "HEAD")
    mirrors = tmp_path / "mirrors"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(mirrors / "acme+trainer" / "repo"))
    return mirrors, commit


def record(commit: str, path: str, kind: str, **extra: Any) -> str:
    data: dict[str, Any] = {"repo": "acme/trainer", "commit": commit, "path": path}
    data.update(
        {"line": extra.pop("line", None), "code": extra.pop("code", None), "kind": kind, **extra}
    )
    data.setdefault("note", "why")
    return json.dumps(data)


def write_labels(directory: Path, lines: list[str]) -> Path:
    """The labels folder ``directory`` holding one repository's labels file of ``lines``."""
    directory.mkdir()
    (directory / "acme__trainer.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def test_scores_match_findings_to_labels(mirror: tuple[Path, str], tmp_path: Path) -> None:
    mirrors, commit = mirror
    lines = [
        record(commit, "train.py", "file", role="entry"),
        record(commit, "clean.py", "file", role="clean"),
        # Found: a per-line positive and a per-file one (any line of the file matches).
        record(commit, "train.py", "positive", line=9, code="RPL201"),
        record(commit, "train.py", "positive", line=1, code="RPL101", family="numpy"),
        record(commit, "train.py", "positive", line=1, code="RPL101", family="random"),
        # Missed: nothing fires on line 3.
        record(commit, "train.py", "positive", line=3, code="RPL105"),
        # The loader's RPL302 is debatable: neither right nor wrong.
        record(commit, "train.py", "dont_care", line=12, code="RPL302"),
        # A negative trap on torch: the family is seeded, and the tool agrees.
        record(commit, "train.py", "negative", line=1, code="RPL101", family="torch"),
    ]
    loaded = realworld.load_labels(write_labels(tmp_path / "labels", lines))
    rules = realworld.known_rules()
    run = realworld.run_repo(
        mirrors, "acme/trainer", commit, ["train.py", "clean.py"], tmp_path / "w", []
    )
    assert run.error is None
    result = realworld.score(loaded, [run], rules)
    assert result.tp == {"RPL201": 1, "RPL101": 2}
    assert result.fn == {"RPL105": 1}
    assert [lab.line for lab in result.misses] == [3]
    # RPL202 (seeded, convolutions unknown) and friends are not expected here; whatever the
    # linter reports beyond the labels in reviewed files is a false positive, and nothing is
    # reported for the unreviewed file.
    assert all(f.path == "train.py" for _, _, f, _ in result.false_positives)
    assert not any(f.code in {"RPL201", "RPL302"} for _, _, f, _ in result.false_positives)


def test_notebook_labels_match_findings_by_cell(mirror: tuple[Path, str], tmp_path: Path) -> None:
    mirrors, commit = mirror
    lines = [
        record(commit, "explore.ipynb", "file", role="entry"),
        # Found: cell 2's line 3 (the markdown cell counts).
        record(commit, "explore.ipynb", "positive", cell=2, line=3, code="RPL201"),
        # Missed: cell 3 holds the same assignment on its line 2, not on line 3.
        record(commit, "explore.ipynb", "positive", cell=3, line=3, code="RPL201"),
    ]
    loaded = realworld.load_labels(write_labels(tmp_path / "labels", lines))
    # A work folder extracted before the notebook was labelled gets it on the next run.
    work = tmp_path / "w"
    first = realworld.run_repo(mirrors, "acme/trainer", commit, ["train.py"], work, [])
    assert first.error is None
    assert not list(work.glob("*/*/explore.ipynb"))
    run = realworld.run_repo(mirrors, "acme/trainer", commit, ["explore.ipynb"], work, [])
    assert run.error is None and not run.missing
    result = realworld.score(loaded, [run], realworld.known_rules())
    assert result.tp == {"RPL201": 1}
    assert [(lab.cell, lab.line) for lab in result.misses] == [(3, 3)]
    wrong = [(f.code, f.cell, f.line) for _, _, f, _ in result.false_positives]
    assert ("RPL201", 3, 2) in wrong
    assert not any(place[:2] == ("RPL201", 2) for place in wrong)


def test_label_format_is_enforced(tmp_path: Path) -> None:
    commit = "a" * 40
    cases = {
        "cell in a python file": record(commit, "t.py", "positive", cell=1, line=1, code="RPL201"),
        "notebook without cell": record(commit, "t.ipynb", "positive", line=1, code="RPL201"),
        "no family": record(commit, "t.py", "positive", line=1, code="RPL101"),
        "bad kind": record(commit, "t.py", "maybe", line=1, code="RPL201"),
        "no line": record(commit, "t.py", "positive", code="RPL201"),
        "no file record": record(commit, "t.py", "positive", line=2, code="RPL201"),
    }
    for case, text in cases.items():
        labels = write_labels(tmp_path / case.replace(" ", "-"), [text])
        with pytest.raises(realworld.LabelError):
            realworld.load_labels(labels)


def test_the_shipped_labels_are_well_formed() -> None:
    labels = realworld.load_labels()
    reviewed = [lab for lab in labels if lab.kind == "file"]
    assert len({lab.repo for lab in labels}) >= 25
    assert len(reviewed) >= 150
