"""The real thing: a wheel installed into a fresh virtual environment, run as a subprocess."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the built wheel (its dependencies come from the package index)."""
    work = tmp_path_factory.mktemp("install")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work), str(ROOT)],
        check=True,
        timeout=600,
    )
    wheel = next(work.glob("repro_lint-*.whl"))
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=True)
    subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        check=True,
        timeout=600,
    )
    return env_dir / "bin"


@pytest.mark.slow
def test_console_script_lints_the_examples(installed: Path) -> None:
    result = subprocess.run(
        [str(installed / "repro-lint"), "examples/", "--no-cache", "--output-format", "concise"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert "examples/train.py" in result.stdout and " RPL201 " in result.stdout
    assert result.stderr == ""


@pytest.mark.slow
def test_python_dash_m_and_version(installed: Path) -> None:
    result = subprocess.run(
        [str(installed / "python"), "-m", "repro_lint", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "repro-lint" in result.stdout


@pytest.mark.slow
def test_torch_is_not_a_dependency(installed: Path) -> None:
    result = subprocess.run(
        [str(installed / "python"), "-c", "import torch"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0


def test_linting_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from repro_lint.engine import lint_paths\n"
        "lint_paths(['examples'])\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout.strip() == "[]"
