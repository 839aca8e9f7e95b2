"""benchmarks/cold_rounds.py on a two-file project, with this checkout as its own baseline:
not part of the suite's timing, but it must keep running both and comparing their findings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import cold_rounds


def test_both_checkouts_run_and_their_findings_are_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.py").write_text(
        "import torch\n\ntorch.backends.cudnn.benchmark = True\n", encoding="utf-8"
    )
    (tmp_path / "helpers.py").write_text("WIDTH = 3\n", encoding="utf-8")
    cold_rounds.main([str(tmp_path), str(cold_rounds.HERE), "--runs", "1"])
    out = capsys.readouterr().out
    assert "round 1/1: floor" in out
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[1:4]] == ["floor", "baseline", "this"]
    # CPU-seconds of each, counted from the processes waited for: each run's is at least an
    # interpreter's start; the floor's pool, forked from a process that may have imported
    # libcst already, may parse two small files in next to nothing.
    cpu = [line.split() for line in lines[4:7]]
    assert [words[0] for words in cpu] == ["floor", "baseline", "this"]
    assert all(words[3] == "CPU-s" for words in cpu)
    seconds = [float(words[2]) for words in cpu]
    assert seconds[1] > 0.05 and seconds[2] > 0.05
    assert "findings identical: 1 lines" in out


def test_a_checkout_is_made_to_start_as_an_installed_copy_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench.as_installed`` compiles a checkout that has no bytecode and has its dataclass
    code stored, even where the environment says not to write bytecode (a fresh worktree's
    runs would otherwise compile every module they import, every time)."""
    import importlib.util
    import shutil

    import bench

    from repro_lint import dataclass_code

    code = tmp_path / "checkout"
    shutil.copytree(
        Path(bench.ROOT) / "repro_lint",
        code / "repro_lint",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    bench.as_installed(code)
    modules = sorted((code / "repro_lint").rglob("*.py"))
    assert modules
    uncompiled = [
        m for m in modules if not Path(importlib.util.cache_from_source(str(m))).is_file()
    ]
    assert uncompiled == []
    stored = code / "repro_lint" / "__pycache__" / Path(dataclass_code.default_path()).name
    assert stored.is_file() and stored.stat().st_size > 0
