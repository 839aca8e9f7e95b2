"""Whole-project analysis on real files: findings across modules, partial runs, fixes."""

from __future__ import annotations

import multiprocessing
import os
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from projects import write

from repro_lint import engine, project_pass
from repro_lint.cache import Cache, digest
from repro_lint.cli import main
from repro_lint.config import Config, load_config
from repro_lint.diagnostics import FileResult
from repro_lint.engine import lint_files, lint_paths, lint_run
from repro_lint.files import SourceFile, display_name, real_path
from repro_lint.program import Program, ProjectOptions, Unit
from repro_lint.project_pass import summary_loader
from repro_lint.settings import Settings
from repro_lint.summary import DEFERRED

PROJECT_CODES = {"RPL101", "RPL104", "RPL107", "RPL202"}

SEEDING = textwrap.dedent(
    """\
    import random

    import torch


    def seed_all(seed):
        random.seed(seed)
        torch.manual_seed(seed)
"""
)
DATA = textwrap.dedent(
    """\
    import numpy as np


    def make(count):
        return np.random.rand(count, 3)
"""
)
MODEL = textwrap.dedent(
    """\
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
"""
)
TRAIN = textwrap.dedent(
    """\
    \"\"\"Train.\"\"\"
    import torch

    from data import make
    from model import Net
    from seeding import seed_all


    def main():
        seed_all(1)
        data = make(10)
        net = Net().cuda()


    if __name__ == "__main__":
        main()
"""
)


def row_of(root: Path, name: str, needle: str) -> int:
    lines = (root / name).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def findings(
    root: Path, *names: str, codes: set[str] = PROJECT_CODES
) -> set[tuple[str, str, int, int]]:
    config = load_config(root)
    paths = [root / name for name in names] if names else [root]
    results = lint_paths(paths, config)
    return {
        (Path(d.filename).name, d.code, d.location.row, d.location.column)
        for r in results
        for d in r.diagnostics
        if d.code in codes
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"seeding.py": SEEDING, "data.py": DATA, "model.py": MODEL, "train.py": TRAIN})
    return tmp_path


def test_helper_in_another_module_seeds_only_what_it_seeds(project: Path) -> None:
    main_row = row_of(project, "train.py", "__name__")
    assert findings(project) == {
        # numpy is used (data.py) and the helper forgot it; torch and random are seeded.
        ("train.py", "RPL101", main_row, 1),
        # seeded, builds a convolution (model.py) and never asks cuDNN for determinism.
        ("train.py", "RPL202", main_row, 1),
    }


def test_a_helper_that_seeds_everything_settles_it(project: Path) -> None:
    write(
        project,
        {
            "seeding.py": SEEDING.replace(
                "    torch.manual_seed(seed)\n",
                "    torch.manual_seed(seed)\n    np.random.seed(seed)\n"
                "    torch.backends.cudnn.deterministic = True\n",
            ).replace("import torch\n", "import numpy as np\nimport torch\n")
        },
    )
    assert findings(project) == set()


def test_only_the_changed_file_passed_finds_helpers_on_disk(project: Path) -> None:
    """What pre-commit does: the entry point alone, its imports read from the project."""
    assert findings(project, "train.py") == findings(project)
    assert findings(project, "train.py")


def test_files_not_passed_are_never_reported(project: Path) -> None:
    # train.py is an entry point with findings, but only the library modules are checked.
    assert findings(project, "data.py", "model.py", "seeding.py") == set()


def test_library_modules_never_get_missing_seed(project: Path) -> None:
    write(project, {"lib.py": "import torch\n\n\ndef noise():\n    return torch.randn(3)\n"})
    assert not {f for f in findings(project) if f[0] in ("lib.py", "data.py", "model.py")}


def test_late_seed_across_modules(project: Path) -> None:
    write(
        project,
        {
            "train.py": TRAIN.replace(
                "    seed_all(1)\n    data = make(10)\n    net = Net().cuda()\n",
                "    net = Net().cuda()\n    seed_all(1)\n",
            )
        },
    )
    seed_row = row_of(project, "train.py", "seed_all(1)")
    assert ("train.py", "RPL104", seed_row, 5) in findings(project)


def test_noqa_and_file_level_suppression_apply_to_project_findings(project: Path) -> None:
    text = (project / "train.py").read_text(encoding="utf-8")
    guarded = text.replace(
        'if __name__ == "__main__":', 'if __name__ == "__main__":  # noqa: RPL101'
    )
    (project / "train.py").write_text(guarded, encoding="utf-8")
    assert {f[1] for f in findings(project)} == {"RPL202"}
    (project / "train.py").write_text("# repro-lint: noqa: RPL202\n" + guarded, encoding="utf-8")
    assert findings(project) == set()


def test_per_file_ignores_apply_to_project_findings(project: Path) -> None:
    write(project, {}, '[tool.repro-lint]\nper-file-ignores = { "train.py" = ["RPL1"] }\n')
    assert {f[1] for f in findings(project)} == {"RPL202"}


def test_seed_functions_option(project: Path) -> None:
    # A seeding helper the analysis cannot see into (it calls an unknown library).
    write(
        project,
        {"seeding.py": "import lab_rng\n\n\ndef seed_all(seed):\n    lab_rng.everything(seed)\n"},
        '[tool.repro-lint]\nseed-functions = ["seeding.seed_all"]\n',
    )
    assert {f[1] for f in findings(project)} == {"RPL202"}


def test_entry_points_option(project: Path) -> None:
    # Drawing only under a condition, at module level: not a script by its shape (a file
    # that draws on every path at module level is one, see test_seed_programs.py).
    job = "import os\nimport numpy as np\n\nif os.environ.get('DEMO'):\n    DATA = np.random.rand(10)\n"
    write(project, {"job.py": job})
    assert not {f for f in findings(project) if f[0] == "job.py"}
    write(project, {}, '[tool.repro-lint]\nentry-points = ["job.py"]\n')
    assert ("job.py", "RPL101", 4, 1) in findings(project)


def test_packages_re_exports_and_src_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "src/lab/__init__.py": "from .utils import set_seed\n",
            "src/lab/utils.py": "from lightning import seed_everything as set_seed\n",
            "src/lab/models.py": (
                "from torch import nn\n\n\ndef build():\n    return nn.Linear(2, 2)\n"
            ),
            "scripts/train.py": (
                "import torch\nfrom lab import set_seed\nfrom lab.models import build\n\n"
                "if __name__ == '__main__':\n    set_seed(0)\n    build()\n"
            ),
        },
    )
    # Seeded through a re-export of Lightning's helper: nothing missing, nothing late.
    assert findings(tmp_path, "scripts/train.py") == set()
    write(tmp_path, {"src/lab/utils.py": "def set_seed(seed):\n    pass\n"})
    assert findings(tmp_path, "scripts/train.py") == {("train.py", "RPL101", 5, 1)}


