"""The editor recipes in docs/editors.md: the command-line recipes run as written and the VS Code
problem matcher parses real output; the server recipes all start `repro-lint server`."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from projects import relative_json

ROOT = Path(__file__).resolve().parent.parent
EDITORS = ROOT / "docs" / "editors.md"
STDIN_RECIPE = "repro-lint - --stdin-filename src/train.py --output-format concise < src/train.py"

Blocks = Callable[[Path], dict[str, str]]


def jsonc(text: str) -> Any:
    """JSON with ``//`` comment lines (VS Code's settings and tasks files)."""
    return json.loads(
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    )


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A documented command line, as written (``< file`` included), with this checkout's tool."""
    command, _, stdin = command.partition(" < ")
    argv = shlex.split(command)
    assert argv[0] == "repro-lint", command
    return subprocess.run(
        [sys.executable, "-m", "repro_lint", *argv[1:]],
        cwd=cwd,
        input=(cwd / stdin).read_text(encoding="utf-8") if stdin else "",
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(ROOT / "examples", target / "src")
    return target


def matcher(code_blocks: Blocks) -> tuple[dict[str, Any], re.Pattern[str], dict[str, Any]]:
    [task] = jsonc(code_blocks(EDITORS)["// .vscode/tasks.json"])["tasks"]
    pattern = task["problemMatcher"]["pattern"]
    return task, re.compile(pattern["regexp"]), pattern


def test_problem_matcher_reads_every_finding_of_the_task(
    project: Path, code_blocks: Blocks
) -> None:
    task, regexp, pattern = matcher(code_blocks)
    command = " ".join([task["command"], *(shlex.quote(arg) for arg in task["args"])])
    result = run(command, project)
    assert result.returncode == 1
    expected = relative_json(
        run("repro-lint . --output-format json --no-cache", project).stdout, project
    )
    lines = result.stdout.splitlines()
    assert len(lines) == len(expected)
    for line, finding in zip(lines, expected, strict=True):
        match = regexp.fullmatch(line)
        assert match is not None, line
        seen = (
            match.group(pattern["file"]),
            int(match.group(pattern["line"])),
            int(match.group(pattern["column"])),
            match.group(pattern["code"]),
        )
        assert seen == (
            finding["filename"],
            finding["location"]["row"],
            finding["location"]["column"],
            finding["code"],
        )
        assert match.group(pattern["message"]) == finding["message"]


def test_problem_matcher_skips_summaries_and_notebook_rows(
    project: Path, code_blocks: Blocks
) -> None:
    _, regexp, _ = matcher(code_blocks)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import torch\ntorch.backends.cudnn.benchmark = True")
    ]
    nbformat.write(notebook, str(project / "explore.ipynb"))
    result = run("repro-lint explore.ipynb --output-format concise --no-cache", project)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("explore.ipynb:cell 1:2:1: RPL201")
    assert not any(regexp.fullmatch(line) for line in lines)


def test_stdin_recipes_run_as_written(project: Path, code_blocks: Blocks) -> None:
    concise_line, json_line = code_blocks(EDITORS)[STDIN_RECIPE].splitlines()
    _, regexp, pattern = matcher(code_blocks)
    concise = run(concise_line, project)
    as_json = run(json_line, project)
    assert concise.returncode == as_json.returncode == 1
    findings = json.loads(as_json.stdout)
    # JSON names files absolutely (as ruff does); the concise lines relative to the project.
    assert findings and {f["filename"] for f in findings} == {str(project / "src" / "train.py")}
    findings = relative_json(as_json.stdout, project)
    heads = [regexp.fullmatch(line) for line in concise.stdout.splitlines()]
    matched = [m for m in heads if m is not None]
    assert [(m.group(pattern["file"]), int(m.group(pattern["line"]))) for m in matched] == [
        (f["filename"], f["location"]["row"]) for f in findings
    ]


def test_server_recipes_start_the_server(code_blocks: Blocks) -> None:
    blocks = code_blocks(EDITORS)
    package = json.loads(blocks["{"])
    assert package["main"] == "./extension.js" and "// extension.js" in blocks
    assert package["activationEvents"] == ["onLanguage:python"]
    assert "vscode-languageclient" in package["dependencies"]
    assert '{ command: "repro-lint", args: ["server"] }' in blocks["// extension.js"]
    settings = jsonc(blocks["// .vscode/settings.json"])
    assert settings["[python]"]["editor.codeActionsOnSave"] == {
        "source.fixAll.repro-lint": "explicit"
    }
    lua = [b for b in blocks.values() if "vim.lsp" in b]
    elisp = [b for b in blocks.values() if "lsp-mode" in b or "eglot" in b]
    assert len(lua) == 2 and len(elisp) == 2
    assert all('{ "repro-lint", "server" }' in block for block in lua)
    assert all('"repro-lint" "server"' in block for block in elisp)
