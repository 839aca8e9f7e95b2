"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit against throwaway repos:
`try-repo`, and the full round trip of installed hooks blocking a commit until fixed."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
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


CI_DOC = ROOT / "docs" / "ci.md"
UPSTREAM = "repo: https://github.com/repro-lint/repro-lint\n    rev: v0.1.0"


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """This checkout as pre-commit fetches a hook repository: its files (tracked ones, and
    untracked ones git does not ignore) committed to a throwaway repository. Returns the
    config lines that point at it, and a pre-commit home shared by the tests (one install)."""
    work = tmp_path_factory.mktemp("hooks")
    source = work / "repro-lint"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    init_repo(source)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "snapshot")
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=source, check=True, capture_output=True, text=True
    ).stdout.strip()
    return f"repo: {source}\n    rev: {rev}", work / "pre-commit-home"


def init_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    git(path, "config", "user.email", "tests@example.invalid")
    git(path, "config", "user.name", "repro-lint tests")
    git(path, "config", "commit.gpgsign", "false")


def project_with(
    config: str, tmp_path: Path, hooks: tuple[str, Path]
) -> tuple[Path, dict[str, str]]:
    """A git repository whose pre-commit config is ``config`` pointed at this checkout."""
    assert UPSTREAM in config
    repo = tmp_path / "project"
    init_repo(repo)
    (repo / ".pre-commit-config.yaml").write_text(
        config.replace(UPSTREAM, hooks[0]), encoding="utf-8"
    )
    (repo / "train.py").write_text(HAZARD, encoding="utf-8")
    git(repo, "add", ".pre-commit-config.yaml", "train.py")
    env = {**os.environ, "PRE_COMMIT_HOME": str(hooks[1])}
    return repo, env


def shell(repo: Path, env: dict[str, str], line: str) -> subprocess.CompletedProcess[str]:
    """One documented command line (its comment dropped), with this environment's pre-commit."""
    argv = shlex.split(line, comments=True)
    if argv[0] == "pre-commit":
        argv[0] = str(PRE_COMMIT)
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def has_commits(repo: Path) -> bool:
    head = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=repo, capture_output=True
    )
    return head.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")
def test_installed_hook_blocks_the_commit_until_the_fix_hook_ran(
    tmp_path: Path,
    hooks_repo: tuple[str, Path],
    code_blocks: Callable[[Path], dict[str, str]],
) -> None:
    """docs/ci.md's local set-up, its commands run as written: install, commit (blocked),
    run the fix hook, commit (passes)."""
    blocks = code_blocks(CI_DOC)
    repo, env = project_with(blocks["# .pre-commit-config.yaml"], tmp_path, hooks_repo)
    install, commit, fix = blocks["pre-commit install"].splitlines()

    assert shell(repo, env, install).returncode == 0
    blocked = shell(repo, env, commit)
    assert blocked.returncode != 0 and "RPL201" in blocked.stdout + blocked.stderr
    assert not has_commits(repo)
    assert (repo / "train.py").read_text(encoding="utf-8") == HAZARD

    fixed = shell(repo, env, fix)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # it modified a file
    assert (repo / "train.py").read_text(encoding="utf-8") == HAZARD.replace("True", "False")
    git(repo, "add", "train.py")
    passed = shell(repo, env, commit)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert has_commits(repo)


@pytest.mark.slow
@pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")
def test_pre_commit_ci_config_fixes_in_the_commit_hook(
    tmp_path: Path,
    hooks_repo: tuple[str, Path],
    code_blocks: Callable[[Path], dict[str, str]],
) -> None:
    """The pre-commit.ci config: the fix hook runs at commit time, fixes the file and blocks
    the commit; adding the fixed file lets the commit through (what pre-commit.ci pushes)."""
    config = code_blocks(CI_DOC)["# .pre-commit-config.yaml (pre-commit.ci)"]
    repo, env = project_with(config, tmp_path, hooks_repo)
    assert shell(repo, env, "pre-commit install").returncode == 0
    blocked = shell(repo, env, "git commit -m train")
    assert blocked.returncode != 0 and not has_commits(repo)
    assert (repo / "train.py").read_text(encoding="utf-8") == HAZARD.replace("True", "False")
    git(repo, "add", "train.py")
    assert shell(repo, env, "git commit -m train").returncode == 0
    assert has_commits(repo)
