"""Jupyter notebooks, written by the real nbformat: discovery, cell positions, IPython syntax,
fixes written back into the cells, --add-noqa, stdin."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from click.testing import CliRunner, Result

from repro_lint.cli import main

v4 = nbformat.v4
HAZARD = "torch.backends.cudnn.benchmark = True"
# A seeded cell that trains a convolution on CUDA.
SEEDED_CONV = (
    "# Seed\ntorch.manual_seed(0)\nmodel = nn.Conv2d(3, 8, 3).cuda()\n"
    "loss = model(torch.randn(1, 3, 8, 8).cuda()).sum()\nloss.backward()"
)


def notebook(*sources: str, markdown_first: bool = True, language: str = "python") -> Any:
    """A notebook with a markdown cell, then one code cell per source (with an output)."""
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "k", "display_name": "K", "language": language}
    nb.metadata["language_info"] = {"name": language}
    cells: list[Any] = [v4.new_markdown_cell("# Training run")] if markdown_first else []
    for index, source in enumerate(sources, 1):
        cell = v4.new_code_cell(source)
        cell.execution_count = index
        cell.outputs = [v4.new_output("stream", text=f"output {index}\n")]
        cell.metadata["tags"] = ["keep-me"]
        cells.append(cell)
    nb.cells = cells
    return nb


def write(path: Path, nb: Any) -> None:
    nbformat.write(nb, str(path))


def run(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str, stdin: bytes = b"") -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, [*args, "--no-cache"], input=stdin, catch_exceptions=False)


def findings(result: Result) -> list[tuple[str, int | None, int, int]]:
    """(code, cell, row, column) from JSON output."""
    return [
        (d["code"], d.get("cell"), d["location"]["row"], d["location"]["column"])
        for d in json.loads(result.stdout)
    ]


def summarising(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the project pass's loader summarises from now on, in order (filled as it
    does)."""
    from repro_lint import project_pass
    from repro_lint.file_pass import lint_one

    summarised: list[str] = []

    def counting(text: str, filename: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("summarise"):
            summarised.append(filename)
        return lint_one(text, filename, *args, **kwargs)

    monkeypatch.setattr(project_pass, "lint_one", counting)
    return summarised


def test_walks_include_notebooks_unless_excluded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "explore.ipynb", notebook("import torch", HAZARD))
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\n", encoding="utf-8")
    walked = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json")
    assert walked.exit_code == 1
    assert findings(walked) == [("RPL201", 3, 1, 1)]
    (tmp_path / "pyproject.toml").write_text(
        '[tool.repro-lint]\nextend-exclude = ["*.ipynb"]\n', encoding="utf-8"
    )
    assert run(tmp_path, monkeypatch, "check", ".").exit_code == 0
    # A notebook named on the command line is linted all the same.
    named = run(tmp_path, monkeypatch, "check", "explore.ipynb", "--output-format", "json")
    assert findings(named) == [("RPL201", 3, 1, 1)]


def test_positions_are_cell_and_row_in_the_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = notebook(
        "import torch\nimport os",
        "x = 1\n\n" + HAZARD,
        "torch.use_deterministic_algorithms(False)",
    )
    write(tmp_path / "nb.ipynb", nb)
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--output-format", "json")
    assert findings(result) == [("RPL201", 3, 3, 1), ("RPL203", 4, 1, 1)]
    item = json.loads(result.stdout)[0]
    assert item["noqa_row"] == 3
    concise = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--output-format", "concise")
    heads = [line.split(": ")[0] for line in concise.stdout.splitlines()[:2]]
    assert heads == ["nb.ipynb:cell 3:3:1", "nb.ipynb:cell 4:1:1"]
    # The code frame shows the cell's own lines.
    full = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--output-format", "full")
    assert f"3 | {HAZARD}" in full.stdout


