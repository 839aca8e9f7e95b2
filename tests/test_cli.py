"""Command-line behaviour: exit codes, output files, cache, parallel runs, clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from repro_lint.cli import main

HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\n"
CLEAN = "import torch\ntorch.backends.cudnn.benchmark = False\n"


def run(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    ("source", "args", "status"),
    [
        (HAZARD, (), 1),
        (CLEAN, (), 0),
        (HAZARD, ("--exit-zero",), 0),
        (HAZARD, ("--fix",), 0),
        (HAZARD, ("--fix", "--exit-non-zero-on-fix"), 1),
        (CLEAN, ("--fix", "--exit-non-zero-on-fix"), 0),
        (HAZARD, ("--diff",), 1),
        (CLEAN, ("--diff",), 0),
    ],
)
def test_exit_codes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    args: tuple[str, ...],
    status: int,
) -> None:
    (tmp_path / "t.py").write_text(source, encoding="utf-8")
    assert run(tmp_path, monkeypatch, "check", ".", "--no-cache", *args).exit_code == status


def test_default_command_is_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    implicit = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "concise")
    explicit = run(tmp_path, monkeypatch, "check", ".", "--no-cache", "--output-format", "concise")
    assert implicit.exit_code == explicit.exit_code == 1
    assert implicit.stdout == explicit.stdout
    # `repro-lint src/ --fix` puts the path first.
    assert run(tmp_path, monkeypatch, "t.py", "--fix", "--no-cache").exit_code == 0


def test_output_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    result = run(
        tmp_path,
        monkeypatch,
        "check",
        "t.py",
        "--no-cache",
        "--output-format",
        "json",
        "--output-file",
        "report.json",
    )
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))[0]["code"] == (
        "RPL201"
    )


def test_quiet_prints_findings_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    result = run(tmp_path, monkeypatch, "check", ".", "--no-cache", "-q")
    assert result.stdout.splitlines() == [
        "t.py:2:1: RPL201 [*] `cudnn.benchmark = True` lets cuDNN pick a different algorithm "
        "in each run"
    ]


def test_verbose_names_settings_and_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("torch>=2.3\n", encoding="utf-8")
    result = run(tmp_path, monkeypatch, "check", ".", "--no-cache", "-v")
    assert "target torch: 2.3 (requirements.txt)" in result.stderr


def test_parallel_output_is_identical_to_serial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(40):
        body = HAZARD if index % 3 else CLEAN
        (tmp_path / f"m{index:02d}.py").write_text(body, encoding="utf-8")
    serial = run(
        tmp_path, monkeypatch, "check", ".", "--no-cache", "--jobs", "1", "--output-format", "json"
    )
    parallel = run(
        tmp_path, monkeypatch, "check", ".", "--no-cache", "--jobs", "2", "--output-format", "json"
    )
    assert serial.stdout == parallel.stdout
    assert len(json.loads(serial.stdout)) == 26


def test_cache_hits_misses_and_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\n", encoding="utf-8")
    target = tmp_path / "t.py"
    target.write_text(HAZARD, encoding="utf-8")
    cold = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json")
    cache_dir = tmp_path / ".repro_lint_cache"
    assert (cache_dir / "CACHEDIR.TAG").is_file()
    assert (cache_dir / ".gitignore").read_text(encoding="utf-8") == "*\n"
    warm = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json")
    assert warm.stdout == cold.stdout
    # Full output needs the source for its code frame, also on a cache hit.
    assert "^^^^" in run(tmp_path, monkeypatch, "check", ".").stdout
    # A same-size edit right after the run (possibly within one mtime tick) is still seen.
    target.write_text(HAZARD.replace("True", "1234"), encoding="utf-8")
    assert "RPL201" in run(tmp_path, monkeypatch, "check", ".").stdout
    target.write_text(HAZARD.replace("True", "0000"), encoding="utf-8")
    assert run(tmp_path, monkeypatch, "check", ".").exit_code == 0
    target.write_text(CLEAN, encoding="utf-8")
    assert run(tmp_path, monkeypatch, "check", ".").exit_code == 0
    # Other settings do not reuse these results.
    assert run(tmp_path, monkeypatch, "check", ".", "--select", "RPL203").exit_code == 0
    cleaned = run(tmp_path, monkeypatch, "clean")
    assert cleaned.exit_code == 0 and not cache_dir.exists()
