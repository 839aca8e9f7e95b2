"""Shared test fixtures: golden files, the SARIF schema, and markers for torch/CUDA."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# Every command a test runs runs in its own process, even where this user has a repro-lint
# daemon running (tests/test_daemon.py starts its own, and clears this for it).
os.environ["REPRO_LINT_NO_DAEMON"] = "1"

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
SARIF_SCHEMA_PACKAGE = "@microsoft/jest-sarif@1.0.0-beta.0"
SARIF_SCHEMA_MEMBER = "package/lib/schemas/sarif-2.1.0-rtm.5.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite golden snapshots and the generated rules/ catalog instead of comparing",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    has_torch = importlib.util.find_spec("torch") is not None
    has_cuda = False
    if has_torch and any("cuda" in item.keywords for item in items):
        import torch

        has_cuda = torch.cuda.is_available()
    for item in items:
        if "torch" in item.keywords and not has_torch:
            item.add_marker(pytest.mark.skip(reason="torch is not installed"))
        if "cuda" in item.keywords and not has_cuda:
            item.add_marker(pytest.mark.skip(reason="no CUDA device"))


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


@pytest.fixture
def golden(update_goldens: bool) -> Callable[[Path, str], None]:
    """Compare text with a golden file, or rewrite it under ``--update-goldens``."""

    def check(path: Path, actual: str) -> None:
        if update_goldens:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8", newline="")
            return
        assert path.exists(), f"missing golden {path}; run pytest --update-goldens"
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, f"{path} is stale; review and run pytest --update-goldens"

    return check


@pytest.fixture(scope="session")
def sarif_schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The official SARIF 2.1.0 JSON schema, as Microsoft ships it in an npm package."""
    cached = ROOT / ".cache" / "sarif-2.1.0-rtm.5.json"
    if not cached.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not available to fetch the SARIF schema")
        work = tmp_path_factory.mktemp("sarif")
        subprocess.run(
            [npm, "pack", SARIF_SCHEMA_PACKAGE, "--silent"],
            cwd=work,
            check=True,
            capture_output=True,
            timeout=300,
        )
        tarball = next(work.glob("*.tgz"))
        with tarfile.open(tarball) as archive:
            member = archive.extractfile(SARIF_SCHEMA_MEMBER)
            assert member is not None
            data = member.read()
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(data)
    schema: dict[str, Any] = json.loads(cached.read_text(encoding="utf-8"))
    return schema


_FENCE = re.compile(r"^```[\w-]*\n(.*?)^```$", re.S | re.M)


@pytest.fixture(scope="session")
def code_blocks() -> Callable[[Path], dict[str, str]]:
    """The fenced code blocks of a Markdown file, keyed by their first line: the recipes in
    the docs start with a comment naming the file they belong in (``# .gitlab-ci.yml``)."""

    def read(path: Path) -> dict[str, str]:
        text = path.read_text(encoding="utf-8")
        return {block.split("\n", 1)[0]: block for block in _FENCE.findall(text)}

    return read