def test_ipython_syntax_is_skipped_and_the_rest_linted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = notebook(
        "!pip install torch\nfiles = !ls\n%matplotlib inline\nimport torch",
        "for i in range(2):\n    %time print(i)\n" + HAZARD,
        "torch.nn.Linear?\n??torch.manual_seed\ns = '''\n%d is not a magic here\n'''\n" + HAZARD,
        "%%bash\necho torch.backends.cudnn.benchmark = True",
        "%%time\n" + HAZARD,
        "%pip install \\\n    numpy\n" + HAZARD,
    )
    write(tmp_path / "nb.ipynb", nb)
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--output-format", "json")
    assert findings(result) == [
        ("RPL201", 3, 3, 1),
        ("RPL201", 4, 6, 1),
        ("RPL201", 6, 2, 1),
        ("RPL201", 7, 3, 1),
    ]


def test_line_magics_without_their_percent_sign_are_ipython_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """IPython's automagic runs ``ls /content/`` and ``pip install timm`` as the magics of
    those names: a cell that is not Python otherwise is read with them as placeholders. A
    cell that parses keeps such names as Python (``ls = sorted(files)``), and an
    assignment stays Python in a cell that does not parse."""
    nb_sources = (
        "import torch",
        "ls /content/checkpoints/",
        "pip install timm==0.9\ncd /content\n" + HAZARD,
        "ls = sorted(['b', 'a'])\ntime = 3\n" + HAZARD,
        "ls = def\n",
    )
    path = tmp_path / "nb.ipynb"
    write(path, notebook(*nb_sources))
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--output-format", "json")
    assert findings(result) == [
        ("RPL201", 4, 3, 1),
        ("RPL201", 5, 3, 1),
        ("RPL000", 6, 1, 6),
    ]
    # A fix in a cell with such lines writes them back as they were.
    write(path, notebook(*nb_sources[:3]))
    assert run(tmp_path, monkeypatch, "check", "nb.ipynb", "--fix").exit_code == 0
    fixed = nbformat.read(str(path), as_version=4)
    assert fixed.cells[3].source == (
        "pip install timm==0.9\ncd /content\ntorch.backends.cudnn.benchmark = False"
    )
    assert fixed.cells[2].source == "ls /content/checkpoints/"


def test_a_broken_cell_is_reported_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "nb.ipynb", notebook("import torch", "def broken(:\n    pass", HAZARD))
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--output-format", "json")
    assert findings(result) == [("RPL000", 3, 1, 12), ("RPL201", 4, 1, 1)]


def test_a_notebook_of_another_language_is_not_linted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "nb.ipynb", notebook("library(torch)\n" + HAZARD, language="R"))
    assert run(tmp_path, monkeypatch, "check", "nb.ipynb").exit_code == 0


def test_fix_rewrites_only_the_cells_it_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = notebook(
        "%matplotlib inline\nimport torch",
        "model = 1  # untouched",
        "for i in range(2):\n    %time print(i)\n" + HAZARD + "  # speed",
    )
    path = tmp_path / "nb.ipynb"
    write(path, nb)
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--fix")
    assert result.exit_code == 0, result.stdout
    fixed = nbformat.read(str(path), as_version=4)
    nbformat.validate(fixed)
    expected = notebook(
        "%matplotlib inline\nimport torch",
        "model = 1  # untouched",
        "for i in range(2):\n    %time print(i)\ntorch.backends.cudnn.benchmark = False  # speed",
    )
    for ours, theirs in zip(fixed.cells, expected.cells, strict=True):
        assert ours.source == theirs.source
        assert ours.get("outputs") == theirs.get("outputs")
        assert ours.get("execution_count") == theirs.get("execution_count")
        assert ours.metadata == theirs.metadata
    assert [c.id for c in fixed.cells] == [c.id for c in nb.cells]
    assert fixed.metadata == nb.metadata
    # Byte for byte what nbformat itself writes for the fixed notebook: nothing else moved.
    expected_file = tmp_path / "expected.ipynb"
    for cell, original in zip(expected.cells, nb.cells, strict=True):
        cell.id = original.id
    write(expected_file, expected)
    assert path.read_bytes() == expected_file.read_bytes()
    assert run(tmp_path, monkeypatch, "check", "nb.ipynb").exit_code == 0


def test_diff_shows_the_changed_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "nb.ipynb"
    write(path, notebook("import torch", HAZARD))
    before = path.read_bytes()
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--diff")
    assert result.exit_code == 1
    assert "--- a/nb.ipynb:cell 3" in result.stdout
    assert "+torch.backends.cudnn.benchmark = False" in result.stdout
    assert path.read_bytes() == before


