"""Fixes written the way the file is: imports in their sorted place, calls laid out as they
are and within the project's line length, helpers after the imports with PEP 8's blank lines;
and counts of what --fix did that a user can trust."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from repro_lint import layout
from repro_lint.arguments import expression_code, indented
from repro_lint.cli import main
from repro_lint.config import Config
from repro_lint.diagnostics import FixSafety
from repro_lint.engine import fix_source
from repro_lint.settings import Settings
from repro_lint.walker import walk

SAFE = frozenset({FixSafety.SAFE})
SETTINGS = Settings.from_config(Config(target_torch="2.13"))


def forget_settings() -> None:
    """Forget the configuration files read so far (a process reads each directory's once)."""
    for cached in (
        layout._configured,
        layout._directory_setting,
        layout._directory_formatter,
        layout._directory_ruff,
    ):
        cached.cache_clear()


def fixed(source: str, path: Path | None = None, select: str | None = None) -> str:
    text = textwrap.dedent(source)
    settings = SETTINGS
    if select is not None:
        settings = Settings.from_config(Config(target_torch="2.13", select=(select,)))
    return fix_source(text, settings, SAFE, "train.py" if path is None else path.name, path).text


# -- line length ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("pyproject.toml", "[tool.ruff]\nline-length = 120\n", 120),
        ("pyproject.toml", "[tool.black]\nline-length = 100\n", 100),
        ("pyproject.toml", "[tool.ruff]\nline-length = 99\n[tool.black]\nline-length = 79\n", 99),
        ("pyproject.toml", '[project]\nname = "x"\n', 88),
        ("ruff.toml", "line-length = 110\n", 110),
        (".ruff.toml", "line-length = 111\n", 111),
        ("setup.cfg", "[flake8]\nmax-line-length = 119\n", 119),
        ("tox.ini", "[flake8]\nmax_line_length = 127\n", 127),
        (".flake8", "[flake8]\nmax-line-length = 79\n", 79),
        ("setup.cfg", "[pycodestyle]\nmax-line-length = 90\n", 90),
        ("setup.cfg", "[metadata]\nname = x\n", 88),
    ],
)
def test_line_length_comes_from_the_formatter_config(
    tmp_path: Path, name: str, text: str, expected: int
) -> None:
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / name).write_text(text, encoding="utf-8")
    assert layout.line_length(root / "src" / "pkg" / "train.py") == expected