def test_relative_imports_inside_a_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/seeding.py": "import torch\n\n\ndef seed(s):\n    torch.manual_seed(s)\n",
            "app/__main__.py": (
                "import torch\nfrom .seeding import seed\n\nif __name__ == '__main__':\n"
                "    seed(0)\n    torch.randn(2)\n"
            ),
        },
    )
    assert findings(tmp_path) == set()


def test_worker_in_another_file_is_fixed_where_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seeds go into the worker (issue 15: effect where the work runs), in its file."""
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "workers.py": "import torch\n\n\ndef run(rank):\n    torch.randn(3)\n",
            "launch.py": (
                "import torch\nimport torch.multiprocessing as mp\nfrom workers import run\n\n"
                "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
                "    mp.spawn(run, nprocs=2)\n"
            ),
        },
    )
    results = lint_paths([tmp_path], load_config(tmp_path))
    found = [d for r in results for d in r.diagnostics if d.code == "RPL107"]
    assert [(Path(d.filename).name, d.location.row, d.location.column) for d in found] == [
        ("launch.py", 7, 5)
    ]
    assert found[0].fix is not None
    assert [(Path(e.filename or "").name, e.content) for e in found[0].fix.edits] == [
        ("workers.py", "    torch.manual_seed(rank)\n")
    ]


def test_fix_converges_across_files_and_is_idempotent(project: Path) -> None:
    write(
        project,
        {
            "data.py": DATA
            + "\n\nclass Noisy:\n    def __init__(self):\n"
            + "        self.rng = np.random.default_rng()\n"
        },
    )
    runner = CliRunner()
    first = runner.invoke(main, ["check", str(project), "--fix", "--no-cache"])
    assert first.exit_code == 0, first.output
    fixed = {p.name: p.read_text(encoding="utf-8") for p in project.glob("*.py")}
    assert "np.random.default_rng(0)" in fixed["data.py"]
    # numpy is seeded where the program seeds the others, with the program's seed.
    assert "    np.random.seed(seed)\n" in fixed["seeding.py"]
    # Fixed files re-lint clean for every fixed code, and fixing again changes nothing.
    assert findings(project, codes={"RPL101", "RPL102", "RPL202"}) == set()
    second = runner.invoke(main, ["check", str(project), "--fix", "--no-cache"])
    assert second.exit_code == 0, second.output
    assert {p.name: p.read_text(encoding="utf-8") for p in project.glob("*.py")} == fixed


def test_diff_shows_project_fixes_without_writing(project: Path) -> None:
    before = (project / "train.py").read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(project), "--diff", "--no-cache"])
    assert result.exit_code == 1
    assert "+import numpy as np\n" in result.output
    assert "+    np.random.seed(seed)" in result.output
    assert "+    torch.backends.cudnn.deterministic = True" in result.output
    assert (project / "train.py").read_text(encoding="utf-8") == before


def test_cached_entry_point_sees_a_changed_helper(project: Path) -> None:
    runner = CliRunner()
    args = ["check", str(project), "--output-format", "concise", "--select", "RPL101"]
    assert "train.py" in runner.invoke(main, args).output
    # Only the helper changes: train.py's summary comes from the cache, the project phase
    # still sees the new helper.
    text = SEEDING.replace("import torch\n", "import numpy\nimport torch\n").replace(
        "    torch.manual_seed(seed)\n",
        "    torch.manual_seed(seed)\n    numpy.random.seed(seed)\n",
    )
    write(project, {"seeding.py": text})
    again = runner.invoke(main, args)
    assert again.exit_code == 0, again.output


def test_files_only_reached_are_summarised_on_demand(project: Path) -> None:
    """model.py mentions no per-file rule's trigger word and cannot be an entry point: it
    is parsed only because train.py reaches it, also when its result comes from the cache."""
    settings = Settings.from_config(load_config(project))
    files = [SourceFile(display_name(project / n), project / n) for n in ("model.py", "train.py")]
    alone = {Path(r.filename).name: r.summary for r in lint_files(files, settings, project=False)}
    assert alone["model.py"] == {"deferred": True}
    assert alone["train.py"]["main"] is not None
    runner = CliRunner()
    args = ["check", str(project), "--output-format", "concise", "--select", "RPL202"]
    for _ in range(2):  # the second run reads every per-file result from the cache
        result = runner.invoke(main, args)
        assert "train.py:15:1: RPL202" in result.output


def test_stdin_with_a_filename_reads_helpers_from_disk(project: Path) -> None:
    source = (project / "train.py").read_text(encoding="utf-8")
    result = CliRunner().invoke(
        main,
        ["check", "-", "--stdin-filename", "train.py", "--output-format", "concise", "--no-cache"],
        input=source,
    )
    assert "train.py:15:1: RPL101" in result.output
    assert "train.py:15:1: RPL202" in result.output


def test_module_level_seed_of_an_imported_module_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "settings.py": "import torch\n\ntorch.manual_seed(0)\n",
            "run.py": (
                "import torch\nimport settings\n\nif __name__ == '__main__':\n    torch.randn(2)\n"
            ),
        },
    )
    assert findings(tmp_path, "run.py") == set()


def test_script_entry_calls_into_another_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "loop.py": "import torch\n\n\ndef train():\n    model = torch.nn.Linear(2, 2)\n",
            "go.py": "import argparse\nfrom loop import train\n\nargs = None\ntrain()\n",
        },
    )
    # A script with no __main__ guard whose top-level code calls project code.
    assert findings(tmp_path) == {("go.py", "RPL101", 5, 1)}


def _program(root: Path, *names: str) -> Program:
    settings = Settings.from_config(Config(root=root))
    files = [SourceFile(display_name(root / n), root / n) for n in names]
    results = lint_files(files, settings, jobs=1, project=False)
    paths = {file.display: file.path for file in files}
    units = [Unit(r.filename, paths[r.filename], r.summary, True) for r in results]
    return Program(units, ProjectOptions())


def test_deterministic_algorithms_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The question RPL402 asks of an entry point's whole program."""
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "strictness.py": (
                "import torch\n\n\ndef strict():\n    torch.use_deterministic_algorithms(True)\n"
            ),
            "on.py": "import strictness\n\nif __name__ == '__main__':\n    strictness.strict()\n",
            "cudnn_only.py": (
                "import torch\n\nif __name__ == '__main__':\n"
                "    torch.backends.cudnn.deterministic = True\n"
            ),
            "off.py": (
                "import torch\n\nif __name__ == '__main__':\n"
                "    torch.use_deterministic_algorithms(False)\n"
            ),
        },
    )
    program = _program(tmp_path, "on.py", "cudnn_only.py", "off.py", "strictness.py")
    answers = {
        Path(e.unit.filename).name: e.enables_deterministic_algorithms() for e in program.entries
    }
    assert answers == {"on.py": True, "cudnn_only.py": False, "off.py": False}


