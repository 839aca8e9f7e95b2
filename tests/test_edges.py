"""Robust at the edges: special files, huge files, notebooks found by default, leftovers of an
interrupted --fix, progress on a terminal, and fixes in tab-indented files."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from repro_lint.cli import main

CONSOLE = Path(sys.executable).parent / "repro-lint"
HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\n"


def run(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def console(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The installed command in its own process, as a user runs it."""
    return subprocess.run(
        [str(CONSOLE), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def found(stdout: str) -> set[tuple[str, str]]:
    return {(d["filename"], d["code"]) for d in json.loads(stdout)}


# -- special files ------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_fifo_in_the_tree_never_hangs_the_run(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    os.mkfifo(tmp_path / "data.py")
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / "pipe.ipynb")
    result = console(tmp_path, ".", "--no-cache", "-v", "--output-format", "json", timeout=60)
    assert result.returncode == 1, result.stderr
    assert found(result.stdout) == {("train.py", "RPL201")}
    assert "skipped data.py: not a regular file (a FIFO)" in result.stderr
    assert "skipped sub/pipe.ipynb: not a regular file (a FIFO)" in result.stderr
    # Without -v the skip is silent, and the cached run answers the same.
    quiet = console(tmp_path, ".", "--output-format", "json", timeout=60)
    assert "FIFO" not in quiet.stderr and found(quiet.stdout) == {("train.py", "RPL201")}


def test_a_socket_in_the_tree_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "worker.py"))
    except OSError as exc:  # path too long for a socket on some systems
        pytest.skip(f"cannot bind a socket here: {exc}")
    try:
        result = console(tmp_path, ".", "--no-cache", "-v", "--output-format", "json")
    finally:
        server.close()
    assert found(result.stdout) == {("train.py", "RPL201")}
    assert "skipped worker.py: not a regular file (a socket)" in result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("name", ["data.py", "cells.ipynb"])
