"""The per-file results cache: what a shard gives back is what was stored, held as compactly."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from repro_lint import cache
from repro_lint.cache import Cache
from repro_lint.config import Config
from repro_lint.diagnostics import FileResult
from repro_lint.engine import lint_run
from repro_lint.files import SourceFile
from repro_lint.settings import Settings
from repro_lint.summary import DEFERRED_KEY


def test_summaries_read_back_share_the_strings_they_were_stored_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run after a code edit holds every file's summary from the cache at once. The
    per-file pass interns a summary's strings (``engine._lint_file_alone``); read back from
    the shards they stay so: a module name that thousands of summaries repeat is held
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


def _strings(value: Any, into: dict[str, list[str]]) -> dict[str, list[str]]:
    """Every string in plain data, by value, as the objects found."""
    if isinstance(value, str):
        into.setdefault(value, []).append(value)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, into)
    elif isinstance(value, dict):
        for key, item in value.items():
            _strings(key, into)
            _strings(item, into)
    return into


def test_a_run_in_one_process_caches_summaries_that_share_their_strings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files linted in the run's own process (``--jobs 1``, an edit) are summarised as the
    workers' are: the names two files share are one string, in the run and read back."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cache, "_KEY", None)
    project = tmp_path / "project"
    project.mkdir()
    text = (
        "import torch\nimport torch.nn.functional as F\n\n\n"
        "def step(model, batch):\n    return F.dropout(model(batch)).sum()\n\n\n"
        'if __name__ == "__main__":\n'
        "    torch.manual_seed(0)\n"
        "    step(torch.nn.Linear(2, 2), torch.ones(2))\n"
    )
    files = []
    for name in ("a.py", "b.py"):
        (project / name).write_text(text, encoding="utf-8")
        files.append(SourceFile(name, project / name))
    settings = Settings.from_config(Config())
    stored = Cache(project, settings.cache_key())
    lint_run(files, settings, jobs=1, cache=stored)
    stored.save()

    again = Cache(project, settings.cache_key())
    first, second = (again.get(file) for file in files)
    assert first is not None and second is not None
    assert first.summary and not first.summary.get(DEFERRED_KEY)
    mine, theirs = _strings(first.summary, {}), _strings(second.summary, {})
    shared = [word for word in mine if "torch" in word or "dropout" in word]
    assert shared
    for word in shared:
        assert all(found is mine[word][0] for found in mine[word] + theirs[word]), word


def test_a_result_that_is_not_plain_data_is_not_cached_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache keeps plain data only (str, not a subclass of it): a result holding
    anything else leaves its shard unwritten, with a note for ``-v``; it never fails the
    run, and the shards of other directories are written."""

    class Name(str):
        pass

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cache, "_KEY", None)
    project = tmp_path / "project"
    (project / "odd").mkdir(parents=True)
    files = [SourceFile("a.py", project / "a.py"), SourceFile("odd/b.py", project / "odd/b.py")]
    stored = Cache(project, "settings")
    summaries: tuple[dict[str, Any], ...] = ({"imports": ["torch"]}, {"imports": [Name("torch")]})
    for file, summary in zip(files, summaries, strict=True):
        file.path.write_text("import torch\n", encoding="utf-8")
        info = file.path.stat()
        content = cache.digest(file.path.read_bytes())
        result = FileResult(file.display, (), summary=summary)
        stored.store(file, result, (info.st_mtime_ns, info.st_size), content)
    stored.save()
    assert any("shard not written" in note for note in stored.notes)
    again = Cache(project, "settings")
    plain, odd = (again.get(file) for file in files)
    assert plain is not None and plain.summary == {"imports": ["torch"]}
    assert odd is None


def _made(path: Path, mtime: int, directory: bool) -> Path:
    if directory:
        path.mkdir(parents=True)
        (path / f"0123456789abcdef{cache.SUFFIX}").write_bytes(b"x")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    os.utime(path, ns=(mtime, mtime))
    return path


