"""Hostile inputs: deep nesting, huge files, odd encodings and line endings, symlink loops,
unreadable or vanishing files. Each gets a diagnostic or a warning, never a traceback or a crash,
and the other files are still checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from projects import relative_json

import repro_lint.engine
import repro_lint.files
import repro_lint.run_cache
from repro_lint.cli import main
from repro_lint.config import Config
from repro_lint.engine import fix_source, lint_source
from repro_lint.settings import Settings

HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\n"
FIXED = HAZARD.replace("True", "False")
CUBLAS = "import torch\ntorch.use_deterministic_algorithms(True)\n"
SETTINGS = Settings.from_config(Config())


def run(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)


def findings(result: Result) -> set[tuple[str, str, int]]:
    return {(d["filename"], d["code"], d["location"]["row"]) for d in relative_json(result.stdout)}


def run_process(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command in its own process: a crash there cannot take pytest down with it."""
    return subprocess.run(
        [sys.executable, "-m", "repro_lint", "check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_clean_exit(result: subprocess.CompletedProcess[str], status: int) -> None:
    assert "Traceback" not in result.stderr
    assert result.returncode == status, result.stderr


# -- nesting and size ---------------------------------------------------------------------------

CHAINS: dict[str, Callable[[int], str]] = {
    "operators": lambda n: "+".join(["1"] * n),
    "attributes": lambda n: "a" + ".b" * n,
    "calls": lambda n: "f" + "()" * n,
    "lambdas": lambda n: "lambda: " * n + "1",
    "conditionals": lambda n: "1 if c else " * n + "1",
}


@pytest.mark.parametrize("shape", sorted(CHAINS))
def test_nesting_python_accepts_is_analysed(shape: str) -> None:
    # A few hundred levels are within what Python compiles; the tree walk must not give up.
    source = f"import torch\nx = {CHAINS[shape](700)}\ntorch.use_deterministic_algorithms(True)\n"
    result = lint_source(source)
    assert [(d.code, d.location.row) for d in result.diagnostics] == [("RPL204", 3)]
    fixed = fix_source(source, SETTINGS)
    assert fixed.changed
    compile(fixed.text, "fixed.py", "exec")
    # The variable is set where deterministic mode is enabled; the long line is kept.
    assert source.split("\n")[1] in fixed.text
    assert fixed.text.endswith(
        'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
        "torch.use_deterministic_algorithms(True)\n"
    )


def test_deep_finding_inside_a_deep_statement_is_positioned_and_fixed() -> None:
    source = "import torch\nx = [torch.backends.cudnn.flags(benchmark=True)] + " + "+".join(
        ["[1]"] * 700
    )
    result = lint_source(source + "\n")
    assert [(d.code, d.location.row, d.location.column) for d in result.diagnostics] == [
        ("RPL201", 2, 33)
    ]
    assert fix_source(source + "\n", SETTINGS).text == source.replace("True", "False") + "\n"


@pytest.mark.parametrize("shape", ["operators", "attributes", "calls"])
def test_nesting_beyond_python_limits_is_rpl000_not_a_crash(tmp_path: Path, shape: str) -> None:
    # libcst's native parser overflows the C stack on these (the process dies by SIGSEGV);
    # they must become RPL000 while the neighbouring files are still checked, also in workers.
    (tmp_path / "deep.py").write_text(
        f"import torch\nx = {CHAINS[shape](30_000)}\ntorch.backends.cudnn.benchmark = True\n",
        encoding="utf-8",
    )
    for index in range(20):
        (tmp_path / f"m{index:02}.py").write_text(HAZARD, encoding="utf-8")
    for jobs in ("1", "2"):
        result = run_process(tmp_path, ".", "--no-cache", "--output-format", "json", "-j", jobs)
        assert_clean_exit(result, 1)
        found = {(d["filename"], d["code"]) for d in relative_json(result.stdout, tmp_path)}
        assert ("deep.py", "RPL000") in found
        assert ("deep.py", "RPL201") not in found
        assert {name for name, code in found if code == "RPL201"} == {
            f"m{index:02}.py" for index in range(20)
        }


def test_nesting_limit_leaves_the_recursion_limit_as_it_was() -> None:
    before = sys.getrecursionlimit()
    lint_source(f"import torch\nx = {CHAINS['operators'](700)}\n{HAZARD}")
    assert sys.getrecursionlimit() == before


def test_huge_file_reports_the_right_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    filler = "".join(f"value_{i} = [{i}, 'x' * {i % 7}]  # filler\n" for i in range(40_000))
    source = HAZARD + filler + "torch.backends.cudnn.benchmark = True\n"
    (tmp_path / "huge.py").write_text(source, encoding="utf-8")
    # 1.6 MB: above the default size guard, which this test is not about.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.repro-lint]\nmax-file-size = "4MB"\n', encoding="utf-8"
    )
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    assert result.exit_code == 1
    assert findings(result) == {("huge.py", "RPL201", 2), ("huge.py", "RPL201", 40_003)}


def test_large_file_is_fixed_without_losing_a_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    filler = "".join(f"value_{i} = [{i}, 'x' * {i % 7}]  # filler\n" for i in range(8_000))
    source = CUBLAS + filler + "torch.backends.cudnn.benchmark = True\n"
    (tmp_path / "large.py").write_text(source, encoding="utf-8")
    assert run(tmp_path, monkeypatch, ".", "--no-cache", "--fix").exit_code == 0
    expected = "import os\n\n" + source.replace("= True", "= False").replace(
        "torch.use_deterministic_algorithms",
        '\nos.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
        "torch.use_deterministic_algorithms",
    )
    assert (tmp_path / "large.py").read_text(encoding="utf-8") == expected


# -- encodings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "row", "column"),
    [
        (b"import torch\n# caf\xe9\ntorch.backends.cudnn.benchmark = True\n", 2, 6),
        (b"\xff\xfei\x00m\x00p\x00o\x00r\x00t\x00", 1, 1),
        (b"# -*- coding: klingon -*-\n" + HAZARD.encode(), 1, 1),
        (b"\xef\xbb\xbf# coding: latin-1\n" + HAZARD.encode(), 1, 1),
        (b"import torch\nx = '\xc3'\ntorch.backends.cudnn.benchmark = True\n", 2, 6),
    ],
    ids=["latin1-without-cookie", "utf16", "unknown-cookie", "bom-and-cookie", "truncated-utf8"],
)
def test_undecodable_file_is_rpl000_at_the_bad_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, row: int, column: int
) -> None:
    (tmp_path / "bad.py").write_bytes(data)
    (tmp_path / "good.py").write_text(HAZARD, encoding="utf-8")
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    assert result.exit_code == 1
    diagnostics = relative_json(result.stdout)
    assert [(d["filename"], d["code"]) for d in diagnostics] == [
        ("bad.py", "RPL000"),
        ("good.py", "RPL201"),
    ]
    assert (diagnostics[0]["location"]["row"], diagnostics[0]["location"]["column"]) == (
        row,
        column,
    )
    fixed = run(tmp_path, monkeypatch, ".", "--no-cache", "--fix")
    assert fixed.exit_code == 1
    assert (tmp_path / "bad.py").read_bytes() == data
    assert (tmp_path / "good.py").read_text(encoding="utf-8") == FIXED


