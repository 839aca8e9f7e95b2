"""Two repro-lint processes fixing the same tree at once: each file ends up fixed exactly once,
nothing is lost or duplicated, no traceback, no temporary file left, and the shared cache stays
readable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro_lint.config import Config
from repro_lint.engine import fix_source
from repro_lint.settings import Settings

SOURCES = [
    "import torch\n# keep {i}\ntorch.backends.cudnn.benchmark = True  # and this\n",
    "import torch\ntorch.use_deterministic_algorithms(True)\nvalue = {i}\n",
    '"""Doc {i}."""\nfrom torch.backends import cudnn\n\ndef setup():\n    cudnn.benchmark = True\n',
    "import torch\nx = {i}\n",
]


def start(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "repro_lint", "check", ".", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_two_processes_fixing_one_tree(tmp_path: Path, jobs: str) -> None:
    settings = Settings.from_config(Config(target_torch="2.1"))
    expected: dict[Path, str] = {}
    for index in range(40):
        source = SOURCES[index % len(SOURCES)].format(i=index)
        path = tmp_path / f"pkg{index % 3}" / f"m{index:02}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(source, encoding="utf-8")
        expected[path] = fix_source(source, settings).text
    args = ("--fix", "--target-torch", "2.1", "--jobs", jobs)
    first, second = start(tmp_path, *args), start(tmp_path, *args)
    outputs = [first.communicate(timeout=300), second.communicate(timeout=300)]
    for process, (_, stderr) in zip((first, second), outputs, strict=True):
        assert "Traceback" not in stderr
        assert process.returncode in (0, 1), stderr
    for path, text in expected.items():
        assert path.read_text(encoding="utf-8") == text, path
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".py"]
    assert all(".repro_lint_cache" in p.parts for p in leftovers)
    again = start(tmp_path, "--target-torch", "2.1")
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stdout + stderr


def test_cached_findings_never_get_text_they_were_not_computed_from(tmp_path: Path) -> None:
    """As when another process fixes a file between the cache lookup and the reading of its
    text for the fix: findings of the old content paired with the new text would put their
    fixes in the wrong place. The file here changes with its size and mtime kept, so the
    cache's stamp check passes, and only the content tells."""
    from repro_lint.cache import Cache
    from repro_lint.engine import lint_files
    from repro_lint.files import SourceFile

    settings = Settings.from_config(Config(target_torch="2.1"))
    path = tmp_path / "m.py"
    before = "import torch\ntorch.backends.cudnn.benchmark = True\n"
    after = "import torch\n#\ntorch.backends.cudnn.benchmark=True\n"
    assert len(before) == len(after)
    path.write_text(before, encoding="utf-8")
    past = path.stat().st_mtime_ns - 3_600_000_000_000
    os.utime(path, ns=(past, past))
    file = SourceFile("m.py", path)
    cache = Cache(tmp_path, settings.cache_key())
    [first] = lint_files([file], settings, cache=cache)
    cache.save()
    assert first.diagnostics and first.source == before
    path.write_text(after, encoding="utf-8")
    os.utime(path, ns=(past, past))
    [second] = lint_files([file], settings, cache=Cache(tmp_path, settings.cache_key()))
    assert second.source in (None, before)