def test_add_noqa_writes_into_the_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "nb.ipynb"
    write(path, notebook("import torch\n%time x = 1", HAZARD + "  # speed"))
    assert run(tmp_path, monkeypatch, "check", "nb.ipynb", "--add-noqa").exit_code == 0
    cells = nbformat.read(str(path), as_version=4).cells
    assert cells[1].source == "import torch\n%time x = 1"
    assert cells[2].source == HAZARD + "  # speed  # noqa: RPL201"
    assert run(tmp_path, monkeypatch, "check", "nb.ipynb").exit_code == 0


def test_stdin_notebook_is_linted_and_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = nbformat.writes(notebook("import torch", HAZARD)).encode()
    checked = run(
        tmp_path,
        monkeypatch,
        "check",
        "-",
        "--stdin-filename",
        "nb.ipynb",
        "--output-format",
        "json",
        stdin=data,
    )
    assert findings(checked) == [("RPL201", 3, 1, 1)]
    fixed = run(
        tmp_path, monkeypatch, "check", "-", "--stdin-filename", "nb.ipynb", "--fix", stdin=data
    )
    assert fixed.exit_code == 0
    cells = nbformat.reads(fixed.stdout, as_version=4).cells
    assert cells[2].source == "torch.backends.cudnn.benchmark = False"


def test_a_file_that_is_not_a_notebook_is_rpl000(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nb.ipynb").write_text('{"cells": [', encoding="utf-8")
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--output-format", "json")
    assert [d["code"] for d in json.loads(result.stdout)] == ["RPL000"]
    assert result.exit_code == 1


def test_json_fix_edits_count_rows_in_the_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = notebook("import torch", "x = 1\n" + HAZARD, "torch.use_deterministic_algorithms(True)")
    write(tmp_path / "nb.ipynb", nb)
    items = json.loads(
        run(tmp_path, monkeypatch, "check", "nb.ipynb", "--output-format", "json").stdout
    )
    bench = next(i for i in items if i["code"] == "RPL201")
    assert bench["fix"]["edits"] == [
        {
            "content": "False",
            "location": {"row": 2, "column": 34},
            "end_location": {"row": 2, "column": 38},
        }
    ]
    # The import this fix needs goes into the finding's cell too (not the first code cell):
    # the whole fix is in that cell, in its rows.
    cublas = next(i for i in items if i["code"] == "RPL204")
    assert cublas["cell"] == 4
    assert cublas["fix"]["applicability"] == "safe"
    assert cublas["fix"]["edits"] == [
        {
            "content": 'import os\n\nos.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n',
            "location": {"row": 1, "column": 1},
            "end_location": {"row": 1, "column": 1},
        }
    ]


def test_readme_setting_leaves_the_notebooks_of_a_directory_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code_blocks: Callable[[Path], dict[str, str]]
) -> None:
    setting = code_blocks(Path(__file__).resolve().parent.parent / "README.md")["[tool.repro-lint]"]
    assert "extend-exclude" in setting
    (tmp_path / "notebooks").mkdir()
    write(tmp_path / "notebooks" / "explore.ipynb", notebook("import torch", HAZARD))
    found = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json")
    assert findings(found) == [("RPL201", 3, 1, 1)]
    (tmp_path / "pyproject.toml").write_text(setting, encoding="utf-8")
    result = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json")
    assert result.exit_code == 0 and "no Python files found" in result.stderr