def test_cp1252_file_is_fixed_in_cp1252(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (
        "# coding: cp1252\nimport torch\nquote = '“€”'\ntorch.backends.cudnn.benchmark = True\n"
    )
    (tmp_path / "t.py").write_bytes(source.encode("cp1252"))
    assert run(tmp_path, monkeypatch, ".", "--no-cache", "--fix").exit_code == 0
    assert (tmp_path / "t.py").read_bytes() == source.replace("True", "False").encode("cp1252")


# -- line endings and form feeds ------------------------------------------------------------------

ENDINGS = {
    "cr": (
        b"import torch\rx = 1\rtorch.backends.cudnn.benchmark = True\r",
        [("RPL201", 3, 1)],
        b"import torch\rx = 1\rtorch.backends.cudnn.benchmark = False\r",
    ),
    "mixed": (
        b"import torch\r\nx = 1\ny = 2\rtorch.backends.cudnn.benchmark = True\r\n",
        [("RPL201", 4, 1)],
        b"import torch\r\nx = 1\ny = 2\rtorch.backends.cudnn.benchmark = False\r\n",
    ),
    "form-feeds": (
        b"\x0cimport torch\n\x0c\n\x0c# section\ndef f():\n    torch.backends.cudnn.benchmark = True\n",
        [("RPL201", 5, 5)],
        b"\x0cimport torch\n\x0c\n\x0c# section\ndef f():\n    torch.backends.cudnn.benchmark = False\n",
    ),
    "no-final-newline": (
        b"import torch\ntorch.use_deterministic_algorithms(True)",
        [("RPL204", 2, 1)],
        b'import os\n\nimport torch\n\nos.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
        b"torch.use_deterministic_algorithms(True)",
    ),
    "cr-insertion": (
        b"import torch\rtorch.use_deterministic_algorithms(True)\r",
        [("RPL204", 2, 1)],
        b'import os\r\rimport torch\r\ros.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\r'
        b"torch.use_deterministic_algorithms(True)\r",
    ),
    # libcst keeps a lone backslash line and the blank line after it as one header line.
    "backslash-before-blank-line": (
        b"\n\\\r\n\nimport torch\ntorch.backends.cudnn.benchmark = True\n",
        [("RPL201", 5, 1)],
        b"\n\\\r\n\nimport torch\ntorch.backends.cudnn.benchmark = False\n",
    ),
    "continuation": (
        b"import torch\ntorch.backends.cudnn.benchmark = \\\r\n    True\r\n",
        [("RPL201", 2, 1)],
        b"import torch\ntorch.backends.cudnn.benchmark = \\\r\n    False\r\n",
    ),
}


@pytest.mark.parametrize("case", sorted(ENDINGS))
def test_line_endings_and_form_feeds_keep_positions_and_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    data, expected, fixed = ENDINGS[case]
    path = tmp_path / "t.py"
    path.write_bytes(data)
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    got = [
        (d["code"], d["location"]["row"], d["location"]["column"])
        for d in json.loads(result.stdout)
    ]
    assert got == expected
    assert (
        run(tmp_path, monkeypatch, ".", "--no-cache", "--fix", "--target-torch", "2.1").exit_code
        == 0
    )
    assert path.read_bytes() == fixed


@pytest.mark.parametrize(
    ("data", "row"),
    [
        (b"import torch\nx = 1\n\\\r\ntorch.backends.cudnn.benchmark = True\n", 3),
        (b"import torch\n\x0ctorch.backends.cudnn.benchmark = True\n", 2),
        (b"import torch\nif 1:\n    x = 1\n\x0c    torch.backends.cudnn.benchmark = True\n", 4),
    ],
    ids=["lone-backslash", "form-feed", "indented-form-feed"],
)
def test_lines_libcst_cannot_reproduce_are_rpl000_never_corrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, row: int
) -> None:
    # libcst drops a line holding only a backslash continuation (later rows shifted) and a form
    # feed that starts a line (columns shifted): --fix wrote "torch.backends.cudnnFalsechmark"
    # and "benchmark =Falsee".
    (tmp_path / "t.py").write_bytes(data)
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    got = [(d["code"], d["location"]["row"]) for d in json.loads(result.stdout)]
    assert got == [("RPL000", row)]
    assert run(tmp_path, monkeypatch, ".", "--no-cache", "--fix").exit_code == 1
    assert (tmp_path / "t.py").read_bytes() == data


