"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit against a throwaway repo."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\n"
# The pre-commit installed beside this interpreter (the dev extra), else one on PATH.
_BESIDE = Path(sys.executable).parent / "pre-commit"
PRE_COMMIT = str(_BESIDE) if _BESIDE.exists() else shutil.which("pre-commit")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.mark.slow
@pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")
def test_hooks_block_and_fix_a_hazardous_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "train.py").write_text(HAZARD, encoding="utf-8")
    git(repo, "add", "train.py")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}

    def try_repo(hook: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PRE_COMMIT), "try-repo", str(ROOT), hook, "--files", "train.py"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    check = try_repo("repro-lint")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "RPL201" in check.stdout
    assert (repo / "train.py").read_text(encoding="utf-8") == HAZARD

    fix = try_repo("repro-lint-fix")
    assert fix.returncode == 1, fix.stdout + fix.stderr  # files were modified by this hook
    assert (repo / "train.py").read_text(encoding="utf-8") == HAZARD.replace("True", "False")

    again = try_repo("repro-lint")
    assert again.returncode == 0, again.stdout + again.stderr