def test_a_special_file_named_on_the_command_line_is_rpl000(tmp_path: Path, name: str) -> None:
    os.mkfifo(tmp_path / name)
    result = console(tmp_path, name, "--no-cache", "--output-format", "json", timeout=60)
    [diagnostic] = json.loads(result.stdout)
    assert diagnostic["code"] == "RPL000"
    assert "not a regular file" in diagnostic["message"]
    devnull = console(tmp_path, "/dev/null", "--no-cache", "--output-format", "json")
    assert "not a regular file" in json.loads(devnull.stdout)[0]["message"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_fifo_where_settings_are_read_never_hangs(tmp_path: Path) -> None:
    """A .gitignore or a requirements file that is a named pipe is not read."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    os.mkfifo(tmp_path / ".gitignore")
    os.mkfifo(tmp_path / "requirements.txt")
    result = console(tmp_path, ".", "--no-cache", "--output-format", "json", timeout=60)
    assert found(result.stdout) == {("train.py", "RPL201")}


# -- huge files -------------------------------------------------------------------------------


def test_a_file_above_max_file_size_is_reported_and_never_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.repro-lint]\nmax-file-size = "2KB"\n', encoding="utf-8"
    )
    (tmp_path / "small.py").write_text(HAZARD, encoding="utf-8")
    # Not even valid Python: it would be RPL000 "SyntaxError" if it were parsed.
    (tmp_path / "table.py").write_text("x = (\n" + "1,\n" * 2000, encoding="utf-8")
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    diagnostics = {d["filename"]: d for d in json.loads(result.stdout)}
    assert diagnostics["small.py"]["code"] == "RPL201"
    big = diagnostics["table.py"]
    assert big["code"] == "RPL000"
    assert "too large" in big["message"] and "max-file-size" in big["message"]
    # Raised, it is parsed (and its syntax error found).
    (tmp_path / "pyproject.toml").write_text(
        '[tool.repro-lint]\nmax-file-size = "1MB"\n', encoding="utf-8"
    )
    raised = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    table = {d["filename"]: d for d in json.loads(raised.stdout)}["table.py"]
    assert table["code"] == "RPL000" and "too large" not in table["message"]


@pytest.mark.parametrize("value", ["0", "-1", '"lots"', '"3 GB and more"', "true"])
def test_a_bad_max_file_size_names_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.repro-lint]\nmax-file-size = {value}\n", encoding="utf-8"
    )
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    result = run(tmp_path, monkeypatch, ".", "--no-cache")
    assert result.exit_code == 2
    assert "max-file-size" in result.stderr


def test_the_default_size_limit_lints_ordinary_big_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """400 KB of code (bigger than any file of the benchmark corpus) is linted."""
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(14_500))
    assert len(body) > 400_000
    (tmp_path / "big.py").write_text(HAZARD + body, encoding="utf-8")
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    assert found(result.stdout) == {("big.py", "RPL201")}


# -- notebooks ----------------------------------------------------------------------------------


def notebook(source: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": source}
    return json.dumps(
        {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1
    )


def test_notebooks_are_found_in_a_directory_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "explore.ipynb").write_text(notebook(HAZARD), encoding="utf-8")
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    assert found(result.stdout) == {("explore.ipynb", "RPL201")}
    # `extend-exclude = ["*.ipynb"]` opts out, in the settings or on the command line.
    skipped = run(tmp_path, monkeypatch, ".", "--no-cache", "--extend-exclude", "*.ipynb")
    assert skipped.exit_code == 0
    assert "no Python files found" in skipped.stderr
    (tmp_path / "pyproject.toml").write_text(
        '[tool.repro-lint]\nextend-exclude = ["*.ipynb"]\n', encoding="utf-8"
    )
    assert run(tmp_path, monkeypatch, ".", "--no-cache").exit_code == 0


def test_include_flags_mirror_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "job.pyw").write_text(HAZARD, encoding="utf-8")
    default = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    assert found(default.stdout) == {("train.py", "RPL201")}
    extended = run(
        tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json",
        "--extend-include", "*.pyw",
    )  # fmt: skip
    assert found(extended.stdout) == {("train.py", "RPL201"), ("job.pyw", "RPL201")}
    only = run(
        tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json", "--include", "*.pyw"
    )
    assert found(only.stdout) == {("job.pyw", "RPL201")}


# -- leftovers of an interrupted --fix ----------------------------------------------------------


def test_stale_fix_temp_files_are_removed_by_a_later_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    # What a --fix killed between writing and renaming leaves: ours, an hour old.
    stale = tmp_path / ".train.py.4242.a1b2c3d4.repro-lint-tmp"
    stale.write_text("half a file", encoding="utf-8")
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    # Not ours: another tool's temporary file, and one of ours for a file not linted.
    theirs = tmp_path / ".train.py.swp"
    theirs.write_text("vim", encoding="utf-8")
    other = tmp_path / ".notes.txt.4242.a1b2c3d4.repro-lint-tmp"
    other.write_text("x", encoding="utf-8")
    os.utime(other, (hour_ago, hour_ago))
    # Ours, but younger than the run: a concurrent --fix may be about to rename it.
    fresh = tmp_path / f".train.py.{os.getpid()}.e5f6a7b8.repro-lint-tmp"
    fresh.write_text("being written", encoding="utf-8")
    os.utime(fresh, (time.time() + 60, time.time() + 60))
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "-v")
    assert not stale.exists()
    assert theirs.exists() and other.exists() and fresh.exists()
    assert "removed .train.py.4242.a1b2c3d4.repro-lint-tmp" in result.stderr


def test_fix_writes_through_a_recognisable_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temporary file --fix renames into place carries the file's name and ours."""
    (tmp_path / "train.py").write_text(HAZARD, encoding="utf-8")
    names: list[str] = []
    real = os.replace

    def spy(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        names.append(Path(source).name)
        real(source, target)

    monkeypatch.setattr(os, "replace", spy)
    assert run(tmp_path, monkeypatch, ".", "--no-cache", "--fix").exit_code == 0
    [name] = [n for n in names if n.startswith(".train.py.")]
    assert name.endswith(".repro-lint-tmp")


# -- progress ---------------------------------------------------------------------------------


def many_files(root: Path, count: int = 400) -> None:
    for index in range(count):
        (root / f"m{index:03}.py").write_text(
            "import torch\nimport numpy as np\n"
            + "".join(f"def f{j}(x):\n    return x.cumsum(0) + {j}\n" for j in range(60)),
            encoding="utf-8",
        )


def on_a_terminal(root: Path, *args: str) -> str:
    """Run the command with stderr on a pseudo-terminal; what appeared there."""
    main_fd, child_fd = pty.openpty()
    process = subprocess.Popen(
        [str(CONSOLE), *args], cwd=root, stdout=subprocess.DEVNULL, stderr=child_fd
    )
    os.close(child_fd)
    chunks = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main_fd], [], [], 1)
        if ready:
            try:
                data = os.read(main_fd, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    process.wait(timeout=60)
    os.close(main_fd)
    return b"".join(chunks).decode(errors="replace")


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    many_files(tmp_path)
    shown = on_a_terminal(tmp_path, ".", "--no-cache", "--jobs", "1")
    assert "\r" in shown and "files" in shown
    assert f"/{400} files" in shown
    # Not in machine formats, not under --quiet, not when stderr is not a terminal.
    assert "files" not in on_a_terminal(
        tmp_path, ".", "--no-cache", "--jobs", "1", "--output-format", "json"
    )
    assert "files" not in on_a_terminal(tmp_path, ".", "--no-cache", "--jobs", "1", "-q")
    piped = console(tmp_path, ".", "--no-cache", "--jobs", "1", timeout=300)
    assert "\r" not in piped.stderr


# -- tab indentation --------------------------------------------------------------------------


def test_inserted_code_follows_tab_indentation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fix that inserts a helper function (RPL301's worker seeding) writes its body with the
    file's own indentation unit: a tab-indented file stays tab-indented and still runs."""
    source = (
        "import numpy as np\n"
        "import torch\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        "\n"
        "\n"
        "class Noisy(Dataset):\n"
        "\tdef __init__(self):\n"
        "\t\tself.rng = np.random.default_rng(0)\n"
        "\n"
        "\tdef __len__(self):\n"
        "\t\treturn 8\n"
        "\n"
        "\tdef __getitem__(self, index):\n"
        "\t\treturn self.rng.random(3)\n"
        "\n"
        "\n"
        "def main():\n"
        "\tgenerator = torch.Generator()\n"
        "\tgenerator.manual_seed(0)\n"
        "\tloader = DataLoader(Noisy(), num_workers=2, generator=generator)\n"
        "\treturn loader\n"
    )
    path = tmp_path / "train.py"
    path.write_text(source, encoding="utf-8")
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--fix", "--select", "RPL301")
    fixed = path.read_text(encoding="utf-8")
    assert fixed != source, result.stdout
    compile(fixed, "train.py", "exec")
    indented = [line for line in fixed.splitlines() if line[:1] in (" ", "\t")]
    assert indented and all(line.startswith("\t") for line in indented), fixed


def test_inserted_code_follows_two_space_indentation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        "import numpy as np\n"
        "import torch\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        "\n"
        "\n"
        "class Noisy(Dataset):\n"
        "  def __init__(self):\n"
        "    self.rng = np.random.default_rng(0)\n"
        "\n"
        "  def __getitem__(self, index):\n"
        "    return self.rng.random(3)\n"
        "\n"
        "\n"
        "def main():\n"
        "  generator = torch.Generator()\n"
        "  generator.manual_seed(0)\n"
        "  loader = DataLoader(Noisy(), num_workers=2, generator=generator)\n"
        "  return loader\n"
    )
    path = tmp_path / "train.py"
    path.write_text(source, encoding="utf-8")
    run(tmp_path, monkeypatch, ".", "--no-cache", "--fix", "--select", "RPL301")
    fixed = path.read_text(encoding="utf-8")
    assert fixed != source
    compile(fixed, "train.py", "exec")
    for line in fixed.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0 and "\t" not in line[:indent]
        if line.startswith("    "):
            # Deeper levels are two more spaces each, as in the file.
            assert indent in (2, 4, 6)