def test_notebooks_share_the_summaries_of_the_modules_they_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project's notebooks that import its modules, linted without them, have each module
    summarised once per process, not once per notebook (nor per broken cell), with the same
    findings. (A run that lints the modules too takes the summaries it made of them:
    ``test_a_run_lints_its_notebooks_with_the_summaries_it_made``.)"""
    import os
    import time

    helpers = tmp_path / "helpers.py"
    helpers.write_text(
        "import random\nimport torch\n\n\ndef seed_all(seed):\n"
        "    random.seed(seed)\n    torch.manual_seed(seed)\n",
        encoding="utf-8",
    )
    # (A stamp from the last two seconds is never answered from memory.)
    old = time.time() - 60
    os.utime(helpers, (old, old))
    seeded = notebook(
        "import torch\nfrom helpers import seed_all", "seed_all(0)\nx = torch.rand(3)"
    )
    unseeded = notebook(
        "import torch\nfrom helpers import seed_all", "def broken(:\n    pass", "x = torch.rand(3)"
    )
    write(tmp_path / "a.ipynb", seeded)
    write(tmp_path / "b.ipynb", unseeded)
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\n", encoding="utf-8")
    summarised = summarising(monkeypatch)
    result = run(tmp_path, monkeypatch, "check", "a.ipynb", "b.ipynb", "--output-format", "json")
    # (Asked for its import-time code and then whole, it is still summarised once.)
    assert summarised.count("helpers.py") == 1
    found = findings(result)
    assert [f for f in found if f[0] == "RPL101"] == [("RPL101", 4, 1, 1)]
    assert ("RPL000", 3, 1, 12) in found
    assert not any(f[0] == "RPL101" for f in found if f[1] is None)


def test_a_notebook_is_a_program_whatever_its_cells_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook is run, never imported: its cells are a program as soon as they do
    anything, not only when they draw, train or call a project function as a statement of
    its own (``model = build()`` draws in another module). A notebook that only defines
    things is none."""
    (tmp_path / "helpers.py").write_text(
        "import torch\n\n\ndef batch():\n    return torch.randn(3)\n", encoding="utf-8"
    )
    write(tmp_path / "kept.ipynb", notebook("from helpers import batch", "x = batch()\nprint(x)"))
    write(tmp_path / "bare.ipynb", notebook("from helpers import batch", "batch()"))
    write(tmp_path / "defines.ipynb", notebook("import torch", "def noise():\n    return 1"))
    result = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json")
    by_file = {
        (Path(d["filename"]).name, d["code"], d.get("cell"), d["location"]["row"])
        for d in json.loads(result.stdout)
    }
    assert by_file == {("kept.ipynb", "RPL101", 3, 1), ("bare.ipynb", "RPL101", 3, 1)}