def test_the_closest_ruff_config_wins(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 120\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text("[tool.ruff]\n", encoding="utf-8")
    # A ruff table without a line length: ruff's default, not the flake8 setting above it.
    assert layout.line_length(tmp_path / "sub" / "train.py") == 88
    assert layout.line_length(tmp_path / "train.py") == 120
    assert layout.line_length(None) == 88


# -- a call that gains a keyword --------------------------------------------------------------


def test_a_call_written_one_argument_per_line_gets_one_more_line() -> None:
    source = """\
        import torch
        from torch.utils.data import DataLoader


        def loader(dataset):
            return DataLoader(
                dataset,
                batch_size=32,
                shuffle=True
            )
        """
    assert fixed(source).endswith(
        "        shuffle=True,\n"
        "        generator=torch.Generator().manual_seed(torch.initial_seed())\n    )\n"
    )


def test_a_long_call_breaks_before_the_new_keyword_at_its_arguments_indent() -> None:
    # Before: the keyword went on the last line, making it 102 characters long.
    source = """\
        import torch
        from torch.utils.data import DataLoader

        trainloader = torch.utils.data.DataLoader(
            trainset, batch_size=128, shuffle=True, num_workers=2)
        """
    assert fixed(source, select="RPL302").endswith(
        "trainloader = torch.utils.data.DataLoader(\n"
        "    trainset, batch_size=128, shuffle=True, num_workers=2,\n"
        "    generator=torch.Generator().manual_seed(0))\n"
    )


def test_visual_indentation_is_kept() -> None:
    source = """\
        import torch

        dataloader = torch.utils.data.DataLoader(dataset, batch_size=opt.batchSize,
                                                 shuffle=True, num_workers=int(opt.workers))
        """
    assert fixed(source, select="RPL302").endswith(
        "                                         shuffle=True, num_workers=int(opt.workers),\n"
        "                                         generator=torch.Generator().manual_seed(0))\n"
    )


def test_the_line_length_of_the_project_decides(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n", encoding="utf-8")
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        "loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)\n"
    )
    path = tmp_path / "train.py"
    path.write_text(source, encoding="utf-8")
    # 113 columns: one line within 120, two lines within the default 88.
    assert fixed(source, path, select="RPL302").endswith(
        "loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4, "
        "generator=torch.Generator().manual_seed(0))\n"
    )
    assert fixed(source, select="RPL302").endswith(
        "loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4,\n"
        "                    generator=torch.Generator().manual_seed(0))\n"
    )


@pytest.mark.parametrize(
    "config",
    [
        ("pyproject.toml", "[tool.black]\nline-length = 88\n"),
        ("pyproject.toml", "[tool.ruff]\nline-length = 88\n\n[tool.ruff.format]\n"),
        ("ruff.toml", "line-length = 88\n\n[format]\nquote-style = 'double'\n"),
        (".pre-commit-config.yaml", "repos:\n  - repo: x\n    hooks:\n      - id: ruff-format\n"),
        (".pre-commit-config.yaml", "repos:\n  - repo: x\n    hooks:\n      - id: black\n"),
    ],
)
def test_a_project_that_black_or_ruff_formats_gets_their_layout(
    tmp_path: Path, config: tuple[str, str]
) -> None:
    (tmp_path / ".git").mkdir()
    name, text = config
    (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "train.py"

    def fix(call: str) -> str:
        text = "import torch\nfrom torch.utils.data import DataLoader\n\nloader = " + call + "\n"
        path.write_text(text, encoding="utf-8")
        return fixed(text, path, select="RPL302")

    one_line = "DataLoader(dataset, batch_size=64, shuffle=True)"
    generator = "generator=torch.Generator().manual_seed(0)"
    # Not aligned with the opening parenthesis: the arguments on a line of their own.
    assert fix(one_line).endswith(
        f"loader = DataLoader(\n    dataset, batch_size=64, shuffle=True, {generator}\n)\n"
    )
    # Too long for that too: one argument per line, with a trailing comma.
    assert fix(one_line.replace("shuffle=True", "shuffle=True, num_workers=4")).endswith(
        "loader = DataLoader(\n    dataset,\n    batch_size=64,\n    shuffle=True,\n"
        f"    num_workers=4,\n    {generator},\n)\n"
    )
    # Without such a configuration: aligned with the opening parenthesis, as before.
    (tmp_path / name).unlink()
    forget_settings()  # (settings are read once per process)
    assert fix(one_line).endswith(
        f"loader = DataLoader(dataset, batch_size=64, shuffle=True,\n{' ' * 20}{generator})\n"
    )
    (tmp_path / name).write_text(text, encoding="utf-8")
    forget_settings()
    # Already laid out so: the new argument joins the line, or the call is exploded.
    packed = "DataLoader(\n    dataset, batch_size=64, shuffle=True\n)"
    assert fix(packed).endswith(
        f"loader = DataLoader(\n    dataset, batch_size=64, shuffle=True, {generator}\n)\n"
    )
    # A comment among the arguments: the call is not laid out again.
    commented = (
        "DataLoader(\n    dataset,  # the training split\n    batch_size=64, shuffle=True\n)"
    )
    assert fix(commented).endswith(
        f"    dataset,  # the training split\n    batch_size=64, shuffle=True, {generator}\n)\n"
    )
    # A comment after the opening parenthesis stays too.
    opening = "DataLoader(  # the split\n    dataset, batch_size=64, shuffle=True, num_workers=4\n)"
    assert "DataLoader(  # the split\n" in fix(opening)
    assert fix(packed.replace("batch_size=64", "batch_size=64, num_workers=4")).endswith(
        "loader = DataLoader(\n    dataset,\n    batch_size=64,\n    num_workers=4,\n"
        f"    shuffle=True,\n    {generator},\n)\n"
    )


def test_a_call_in_a_nested_block_keeps_its_continuation_indent() -> None:
    # Before: the block's indentation was lost on the lines after the first.
    source = """\
        from sklearn.cluster import KMeans


        def cluster(x):
            model = KMeans(
                n_clusters=3,
            )
            return model.fit(x)
        """
    assert "    model = KMeans(\n        n_clusters=3,\n        random_state=0,\n    )\n" in fixed(
        source
    )


def test_a_comment_stays_with_its_argument_and_no_trailing_space_is_copied() -> None:
    # The new argument's line copies the indentation of the line above, not its comment or
    # the trailing space after its comma.
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
        "def loader(dataset):\n"
        "    return DataLoader(\n"
        "        dataset,  # the training split\n"
        "        batch_size=32, \n"
        "        shuffle=True,  # a new order every epoch\n"
        "    )\n"
    )
    assert fixed(source, select="RPL302").endswith(
        "        batch_size=32, \n"
        "        shuffle=True,  # a new order every epoch\n"
        "        generator=torch.Generator().manual_seed(torch.initial_seed()),\n"
        "    )\n"
    )


def test_fit_call_explodes_a_call_with_no_room_left() -> None:
    module = cst.parse_module("result = compute(aaaa, bbbb)\n")
    call = cst.ensure_type(cst.parse_expression("compute(aaaa, bbbb)"), cst.Call)
    extra = [layout.keyword_arg("generator", "make(12345678)")]
    # Aligned with the parenthesis it would take 42 columns; on a line of its own, 40.
    room = layout.Room(column=9, indent="", block="", tail=0, width=41)
    assert layout.fit_call(module, call, extra, room) == (
        "compute(\n    aaaa, bbbb, generator=make(12345678)\n)"
    )
    narrow = layout.Room(column=9, indent="", block="", tail=0, width=30)
    assert layout.fit_call(module, call, extra, narrow) == (
        "compute(\n    aaaa,\n    bbbb,\n    generator=make(12345678),\n)"
    )


# -- imports ------------------------------------------------------------------------------------


def test_new_imports_go_to_their_sorted_section_and_reuse_the_conventional_alias(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: `import numpy` and `import random` above `import os`, numpy spelled in full
    # (the dataset, in another module, owns a numpy generator and draws from `random`, and
    # every rank seeds alike: the helper reseeds both).
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "data.py").write_text(
        "import random\n\nimport numpy as np\nfrom torch.utils.data import Dataset\n\n\n"
        "class Shapes(Dataset):\n    def __init__(self):\n"
        "        self.rng = np.random.default_rng(0)\n\n"
        "    def __getitem__(self, index):\n"
        "        return self.rng.normal() + random.random()\n",
        encoding="utf-8",
    )
    (tmp_path / "train.py").write_text(
        '"""Train."""\n\nimport argparse\nimport os\n\nimport torch\n'
        "import torch.distributed as dist\n"
        "from torch.utils.data import DataLoader\n\nfrom data import Shapes\n\n\n"
        "def main(workers):\n    loader = DataLoader(Shapes(), batch_size=2, num_workers=workers)\n"
        "    return argparse, os, loader\n\n\n"
        'if __name__ == "__main__":\n    dist.init_process_group("gloo")\n'
        "    torch.manual_seed(0)\n    main(2)\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", ".", "--fix", "--no-cache", "--select", "RPL301"])
    assert result.exit_code == 0, result.output
    out = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert out.startswith(
        '"""Train."""\n\nimport argparse\nimport os\nimport random\n\nimport numpy as np\n'
        "import torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader\n\n"
        "from data import Shapes\n\n\n"
        "def seed_worker(worker_id: int) -> None:\n"
    )
    assert "    dataset.rng = np.random.default_rng(worker_seed)\n" in out


