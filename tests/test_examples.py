"""The shipped example project: the README's main command, and --fix on a copy of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from projects import relative_json

from repro_lint.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def lint(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> list[dict[str, object]]:
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(
        main,
        ["check", "examples", "--no-cache", "--output-format", "json", *args],
        catch_exceptions=False,
    )
    assert result.exit_code in (0, 1), result.stderr
    findings: list[dict[str, object]] = relative_json(result.stdout)
    return findings


def found(findings: list[dict[str, object]], prefix: str) -> set[tuple[object, object, object]]:
    return {
        (f["filename"], f["code"], f["location"]["row"])  # type: ignore[index]
        for f in findings
        if str(f["code"]).startswith(prefix)
    }


def test_backend_hazards_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    findings = lint(EXAMPLES.parent, monkeypatch)
    assert found(findings, "RPL2") >= {
        ("examples/train.py", "RPL201", 47),
        ("examples/train.py", "RPL205", 60),
        ("examples/evaluate.py", "RPL203", 20),
        ("examples/launch.py", "RPL204", 24),
    }
    assert not found(findings, "RPL000")


def test_fix_removes_the_safe_fixable_hazards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    before = lint(tmp_path, monkeypatch)
    fixable = {
        (f["filename"], f["code"])
        for f in before
        if isinstance(f["fix"], dict) and f["fix"]["applicability"] == "safe"
    }
    assert {("examples/train.py", "RPL201"), ("examples/launch.py", "RPL204")} <= fixable
    lint(tmp_path, monkeypatch, "--fix")
    after = lint(tmp_path, monkeypatch)
    remaining = {(f["filename"], f["code"]) for f in after}
    assert not fixable & remaining
    # What had no safe fix is still reported.
    assert ("examples/evaluate.py", "RPL203") in remaining
    for path in (tmp_path / "examples").glob("*.py"):
        compile(path.read_text(encoding="utf-8"), str(path), "exec")


@pytest.mark.torch
@pytest.mark.slow
def test_training_script_runs_and_prints_its_loss() -> None:
    result = subprocess.run(
        [sys.executable, "train.py", "--epochs", "1"],
        cwd=EXAMPLES,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("final loss ")