def test_kernels_of_a_notebook_that_never_selects_cuda_run_on_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nondeterministic kernels are CUDA's: a notebook whose program selects no CUDA
    device (it picks its device in its own cells) gets none of RPL401-RPL403; the same
    cells with ``.cuda()`` do."""
    cells = (
        "import torch\nimport dgl.nn as dglnn\nimport torch.nn.functional as F\n"
        "device = torch.device('cpu')\ntorch.manual_seed(0)",
        "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = dglnn.SAGEConv(4, 4, 'mean')\n\n"
        "    def forward(self, g, x):\n        h = self.conv(g, x)\n"
        "        return F.interpolate(h, scale_factor=2, mode='bilinear')",
        "model = Net().to(device)\nopt = torch.optim.SGD(model.parameters())\n"
        "model(g, x).sum().backward()\nopt.step()",
    )
    write(tmp_path / "cpu.ipynb", notebook(*cells))
    cuda = (*cells[:2], cells[2].replace(".to(device)", ".cuda()"))
    write(tmp_path / "gpu.ipynb", notebook(*cuda))
    codes = {"RPL401", "RPL402", "RPL403"}
    result = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json")
    found = {(Path(d["filename"]).name, d["code"]) for d in json.loads(result.stdout)}
    assert {f for f in found if f[1] in codes} == {("gpu.ipynb", "RPL403"), ("gpu.ipynb", "RPL401")}


def test_max_file_size_counts_a_notebooks_code_not_its_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook whose outputs (an image, a long log) take it past ``max-file-size`` is
    linted; one whose code cells do is an RPL000 that says so."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.repro-lint]\nmax-file-size = "8KiB"\n', encoding="utf-8"
    )
    drawn = notebook("import torch", HAZARD)
    drawn.cells[-1].outputs = [
        v4.new_output("display_data", data={"image/png": "iVBORw0KGgo" + "A" * 40_000})
    ]
    write(tmp_path / "drawn.ipynb", drawn)
    long_code = "\n".join(f"value_{i} = {i}" for i in range(1_000))
    write(tmp_path / "long.ipynb", notebook("import torch", long_code, HAZARD))
    assert (tmp_path / "drawn.ipynb").stat().st_size > 8 * 1024
    result = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json")
    by_file: dict[str, list[tuple[str, str]]] = {}
    for d in json.loads(result.stdout):
        by_file.setdefault(Path(d["filename"]).name, []).append((d["code"], d["message"]))
    assert [code for code, _ in by_file["drawn.ipynb"]] == ["RPL201"]
    [(code, message)] = by_file["long.ipynb"]
    assert code == "RPL000"
    assert "too large" in message


@pytest.mark.parametrize("linted", [".", "notebooks"])
def test_a_cached_notebook_is_linted_again_when_a_module_it_imports_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linted: str
) -> None:
    """A notebook's findings depend on the modules it imports: its cached result, and the
    run record, answer only while those are unchanged, also when the run lints the
    notebooks alone (``linted``: the whole project, or the notebooks' directory)."""
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\n", encoding="utf-8")
    helpers = tmp_path / "helpers.py"
    seeding = "import random\nimport torch\n\n\ndef seed_all(seed):\n    torch.manual_seed(seed)\n"
    helpers.write_text(seeding, encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    write(
        tmp_path / "notebooks" / "train.ipynb",
        notebook("import torch\nfrom helpers import seed_all", "seed_all(0)\nx = torch.rand(3)"),
    )
    monkeypatch.chdir(tmp_path)

    def codes() -> list[str]:
        result = CliRunner().invoke(
            main, ["check", linted, "--output-format", "json"], catch_exceptions=False
        )
        return [d["code"] for d in json.loads(result.stdout)]

    assert codes() == []
    assert codes() == []  # (answered from the cache, or from the run record)
    helpers.write_text(seeding.replace("torch.manual_seed(seed)", "pass"), encoding="utf-8")
    assert codes() == ["RPL101"]
    helpers.write_text(seeding, encoding="utf-8")
    assert codes() == []


def test_a_notebook_linted_again_takes_unchanged_modules_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an edit of one module a notebook imports, the notebook is linted again with the
    summaries of the modules that did not change taken from the cache: only the edited one
    is summarised again."""
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\n", encoding="utf-8")
    helpers = tmp_path / "helpers.py"
    seeding = "import torch\n\n\ndef seed_all(seed):\n    torch.manual_seed(seed)\n"
    helpers.write_text(seeding, encoding="utf-8")
    (tmp_path / "data.py").write_text(
        "import torch\n\n\ndef batch(seed):\n    torch.manual_seed(seed)\n"
        "    return torch.rand(3)\n",
        encoding="utf-8",
    )
    write(
        tmp_path / "train.ipynb",
        notebook(
            "import torch\nfrom helpers import seed_all\nfrom data import batch",
            "seed_all(0)\nx = batch(1)",
        ),
    )
    monkeypatch.chdir(tmp_path)
    command = ["check", "train.ipynb", "--output-format", "json", "--jobs", "1"]
    first = CliRunner().invoke(main, command, catch_exceptions=False)
    assert json.loads(first.stdout) == []
    helpers.write_text(seeding + "\n\ndef unused():\n    return 1\n", encoding="utf-8")
    summarised = summarising(monkeypatch)
    again = CliRunner().invoke(main, command, catch_exceptions=False)
    assert json.loads(again.stdout) == []
    assert summarised == ["helpers.py"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_lints_its_notebooks_with_the_summaries_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """A run lints its notebooks after its other files, with the summaries it made of them:
    the notebooks' loader summarises again none of the run's modules whose summary is whole
    (with a pool of workers too, each of which summarised them all again before), a deferred
    one at most once, and the findings are those of each notebook linted alone."""
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\n", encoding="utf-8")
    package = tmp_path / "lib"
    package.mkdir()
    (package / "__init__.py").write_text("from lib.train import fit\n", encoding="utf-8")
    (package / "train.py").write_text(
        "import torch\n\n\ndef fit(model):\n"
        "    torch.backends.cudnn.benchmark = True\n    return torch.rand(3)\n",
        encoding="utf-8",
    )
    # Enough modules that two jobs take a pool of workers.
    for index in range(20):
        (package / f"part_{index}.py").write_text(
            f"import torch\n\n\ndef part_{index}(x):\n    return torch.cumsum(x, 0)\n",
            encoding="utf-8",
        )
    write(tmp_path / "a.ipynb", notebook("import torch\nfrom lib import fit", "fit(None)"))
    write(
        tmp_path / "b.ipynb",
        notebook("import torch\nfrom lib import fit", "torch.manual_seed(0)\nfit(None)"),
    )
    summarised = summarising(monkeypatch)
    result = run(tmp_path, monkeypatch, "check", ".", "--output-format", "json", "--jobs", jobs)
    # (The package's ``__init__`` triggers no rule: its summary is deferred, made for the
    # notebooks once, and taken by the run's own project pass.)
    assert [name for name in summarised if name.startswith("lib/")] in (
        [],
        ["lib/__init__.py"],
    )
    by_file: dict[str, list[tuple[str, int, int]]] = {}
    for d in json.loads(result.stdout):
        by_file.setdefault(Path(d["filename"]).name, []).append(
            (d["code"], d["location"]["row"], d["location"]["column"])
        )
    for name in ("a.ipynb", "b.ipynb"):
        alone = run(tmp_path, monkeypatch, "check", name, "--output-format", "json")
        expected = [
            (d["code"], d["location"]["row"], d["location"]["column"])
            for d in json.loads(alone.stdout)
        ]
        assert by_file.get(name, []) == expected
    assert [code for code, _, _ in by_file["a.ipynb"]] == ["RPL101"]
    assert not any(code == "RPL101" for code, _, _ in by_file.get("b.ipynb", []))


def test_many_notebooks_are_linted_by_workers_with_the_runs_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sixteen notebooks or more, linted after the other files, go to workers forked then,
    which take the run's summaries as this process does: the findings are those of the
    notebooks linted without the modules they import."""
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\n", encoding="utf-8")
    (tmp_path / "helpers.py").write_text(
        "import torch\n\n\ndef seed_all(seed):\n    torch.manual_seed(seed)\n\n\n"
        "def batch():\n    torch.backends.cudnn.benchmark = True\n    return torch.rand(3)\n",
        encoding="utf-8",
    )
    names = [f"n{index:02}.ipynb" for index in range(18)]
    for index, name in enumerate(names):
        seeding = "seed_all(0)\n" if index % 2 else ""
        write(
            tmp_path / name,
            notebook("import torch\nfrom helpers import seed_all, batch", f"{seeding}batch()"),
        )

    def by_notebook(*args: str) -> dict[str, list[tuple[str, int | None, int, int]]]:
        result = run(tmp_path, monkeypatch, "check", *args, "--output-format", "json")
        found: dict[str, list[tuple[str, int | None, int, int]]] = {}
        for d in json.loads(result.stdout):
            found.setdefault(Path(d["filename"]).name, []).append(
                (d["code"], d.get("cell"), d["location"]["row"], d["location"]["column"])
            )
        return found

    together = by_notebook(".", "--jobs", "2")
    alone = by_notebook(*names, "--jobs", "2")
    assert {name: together.get(name) for name in names} == {name: alone.get(name) for name in names}
    assert [code for code, *_ in alone["n00.ipynb"]] == ["RPL101"]
    assert "n01.ipynb" not in alone


def fixed_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nb: Any, *options: str
) -> list[str]:
    """The code cells' sources after ``check --fix`` (with ``options``) of ``nb``, which must
    leave nothing to report."""
    path = tmp_path / "nb.ipynb"
    write(path, nb)
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--fix", *options)
    assert result.exit_code == 0, result.stdout
    cells = nbformat.read(str(path), as_version=4).cells
    return [cell.source for cell in cells if cell.cell_type == "code"]


def test_a_fix_puts_its_imports_into_the_cell_it_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first code cell installs packages under a cell magic: an import above the magic
    # would break that cell, and an install cell is often not run again after a restart.
    nb = notebook(
        "%%capture\n!pip install torch",
        "# Build the model\nfrom torch import nn\n\nmodel = nn.Linear(2, 2)",
        "# Train\nout = model(x)",
    )
    # The seed, with its import, is a cell of its own above the one it would open.
    assert fixed_sources(tmp_path, monkeypatch, nb) == [
        "%%capture\n!pip install torch",
        "import torch\n\ntorch.manual_seed(0)",
        "# Build the model\nfrom torch import nn\n\nmodel = nn.Linear(2, 2)",
        "# Train\nout = model(x)",
    ]


def test_code_inserted_before_a_cells_first_statement_stays_in_that_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # RPL204's setting goes above the comment that describes the statement it precedes (and
    # RPL202's settings above the seed's): not above the cell's start, into the cell before.
    nb = notebook(
        "import torch\nfrom torch import nn",
        "# Determinism\ntorch.use_deterministic_algorithms(True)",
        SEEDED_CONV,
    )
    assert fixed_sources(tmp_path, monkeypatch, nb) == [
        "import torch\nfrom torch import nn",
        "import os\n\n"
        'os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\n'
        "# Determinism\ntorch.use_deterministic_algorithms(True)",
        SEEDED_CONV,
    ]


def test_settings_inserted_before_a_cells_first_seed_stay_in_that_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = notebook(
        "import torch\nfrom torch import nn",
        SEEDED_CONV,
    )
    assert fixed_sources(tmp_path, monkeypatch, nb, "--select", "RPL202") == [
        "import torch\nfrom torch import nn",
        "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False\n"
        + SEEDED_CONV,
    ]


def test_fixed_text_that_moves_a_cell_magic_is_not_written() -> None:
    from repro_lint.notebooks import Notebook
    from repro_lint.source import SourceError

    data = nbformat.writes(notebook("%%time\nx = 1", "y = 2")).encode()
    parsed = Notebook.parse(data)
    cell = parsed.text.index(":cell:2\n") + len(":cell:2\n")
    edited = parsed.text[:cell] + "import os\n" + parsed.text[cell:]
    with pytest.raises(SourceError, match="cell magic of cell 2"):
        parsed.rewritten(edited)
    below = parsed.text.index("\n", cell) + 1
    rewritten = parsed.rewritten(parsed.text[:below] + "import os\n" + parsed.text[below:])
    assert rewritten is not None
    cells = nbformat.reads(rewritten.decode(), as_version=4).cells
    assert cells[1].source == "%%time\nimport os\nx = 1"


def test_a_seed_that_would_open_a_cell_doing_something_else_is_a_cell_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The seeds go after the imports, before the first statement that does anything: here
    # the opening of a cell that plays audio. They become a cell above it, which keeps an id
    # (nbformat 4.5), and that cell alone shows in the diff.
    nb = notebook(
        "import torch\nfrom torch import nn",
        "from IPython.display import Audio\n# Listen\nAudio('mix.wav')",
        "model = nn.Linear(2, 2)\nout = model(torch.ones(1, 2))",
    )
    path = tmp_path / "nb.ipynb"
    write(path, nb)
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--diff")
    assert "--- a/nb.ipynb:new cell above cell 3\n" in result.stdout
    assert "+torch.manual_seed(0)" in result.stdout
    assert ":cell 3\n" not in result.stdout
    result = run(tmp_path, monkeypatch, "check", "nb.ipynb", "--fix")
    assert result.exit_code == 0, result.stdout
    fixed = nbformat.read(str(path), as_version=4)
    nbformat.validate(fixed)
    assert [cell.source for cell in fixed.cells if cell.cell_type == "code"] == [
        "import torch\nfrom torch import nn",
        "torch.manual_seed(0)",
        "from IPython.display import Audio\n# Listen\nAudio('mix.wav')",
        "model = nn.Linear(2, 2)\nout = model(torch.ones(1, 2))",
    ]
    made = fixed.cells[2]
    assert made.outputs == [] and made.execution_count is None
    assert len(made.id) == 8 and made.id not in {c.id for c in nb.cells}
    # The other cells keep their outputs and metadata; fixing again changes nothing.
    assert fixed.cells[3].outputs == nb.cells[2].outputs
    data = path.read_bytes()
    assert run(tmp_path, monkeypatch, "check", "nb.ipynb", "--fix").exit_code == 0
    assert path.read_bytes() == data


def test_a_seed_that_uses_its_cells_own_import_stays_in_that_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Moved above the cell, the seed would run before the cell imports numpy.
    nb = notebook(
        "import numpy as np\nimport matplotlib\nmatplotlib.use('Agg')\nx = np.random.rand(3)",
    )
    assert fixed_sources(tmp_path, monkeypatch, nb, "--select", "RPL101") == [
        "import numpy as np\nimport matplotlib\n\nnp.random.seed(0)\nmatplotlib.use('Agg')\n"
        "x = np.random.rand(3)",
    ]


def test_a_seed_above_a_cell_magic_is_a_cell_of_its_own() -> None:
    # Above the magic it would stop IPython from running the cell; as a cell of its own
    # above that cell, it runs first and the magic stays on the cell's first line.
    from repro_lint.notebooks import Notebook

    data = nbformat.writes(notebook("import torch", "%%time\nmodel = torch.nn.Linear(2, 2)"))
    parsed = Notebook.parse(data.encode())
    cell = parsed.text.index(":cell:3\n") + len(":cell:3\n")
    edited = parsed.text[:cell] + "torch.manual_seed(0)\n" + parsed.text[cell:]
    document, changes = parsed._rebuilt(edited, own_cells=True)
    assert document is not None
    assert changes == [("new cell above cell 3", "", "torch.manual_seed(0)")]
    sources = ["".join(cell["source"]) for cell in document["cells"]]
    assert sources[2:] == ["torch.manual_seed(0)", "%%time\nmodel = torch.nn.Linear(2, 2)"]


def cells_after_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nb: Any) -> list[str]:
    """Every cell's source after ``check --fix``, code cells marked ``code:``."""
    path = tmp_path / "nb.ipynb"
    write(path, nb)
    assert run(tmp_path, monkeypatch, "check", "nb.ipynb", "--fix").exit_code == 0
    cells = nbformat.read(str(path), as_version=4).cells
    return [("code: " if c.cell_type == "code" else "") + c.source for c in cells]


