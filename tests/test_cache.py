"""The per-file results cache: what a shard gives back is what was stored, held as compactly."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from repro_lint import cache
from repro_lint.cache import Cache
from repro_lint.diagnostics import FileResult
from repro_lint.files import SourceFile


def test_summaries_read_back_share_the_strings_they_were_stored_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run after a code edit holds every file's summary from the cache at once. The
    summaries workers send have their strings interned (``engine._packed``); read back from
    the shards they keep them so: a module name that thousands of summaries repeat is held
    once, and the summaries come back exactly as stored (tuples included)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cache, "_KEY", None)
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    files = []
    for name in ("a.py", "pkg/b.py"):
        path = project / name
        path.write_text("import torch\n", encoding="utf-8")
        files.append(SourceFile(name, path))
    # Built at run time (a literal would be interned by the compiler anyway).
    module = sys.intern(".".join(["torch", "nn", "functional"]))
    summary = {"imports": [module], "ctx": {"main": [(3, module)]}}
    stored = Cache(project, "settings")
    for file in files:
        info = file.path.stat()
        result = FileResult(file.display, (), summary=summary)
        content = cache.digest(file.path.read_bytes())
        stored.store(file, result, (info.st_mtime_ns, info.st_size), content)
    stored.save()

    again = Cache(project, "settings")
    first, second = (again.get(file) for file in files)
    assert first is not None and second is not None
    assert first.summary == second.summary == summary
    # Two shards (one per directory), one string.
    assert first.summary["imports"][0] is second.summary["ctx"]["main"][0][1]
    assert first.summary["imports"][0] is sys.intern(".".join(["torch", "nn", "functional"]))