# -- the file system --------------------------------------------------------------------------------


def test_symlink_loops_end_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "pkg" / "again").symlink_to(tmp_path)
    (tmp_path / "pkg" / "self.py").symlink_to(tmp_path / "pkg" / "self.py")
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
    assert result.exit_code == 1
    assert "symlink loop" in result.stderr
    assert findings(result) == {
        ("a.py", "RPL000", 1),
        ("b.py", "RPL000", 1),
        ("pkg/self.py", "RPL000", 1),
        ("pkg/train.py", "RPL201", 2),
    }
    assert run(tmp_path, monkeypatch, ".", "--fix").exit_code == 1
    assert (tmp_path / "pkg" / "train.py").read_text(encoding="utf-8") == FIXED
    assert (tmp_path / "a.py").is_symlink() and (tmp_path / "pkg" / "self.py").is_symlink()


root_reads_anything = pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file or directory"
)


@root_reads_anything
def test_unreadable_directory_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "hidden.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "secret.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "good.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "locked").chmod(0)
    (tmp_path / "secret.py").chmod(0)
    try:
        result = run(tmp_path, monkeypatch, ".", "--output-format", "json")
        fixed = run(tmp_path, monkeypatch, ".", "--fix")
    finally:
        (tmp_path / "locked").chmod(0o755)
        (tmp_path / "secret.py").chmod(0o644)
    assert result.exit_code == 1
    assert "cannot read directory locked" in result.stderr
    assert findings(result) == {("good.py", "RPL201", 2), ("secret.py", "RPL000", 1)}
    assert fixed.exit_code == 1
    assert (tmp_path / "secret.py").read_text(encoding="utf-8") == HAZARD
    assert (tmp_path / "good.py").read_text(encoding="utf-8") == FIXED