def test_only_the_last_sets_of_results_written_are_kept(tmp_path: Path) -> None:
    """Each version of the tool's code or settings writes a set of results of its own (tens
    of MB in a large project): the cache keeps the ``KEEP_RESULTS`` last written, over every
    version, and removes only what it writes, never through a symlink."""
    root = tmp_path / cache.CACHE_DIR_NAME
    base = 1_700_000_000 * 10**9
    sets = [
        _made(root / ("0.1.0" if n % 2 else "0.0.9") / f"{n:016x}", base + n * 10**9, True)
        for n in range(7)
    ]
    just_written = sets[0]  # (the oldest date: kept all the same)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "0.1.0" / "abcdefabcdefabcd").symlink_to(outside, target_is_directory=True)
    other = _made(root / "0.1.0" / "notes", base, True)
    record = _made(root / "0.1.0" / f"run-{'0' * 16}{cache.SUFFIX}", base, False)
    old_version = root / "0.0.8"
    old_version.mkdir()

    removed = cache.prune(root, False, just_written)

    kept = [p for p in sets if p.is_dir()]
    assert kept == [just_written, *sets[-(cache.KEEP_RESULTS - 1) :]]
    assert sorted(removed) == sorted(set(sets) - set(kept))
    assert outside.is_dir() and (root / "0.1.0" / "abcdefabcdefabcd").is_symlink()
    assert other.is_dir() and record.is_file()
    assert not old_version.exists()  # (a version directory left empty)


def test_only_the_last_run_records_written_are_kept(tmp_path: Path) -> None:
    root = tmp_path / cache.CACHE_DIR_NAME
    base = 1_700_000_000 * 10**9
    records = [
        _made(root / "0.1.0" / f"run-{n:016x}{cache.SUFFIX}", base + n * 10**9, False)
        for n in range(cache.KEEP_RECORDS + 3)
    ]
    results = _made(root / "0.1.0" / f"{1:016x}", base, True)
    removed = cache.prune(root, True, records[-1])
    assert sorted(removed) == records[:3]
    assert all(p.is_file() for p in records[3:]) and results.is_dir()


def test_a_new_set_of_results_prunes_the_older_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cache, "_KEY", None)
    project = tmp_path / "project"
    project.mkdir()
    path = project / "a.py"
    path.write_text("import torch\n", encoding="utf-8")
    file = SourceFile("a.py", path)
    info = path.stat()
    written = []
    for number in range(cache.KEEP_RESULTS + 2):
        stored = Cache(project, f"settings {number}")
        stored.store(file, FileResult("a.py", ()), (info.st_mtime_ns, info.st_size), "d")
        stored.save()
        # (Dated apart: sets written within one clock tick would be told apart by chance.)
        stamp = 1_700_000_000 * 10**9 + number * 10**9
        os.utime(stored.path, ns=(stamp, stamp))
        written.append(stored.path)
    assert [p.is_dir() for p in written] == [False, False] + [True] * cache.KEEP_RESULTS
    assert any("removed 1 older set(s) of results" in note for note in stored.notes)
    # Written again into a set that is there: nothing is looked at.
    again = Cache(project, f"settings {cache.KEEP_RESULTS + 1}")
    again.store(file, FileResult("a.py", ()), (info.st_mtime_ns, info.st_size), "e")
    again.save()
    assert not any("removed" in note for note in again.notes)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no process can be forked here")
def test_clean_waits_for_what_a_check_left_to_be_written(tmp_path: Path) -> None:
    """A cache that a check's process left behind is still writing (``launch.defer``) is
    removed once that writing is done: nothing it writes afterwards brings it back."""
    held = cache.writing(tmp_path)
    assert held is not None
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked writer
        try:
            import time

            time.sleep(0.5)
            # (As the cache writes: its directories made where they are missing.)
            directory = cache.safe_directory(tmp_path, (cache.CACHE_DIR_NAME,))
            (directory / "written-late").write_text("")
        finally:
            os._exit(0)
    os.close(held)  # (the writer keeps it)
    try:
        removed = cache.clean(tmp_path)
    finally:
        os.waitpid(pid, 0)
    assert removed == [tmp_path / cache.CACHE_DIR_NAME]
    assert not (tmp_path / cache.CACHE_DIR_NAME).exists()
