"""RPL301 on a real run: a dataset owning generator objects, two CPU DataLoader workers.

Before `repro-lint --fix` both workers draw the same numbers; after it they differ, and the
fixed run still repeats itself.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CONSOLE_SCRIPT = Path(sys.executable).parent / "repro-lint"

SCRIPT = '''\
"""Two loader workers draw from the dataset's own numpy Generator."""
import json

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Noisy(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 8

    def __getitem__(self, index):
        worker = torch.utils.data.get_worker_info().id
        return worker, float(self.rng.random())


def main():
    torch.manual_seed(0)
    loader = DataLoader(Noisy(), batch_size=None, num_workers=2)
    draws = {}
    for worker, value in loader:
        draws.setdefault(str(int(worker)), []).append(value)
    print(json.dumps(draws, sort_keys=True))


if __name__ == "__main__":
    main()
'''


def _lint(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONSOLE_SCRIPT), str(path), "--select", "RPL301", "--no-cache", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=path.parent,
    )


def _draws(path: Path) -> dict[str, list[Any]]:
    done = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=path.parent,
    )
    assert done.returncode == 0, done.stderr
    draws: dict[str, list[Any]] = json.loads(done.stdout)
    assert sorted(draws) == ["0", "1"]
    assert [len(values) for values in draws.values()] == [4, 4]
    return draws


@pytest.mark.torch
@pytest.mark.slow
def test_fix_gives_each_worker_its_own_stream(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    script = tmp_path / "noisy.py"
    script.write_text(SCRIPT, encoding="utf-8")
    loader_row = SCRIPT.splitlines().index(
        "    loader = DataLoader(Noisy(), batch_size=None, num_workers=2)"
    )

    checked = _lint(script, "--output-format", "concise")
    assert checked.returncode == 1, checked.stderr
    assert f"noisy.py:{loader_row + 1}:14: RPL301" in checked.stdout
    assert "`Noisy.rng` is copied into every DataLoader worker" in checked.stdout

    # The control: every worker starts from a copy of the same Generator state.
    before = _draws(script)
    assert before["0"] == before["1"]

    fixed = _lint(script, "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    text = script.read_text(encoding="utf-8")
    ast.parse(text)
    assert "worker_init_fn=seed_worker" in text
    assert "    dataset.rng = np.random.default_rng(worker_seed)\n" in text
    assert _lint(script, "--fix").returncode == 0
    assert script.read_text(encoding="utf-8") == text

    after = _draws(script)
    assert not set(after["0"]) & set(after["1"])
    # Still repeatable: the worker seeds come from the seeded global generator.
    assert _draws(script) == after


OTHER_GENERATORS = (
    SCRIPT.replace(
        "        self.rng = np.random.default_rng(0)\n",
        "        self.state = np.random.RandomState(0)\n"
        "        self.py = random.Random(0)\n"
        "        self.g = torch.Generator().manual_seed(0)\n",
    )
    .replace(
        "float(self.rng.random())",
        "[float(self.state.rand()), self.py.random(), float(torch.rand(1, generator=self.g))]",
    )
    .replace("import json\n", "import json\nimport random\n")
)


@pytest.mark.torch
@pytest.mark.slow
def test_fix_reseeds_every_kind_of_generator_a_dataset_owns(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    script = tmp_path / "noisy.py"
    script.write_text(OTHER_GENERATORS, encoding="utf-8")
    before = _draws(script)
    assert before["0"] == before["1"]
    assert _lint(script, "--fix").returncode == 0
    text = script.read_text(encoding="utf-8")
    assert (
        "    dataset.state.seed(worker_seed)\n"
        "    dataset.py.seed(worker_seed)\n"
        "    dataset.g.manual_seed(worker_seed)\n"
    ) in text
    after = _draws(script)
    for kind in range(3):
        streams = [{float(values[kind]) for values in after[worker]} for worker in ("0", "1")]
        assert not streams[0] & streams[1], kind