def test_place_import_follows_isort_sections() -> None:
    def header(*lines: str) -> layout.Header:
        module = cst.parse_module("\n".join(lines) + "\n\nx = 1\n")
        return layout.header_of(module)

    def place(h: layout.Header, name: str, asname: str | None = None) -> tuple[int, str]:
        found = layout.place_import(
            h, layout.ImportName(name, asname), "\n", lambda top: top == "mypkg"
        )
        return found.row, found.text

    stdlib_only = header("import os", "import sys")
    assert place(stdlib_only, "random") == (2, "import random\n")
    assert place(stdlib_only, "torch") == (3, "\nimport torch\n")
    first_party_only = header("from mypkg import helpers")
    assert place(first_party_only, "torch") == (1, "import torch\n\n")
    mixed = header(
        "import os", "", "import numpy as np", "from torch import nn", "", "import mypkg"
    )
    assert place(mixed, "torch") == (4, "import torch\n")
    assert place(mixed, "argparse") == (1, "import argparse\n")
    assert place(header('"""Doc."""'), "torch") == (3, "import torch\n\n")


def test_a_new_keyword_is_spaced_as_the_call_spaces_its_own() -> None:
    source = """\
        import torch
        from torch.utils.data import DataLoader


        def loader(dataset):
            return DataLoader(dataset, batch_size = 32, shuffle = True)
        """
    assert "DataLoader(dataset, batch_size = 32, shuffle = True,\n" in fixed(source)
    assert "generator = torch.Generator().manual_seed(torch.initial_seed()))\n" in fixed(source)
    # One keyword written `key=value`: PEP 8's spelling.
    mixed = source.replace("batch_size = 32", "batch_size=32")
    assert "generator=torch.Generator()" in fixed(mixed)
    # random_split's generator (written by another path) follows the same choice.
    split = source.replace(
        "return DataLoader(dataset, batch_size = 32, shuffle = True)",
        "return torch.utils.data.random_split(dataset, lengths = [8, 2])",
    )
    assert "generator = torch.Generator().manual_seed(0))" in fixed(split, select="RPL303")


