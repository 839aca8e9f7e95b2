"""The flake8 plugin, run by the real flake8 through its entry point."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("flake8")

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (
    "import os\n"
    "import torch\n"
    "torch.backends.cudnn.benchmark = True\n"
    "x = 1; torch.backends.cudnn.benchmark = True  # noqa: RPL201\n"
    "if True:\n"
    "    torch.use_deterministic_algorithms(False)\n"
    "with torch.backends.cudnn.flags(enabled=True, benchmark=True):\n"
    "    pass\n"
)


def flake8(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def findings(output: str) -> list[tuple[str, int, int]]:
    """(code, row, column) from flake8's default format ``path:row:col: CODE text``."""
    found = []
    for line in output.splitlines():
        _, row, column, rest = line.split(":", 3)
        found.append((rest.split()[0], int(row), int(column)))
    return found


def repro_lint(cwd: Path, *args: str) -> list[tuple[str, int, int]]:
    result = subprocess.run(
        [sys.executable, "-m", "repro_lint", *args, "--output-format", "json", "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return [
        (d["code"], d["location"]["row"], d["location"]["column"])
        for d in json.loads(result.stdout)
    ]


def test_select_rpl_reports_what_repro_lint_reports(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    result = flake8(tmp_path, "--select", "RPL", "train.py")
    assert result.returncode == 1, result.stderr
    expected = repro_lint(tmp_path, "train.py")
    assert findings(result.stdout) == expected
    # The plugin hands flake8 0-based columns; flake8 prints them 1-based, as repro-lint does.
    assert ("RPL203", 6, 5) in expected and ("RPL201", 7, 47) in expected


def test_flake8_selection_and_noqa_apply(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    everything = findings(flake8(tmp_path, "train.py").stdout)
    assert {"F401", "E702", "RPL201", "RPL203"} <= {code for code, _, _ in everything}
    assert ("RPL201", 4, 8) not in everything  # the line's noqa
    only_one = flake8(tmp_path, "--select", "RPL203", "train.py")
    assert findings(only_one.stdout) == [("RPL203", 6, 5), ("RPL203", 7, 6)]


def test_settings_come_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.repro-lint]\nignore = ["RPL203"]\n', encoding="utf-8"
    )
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    codes = {
        code for code, _, _ in findings(flake8(tmp_path, "--select", "RPL", "train.py").stdout)
    }
    assert codes == {"RPL201"}


def test_readme_command_runs_as_written(
    tmp_path: Path, code_blocks: Callable[[Path], dict[str, str]]
) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "src")
    [command] = code_blocks(ROOT / "README.md")["flake8 --select RPL src/"].splitlines()
    argv = shlex.split(command)
    result = flake8(tmp_path, *argv[1:])
    assert result.returncode == 1, result.stderr
    found = findings(result.stdout)
    assert found and {code[:3] for code, _, _ in found} == {"RPL"}
    assert found == repro_lint(tmp_path / "src", ".")
