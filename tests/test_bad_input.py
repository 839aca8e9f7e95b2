"""Bad input never produces a traceback: each file gets a clear diagnostic or message, and the
other files are still checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from projects import relative_json

from repro_lint.cli import main

HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\n"


@pytest.fixture
def messy(tmp_path: Path) -> Path:
    (tmp_path / "good.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "syntax.py").write_text("import torch\ndef f(:\n    pass\n", encoding="utf-8")
    (tmp_path / "nul.py").write_bytes(b"import torch\nx = 1\x00\n")
    (tmp_path / "undecodable.py").write_bytes(b"import torch\nname = '\xff\xfe'\n")
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "x.py").mkdir()
    (tmp_path / "x.py" / "inner.py").write_text(HAZARD, encoding="utf-8")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    big = "import torch\n" + "x = 1\n" * 50_000 + "torch.backends.cudnn.benchmark = True\n"
    (tmp_path / "big.py").write_text(big, encoding="utf-8")
    deep = "import torch\nx = " + "(" * 400 + "1" + ")" * 400 + "\n"
    (tmp_path / "deep.py").write_text(deep, encoding="utf-8")
    return tmp_path


def test_every_bad_file_is_a_diagnostic_and_the_rest_is_checked(
    messy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(messy)
    result = CliRunner().invoke(
        main, ["check", ".", "--no-cache", "--output-format", "json"], catch_exceptions=False
    )
    assert result.exit_code == 1
    assert "Traceback" not in result.stdout + result.stderr
    found = {(d["filename"], d["code"], d["location"]["row"]) for d in relative_json(result.stdout)}
    assert ("good.py", "RPL201", 2) in found
    assert ("x.py/inner.py", "RPL201", 2) in found
    assert ("big.py", "RPL201", 50_002) in found
    assert ("syntax.py", "RPL000", 2) in found
    assert ("nul.py", "RPL000", 2) in found
    assert ("undecodable.py", "RPL000", 2) in found
    assert ("dangling.py", "RPL000", 1) in found
    assert not any(name == "empty.py" for name, _, _ in found)
    messages = {d["filename"]: d["message"] for d in relative_json(result.stdout)}
    assert "broken symbolic link" in messages["dangling.py"]


def test_missing_path_is_a_diagnostic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "good.py").write_text(HAZARD, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["check", "good.py", "nope.py", "--no-cache", "--output-format", "concise"]
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("good.py:2:1: RPL201")
    assert lines[1].startswith("nope.py:1:1: RPL000")


def test_no_input_files_exits_0_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "."])
    assert result.exit_code == 0
    assert "no Python files" in result.stderr


def test_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(
        main,
        ["-", "--stdin-filename", "train.py", "--output-format", "concise", "--no-cache"],
        input=HAZARD,
    )
    assert result.exit_code == 1
    assert result.stdout.startswith("train.py:2:1: RPL201")
    fixed = runner.invoke(main, ["-", "--stdin-filename", "train.py", "--fix"], input=HAZARD)
    assert fixed.stdout == HAZARD.replace("True", "False")
    assert fixed.exit_code == 0
    broken = runner.invoke(main, ["-", "--output-format", "concise"], input="def f(:\n")
    assert broken.exit_code == 1 and "RPL000" in broken.stdout


def test_stdin_fixed_with_quiet_reports_only_the_findings_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``--fix``, stdout carries the fixed source and the report goes to stderr; there,
    ``--quiet`` prints only each finding's head, as it does on stdout."""
    monkeypatch.chdir(tmp_path)
    text = HAZARD + "torch.use_deterministic_algorithms(False)\n"
    args = ["-", "--stdin-filename", "train.py", "--fix", "--no-cache"]
    loud = CliRunner().invoke(main, [*args, "--output-format", "concise"], input=text)
    quiet = CliRunner().invoke(main, [*args, "--output-format", "concise", "-q"], input=text)
    assert quiet.stdout == loud.stdout == text.replace("benchmark = True", "benchmark = False")
    assert quiet.exit_code == loud.exit_code == 1
    heads = quiet.stderr.splitlines()
    assert heads and all(line.startswith("train.py:") and "RPL203" in line for line in heads)
    assert len(loud.stderr.splitlines()) > len(heads)