def test_place_import_keeps_the_order_a_section_already_has() -> None:
    def place(*lines: str) -> int:
        module = cst.parse_module("\n".join(lines) + "\n\nx = 1\n")
        found = layout.place_import(
            layout.header_of(module), layout.ImportName("torch"), "\n", lambda top: False
        )
        return found.row

    # Sorted by module name alone, capitals first: next to the other torch import.
    assert (
        place(
            "from PIL import Image",
            "import blobfile as bf",
            "from mpi4py import MPI",
            "import numpy as np",
            "from torch.utils.data import DataLoader",
        )
        == 5
    )
    # Sorted by module name alone (isort's force_sort_within_sections).
    assert place("import numpy as np", "from scipy import io", "import tqdm") == 3
    # isort's default (every `import` line first): before the `from` lines.
    assert place("import numpy as np", "import tqdm", "from scipy import io") == 2
    # In no order: isort's default, as before.
    assert place("import tqdm", "from scipy import io", "import numpy as np") == 1


def test_a_wrapping_call_that_would_pass_the_line_length_breaks_black_style() -> None:
    # Before: `sorted(...)` around a listing pushed the line past 88 columns (E501). Now a
    # one-line comprehension gets its content on a line of its own; another expression gets
    # its argument on one; a line that was already too long stays as it was.
    source = """\
        import os

        from torch.utils.data import Dataset


        class Files(Dataset):
            def __init__(self, root):
                self.files = [os.path.join(root, name) for name in os.listdir(root) if name]
                self.more = list(os.path.join(root, name) for name in os.listdir(root) if name)
                self.names = [name for name in os.listdir(root)]
                self.long = [os.path.join(root, name) for name in os.listdir(root) if name and name]

            def __getitem__(self, index):
                return self.files[index], self.names[index], self.more[index], self.long[index]
        """
    out = fixed(source, select="RPL305")
    assert (
        "        self.files = [\n"
        "            os.path.join(root, name) for name in sorted(os.listdir(root)) if name\n"
        "        ]\n"
        "        self.more = list(os.path.join(root, name) for name in sorted(\n"
        "            os.listdir(root)\n"
        "        ) if name)\n"
        "        self.names = [name for name in sorted(os.listdir(root))]\n"
        "        self.long = [os.path.join(root, name) for name in sorted(os.listdir(root)) if name"
        " and name]\n"
    ) in out
    assert max(len(line) for line in out.splitlines() if "self.long" not in line) <= 88


