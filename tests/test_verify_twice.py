"""--twice: two fresh runs of a script, compared by what they print and what they save."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.torch

SCRIPT = """
import sys
import torch
if "--seed" in sys.argv:
    torch.manual_seed(0)
weights = torch.randn(4, 4)
print("done" if "--quiet" in sys.argv else weights.sum().item())
torch.save({"w": weights, "step": 3}, sys.argv[1])
"""


def test_unseeded_script_is_not_reproducible(tmp_path: Path) -> None:
    from repro_lint.verify.rerun import run_twice

    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    comparison = run_twice(script, [str(tmp_path / "w.pt")])
    assert not comparison.reproducible
    assert comparison.differences[0].startswith("output line 1 differs")
    assert "['w']" in comparison.differences[1]


def test_saved_tensors_are_compared_bitwise(tmp_path: Path) -> None:
    from repro_lint.verify.rerun import run_twice

    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    # Nothing random is printed, so only the checkpoint shows the difference.
    comparison = run_twice(script, [str(tmp_path / "w.pt"), "--quiet"])
    assert [d.split(":")[0] for d in comparison.differences] == [f"{tmp_path / 'w.pt'}['w']"]


def test_seeded_script_is_reproducible(tmp_path: Path) -> None:
    from repro_lint.verify.rerun import run_twice

    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    comparison = run_twice(script, [str(tmp_path / "w.pt"), "--seed"])
    assert comparison.reproducible, comparison.differences
    assert len(comparison.first.saves) == 1


def test_a_failing_run_is_not_reproducible(tmp_path: Path) -> None:
    from repro_lint.verify.rerun import run_twice

    script = tmp_path / "train.py"
    script.write_text("raise SystemExit(3)\n", encoding="utf-8")
    comparison = run_twice(script, [])
    assert not comparison.reproducible
    assert comparison.first.returncode == 3


def test_zero_dimensional_tensors_are_compared(tmp_path: Path) -> None:
    """A model with BatchNorm saves a 0-d step count next to its weights."""
    from repro_lint.verify.rerun import run_twice

    script = tmp_path / "train.py"
    script.write_text(
        "import sys\nimport torch\n"
        "torch.save({'steps': torch.tensor(3), 'w': torch.randn(2)}, sys.argv[1])\n",
        encoding="utf-8",
    )
    comparison = run_twice(script, [str(tmp_path / "w.pt")])
    assert [d.split(":")[0] for d in comparison.differences] == [f"{tmp_path / 'w.pt'}['w']"]
