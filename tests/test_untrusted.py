"""Linting an untrusted tree never runs its code: a planted cache, hostile configuration,
hostile notebooks, planted modules and symlinks in the cache directory all stay data.

Each attack tries to create a marker file; the test fails if the marker appears, and checks
that the run still reports exactly what a clean run reports."""

from __future__ import annotations

import hashlib
import hmac
import json
import marshal
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repro_lint import __version__
from repro_lint.cache import CACHE_DIR_NAME, SUFFIX, settled

CONSOLE = Path(sys.executable).parent / "repro-lint"
HAZARDS = (
    "import torch\n"
    "torch.backends.cudnn.benchmark = True\n"
    "torch.use_deterministic_algorithms(False)\n"
)


class _Plant:
    """Unpickling this calls ``open(marker, "w")``: the file appears if the pickle is loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.marker, "w"))


def pickle_payload(marker: Path) -> bytes:
    return pickle.dumps({"x": _Plant(marker)})


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.repro-lint]\n", encoding="utf-8")
    (project / "train.py").write_text(HAZARDS, encoding="utf-8")
    (project / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (project / "pkg" / "model.py").write_text(HAZARDS, encoding="utf-8")
    return project


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """This user's environment, with the user cache (the sealing key) in a fresh place."""
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache")}


def lint(
    project: Path, env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user or CI runs it, in its own process; returned
    once the cache and run record it leaves a process of its own to write are written (as a
    next run waits for them: ``cache.settled``), since the tests look at them."""
    result = subprocess.run(
        [str(CONSOLE), "check", ".", "--output-format", "json", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    # As long as the run itself may take: on a loaded machine the writing can outlast the
    # 10 s a next run waits, and a test that rewrites the cache must not race it.
    settled(project, timeout)
    return result


def findings(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str, int]]:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result.stderr
    return sorted(
        (d["filename"], d["code"], d["location"]["row"]) for d in json.loads(result.stdout)
    )


def cache_files(project: Path) -> list[Path]:
    """Every file the cache keeps: the per-directory shards and the whole-run records."""
    found = sorted((project / CACHE_DIR_NAME).rglob(f"*{SUFFIX}"))
    assert found, "the first run wrote no cache"
    return found


def shards(project: Path) -> list[Path]:
    found = [path for path in cache_files(project) if not path.name.startswith("run-")]
    assert found, "the first run wrote no shard"
    return found


def records(project: Path) -> list[Path]:
    found = [path for path in cache_files(project) if path.name.startswith("run-")]
    assert found, "the run wrote no whole-run record"
    return found


def without_records(project: Path) -> None:
    """Remove the whole-run records: the next run reads the shards."""
    for path in (project / CACHE_DIR_NAME).rglob(f"run-*{SUFFIX}"):
        path.unlink()


def age(project: Path) -> None:
    """Date every file and directory of the tree an hour back: stamps that recent runs can
    trust on their own (a stamp within a second or two of a run is checked by content)."""
    past = os.stat(project).st_mtime - 3600
    for path in [project, *project.rglob("*")]:
        if CACHE_DIR_NAME not in path.parts:
            os.utime(path, (past, past), follow_symlinks=False)


def expected(project: Path, env: dict[str, str]) -> list[tuple[str, str, int]]:
    clean = lint(project, env, "--no-cache")
    result = findings(clean)
    assert len(result) == 4
    return result


# -- a planted cache ----------------------------------------------------------------------------


def test_planted_pickle_in_every_shard_never_runs(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The reproduction of the issue: a crafted pickle where the cache used to load one, and
    the same bytes under the new shard names, for every shard of the run."""
    want = expected(tree, env)
    findings(lint(tree, env))
    marker = tmp_path / "pwned"
    payload = pickle_payload(marker)
    for shard in cache_files(tree):
        shard.write_bytes(payload)
        shard.with_suffix(".pickle").write_bytes(payload)
    # Shards for other settings and versions, as a repository would commit them.
    for version in (__version__, "0.0.1"):
        folder = tree / CACHE_DIR_NAME / version / "0123456789abcdef"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "0123456789abcdef.pickle").write_bytes(payload)
        (folder / "0123456789abcdef.json").write_bytes(payload)
        (folder / f"0123456789abcdef{SUFFIX}").write_bytes(payload)
    result = lint(tree, env, "-v")
    assert not marker.exists(), "a planted pickle was executed"
    assert findings(result) == want
    assert "not a repro-lint cache file" in result.stderr
    assert "rebuilt" in result.stderr
    # The planted shards were replaced by sealed ones: the next run reuses them quietly.
    again = lint(tree, env, "-v")
    assert findings(again) == want
    assert "ignored" not in again.stderr