# -- helper functions -------------------------------------------------------------------------


def test_a_helper_goes_after_the_imports_and_constants_of_a_script() -> None:
    # Before: `def seed_worker` landed mid-script, right above the loader, without blank lines.
    source = """\
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset

        BATCH = 8
        # The data
        class Noisy(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)

            def __getitem__(self, index):
                return self.rng.normal()
        print("loading")
        loader = DataLoader(Noisy(), batch_size=BATCH, num_workers=2)
        """
    out = fixed(source, select="RPL301")
    assert out.startswith(
        "import numpy as np\nimport torch\n"
        "from torch.utils.data import DataLoader, Dataset\n\n"
        "BATCH = 8\n\n\ndef seed_worker(worker_id: int) -> None:\n"
    )
    assert "    dataset.rng = np.random.default_rng(worker_seed)\n\n\n# The data\n" in out
    assert out.endswith(
        'print("loading")\nloader = DataLoader(Noisy(), batch_size=BATCH, num_workers=2,\n'
        "                    worker_init_fn=seed_worker)\n"
    )


def test_a_helper_goes_after_imports_that_follow_an_environment_setting() -> None:
    # Before: the header ended at the `os.environ` line between the imports (where a fix may
    # have put it), so `def seed_worker` landed above `import torch` and the imports after it
    # broke E402.
    source = """\
        import os
        import random

        import numpy as np

        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Noisy(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)

            def __getitem__(self, index):
                return self.rng.normal()


        loader = DataLoader(Noisy(), batch_size=8, num_workers=2)
        """
    out = fixed(source, select="RPL301")
    assert "from torch.utils.data import DataLoader, Dataset\n\n\ndef seed_worker(" in out
    assert out.index("def seed_worker") > out.index("import torch\n")


def test_a_helper_goes_after_imports_that_follow_a_warnings_filter() -> None:
    # Before: `def seed_worker` landed between `import warnings` and the imports that the
    # script makes after silencing their warnings.
    source = """\
        import warnings
        warnings.simplefilter(action='ignore', category=FutureWarning)
        import numpy as np
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Noisy(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)

            def __getitem__(self, index):
                return self.rng.normal()


        loader = DataLoader(Noisy(), batch_size=8, num_workers=2)
        """
    out = fixed(source, select="RPL301")
    assert out.index("def seed_worker") > out.index("from torch.utils.data import")


@pytest.mark.parametrize(
    ("imports", "statement", "kind"),
    [
        ("import os\n", 'os.environ["OMP_NUM_THREADS"] = "1"\n', layout.SETUP),
        ("import os as system\n", 'system.environ.setdefault("A", "1")\n', layout.SETUP),
        ("import os.path\n", 'os.environ.update({"A": "1"})\n', layout.SETUP),
        ("import sys\n", 'sys.path.insert(0, "src")\n', layout.SETUP),
        (
            "import warnings\n",
            "warnings.simplefilter(action='ignore', category=FutureWarning)\n",
            layout.SETUP,
        ),
        ("import warnings\n", "warnings.filterwarnings('ignore')\n", layout.SETUP),
        # Not the module: a name that only looks like it.
        ("from config import os\n", 'os.environ["A"] = "1"\n', layout.OTHER),
        # A call on an imported module that imports follow: an interlude of the header.
        ("import os\n", 'os.makedirs("out")\n', layout.INTERLUDE),
        ("import matplotlib\n", 'matplotlib.use("Agg")\n', layout.INTERLUDE),
        ("import warnings\n", "warnings.warn('old')\n", layout.INTERLUDE),
        ("import os\n", "os.environ.setdefault('A', '1'); print()\n", layout.OTHER),
    ],
)
def test_environment_settings_between_imports_belong_to_the_header(
    imports: str, statement: str, kind: str
) -> None:
    header = layout.header_of(cst.parse_module(imports + statement + "import torch\n"))
    kinds = [s.kind for s in header.statements]
    if kind in (layout.SETUP, layout.INTERLUDE):
        assert kinds == [layout.IMPORT, kind, layout.IMPORT] and header.after is None
    else:
        assert kinds == [layout.IMPORT] and header.after is not None
        assert header.after.kind == kind


