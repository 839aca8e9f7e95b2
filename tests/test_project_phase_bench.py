"""benchmarks/project_phase.py, run on a two-file project: the benchmark is not part of the
suite's timing, but it must keep running against the engine's current interfaces (it measures
with the engine's own settings, per-file pass and project analysis)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import project_phase

TRAIN = """\
import torch

from pkg.model import build


def main():
    model = build()
    x = torch.rand(3)
    return model(x)


if __name__ == "__main__":
    main()
"""

MODEL = """\
import torch


def build():
    return torch.nn.Linear(3, 1)
"""


def test_it_measures_each_stage_and_counts_the_project_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source" / "pkg"
    source.mkdir(parents=True)
    (source / "__init__.py").write_text("", encoding="utf-8")
    (source / "train.py").write_text(TRAIN, encoding="utf-8")
    (source / "model.py").write_text(MODEL, encoding="utf-8")
    root = tmp_path / "copy"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "corpus"\n', encoding="utf-8")
    for path in source.iterdir():
        (root / "pkg" / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")

    project_phase.measure(source, root, 1)

    out = capsys.readouterr().out
    assert "(3 files, " in out
    # The entry point draws from torch's generator and never seeds it: RPL101.
    found = re.search(r"project findings: (\d+)", out)
    assert found is not None and int(found.group(1)) >= 1
    for stage in ("parse", "lint", "+summary", "+project", "join"):
        assert re.search(rf"^median {re.escape(stage)} +\d+\.\d\d s$", out, re.MULTILINE), stage