def test_forged_shard_cannot_hide_findings(tree: Path, env: dict[str, str]) -> None:
    """A shard in the new format, edited to report nothing: its seal no longer matches."""
    want = expected(tree, env)
    findings(lint(tree, env))
    for shard in shards(tree):
        header, _, payload = shard.read_bytes().partition(b"\n")
        data = marshal.loads(payload)
        for entry in data["entries"].values():
            entry["result"]["diagnostics"] = []
        shard.write_bytes(header + b"\n" + marshal.dumps(data, 4))
    without_records(tree)
    result = lint(tree, env, "-v")
    assert findings(result) == want
    assert "seal does not match" in result.stderr


def test_shard_from_another_user_is_not_trusted(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A correctly sealed shard, but sealed with someone else's key (e.g. committed by the
    repository's author): not trusted."""
    want = expected(tree, env)
    other = {**env, "XDG_CACHE_HOME": str(tmp_path / "someone-else")}
    findings(lint(tree, other))
    for shard in shards(tree):
        header, _, payload = shard.read_bytes().partition(b"\n")
        data = marshal.loads(payload)
        for entry in data["entries"].values():
            entry["result"]["diagnostics"] = []
        forged = marshal.dumps(data, 4)
        # Sealed properly, with the other user's key.
        key = (tmp_path / "someone-else" / "repro-lint" / "cache-key").read_bytes().strip()
        seal = hmac.new(key, forged, hashlib.sha256).hexdigest().encode()
        shard.write_bytes(b" ".join([*header.split(b" ")[:2], seal]) + b"\n" + forged)
    # The forger's own repro-lint believes it (that is what the seal is for) ...
    without_records(tree)
    assert json.loads(lint(tree, other).stdout) == []
    # ... but nobody else's does.
    without_records(tree)
    result = lint(tree, env, "-v")
    assert findings(result) == want
    assert "seal does not match" in result.stderr


# -- a planted whole-run record ------------------------------------------------------------------


def answered_from_record(result: subprocess.CompletedProcess[str]) -> bool:
    return "answered from the run record" in result.stderr


def test_the_whole_run_record_answers_an_unchanged_run(tree: Path, env: dict[str, str]) -> None:
    """The premise of the tests below: an unchanged tree is answered from its record."""
    want = expected(tree, env)
    age(tree)
    findings(lint(tree, env))
    result = lint(tree, env, "-v")
    assert answered_from_record(result)
    assert findings(result) == want


def test_forged_whole_run_record_cannot_hide_findings(tree: Path, env: dict[str, str]) -> None:
    """A whole-run record edited to report nothing (the seal kept): it fails the seal."""
    want = expected(tree, env)
    age(tree)
    findings(lint(tree, env))
    for record in records(tree):
        header, _, payload = record.read_bytes().partition(b"\n")
        data = marshal.loads(payload)
        assert data["results"], "the record holds the findings"
        data["results"] = []
        record.write_bytes(header + b"\n" + marshal.dumps(data, 4))
    result = lint(tree, env, "-v")
    assert not answered_from_record(result)
    assert findings(result) == want
    assert "seal does not match" in result.stderr
    # Rebuilt: the next run is answered from a genuine record.
    again = lint(tree, env, "-v")
    assert answered_from_record(again) and findings(again) == want


def test_whole_run_record_of_another_user_is_not_trusted(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A record sealed properly with someone else's key, claiming the tree is clean and that
    every file is unchanged: this user's repro-lint checks it with its own key."""
    want = expected(tree, env)
    age(tree)
    other = {**env, "XDG_CACHE_HOME": str(tmp_path / "someone-else")}
    findings(lint(tree, other))
    key = (tmp_path / "someone-else" / "repro-lint" / "cache-key").read_bytes().strip()
    for record in records(tree):
        header, _, payload = record.read_bytes().partition(b"\n")
        data = marshal.loads(payload)
        data["results"] = []
        forged = marshal.dumps(data, 4)
        seal = hmac.new(key, forged, hashlib.sha256).hexdigest().encode()
        record.write_bytes(b" ".join([*header.split(b" ")[:2], seal]) + b"\n" + forged)
    assert json.loads(lint(tree, other).stdout) == []
    result = lint(tree, env, "-v")
    assert not answered_from_record(result)
    assert findings(result) == want
    assert "seal does not match" in result.stderr


@pytest.mark.parametrize(
    "change",
    [
        "a result for another file",
        "a stamp that is not a number",
        "a size that is a boolean",
        "a finding whose code is a number",
        "another run's key",
    ],
)
def test_whole_run_record_is_checked_field_by_field(
    tree: Path, env: dict[str, str], change: str
) -> None:
    """A record sealed with this user's key (as if repro-lint had a bug, or the key leaked)
    but with fields of the wrong shape is still refused, never half-used."""
    from repro_lint.cache import read_sealed, write_sealed

    want = expected(tree, env)
    age(tree)
    findings(lint(tree, {**env}))
    home = Path(env["XDG_CACHE_HOME"]) / "repro-lint"
    secret = (home / "cache-key").read_bytes().strip()
    for record in records(tree):
        data = read_sealed(record, secret)
        if change == "a result for another file":
            data["results"][0][0] = "../../etc/passwd"
        elif change == "a stamp that is not a number":
            data["files"][0][2] = "now"
        elif change == "a size that is a boolean":
            data["files"][0][3] = True
        elif change == "a finding whose code is a number":
            data["kinds"][data["results"][0][1][0][0]][0] = 101
        else:
            data["key"] = "0" * 64
        write_sealed(record.parent, record.name, data, secret)
    result = lint(tree, env, "-v")
    assert not answered_from_record(result)
    assert findings(result) == want
    assert "ignored" in result.stderr


def hostile_shards(project: Path) -> Iterator[tuple[str, bytes]]:
    shard = shards(project)[0]
    header, _, payload = shard.read_bytes().partition(b"\n")
    magic, _schema, seal = header.split(b" ")
    yield "truncated", shard.read_bytes()[: len(shard.read_bytes()) // 2]
    yield "empty", b""
    yield "binary", bytes(range(256)) * 64
    yield "another schema", b" ".join([magic, b"999", seal]) + b"\n" + payload
    yield "deep nesting", header + b"\n" + b"[" * 200_000 + b"]" * 200_000
    yield "wrong types", header + b"\n" + marshal.dumps({"entries": [1, 2, 3]}, 4)
    yield "huge number", header + b"\n" + b"1" * 100_000


@pytest.mark.parametrize(
    "case",
    [
        "truncated",
        "empty",
        "binary",
        "another schema",
        "deep nesting",
        "wrong types",
        "huge number",
    ],
)
def test_invalid_shards_are_ignored_and_rebuilt(tree: Path, env: dict[str, str], case: str) -> None:
    want = expected(tree, env)
    findings(lint(tree, env))
    data = dict(hostile_shards(tree))[case]
    for shard in cache_files(tree):
        shard.write_bytes(data)
    result = lint(tree, env, "-v")
    assert findings(result) == want
    assert "ignored" in result.stderr and "rebuilt" in result.stderr
    assert "ignored" not in lint(tree, env, "-v").stderr


def test_a_fifo_shard_never_blocks(tree: Path, env: dict[str, str]) -> None:
    want = expected(tree, env)
    findings(lint(tree, env))
    for shard in cache_files(tree):
        shard.unlink()
        os.mkfifo(shard)
    result = lint(tree, env, "-v", timeout=60)
    assert findings(result) == want


@pytest.mark.parametrize("planted", ["fifo", "symlink", "directory"])
def test_a_planted_lock_file_never_blocks_nor_is_followed(
    tree: Path, env: dict[str, str], planted: str
) -> None:
    """The lock a check's writing holds (``cache.writing``): a FIFO, a symlink or a
    directory planted in its place is not waited on, opened through or written; the runs
    write their cache themselves."""
    want = expected(tree, env)
    lock = tree / CACHE_DIR_NAME / "run.lock"
    lock.parent.mkdir(exist_ok=True)
    outside = tree.parent / "outside"
    if planted == "fifo":
        os.mkfifo(lock)
    elif planted == "symlink":
        lock.symlink_to(outside)
    else:
        lock.mkdir()
    for _ in range(2):
        result = lint(tree, env, timeout=60)
        assert findings(result) == want
    assert answered_from_record(lint(tree, env, "-v", timeout=60))
    assert not outside.exists()


def test_planted_user_modules_are_never_imported(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Modules in the linted tree that shadow what the linter imports, a setup.py and a
    conftest.py: none of them runs, with `check`, `--fix`, `python -m repro_lint` or
    `verify PATHS` (which imports torch, but never the tree's)."""
    marker = tmp_path / "pwned"
    plant = f"open({str(marker)!r}, 'w').close()\n"
    for name in ("libcst", "click", "torch", "numpy", "pathspec", "packaging"):
        (tree / name).mkdir()
        (tree / name / "__init__.py").write_text(plant, encoding="utf-8")
    for name in ("setup.py", "conftest.py", "sitecustomize.py", "usercustomize.py"):
        (tree / name).write_text(plant, encoding="utf-8")
    (tree / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["torch>=2.1"]\n[tool.repro-lint]\n',
        encoding="utf-8",
    )
    assert lint(tree, env).returncode == 1
    assert lint(tree, env, "--fix", "--unsafe-fixes").returncode in (0, 1)
    module = subprocess.run(
        [sys.executable, "-m", "repro_lint", "check", ".", "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in module.stderr and module.returncode in (0, 1)
    assert not marker.exists(), "code from the linted tree ran"


@pytest.mark.torch
def test_verify_paths_never_imports_the_tree(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    (tree / "torch").mkdir()
    (tree / "torch" / "__init__.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8"
    )
    (tree / "train.py").write_text(
        "import torch\nx = torch.zeros(3)\nx.index_add_(0, torch.tensor([0]), torch.ones(1))\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [str(CONSOLE), "verify", ".", "--device", "cpu", "--runs", "2"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in result.stderr
    assert not marker.exists(), "verify imported the tree's torch"


# -- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("seed", "\"__import__('os').system('touch {marker}')\""),
        ("target-torch", "\"__import__('os').system('touch {marker}')\""),
        ("output-format", "\"__import__('os').system('touch {marker}')\""),
        ("plugins", '["evil"]'),
        ("extend-plugins", '["evil"]'),
    ],
)
def test_config_values_are_never_evaluated(
    tree: Path, env: dict[str, str], tmp_path: Path, key: str, value: str
) -> None:
    marker = tmp_path / "pwned"
    (tree / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    (tree / "pyproject.toml").write_text(
        f"[tool.repro-lint]\n{key} = {value.format(marker=marker)}\n", encoding="utf-8"
    )
    result = lint(tree, env)
    assert result.returncode == 2
    assert key in result.stderr
    assert "Traceback" not in result.stderr
    assert not marker.exists()


def test_names_in_config_are_only_names(tree: Path, env: dict[str, str], tmp_path: Path) -> None:
    """Seed functions and entry-point patterns name code; they are matched, never imported."""
    marker = tmp_path / "pwned"
    (tree / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').close()\ndef seed_all(): pass\n", encoding="utf-8"
    )
    (tree / "pyproject.toml").write_text(
        '[tool.repro-lint]\nseed-functions = ["evil.seed_all"]\nentry-points = ["evil.py"]\n',
        encoding="utf-8",
    )
    assert lint(tree, env).returncode == 1
    assert not marker.exists()


# -- notebooks --------------------------------------------------------------------------------


def hostile_notebook(marker: Path) -> dict[str, Any]:
    run_me = f"open({str(marker)!r}, 'w').close()\n"
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "__class__": {"py/object": "os.system", "args": [f"touch {marker}"]},
            "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {"x": run_me}}},
        },
        "cells": [
            {
                "cell_type": "code",
                "id": "a",
                "metadata": {"tags": ["__import__('os')"]},
                "execution_count": 1,
                "source": [run_me, "import torch\n", "torch.backends.cudnn.benchmark = True\n"],
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {
                            "application/javascript": "require('child_process').exec('x')",
                            "text/html": "<script>alert(1)</script>",
                        },
                    }
                ],
            },
            {
                "cell_type": "code",
                "id": "b",
                "metadata": {},
                "execution_count": None,
                "source": f"%run {marker}\n!touch {marker}\nget_ipython().system('x')\n",
                "outputs": [],
            },
            {"cell_type": "raw", "id": "c", "metadata": {}, "source": run_me},
            {"cell_type": "markdown", "id": "d", "metadata": {}, "source": run_me},
        ],
    }


def test_hostile_notebook_stays_data(tree: Path, env: dict[str, str], tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    notebook = tree / "explore.ipynb"
    content = hostile_notebook(marker)
    notebook.write_text(json.dumps(content, indent=1), encoding="utf-8")
    checked = subprocess.run(
        [str(CONSOLE), "check", "explore.ipynb", "--output-format", "json"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in checked.stderr
    assert [d["code"] for d in json.loads(checked.stdout)] == ["RPL201"]
    fixed = subprocess.run(
        [str(CONSOLE), "check", "explore.ipynb", "--fix"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in fixed.stderr
    after = json.loads(notebook.read_text(encoding="utf-8"))
    # The fix touched the one source line; every output and all metadata are as they were.
    assert after["metadata"] == content["metadata"]
    assert after["cells"][0]["outputs"] == content["cells"][0]["outputs"]
    assert "".join(after["cells"][0]["source"]).endswith("benchmark = False\n")
    assert after["cells"][1:] == content["cells"][1:]
    assert not marker.exists()


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"cells": [{"cell_type": "code", "source": [1, 2, {"x": 3}]}]}',
        '{"cells": "import os"}',
        '{"cells": [{"cell_type": "code", "source": "x = 1"}, 42]}',
    ],
    ids=["deep", "non-string source", "cells not a list", "cell not an object"],
)
def test_malformed_notebooks_are_rpl000(tree: Path, env: dict[str, str], text: str) -> None:
    (tree / "bad.ipynb").write_text(text, encoding="utf-8")
    result = subprocess.run(
        [str(CONSOLE), "check", "bad.ipynb", "--output-format", "json", "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr
    assert result.returncode == 1
    assert [d["code"] for d in json.loads(result.stdout)] == ["RPL000"]


# -- symlinks in the cache directory ----------------------------------------------------------


def test_symlinked_cache_directory_is_not_written_through(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / CACHE_DIR_NAME).symlink_to(outside, target_is_directory=True)
    result = lint(tree, env, "-v")
    findings(result)
    assert list(outside.iterdir()) == []
    assert "not written" in result.stderr
    # `clean` removes the link, not what it points to.
    (outside / "keep.txt").write_text("mine", encoding="utf-8")
    subprocess.run([str(CONSOLE), "clean"], cwd=tree, env=env, check=True, timeout=60)
    assert not (tree / CACHE_DIR_NAME).exists()
    assert (outside / "keep.txt").read_text(encoding="utf-8") == "mine"


def test_symlinked_version_folder_is_not_written_through(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / CACHE_DIR_NAME).mkdir()
    (tree / CACHE_DIR_NAME / __version__).symlink_to(outside, target_is_directory=True)
    findings(lint(tree, env))
    assert list(outside.iterdir()) == []


def test_symlinked_files_in_the_cache_are_replaced_not_followed(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    findings(lint(tree, env))
    victims = []
    for index, path in enumerate(
        [
            tree / CACHE_DIR_NAME / "CACHEDIR.TAG",
            tree / CACHE_DIR_NAME / ".gitignore",
            *cache_files(tree),
        ]
    ):
        victim = tmp_path / f"victim-{index}"
        victim.write_text("precious", encoding="utf-8")
        path.unlink()
        path.symlink_to(victim)
        victims.append(victim)
    # A changed file makes the run write its shard again.
    (tree / "train.py").write_text(HAZARDS + "x = 1\n", encoding="utf-8")
    (tree / "pkg" / "model.py").write_text(HAZARDS + "y = 2\n", encoding="utf-8")
    findings(lint(tree, env))
    for victim in victims:
        assert victim.read_text(encoding="utf-8") == "precious"


def test_symlinked_user_key_is_refused(tree: Path, env: dict[str, str], tmp_path: Path) -> None:
    """The sealing key is this user's own regular file; a link to something else is refused,
    and then nothing is reused or trusted."""
    home = Path(env["XDG_CACHE_HOME"]) / "repro-lint"
    home.mkdir(parents=True)
    elsewhere = tmp_path / "key-elsewhere"
    elsewhere.write_text("k" * 64, encoding="utf-8")
    (home / "cache-key").symlink_to(elsewhere)
    result = lint(tree, env, "-v")
    findings(result)
    assert "cache key unusable" in result.stderr
    assert not (tree / CACHE_DIR_NAME).exists() or not list(
        (tree / CACHE_DIR_NAME).rglob(f"*{SUFFIX}")
    )


def test_clean_cache_survives_a_copied_tree(
    tree: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A tree copied with its cache (as a checkout of a repository that committed one) still
    gives the same findings, read from its own files."""
    findings(lint(tree, env))
    copy = tmp_path / "copy"
    shutil.copytree(tree, copy, symlinks=True)
    (copy / "train.py").write_text("import torch\n", encoding="utf-8")
    result = lint(copy, env)
    # File names are absolute (as ruff's): the copy's own files.
    names = {Path(name).relative_to(copy).as_posix() for name, _, _ in findings(result)}
    assert sorted(names) == ["pkg/model.py"]