def test_a_module_call_the_code_starts_with_ends_the_header() -> None:
    # Not followed by an import: the call is the first statement of the work, as before.
    header = layout.header_of(cst.parse_module('import os\nos.makedirs("out")\nx = 1\n'))
    assert [s.kind for s in header.statements] == [layout.IMPORT]
    assert header.after is not None and header.after.kind == layout.OTHER


# -- counts -------------------------------------------------------------------------------------


def test_fix_counts_only_the_findings_of_the_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The RPL402 fix turns deterministic mode on, which creates an RPL204 (no
    # CUBLAS_WORKSPACE_CONFIG) that the next round fixes: one finding, one fix.
    (tmp_path / "train.py").write_text(
        "import torch\n\n\ndef main():\n"
        "    x = torch.zeros(3, device='cuda', requires_grad=True)\n"
        "    y = torch.zeros(3, device='cuda').index_add_(0, torch.tensor([0, 1, 0]), x)\n"
        "    y.sum().backward()\n\n\n"
        "if __name__ == '__main__':\n    torch.manual_seed(0)\n    main()\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["check", ".", "--fix", "--no-cache", "--target-torch", "2.1", "--show-fixes"]
    )
    assert result.exit_code == 0, result.output
    assert "Found 1 error (1 fixed, 0 remaining).\n" in result.stdout
    assert "1 x RPL402" in result.stdout and "RPL204" not in result.stdout
    fixed_text = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "CUBLAS_WORKSPACE_CONFIG" in fixed_text


def test_fix_outcome_lists_what_it_applied() -> None:
    source = "import torch\ntorch.backends.cudnn.benchmark = True\n"
    outcome = fix_source(source, SETTINGS, SAFE)
    assert outcome.found == 1 and outcome.fixed == {"RPL201": 1}
    (applied,) = outcome.applied
    assert applied.original and applied.diagnostic.code == "RPL201"
    assert applied.inserted == (("<stdin>", "False"),)


# -- JSON and notebooks -------------------------------------------------------------------------


def test_notebook_messages_cite_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cells = [
        "import torch\n",
        "# build\nmodel = torch.nn.Linear(2, 2)\n",
        "torch.manual_seed(0)\nx = torch.rand(3)\n",
        "for step in range(3):\n    loss = model(x[:2]).sum()\n    loss.backward()\n",
    ]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": c,
                "outputs": [],
                "execution_count": None,
            }
            for c in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["check", "nb.ipynb", "--no-cache", "--output-format", "json"]
    )
    (finding,) = json.loads(result.stdout)
    assert finding["code"] == "RPL104" and finding["cell"] == 3
    assert finding["filename"] == str(tmp_path / "nb.ipynb")
    # The model is built on line 2 of cell 2 (line 5 of the joined cells).
    assert finding["message"].endswith("at cell 2:2 already consumed it")
    assert finding["fix"]["message"] == "Move this seed before cell 2:2"