def _deleting_after(real: Callable[..., Any], victims: Sequence[Path]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        value = real(*args, **kwargs)
        for victim in victims:
            victim.unlink()
        return value

    return wrapped


@pytest.mark.parametrize("count", [3, 40], ids=["serial", "pool"])
@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_file_deleted_between_discovery_and_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int, cache: bool
) -> None:
    for index in range(count):
        (tmp_path / f"m{index:02}.py").write_text(HAZARD, encoding="utf-8")
    if cache:
        assert run(tmp_path, monkeypatch, ".").exit_code == 1
        # A changed file: the run is not answered from its record (which reads nothing).
        with (tmp_path / "m00.py").open("a", encoding="utf-8") as handle:
            handle.write("# changed\n")
    gone = tmp_path / "m01.py"
    monkeypatch.setattr(
        repro_lint.files, "discover", _deleting_after(repro_lint.files.discover, [gone])
    )
    # With a whole-run record, its list of files stands in for discovery.
    monkeypatch.setattr(
        repro_lint.run_cache.RunRecord,
        "discovery",
        _deleting_after(repro_lint.run_cache.RunRecord.discovery, [gone]),
    )
    args = [".", "--output-format", "json", "--jobs", "2"] + ([] if cache else ["--no-cache"])
    result = run(tmp_path, monkeypatch, *args)
    assert result.exit_code == 1
    expected = {(f"m{i:02}.py", "RPL201", 2) for i in range(count) if i != 1}
    assert findings(result) == expected | {("m01.py", "RPL000", 1)}
    assert not gone.exists()


def test_file_deleted_between_linting_and_fixing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gone.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "kept.py").write_text(HAZARD, encoding="utf-8")
    monkeypatch.setattr(
        repro_lint.engine,
        "lint_run",
        _deleting_after(repro_lint.engine.lint_run, [tmp_path / "gone.py"]),
    )
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--fix", "--output-format", "json")
    assert "Traceback" not in result.stderr
    assert "gone.py" in result.stderr
    assert result.exit_code == 1
    assert not (tmp_path / "gone.py").exists()
    assert (tmp_path / "kept.py").read_text(encoding="utf-8") == FIXED
    assert findings(result) == {("gone.py", "RPL201", 2)}


def test_file_deleted_while_fixes_are_computed_is_not_recreated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import repro_lint.fixes

    (tmp_path / "gone.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "kept.py").write_text(HAZARD, encoding="utf-8")
    monkeypatch.setattr(
        repro_lint.fixes,
        "fix_texts",
        _deleting_after(repro_lint.fixes.fix_texts, [tmp_path / "gone.py"]),
    )
    result = run(tmp_path, monkeypatch, ".", "--no-cache", "--fix", "--output-format", "json")
    assert "Traceback" not in result.stderr
    assert "gone.py" in result.stderr
    assert result.exit_code == 1
    assert sorted(os.listdir(tmp_path)) == ["kept.py"]
    assert (tmp_path / "kept.py").read_text(encoding="utf-8") == FIXED


# -- partial trees ------------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_relative_import_outside_a_package_is_analysed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """A directory without ``__init__.py`` (scripts, a namespace package, a tree copied in
    part) whose module subclasses a name it imports relatively: the name has no package to
    be relative to, so it is a bare name without a dot. Its class was judged as data code
    by splitting the name at its last dot, and the whole run failed with an IndexError."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "helpers.py").write_text(
        "import torch\nfrom . import Base\n\n\nclass Data(Base):\n    pass\n\n\n"
        'if __name__ == "__main__":\n    torch.backends.cudnn.benchmark = True\n',
        encoding="utf-8",
    )
    result = run(
        tmp_path, monkeypatch, ".", "--no-cache", "--jobs", jobs, "--output-format", "json"
    )
    assert result.exit_code == 1
    assert {(name, code) for name, code, _ in findings(result)} >= {("tools/helpers.py", "RPL201")}


# -- defects ------------------------------------------------------------------------------------


