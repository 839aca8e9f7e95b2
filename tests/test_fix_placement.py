"""Where seeding and determinism fixes go in programs of several files, and where they do not
go at all (issue 15): the examples of a rule cannot hold several files or say "no fix"."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from projects import write

from repro_lint.cli import main
from repro_lint.config import load_config
from repro_lint.diagnostics import Diagnostic
from repro_lint.engine import lint_paths


def diagnostics(root: Path, code: str) -> list[Diagnostic]:
    results = lint_paths([root], load_config(root))
    return [d for r in results for d in r.diagnostics if d.code == code]


def fix(root: Path, *extra: str) -> None:
    result = CliRunner().invoke(main, ["check", str(root), "--fix", "--no-cache", *extra])
    assert result.exit_code in (0, 1), result.output


def text(root: Path, name: str) -> str:
    return (root / name).read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# A training program and the launcher that submits it as a cluster job (submitit's shape).
TRAIN = (
    "import argparse\n\nimport numpy as np\nimport torch\nfrom torch import nn\n\n\n"
    "def main(args):\n    torch.manual_seed(args.seed)\n    np.random.seed(args.seed)\n"
    "    model = nn.Conv2d(3, 8, 3).cuda()\n    model(torch.randn(2, 3, 8, 8).cuda()).sum()"
    ".backward()\n    print(np.random.rand(2))\n\n\n"
    "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--seed', type=int, default=1)\n    main(parser.parse_args())\n"
)
LAUNCHER = (
    "import argparse\n\nimport submitit\n\nimport train\n\n\nclass Trainer:\n"
    "    def __init__(self, args):\n        self.args = args\n\n    def __call__(self):\n"
    "        train.main(self.args)\n\n\ndef main():\n    args = argparse.Namespace(seed=1)\n"
    "    executor = submitit.AutoExecutor(folder='jobs')\n"
    "    job = executor.submit(Trainer(args))\n    print(job.job_id)\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def test_a_job_launcher_gets_no_settings_the_job_gets_them_once(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "run_with_submitit.py": LAUNCHER})
    found = diagnostics(tmp_path, "RPL202")
    by_file = {Path(d.filename).name: d for d in found}
    assert set(by_file) == {"train.py", "run_with_submitit.py"}
    assert by_file["run_with_submitit.py"].fix is None
    assert by_file["train.py"].fix is not None
    fix(tmp_path)
    assert text(tmp_path, "run_with_submitit.py") == LAUNCHER
    assert text(tmp_path, "train.py").count("cudnn.deterministic = True") == 1
    assert diagnostics(tmp_path, "RPL202") == []


# The same launcher with the submission in a helper of another module (a project's
# ``submit_jobs``), which the launcher calls with the task's class.
SUBMIT = (
    "import submitit\n\n\ndef submit_jobs(task_class, args, name):\n"
    "    executor = submitit.AutoExecutor(folder='jobs')\n"
    "    executor.update_parameters(name=name)\n"
    "    return executor.submit(task_class(args))\n"
)
HELPED_LAUNCHER = (
    "import argparse\n\nimport train\nfrom submit import submit_jobs\n\n\nclass Trainer:\n"
    "    def __init__(self, args):\n        self.args = args\n\n    def __call__(self):\n"
    "        train.main(self.args)\n\n\ndef main():\n    args = argparse.Namespace(seed=1)\n"
    "    print(submit_jobs(Trainer, args, 'train').job_id)\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


# A training program whose op needs deterministic mode (RPL402, fixed in each program that
# runs it).
GATHER_TRAIN = (
    "import argparse\n\nimport torch\nfrom torch import nn\n\n\n"
    "def main(args):\n    torch.manual_seed(args.seed)\n    model = nn.Linear(4, 4)\n"
    "    idx = torch.randint(0, 4, (2, 4))\n"
    "    torch.gather(model(torch.randn(2, 4)), 1, idx).sum().backward()\n\n\n"
    "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--seed', type=int, default=1)\n    main(parser.parse_args())\n"
)


def test_a_launcher_that_submits_through_a_helper_gets_no_settings(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": GATHER_TRAIN, "launch.py": HELPED_LAUNCHER, "submit.py": SUBMIT})
    (found,) = diagnostics(tmp_path, "RPL402")
    assert found.fix is not None
    fix(tmp_path)
    assert text(tmp_path, "launch.py") == HELPED_LAUNCHER
    assert text(tmp_path, "submit.py") == SUBMIT
    assert text(tmp_path, "train.py").count("use_deterministic_algorithms(True") == 1


def test_a_job_launcher_gets_no_seeds(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "train.py": "import random\n\nimport torch\n\n\ndef main(args):\n"
            "    torch.manual_seed(args.seed)\n    return random.random()\n",
            "run_with_submitit.py": LAUNCHER,
        },
    )
    found = [d for d in diagnostics(tmp_path, "RPL101") if d.filename.endswith("submitit.py")]
    assert found and all(d.fix is None for d in found)


def test_a_program_that_measures_speed_gets_no_deterministic_mode(tmp_path: Path) -> None:
    bench = (
        "import torch\nimport torch.nn.functional as F\n\ntorch.manual_seed(1337)\n"
        "q = torch.randn(2, 4, 8, 16, device='cuda', requires_grad=True)\n"
        "with torch.profiler.profile() as prof:\n    for _ in range(10):\n"
        "        F.scaled_dot_product_attention(q, q, q).sum().backward()\n"
        "print(prof.key_averages())\n"
    )
    write(tmp_path, {"bench.py": bench})
    found = diagnostics(tmp_path, "RPL202")
    assert found and all(d.fix is None for d in found)
    fix(tmp_path, "--unsafe-fixes")
    assert text(tmp_path, "bench.py") == bench


def test_a_model_files_smoke_test_gets_no_deterministic_mode(tmp_path: Path) -> None:
    model = (
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.to_patches = nn.Conv2d(3, 16, 4, stride=4)\n\n"
        "    def forward(self, img):\n        tokens = self.to_patches(img)\n"
        "        return F.interpolate(tokens, 4, mode='bilinear')\n\n\n"
        "if __name__ == '__main__':\n    net = Net().cuda()\n"
        "    pred = net(torch.randn(2, 3, 32, 32).cuda())\n    assert pred.shape == (2, 16, 4, 4)\n"
    )
    write(tmp_path, {"model.py": model}, config="[tool.repro-lint]\ntarget-torch = '2.4'\n")
    found = diagnostics(tmp_path, "RPL402")
    assert found and all(d.fix is None for d in found)


def test_deterministic_mode_joins_the_settings_next_to_the_seed(tmp_path: Path) -> None:
    """RPL402's warn-only mode and RPL202's settings meet in one block before the seeding,
    and with unsafe fixes the program gets one call, not a strict and a warn-only one."""
    source = (
        "import torch\nimport torch.nn.functional as F\n\n\ndef main():\n"
        "    # fix the seed for reproducibility\n    torch.manual_seed(0)\n"
        "    q = torch.randn(2, 4, 8, 16, device='cuda', requires_grad=True)\n"
        "    F.scaled_dot_product_attention(q, q, q).sum().backward()\n"
        "    idx = torch.tensor([0, 1]).cuda()\n"
        "    torch.gather(q, 0, idx.expand(2, 4, 8, 16)).sum().backward()\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    write(tmp_path, {"train.py": source}, config="[tool.repro-lint]\ntarget-torch = '2.10'\n")
    fix(tmp_path)
    assert text(tmp_path, "train.py").split("\n")[4:8] == [
        "def main():",
        "    torch.use_deterministic_algorithms(True, warn_only=True)",
        "    # fix the seed for reproducibility",
        "    torch.manual_seed(0)",
    ]
    write(tmp_path, {"train.py": source}, config="[tool.repro-lint]\ntarget-torch = '2.10'\n")
    fix(tmp_path, "--unsafe-fixes")
    assert text(tmp_path, "train.py").count("use_deterministic_algorithms") == 1


def test_a_library_seed_fallback_is_reported_without_a_constant(tmp_path: Path) -> None:
    """``if seed is None: seed = <draw>`` for a parameter of a library function: its
    documented fresh seed for callers that pass none."""
    library = (
        "import numpy as np\n\n\nclass VecEnv:\n"
        "    def seed(self, seed: int | None = None) -> list[int]:\n"
        "        if seed is None:\n"
        "            seed = int(np.random.randint(0, 2**32 - 1, dtype=np.uint32))\n"
        "        return [seed + i for i in range(4)]\n"
    )
    write(tmp_path, {"envs/__init__.py": "", "envs/base.py": library})
    found = diagnostics(tmp_path, "RPL103")
    assert found and all(d.fix is None for d in found)


def test_numpy_used_only_by_scikit_learn_gets_random_state_not_a_seed(tmp_path: Path) -> None:
    source = (
        "import torch\nfrom sklearn.svm import LinearSVC\n\ntorch.manual_seed(42)\n"
        "model = LinearSVC(C=1.0, dual=True)\nmodel.fit(X, y)\n"
    )
    write(tmp_path, {"wl_kernel.py": source})
    found = diagnostics(tmp_path, "RPL101")
    assert found and all(d.fix is None for d in found)
    fix(tmp_path)
    fixed = text(tmp_path, "wl_kernel.py")
    assert "random_state=" in fixed and "np.random.seed" not in fixed
    assert diagnostics(tmp_path, "RPL101") == []