def test_expression_code_is_the_indented_code_of_every_expression() -> None:
    """``expression_code`` skips rebuilding a one-line expression (nothing to indent): the
    code it gives is still that of the rebuilt one, for every expression of the examples
    and of two modules, one-line or not, with and without a block indentation."""
    root = Path(__file__).resolve().parent.parent
    sources = [
        *sorted((root / "examples").rglob("*.py")),
        root / "repro_lint" / "layout.py",
        root / "repro_lint" / "arguments.py",
    ]
    multiline = 0
    for source in sources:
        module = cst.parse_module(source.read_text(encoding="utf-8"))
        expressions: list[cst.BaseExpression] = []

        def enter(node: cst.CSTNode, found: list[cst.BaseExpression] = expressions) -> bool:
            if isinstance(node, cst.BaseExpression):
                found.append(node)
            return True

        walk(module, enter, lambda node: None)
        for node in expressions:
            for indent in ("", "    ", "\t\t"):
                expected = module.code_for_node(indented(node, indent))
                assert expression_code(module, node, indent) == expected
                multiline += "\n" in expected
    assert multiline  # the rebuilt path is exercised too


# -- a call inside a method chain ---------------------------------------------------------------


def _chain_source(body: str) -> str:
    return (
        "from datasets import load_dataset\n\n\n"
        "def train(path, tokenize_and_build_the_prompt):\n"
        '    data = load_dataset("json", data_files=path)\n' + textwrap.indent(body, "    ")
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # In its own parentheses, too long with the seed: one link per line.
        (
            "train_data = (\n"
            '    data["train"].shuffle().map(tokenize_and_build_the_prompt, num_proc=4_000_000)\n'
            ")\n",
            "train_data = (\n"
            '    data["train"]\n'
            "    .shuffle(seed=0)\n"
            "    .map(tokenize_and_build_the_prompt, num_proc=4_000_000)\n"
            ")\n",
        ),
        # An assignment's whole value: in parentheses, on one line when it fits there...
        (
            'train_data = data["train"].shuffle().map(tokenize_and_build_the_prompt, num_proc=4)\n',
            "train_data = (\n"
            '    data["train"].shuffle(seed=0).map(tokenize_and_build_the_prompt, num_proc=4)\n'
            ")\n",
        ),
        # ... one link per line when it does not...
        (
            'x_y = data["train"].shuffle().map(tokenize_and_build_the_prompt, num_proc=40).x()\n',
            "x_y = (\n"
            '    data["train"]\n'
            "    .shuffle(seed=0)\n"
            "    .map(tokenize_and_build_the_prompt, num_proc=40)\n"
            "    .x()\n"
            ")\n",
        ),
        # ... and a comment after it stays after the parentheses.
        (
            'train = data["x"].shuffle().map(tokenize_and_build_the_prompt, num_proc=4)  # go\n',
            "train = (\n"
            '    data["x"].shuffle(seed=0).map(tokenize_and_build_the_prompt, num_proc=4)\n'
            ")  # go\n",
        ),
        # A return's value.
        (
            'return data["train"].shuffle().map(tokenize_and_build_the_prompt, num_proc=4444)\n',
            "return (\n"
            '    data["train"].shuffle(seed=0).map(tokenize_and_build_the_prompt, num_proc=4444)\n'
            ")\n",
        ),
        # One link to break before (``.shuffle`` follows a name): the last call's brackets.
        (
            "train = data.shuffle().map(tokenize_and_build_the_prompt, num_proc=4, batched=True)\n",
            "train = data.shuffle(seed=0).map(\n"
            "    tokenize_and_build_the_prompt, num_proc=4, batched=True\n"
            ")\n",
        ),
        # Not a statement's whole value: the call the seed goes into breaks, as before.
        (
            'print(data["x"].shuffle().map(tokenize_and_build_the_prompt, num_proc=4, b=1000))\n',
            'print(data["x"].shuffle(\n'
            "    seed=0\n"
            ").map(tokenize_and_build_the_prompt, num_proc=4, b=1000))\n",
        ),
    ],
)
def test_a_method_chain_that_passes_the_line_length_is_laid_out_as_black_does(
    body: str, expected: str
) -> None:
    # Each expected layout but the last is black's (line length 88) for the fixed code; the
    # file's own lines were within the line length.
    source = _chain_source(body)
    assert all(len(line) <= 88 for line in source.splitlines())
    assert fixed(source, select="RPL306") == _chain_source(expected)