def _failing_on(marker: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """RPL201's assignment hook, made to raise on a file that mentions ``marker`` (a defect
    met on one file); the texts it ran on are listed."""
    from repro_lint.rules.cudnn_benchmark_enabled import CudnnBenchmarkEnabled

    real = CudnnBenchmarkEnabled.visit_Assign
    seen: list[str] = []

    def visit_Assign(self: CudnnBenchmarkEnabled, node: Any) -> None:
        text = self.context.module.code
        seen.append(text)
        if marker in text:
            raise ValueError(f"cannot judge {marker}\nsecond line")
        real(self, node)

    monkeypatch.setattr(CudnnBenchmarkEnabled, "visit_Assign", visit_Assign)
    return seen


def test_a_defect_met_on_one_file_is_rpl000_and_the_others_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _failing_on("marker", monkeypatch)
    (tmp_path / "bad.py").write_text("# marker\n\n" + HAZARD, encoding="utf-8")
    (tmp_path / "good.py").write_text(HAZARD, encoding="utf-8")
    for extra in ([], ["--exit-zero"]):
        result = run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json", *extra)
        assert result.exit_code == 2, result.output  # the run is incomplete, even --exit-zero
        found = relative_json(result.stdout, tmp_path)
        assert {(d["filename"], d["code"]) for d in found} == {
            ("good.py", "RPL201"),
            ("bad.py", "RPL000"),
        }
        [failure] = [d for d in found if d["filename"] == "bad.py"]
        # Where the traversal was, what was raised (its first line), and where in the package.
        assert failure["location"]["row"] == 4
        message = failure["message"]
        assert message.startswith("internal error in repro-lint (ValueError: cannot judge marker")
        assert "second line" not in message
        assert " at repro_lint/traversal.py:" in message
        assert "this file was not analysed" in message
    # Neither the file's cache entry nor a record of the run keeps the failure: the next run
    # tries the failing file again, and takes the other one from the cache.
    run(tmp_path, monkeypatch, ".", "--output-format", "json")
    seen.clear()
    again = run(tmp_path, monkeypatch, ".", "--output-format", "json")
    assert again.exit_code == 2
    assert [("marker" in text) for text in seen] == [True]
    # Without the defect, the file is analysed as any other.
    monkeypatch.undo()
    fixed = run(tmp_path, monkeypatch, ".", "--output-format", "json")
    assert fixed.exit_code == 1
    assert {(name, code) for name, code, _ in findings(fixed)} == {
        ("good.py", "RPL201"),
        ("bad.py", "RPL201"),
    }


def test_a_defect_in_a_worker_is_contained_too(tmp_path: Path) -> None:
    # In a process of its own, with workers: a module that breaks a hook is loaded first.
    (tmp_path / "bad.py").write_text("# marker\n\n" + HAZARD, encoding="utf-8")
    for index in range(20):
        (tmp_path / f"m{index:02}.py").write_text(HAZARD, encoding="utf-8")
    (tmp_path / "defect.py").write_text(
        "from repro_lint.rules.cudnn_benchmark_enabled import CudnnBenchmarkEnabled as R\n"
        "real = R.visit_Assign\n"
        "def visit_Assign(self, node):\n"
        "    if 'marker' in self.context.module.code:\n"
        "        raise KeyError('x')\n"
        "    real(self, node)\n"
        "R.visit_Assign = visit_Assign\n"
        "from repro_lint.cli import run\n"
        "import sys\n"
        "sys.argv = ['repro-lint', 'check', '.', '--no-cache', '--output-format', 'json',"
        " '--exclude', 'defect.py', '-j', '2']\n"
        "run()\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "defect.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert_clean_exit(result, 2)
    found = {(d["filename"], d["code"]) for d in relative_json(result.stdout, tmp_path)}
    assert found == {("bad.py", "RPL000")} | {(f"m{i:02}.py", "RPL201") for i in range(20)}


def test_a_defect_in_a_summary_the_project_pass_loads_still_ends_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module summarised only because an entry point reaches it: its findings would be
    # missing without a word if the pass went on, so the run ends as before, naming it.
    from repro_lint.summary import SummaryCollector

    real = SummaryCollector.visit_Call

    def visit_Call(self: SummaryCollector, node: Any) -> None:
        if "marker" in self._text:
            raise ValueError("cannot summarise")
        real(self, node)

    monkeypatch.setattr(SummaryCollector, "visit_Call", visit_Call)
    (tmp_path / "helper.py").write_text(
        "# marker\nimport os\n\n\ndef go():\n    print(os.sep)\n", encoding="utf-8"
    )
    (tmp_path / "main.py").write_text(
        'import helper\n\nif __name__ == "__main__":\n    helper.go()\n', encoding="utf-8"
    )
    with pytest.raises(RuntimeError, match=r"^helper\.py: internal error in repro-lint \(Value"):
        run(tmp_path, monkeypatch, ".", "--no-cache", "--output-format", "json")