def test_files_an_entry_point_reaches(project: Path) -> None:
    write(project, {"unused.py": "import torch\n\n\ndef f():\n    return torch.rand(1)\n"})
    program = _program(project, "train.py", "data.py", "model.py", "seeding.py", "unused.py")
    (entry,) = program.entries
    reached = {Path(name).name for name in program.reached_files(entry)}
    assert reached == {"train.py", "data.py", "model.py", "seeding.py"}


def test_crlf_sources_keep_their_line_endings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    source = "import torch\r\n\r\nif __name__ == '__main__':\r\n    x = torch.rand(3)\r\n"
    write(tmp_path, {})
    (tmp_path / "crlf.py").write_bytes(source.encode())
    assert findings(tmp_path) == {("crlf.py", "RPL101", 3, 1)}
    CliRunner().invoke(main, ["check", str(tmp_path), "--fix", "--no-cache"])
    assert (tmp_path / "crlf.py").read_bytes() == (
        b"import torch\r\n\r\nif __name__ == '__main__':\r\n    torch.manual_seed(0)\r\n"
        b"    x = torch.rand(3)\r\n"
    )


def _module_lookups(root: Path, count: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many module lookups the project pass makes over ``count`` files, each a library
    module importing the next, whose top-level code calls its own function (so whether it
    is a script is asked, and whether another file imports it)."""
    tree = root / str(count)
    tree.mkdir()
    write(
        tree,
        {
            f"layer{i}.py": (
                f"import torch\nimport layer{i + 1}\n\n\ndef block(x):\n"
                "    return torch.relu(x)\n\n\nprint(block(1.0))\n"
            )
            for i in range(count)
        },
    )
    monkeypatch.chdir(tree)
    lookups = 0
    real = Program.module

    def counted(self: Program, name: str, importer: Unit, *, imported: bool = False) -> Unit | None:
        nonlocal lookups
        lookups += 1
        return real(self, name, importer, imported=imported)

    monkeypatch.setattr(Program, "module", counted)
    files = [SourceFile(display_name(p), p) for p in sorted(tree.glob("layer*.py"))]
    results = lint_files(files, Settings.from_config(Config(root=tree)), jobs=1)
    monkeypatch.undo()
    assert not any(r.diagnostics for r in results)
    return lookups


def test_the_project_pass_grows_linearly_with_the_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether a module is imported by another one is asked of every library module: the
    imports of the run are looked up once, not once per question (counted, not timed)."""
    small = _module_lookups(tmp_path, 20, monkeypatch)
    large = _module_lookups(tmp_path, 40, monkeypatch)
    assert small > 0 and large <= 2.2 * small


def _loads_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files the program model looks up a unit for, as it asks."""
    loaded: list[str] = []
    real = Program._unit_at

    def counted(self: Program, path: Path, imported: bool = False) -> Unit | None:
        loaded.append(path.name)
        return real(self, path, imported)

    monkeypatch.setattr(Program, "_unit_at", counted)
    return loaded


def test_a_library_module_alone_loads_nothing_it_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pre-commit passes one changed library module: its summary shows it starts no program
    (no __main__ block, no top-level call, no draw), so the modules it imports, which in a
    large project reach most of it, are not loaded to find that out."""
    write(
        tmp_path,
        {
            f"layer{i}.py": (
                f"import torch\nimport layer{i + 1}\n\n\ndef block(x):\n"
                "    return torch.relu(torch.rand(3) + x)\n"
            )
            for i in range(10)
        },
    )
    monkeypatch.chdir(tmp_path)
    loaded = _loads_counted(monkeypatch)
    settings = Settings.from_config(Config(root=tmp_path))
    results = lint_files([SourceFile("layer0.py", tmp_path / "layer0.py")], settings, jobs=1)
    assert results[0].summary.get("main") is None and not results[0].summary.get("deferred")
    assert loaded == []
    # The same module with a top-level call may be a script: then its imports are followed.
    text = (tmp_path / "layer0.py").read_text(encoding="utf-8")
    (tmp_path / "layer0.py").write_text(text + "\nblock(1)\n", encoding="utf-8")
    lint_files([SourceFile("layer0.py", tmp_path / "layer0.py")], settings, jobs=1)
    assert "layer1.py" in loaded


def test_a_module_whose_top_level_code_draws_nothing_loads_nothing_to_find_it_is_no_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Top-level code that calls but draws nothing (a logger made, a registry filled) starts
    no program of its own, whoever imports the module. Finding that out loads nothing: not
    what its imports run (the module's profile, wanted only for a program's start), nor what
    every module imports, inside functions too (to know whether another file imports it).
    Once its top-level code draws, both are."""
    write(
        tmp_path,
        {
            "layer0.py": (
                "import torch\nimport helpers\n\n\ndef block(x):\n"
                "    return torch.relu(x)\n\n\nprint(block(1.0))\n"
            ),
            "helpers.py": (
                "import torch\n\n\ndef reseed():\n    import extra\n\n"
                "    torch.manual_seed(extra.SEED)\n"
            ),
            "extra.py": "SEED = 0\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    loaded = _loads_counted(monkeypatch)
    settings = Settings.from_config(Config(root=tmp_path))
    layer = SourceFile("layer0.py", tmp_path / "layer0.py")
    assert lint_files([layer], settings, jobs=1)[0].diagnostics == ()
    assert loaded == []
    text = (tmp_path / "layer0.py").read_text(encoding="utf-8")
    (tmp_path / "layer0.py").write_text(text + "noise = torch.rand(3)\n", encoding="utf-8")
    loaded.clear()
    assert [d.code for d in lint_files([layer], settings, jobs=1)[0].diagnostics] == ["RPL101"]
    assert "helpers.py" in loaded and "extra.py" in loaded


def test_an_imported_module_that_never_seeds_is_answered_from_its_text(tmp_path: Path) -> None:
    """Its import-time code cannot seed: the loader says so from the text, without decoding
    the cache shard that holds its summary (a one-file run asks for thousands)."""
    (tmp_path / "layers.py").write_text(
        "import torch\n\n\ndef block(x):\n    return torch.relu(x)\n", encoding="utf-8"
    )
    (tmp_path / "seeding.py").write_text(SEEDING, encoding="utf-8")
    settings = Settings.from_config(Config(root=tmp_path))

    class Counted(Cache):
        asked: list[str] = []

        def get(self, file: SourceFile) -> FileResult | None:
            self.asked.append(file.path.name if file.path is not None else file.display)
            return super().get(file)

    cache = Counted(tmp_path, settings.cache_key())
    load = summary_loader(settings, cache)
    answer = load(tmp_path / "layers.py", True)
    assert answer is not None and answer[1] == DEFERRED and Counted.asked == []
    answer = load(tmp_path / "seeding.py", True)
    assert answer is not None and "funcs" in answer[1] and Counted.asked == ["seeding.py"]
    # Asked for all of it (not for its import-time code only), the module is summarised.
    answer = load(tmp_path / "layers.py", False)
    assert answer is not None and "funcs" in answer[1]


def test_the_loader_takes_a_summary_made_ahead_only_for_the_same_bytes(tmp_path: Path) -> None:
    """A file summarised ahead of the pass (in parallel) is answered from that summary while
    it holds the bytes it was made from; once it changed, it is summarised again."""
    path = tmp_path / "layers.py"
    path.write_text("import torch\n\n\ndef block(x):\n    return torch.relu(x)\n", encoding="utf-8")
    settings = Settings.from_config(Config(root=tmp_path))
    made = FileResult(display_name(path), (), summary={"made": "ahead"})
    ahead = {str(path): (made, digest(path.read_bytes()))}
    assert summary_loader(settings, None, ahead)(path, False) == (made.filename, made.summary)
    path.write_text("import torch\n\n\ndef block(y):\n    return torch.relu(y)\n", encoding="utf-8")
    answer = summary_loader(settings, None, ahead)(path, False)
    assert answer is not None and "funcs" in answer[1]


def test_deferred_files_an_entry_point_reaches_are_summarised_in_parallel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a record of an earlier pass, a parallel run summarises the deferred files
    before the pass (the per-file pass's workers, as they lint them) up to ``AHEAD_BYTES``,
    the others in fresh workers while the pass runs, and the pass takes those done when it
    reaches them; the findings are those of a serial run, which summarises them one at a
    time as the pass reaches them. With a record, the files it summarised whole are
    summarised before the pass, on every core."""
    count = 20
    for index in range(count):
        (tmp_path / f"block{index:02d}.py").write_text(
            f"import torch\n\n\ndef block{index}(x):\n    return torch.relu(x) + {index}\n",
            encoding="utf-8",
        )
    calls = "\n".join(f"    x = block{i:02d}.block{i}(x)" for i in range(count))
    imports = "\n".join(f"import block{i:02d}" for i in range(count))
    (tmp_path / "train.py").write_text(
        f"import torch\n{imports}\n\n\ndef main():\n    x = torch.rand(4)\n{calls}\n"
        "    torch.save(x, 'out.pt')\n\n\nif __name__ == '__main__':\n    main()\n",
        encoding="utf-8",
    )
    settings = Settings.from_config(Config(root=tmp_path))
    monkeypatch.chdir(tmp_path)
    # Named as a run from the project's directory names them (the loader's are resolved).
    files = [SourceFile(p.name, Path(p.name)) for p in sorted(tmp_path.glob("*.py"))]
    linted: list[str] = []
    real_lint_one = project_pass.lint_one  # type: ignore[attr-defined]

    def counted(text: str, filename: str, *args: Any, **kwargs: Any) -> FileResult:
        linted.append(filename)
        return real_lint_one(text, filename, *args, **kwargs)

    monkeypatch.setattr(project_pass, "lint_one", counted)
    serial = lint_run(files, settings, jobs=1)
    assert len(linted) == count
    linted.clear()
    started: list[str | None] = []
    get_context = multiprocessing.get_context

    def recorded(method: str | None = None) -> Any:
        started.append(method)
        return get_context(method)

    monkeypatch.setattr(multiprocessing, "get_context", recorded)
    parallel = lint_run(files, settings, jobs=2)
    assert linted == []
    # Without the record of an earlier pass, the per-file pass's workers summarise the files
    # they defer while they hold their text: no other pool is started.
    assert started == ["fork"]
    assert parallel.results == serial.results
    assert parallel.project == serial.project
    # Over ``AHEAD_BYTES``: the files are summarised beside the pass, by workers that start
    # afresh (forked from this process, which by then holds every file's result, they would
    # share and copy it).
    monkeypatch.setattr(engine, "AHEAD_BYTES", 0)
    started.clear()
    beside_run = lint_run(files, settings, jobs=2)
    assert started == ["fork", "spawn"]
    assert beside_run.results == serial.results
    assert beside_run.project == serial.project
    # How many the pass took from the workers depends on the timing; once they are all
    # done, it summarises none itself, and takes what it would have made.
    linted.clear()
    deferred = {f.display: (FileResult(f.display, (), summary=dict(DEFERRED)), None) for f in files}
    beside = engine._summarised_ahead(files, deferred, settings, 2, None, None, {})
    assert isinstance(beside, engine._Alongside)
    try:
        deadline = time.monotonic() + 120
        while len(beside) < count + 1:
            assert time.monotonic() < deadline, "the workers did not summarise the files"
            time.sleep(0.05)
        assert sorted(beside) == sorted(str(real_path(f.path)) for f in files)
        loaded = [summary_loader(settings, None, beside)(real_path(f.path), False) for f in files]
        assert linted == []
    finally:
        beside.close()
    assert loaded == [summary_loader(settings)(real_path(f.path), False) for f in files]
    # Closed while its worker is still busy, it leaves no process behind (a run may end with
    # ``os._exit``: a worker left waiting would hold its stdout).
    busy = engine._summarised_ahead(files, deferred, settings, 2, None, None, {})
    assert isinstance(busy, engine._Alongside)
    busy.close()
    assert multiprocessing.active_children() == []
    # However many cores, at most ``BESIDE_WORKERS`` processes run beside the pass.
    many = engine._summarised_ahead(files, deferred, settings, 8, None, None, {})
    assert isinstance(many, engine._Alongside)
    try:
        assert len(multiprocessing.active_children()) == engine.BESIDE_WORKERS
    finally:
        many.close()
    assert multiprocessing.active_children() == []
    assert any(d.code == "RPL101" for r in serial.results for d in r.diagnostics)
    # A run that keeps no record of its project pass (without a cache) works out no digests,
    # and finds the same.
    unrecorded = lint_run(files, settings, jobs=1, recorded=False)
    assert unrecorded.project is None and unrecorded.results == serial.results
    assert serial.project is not None and len(serial.project["digests"]) == count + 1
    # With the results cache, a later run leaves the summaries the cache holds (the loader's,
    # stored by the earlier pass) to the loader: nothing is summarised ahead, nor linted.
    cache = Cache(tmp_path, settings.cache_key())
    lint_run(files, settings, jobs=2, cache=cache)
    cache.save()
    linted.clear()
    again = Cache(tmp_path, settings.cache_key())
    per_file = {f.display: (again.get(f) or FileResult(f.display, ()), None) for f in files}
    assert any(r.summary.get("deferred") for r, _ in per_file.values())
    assert engine._summarised_ahead(files, per_file, settings, 2, None, again, {}) == {}
    assert lint_run(files, settings, jobs=2, cache=again).results == serial.results
    assert linted == []
    # With a record of an earlier pass, only the files it summarised whole are expected; those
    # it asked for their import-time code only were answered from their text.
    fresh = Cache(tmp_path / "elsewhere", settings.cache_key())
    asked = [str(real_path(f.path)) for f in files if f.path.name.startswith("block")]

    def record(imported: bool) -> Any:
        return SimpleNamespace(project={"summaries": [(p, imported, "") for p in asked]})

    started.clear()
    ahead = engine._summarised_ahead(files, per_file, settings, 2, record(False), fresh, {})
    assert len(ahead) == 20
    # Its workers start afresh: forked from this process, which by then holds every file's
    # result, they would share (and copy) all of it.
    assert started == ["spawn"]
    assert engine._summarised_ahead(files, per_file, settings, 2, record(True), fresh, {}) == {}
    # So are those it had whole from the cache, which an earlier pass summarised whole.
    whole: Any = SimpleNamespace(project={"summaries": [], "whole": asked})
    assert len(engine._summarised_ahead(files, per_file, settings, 2, whole, fresh, {})) == 20


def test_a_name_resolved_through_re_exports_is_answered_alike_in_any_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers are kept per name and importer, and shared by importers with the same search
    roots, only when they hold for good: one that stopped at the depth limit of re-export
    chains (found from the chain's middle first) is never the answer from its start."""
    monkeypatch.chdir(tmp_path)
    hops = 12
    files = {f"m{i:02d}.py": f"from m{i + 1:02d} import f\n" for i in range(hops)}
    files[f"m{hops:02d}.py"] = "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n"
    files["a.py"] = "import m00\nimport m04\n"
    files["b.py"] = "import m00\nimport m04\n"
    write(tmp_path, files)
    names = sorted(files)

    def answers(program: Program, order: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
        units = {Path(u.filename).name: u for u in program.units}
        found = {}
        for importer, name in order:
            target = program.resolve(name, units[importer])
            key = getattr(target, "key", None)
            found[importer, name] = repr(target and (type(target).__name__, key))
        return found

    def program() -> Program:
        # Every module summarised on demand, as in a run's project pass.
        plain = _program(tmp_path, *names)
        settings = Settings.from_config(Config(root=tmp_path))
        return Program(plain.units, ProjectOptions(), summary_loader(settings))

    order = [("a.py", "m04.f"), ("a.py", "m00.f"), ("b.py", "m00.f"), ("b.py", "m04.f")]
    forwards = answers(program(), order)
    backwards = answers(program(), order[::-1])
    alone = {key: answers(program(), [key])[key] for key in order}
    assert forwards == backwards == alone
    # Eight hops are followed: from m04 the function is found, from m00 it is not.
    assert alone["a.py", "m04.f"] == repr(("_Function", "f"))
    assert alone["a.py", "m00.f"] == "None"


def test_an_answer_through_re_exports_is_kept_once_every_hop_holds_for_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name found through a chain of re-exports is looked up once per importer's search
    roots (a project's model files all import the same package's re-exports), once every
    module on the chain is summarised; while one is not, it is looked up again."""
    monkeypatch.chdir(tmp_path)
    files = {
        "pkg/__init__.py": "from pkg.mid import Mixin\n",
        "pkg/mid.py": "from pkg.base import Mixin\n",
        "pkg/base.py": "import torch\n\n\nclass Mixin:\n    def seed(self):\n"
        "        torch.manual_seed(0)\n",
        "a.py": "import pkg\n",
        "b.py": "import pkg\n",
    }
    write(tmp_path, files)
    names = sorted(files)
    settings = Settings.from_config(Config(root=tmp_path))
    plain = _program(tmp_path, *names)
    looked_up: list[str] = []

    def counting(program: Program) -> Program:
        real_module = program.module

        def module(name: str, importer: Unit, *, imported: bool = False) -> Unit | None:
            looked_up.append(name)
            return real_module(name, importer, imported=imported)

        monkeypatch.setattr(program, "module", module)
        return program

    def resolved(program: Program, importer: str) -> str:
        unit = next(u for u in program.units if Path(u.filename).name == importer)
        target = program.resolve("pkg.Mixin", unit)
        return repr(target and (type(target).__name__, getattr(target, "key", None)))

    # Every module summarised on demand, as in a run's project pass: kept after the first.
    program = counting(Program(plain.units, ProjectOptions(), summary_loader(settings)))
    assert resolved(program, "a.py") == repr(("_Class", "Mixin"))
    assert looked_up
    looked_up.clear()
    assert resolved(program, "a.py") == resolved(program, "b.py") == repr(("_Class", "Mixin"))
    assert looked_up == []
    # A module on the chain left deferred (no loader to summarise it): asked again each time.
    units = [
        Unit(
            u.filename,
            u.path,
            dict(DEFERRED) if u.filename.endswith("mid.py") else u.summary,
            linted=True,
        )
        for u in plain.units
    ]
    program = counting(Program(units, ProjectOptions()))
    first = resolved(program, "a.py")
    looked_up.clear()
    assert resolved(program, "a.py") == first
    assert looked_up


def _lookups_counted(
    root: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Program, list[str]]:
    """The program model of ``files`` (written under ``root``), loading deferred modules as a
    run does, and the module names it looks up, as it asks (a runaway fails the test)."""
    write(root, files)
    plain = _program(root, *sorted(files))
    settings = Settings.from_config(Config(root=root))
    program = Program(plain.units, ProjectOptions(), summary_loader(settings))
    looked_up: list[str] = []
    real_module = program.module

    def module(name: str, importer: Unit, *, imported: bool = False) -> Unit | None:
        looked_up.append(name)
        assert len(looked_up) < 1_000, "lookups ran away"
        return real_module(name, importer, imported=imported)

    monkeypatch.setattr(program, "module", module)
    return program, looked_up


def test_star_imports_of_missing_modules_bind_nothing_and_cost_little(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``from .x import *`` of a module the tree lacks (compiled, generated, left out of the
    files linted) binds nothing: a name looked up through it does not fall back to the
    package above (``pkg.x.Net`` is not ``pkg``'s ``x.Net``). That fallback went through
    the package's other star imports again at every hop, to the depth limit: a package
    star-importing six missing modules took millions of lookups (minutes and gigabytes on
    a third of the benchmark corpus)."""
    monkeypatch.chdir(tmp_path)
    missing = [f"gone{i}" for i in range(6)]
    files = {
        "pkg/__init__.py": "".join(f"from .{m} import *\n" for m in missing)
        + "from .models import *\n",
        "pkg/models.py": "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n",
        "a.py": "import pkg\n",
        "b.py": "from pkg.gone0 import *\nfrom pkg.models import *\n\nNet()\n",
    }
    program, looked_up = _lookups_counted(tmp_path, files, monkeypatch)
    units = {Path(u.filename).as_posix(): u for u in program.units}
    models = units["pkg/models.py"]
    assert program.referent(units["a.py"], ["q", "pkg.Net"]) == ("class", models, "Net")
    assert program.resolve("pkg.Absent", units["a.py"]) is None
    assert program.referent(units["b.py"], ["*", "Net"]) == ("class", models, "Net")
    assert len(looked_up) < 100


def test_a_star_import_binds_no_name_that_starts_with_an_underscore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``from .models import *`` binds the module's public names only (its ``__all__``,
    which summaries do not record, could list others): ``pkg.__version__``, which the
    package assigns itself, is not looked up through the star-imported modules. In
    transformers that lookup loaded about 2,200 modules in a one-file run."""
    monkeypatch.chdir(tmp_path)
    files = {
        "pkg/__init__.py": 'from .models import *\n\n__version__ = "1.0"\n',
        "pkg/models.py": (
            "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\n"
            "class _Hidden(torch.nn.Module):\n    pass\n"
        ),
        "a.py": "import pkg\n",
    }
    program, looked_up = _lookups_counted(tmp_path, files, monkeypatch)
    units = {Path(u.filename).as_posix(): u for u in program.units}
    assert program.resolve("pkg.__version__", units["a.py"]) is None
    assert program.resolve("pkg._Hidden", units["a.py"]) is None
    assert "pkg.models" not in looked_up
    models = units["pkg/models.py"]
    assert program.referent(units["a.py"], ["q", "pkg.Net"]) == ("class", models, "Net")
    assert program.referent(units["a.py"], ["q", "pkg.models._Hidden"]) == (
        "class",
        models,
        "_Hidden",
    )


@pytest.mark.parametrize(
    "package",
    [
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .ops import Net\n"
        "else:\n    import sys\n",
        "import typing\n\nif typing.TYPE_CHECKING:\n    from .ops import Net\n",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING: from .ops import Net\n",
    ],
    ids=["block", "attribute", "one-line"],
)
def test_an_import_for_type_checkers_only_never_runs_but_binds_its_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str
) -> None:
    """``if TYPE_CHECKING:`` imports run for type checkers only (lazily loaded packages list
    every submodule there): importing the package does not run them, so a program that
    imports it does not reach what they import. The names they bind still resolve."""
    monkeypatch.chdir(tmp_path)
    files = {
        "pkg/__init__.py": package,
        "pkg/ops.py": (
            "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\n"
            "def count(labels):\n    return torch.zeros(9).index_add_(0, labels, labels)\n"
        ),
        "run.py": (
            "import torch\n\nimport pkg\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    torch.randn(2)\n"
        ),
    }

    def reached() -> frozenset[str]:
        program, _ = _lookups_counted(tmp_path, files, monkeypatch)
        (entry,) = [e for e in program.entries if e.unit.filename == "run.py"]
        units = {Path(u.filename).as_posix(): u for u in program.units}
        assert program.referent(units["run.py"], ["q", "pkg.Net"]) == (
            "class",
            units["pkg/ops.py"],
            "Net",
        )
        return frozenset(Path(name).as_posix() for name in program.reached_files(entry))

    assert reached() == {"run.py", "pkg/__init__.py"}
    # The index_add_ runs in no program: its fix goes into none.
    assert fix_targets(tmp_path) == set()
    # Imported as the package runs it: the module is reached, and its fix goes into run.py.
    files["pkg/__init__.py"] = "from .ops import Net\n"
    assert reached() == {"run.py", "pkg/__init__.py", "pkg/ops.py"}
    assert fix_targets(tmp_path) == {"run.py"}


@pytest.mark.parametrize(
    ("switch", "seeded"),
    [
        ("    if False:\n        torch.manual_seed(0)\n", False),
        ("    if 0:  # reproducible runs\n        torch.manual_seed(0)\n", False),
        ("    if True:\n        pass\n    else:\n        torch.manual_seed(0)\n", False),
        ("    while False:\n        torch.manual_seed(0)\n", False),
        ("    if True:\n        torch.manual_seed(0)\n", True),
        ("    if DEBUG:\n        pass\n    else:\n        torch.manual_seed(0)\n", True),
    ],
    ids=["if-false", "if-zero", "else-of-if-true", "while-false", "if-true", "unknown"],
)
def test_a_seed_in_code_that_never_runs_seeds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: str, seeded: bool
) -> None:
    """A switch turned off by hand (``if False:``) leaves the program unseeded."""
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "a.py": "import torch\n\nDEBUG = False\n\nif __name__ == '__main__':\n"
            + switch
            + "    print(torch.randn(2))\n"
        },
    )
    expected = set() if seeded else {("a.py", "RPL101", 5, 1)}
    assert findings(tmp_path, "a.py") == expected


def fix_targets(root: Path) -> set[str]:
    """The files RPL402's fixes would edit in a run over ``root``."""
    results = lint_paths([root], load_config(root))
    return {
        Path(edit.filename).name
        for r in results
        for d in r.diagnostics
        if d.code == "RPL402" and d.fix is not None
        for edit in d.fix.edits
        if edit.filename is not None
    }


def test_a_runs_per_file_results_leave_the_text_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run holds every file's result until it ends: the per-file pass keeps no text in
    them, and the run reads it again, checked against the hash linted, where it is asked
    for (fixes) and only while the file still holds those bytes."""
    text = "import torch\ntorch.backends.cudnn.benchmark = True\n"
    (tmp_path / "train.py").write_text(text, encoding="utf-8")
    settings = Settings.from_config(Config(root=tmp_path))
    monkeypatch.chdir(tmp_path)
    files = [SourceFile("train.py", Path("train.py"))]
    linted = engine._lint_file_alone(files[0], settings)
    assert linted.result.diagnostics and linted.result.source is None
    assert lint_run(files, settings, jobs=1, sources=False).results[0].source is None
    sourced = lint_run(files, settings, jobs=1, sources=True).results[0]
    assert sourced.diagnostics == linted.result.diagnostics and sourced.source == text


def test_summaries_from_workers_arrive_whole_with_their_strings_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a worker sends of a summary is what it made, and the names in two files'
    summaries are one string in the receiving process (a run holds them all)."""
    import dataclasses
    import pickle
    import sys

    body = "import torch\n\n\ndef train(model):\n    torch.manual_seed(0)\n    return model(1)\n"
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(body, encoding="utf-8")
    settings = Settings.from_config(Config(root=tmp_path))
    monkeypatch.chdir(tmp_path)
    linted = [
        engine._lint_file_alone(SourceFile(name, Path(name)), settings, summarise=True)
        for name in ("a.py", "b.py")
    ]
    assert all(item.result.summary.get("funcs") for item in linted)
    # As a pool sends them: pickled, each on its own.
    sent = [engine._unpacked(pickle.loads(pickle.dumps(engine._packed(i)))) for i in linted]
    for before, after in zip(linted, sent, strict=True):
        assert after.result == before.result and after.packed is None
    first, second = (item.result.summary for item in sent)
    (key_a,) = [k for k in first["funcs"] if k == "train"]
    (key_b,) = [k for k in second["funcs"] if k == "train"]
    assert key_a is key_b and key_a is sys.intern("train")
    # Results summarised ahead are unpacked when the loader first asks for them, and the
    # summaries a run left packed go back in their results before its project pass.
    ahead = engine._Unpacking({"a": engine._packed(linted[0])})
    assert ahead["a"] == (linted[0].result, linted[0].digest)
    assert ahead["a"][0] is ahead["a"][0] and list(ahead) == ["a"]
    packed = {"b.py": engine._packed(linted[1]).packed or b""}
    per_file: dict[str, tuple[FileResult, Any]] = {
        "b.py": (dataclasses.replace(linted[1].result, summary={}), None)
    }
    engine._with_summaries(per_file, packed)
    assert per_file["b.py"][0] == linted[1].result and not packed
    # A summary that is not plain data is sent as it is.
    odd = engine._Linted(linted[0].file, FileResult("a.py", (), summary={"x": object()}))
    assert engine._packed(odd) is odd


def _module_file(name: str, roots: list[str]) -> Path | None:
    """Where ``import name`` finds it, asked of the file system path by path."""
    for root in roots:
        base = os.path.join(root, *name.split("."))
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return Path(candidate)
    return None


LOOKED_UP = [
    "pkg", "pkg.sub", "pkg.sub.mod", "pkg.mod", "pkg.linked", "pkg.broken", "pkg.folder",
    "pkg.spaced", "pkg.spaced.mod", "pkg.mod.attr", "lone", "absent", "absent.deeper",
    "", ".pkg", "pkg.", "pkg..mod", "other.mod",
]  # fmt: skip


@pytest.mark.parametrize("unlisted", ["", "unreadable", "crowded"])
def test_module_lookups_from_listings_answer_as_the_paths_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unlisted: str
) -> None:
    """Module lookups read each directory once (``Listings``) instead of checking every
    candidate path: the same files for files, packages, symlinks (broken ones too), a
    directory named like a module, names with empty parts and missing roots; and, for a
    directory that cannot be listed or holds too many entries, asked entry by entry."""
    from repro_lint import program

    if unlisted == "crowded":
        monkeypatch.setattr(program, "_MAX_LISTED", 3)

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    write(first, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/sub/mod.py": ""})
    write(first, {"pkg/mod.py": "", "pkg/spaced/mod.py": "", "lone.py": ""})
    (first / "pkg" / "folder.py").mkdir()
    (first / "pkg" / "linked.py").symlink_to(first / "pkg" / "mod.py")
    (first / "pkg" / "broken.py").symlink_to(tmp_path / "nowhere.py")
    write(second, {"other/mod.py": "", "absent/deeper.py": ""})
    roots = [str(first), str(tmp_path / "missing"), str(second)]
    if unlisted == "unreadable":
        real = os.scandir

        def refused(path: Any = ".") -> Any:
            if str(path) == str(first / "pkg"):
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(os, "scandir", refused)
    tops: dict[tuple[str, str], bool] = {}
    probed: set[str] = set()
    listings = program.Listings()
    for name in LOOKED_UP:
        found = program._find_module(name, roots, tops, probed, listings)
        assert found == _module_file(name, roots), name
    assert program._find_module("pkg.sub.mod", roots) == first / "pkg" / "sub" / "mod.py"
    assert str(first / "pkg") in probed


@pytest.mark.parametrize(
    ("text", "used"),
    [
        ("x = np.zeros(3)\n", True),
        ("x = np .zeros(3)\n", True),
        ("import np.linalg\nfrom np.x import y\n", False),
        ("y = (np\n    .zeros)\n", False),  # line by line: a name split from its dot
        ("y = snp.zeros + a.np.x\n", False),
        ("y = a.np.x\nz = np.ones(1)\n", True),  # (the first "np." is not the name)
        ("np_x = 1\nz = np\t.ones(1)\n", True),
        ("", False),
    ],
)
def test_a_name_used_unbound_is_found_line_by_line(text: str, used: bool) -> None:
    from repro_lint.summary import _uses_unbound

    assert _uses_unbound("np", text) is used


@pytest.mark.parametrize(
    ("source", "printed"),
    [
        ("verbose", True),
        ("self.training", True),
        ("a.b.c", True),
        ("(a).b", False),
        ("(a.b)", False),
        ("a . b", False),
        ("a.\\\n    b", False),
        ("a[0].b", False),
        ("a.b()", False),
        ("x is None", False),
    ],
)
def test_an_if_test_that_is_a_dotted_name_is_named_by_its_code_unprinted(
    source: str, printed: bool
) -> None:
    """``if`` tests name their branch by their code; a plain dotted name's is read off the
    nodes, exactly as libcst prints it, and anything else is left to libcst."""
    import libcst as cst

    from repro_lint.summary import _dotted_code

    expression = cst.parse_expression(source)
    found = _dotted_code(expression)
    if printed:
        assert found == cst.Module([]).code_for_node(expression) == source
    else:
        assert found is None


def test_a_file_deferred_and_summarised_at_once_is_checked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that summarises a deferred file at once (``ahead``) makes the summary the
    project pass's loader would make, by the file's real path, from the text and the check
    it made for the per-file pass."""
    from repro_lint import file_pass

    path = tmp_path / "layers.py"
    path.write_text("import torch\n\n\ndef block(x):\n    return torch.relu(x)\n", encoding="utf-8")
    (tmp_path / "link.py").symlink_to(path)
    settings = Settings.from_config(Config(root=tmp_path))
    monkeypatch.chdir(tmp_path)
    checks: list[str] = []
    real_check = file_pass.check  # type: ignore[attr-defined]

    def counted(text: str, *args: Any) -> Any:
        checks.append(text)
        return real_check(text, *args)

    monkeypatch.setattr(file_pass, "check", counted)
    for name in ("layers.py", "link.py"):
        checks.clear()
        linted = engine._lint_file_alone(SourceFile(name, Path(name)), settings, ahead=True)
        assert linted.result.summary == DEFERRED
        assert len(checks) == 1
        assert linted.ahead is not None
        assert linted.ahead.file == SourceFile("layers.py", real_path(path))
        assert linted.ahead.digest == linted.digest == digest(path.read_bytes())
        checks.clear()
        loaded = summary_loader(settings)(real_path(path), False)
        assert len(checks) == 1
        assert loaded == (linted.ahead.result.filename, linted.ahead.result.summary)
    # A file that is not deferred is summarised once, by the per-file pass itself.
    train = tmp_path / "train.py"
    train.write_text("import torch\n\ntorch.manual_seed(0)\nmain()\n", encoding="utf-8")
    linted = engine._lint_file_alone(SourceFile("train.py", Path("train.py")), settings, ahead=True)
    assert "funcs" in linted.result.summary and linted.ahead is None


def test_a_worker_summarises_deferred_files_at_once_within_its_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker of the per-file pass summarises the deferred files it lints at once only while
    its share of ``AHEAD_BYTES`` lasts (the project pass may read none of them); the others
    are left to ``_summarised_ahead``."""
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(
            "import torch\n\n\ndef block(x):\n    return torch.relu(x)\n", encoding="utf-8"
        )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(engine, "_WORKER_SETTINGS", Settings.from_config(Config(root=tmp_path)))
    monkeypatch.setattr(engine, "_WORKER_AHEAD", 1)
    files = [SourceFile(name, Path(name)) for name in ("a.py", "b.py")]
    sent = engine._lint_in_worker(files, ahead=True)
    assert [linted.result.summary for linted in sent] == [DEFERRED, DEFERRED]
    assert [linted.ahead is not None for linted in sent] == [True, False]
    assert engine._WORKER_AHEAD < 0
    assert not any(linted.ahead for linted in engine._lint_in_worker(files))


def test_entry_points_of_one_library_walk_each_call_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where each of a library's many example scripts reaches the library, what a call of the
    library leads to is worked out once, not once per script (diffusers' examples took its
    project pass 123 s, mostly RPL402's walks of each script's program), with the same files
    reached and the same answers about options left off."""
    monkeypatch.chdir(tmp_path)
    files = {"lib/__init__.py": "from lib.m0 import f0\n"}
    for index in range(10):
        following = (
            f"from lib.m{index + 1} import f{index + 1}\n" if index < 9 else "import torch\n"
        )
        call = f"f{index + 1}(x)" if index < 9 else "torch.rand(3)"
        files[f"lib/m{index}.py"] = (
            f"{following}\n\ndef f{index}(x, use_fast=False):\n"
            f"    if use_fast:\n        g{index}(x)\n    return {call}\n\n\n"
            f"def g{index}(x):\n    return x\n"
        )
    scripts = [f"run_{index}.py" for index in range(12)]
    for script in scripts:
        files[script] = "import lib\n\nif __name__ == '__main__':\n    lib.f0(1)\n"
    write(tmp_path, files)
    calls = 0
    callees = Program._callees

    def counted(self: Program, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return callees(self, *args, **kwargs)

    monkeypatch.setattr(Program, "_callees", counted)

    def walked(names: list[str]) -> tuple[int, dict[str, frozenset[str]], list[bool]]:
        nonlocal calls
        calls = 0
        settings = Settings.from_config(Config(root=tmp_path))
        program = Program(
            [
                Unit(r.filename, tmp_path / r.filename, r.summary, True)
                for r in lint_files(
                    [SourceFile(n, tmp_path / n) for n in names], settings, jobs=1, project=False
                )
            ],
            ProjectOptions(),
            summary_loader(settings),
        )
        reached = {entry.unit.filename: program.reached_files(entry) for entry in program.entries}
        m5 = next(u for u in program.units if u.filename == "lib/m5.py")
        left = [program.left_off(entry, m5, "g5") for entry in program.entries]
        return calls, reached, left

    one, alone, [left] = walked(scripts[:1])
    many, every, lefts = walked(scripts)
    reached = alone["run_0.py"]
    assert reached == {"run_0.py", "lib/__init__.py", *(f"lib/m{i}.py" for i in range(10))}
    assert left  # (``use_fast`` is never turned on)
    assert every == {script: (reached - {"run_0.py"}) | {script} for script in scripts}
    assert lefts == [True] * len(scripts)
    # Each further script's own calls only: about twice one program's, not twelve times.
    assert many < one + 8 * len(scripts), (one, many)