# -- a noqa for ruff's legacy-numpy rule, only where ruff checks it ---------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("pyproject.toml", '[project]\nname = "x"\n', False),
        ("pyproject.toml", "[tool.ruff]\nline-length = 100\n", False),
        ("pyproject.toml", '[tool.ruff.lint]\nselect = ["E", "NPY"]\n', True),
        ("pyproject.toml", '[tool.ruff]\nselect = ["NPY002"]\n', True),
        ("pyproject.toml", '[tool.ruff.lint]\nextend-select = ["NPY"]\n', True),
        ("pyproject.toml", '[tool.ruff.lint]\nselect = ["ALL"]\n', True),
        ("pyproject.toml", '[tool.ruff.lint]\nselect = ["ALL"]\nignore = ["NPY002"]\n', False),
        ("pyproject.toml", '[tool.ruff.lint]\nselect = ["ALL"]\nignore = ["NPY"]\n', False),
        ("pyproject.toml", '[tool.ruff.lint]\nselect = ["NPY002"]\nignore = ["NPY"]\n', True),
        ("ruff.toml", '[lint]\nselect = ["NPY"]\n', True),
        (".ruff.toml", 'select = ["F"]\n', False),
    ],
)
def test_ruff_checks_a_rule_as_its_closest_configuration_selects_it(
    tmp_path: Path, name: str, text: str, expected: bool
) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / name).write_text(text, encoding="utf-8")
    assert layout.ruff_checks(root / "src" / "train.py", "NPY002") is expected


def test_one_directory_s_ruff_files_are_read_in_ruff_s_order(tmp_path: Path) -> None:
    # .ruff.toml, then ruff.toml, then pyproject.toml's [tool.ruff]: ruff reads the first it
    # finds, for the line length, the rule selection and the formatter alike.
    (tmp_path / ".git").mkdir()
    files = {
        ".ruff.toml": 'line-length = 100\n[lint]\nselect = ["NPY"]\n',
        "ruff.toml": 'line-length = 120\n[lint]\nselect = ["F"]\n[format]\n',
        "pyproject.toml": "[tool.ruff]\nline-length = 79\n[tool.ruff.format]\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "train.py"
    forget_settings()
    assert (layout.line_length(path), layout.ruff_checks(path, "NPY002")) == (100, True)
    assert not layout.formatted(path)
    (tmp_path / ".ruff.toml").unlink()
    forget_settings()
    assert (layout.line_length(path), layout.ruff_checks(path, "NPY002")) == (120, False)
    assert layout.formatted(path)
    (tmp_path / "ruff.toml").unlink()
    forget_settings()
    assert (layout.line_length(path), layout.ruff_checks(path, "NPY002")) == (79, False)
    assert layout.formatted(path)


def test_a_numpy_seed_carries_a_noqa_only_where_ruff_checks_its_rule(tmp_path: Path) -> None:
    script = "import numpy as np\n\nif __name__ == '__main__':\n    x = np.random.rand(3)\n"
    (tmp_path / ".git").mkdir()
    for project, config, comment in (
        ("plain", "", ""),
        ("ruff", '[tool.ruff.lint]\nselect = ["NPY"]\n', "  # noqa: NPY002"),
    ):
        (tmp_path / project).mkdir()
        (tmp_path / project / "pyproject.toml").write_text(config, encoding="utf-8")
        path = tmp_path / project / "train.py"
        path.write_text(script, encoding="utf-8")
        assert fixed(script, path, select="RPL101") == (
            "import numpy as np\n\nif __name__ == '__main__':\n"
            f"    np.random.seed(0){comment}\n    x = np.random.rand(3)\n"
        )