@pytest.mark.parametrize(
    ("before", "kept_above"),
    [
        # Installing, then a note to restart: the set-up cell goes below the note.
        (["!pip install torch", "Restart the runtime now."], 2),
        # Imports in a cell of their own: right below it, above the section's text and the
        # download it introduces.
        (["import torch"], 1),
    ],
)
def test_a_setup_cell_goes_above_the_text_that_introduces_its_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: list[str], kept_above: int
) -> None:
    nb = notebook(markdown_first=False)
    opening = [
        v4.new_code_cell(text) if text.startswith(("!", "import")) else v4.new_markdown_cell(text)
        for text in before
    ]
    intro = [
        v4.new_markdown_cell("## Model"),
        v4.new_code_cell("!wget https://example.com/data.bin"),
        v4.new_markdown_cell("We build it as follows:"),
    ]
    work = v4.new_code_cell("from torch import nn\nmodel = nn.Linear(2, 2)")
    nb.cells = [*opening, *intro, work]
    fixed = cells_after_fix(tmp_path, monkeypatch, nb)
    shown = [("code: " if c.cell_type == "code" else "") + c.source for c in nb.cells]
    # The seed's import comes with it where no cell above imports torch.
    seeds = "code: " + ("import torch\n\n" if kept_above == 2 else "") + "torch.manual_seed(0)"
    assert fixed == [*shown[:kept_above], seeds, *shown[kept_above:]]


@pytest.mark.parametrize(
    ("above", "moves"),
    [
        ("!wget https://example.com/data.bin\n%cd data", True),
        ("%%bash\nls data", True),
        ("%%bash\npip install torch", False),
        ("%pip install torch", False),
        ("%run prepare.py", False),
        ("%%capture\nx = 1", False),
        ("# just a note", True),
    ],
)
def test_a_setup_cell_moves_above_cells_that_run_no_python(above: str, moves: bool) -> None:
    from repro_lint.notebooks import _setup_place

    cells = [
        {"cell_type": "code", "source": "import torch"},
        {"cell_type": "code", "source": above},
        {"cell_type": "code", "source": "model = torch.nn.Linear(2, 2)"},
    ]
    assert _setup_place(cells, 3) == (2 if moves else 3)
