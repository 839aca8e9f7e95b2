"""The seeding rules on programs of several files: what the analysis follows and where the
fixes go (issues 12 and 15)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from projects import write

from repro_lint.cli import main
from repro_lint.config import load_config
from repro_lint.engine import lint_paths

SEEDING = {"RPL101", "RPL103", "RPL104", "RPL107", "RPL108", "RPL109"}


def findings(root: Path, *names: str, codes: set[str] = SEEDING) -> set[tuple[str, str, int]]:
    paths = [root / name for name in names] if names else [root]
    results = lint_paths(paths, load_config(root))
    return {
        (_relative(root, d.filename), d.code, d.location.row)
        for r in results
        for d in r.diagnostics
        if d.code in codes
    }


def _relative(root: Path, filename: str) -> str:
    path = Path(filename)
    return (path.relative_to(root) if path.is_absolute() else path).as_posix()


def messages(root: Path, code: str) -> list[str]:
    results = lint_paths([root], load_config(root))
    return [d.message for r in results for d in r.diagnostics if d.code == code]


def fix(root: Path, *extra: str) -> None:
    result = CliRunner().invoke(main, ["check", str(root), "--fix", "--no-cache", *extra])
    assert result.exit_code in (0, 1), result.output


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_names_from_star_imports_are_followed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "models/__init__.py": "from .net import *\n",
            "models/net.py": "from torch import nn\n\n\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n",
            "train.py": "import torch\nfrom models import *\n\nnet = Net()\n"
            "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n\n\ndef train(epoch):\n"
            "    net(torch.ones(1, 2)).sum().backward()\n    opt.step()\n\n\n"
            "for epoch in range(3):\n    train(epoch)\n",
        },
    )
    assert ("train.py", "RPL101", 4) in findings(tmp_path, "train.py")
    assert messages(tmp_path, "RPL101") == [
        "This entry point never seeds `torch` (consumed at models/net.py:7)"
    ]


def test_a_library_the_tree_contains_is_project_code(tmp_path: Path) -> None:
    """A checkout of a library (here one named like mmengine) is followed from its
    examples."""
    write(
        tmp_path,
        {
            "mmengine/__init__.py": "from .helpers import build\n",
            "mmengine/helpers.py": "import torch\n\n\ndef build():\n"
            "    return torch.nn.Linear(2, 2)\n",
            "examples/train.py": "import mmengine\n\nif __name__ == '__main__':\n"
            "    model = mmengine.build()\n",
        },
    )
    assert findings(tmp_path, "examples/train.py") == {("examples/train.py", "RPL101", 3)}


def test_a_script_imported_by_another_file_is_not_an_entry_point(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "noise.py": "import numpy as np\n\nTABLE = np.random.rand(4)\n",
            "run.py": "import numpy as np\nimport noise\n\nif __name__ == '__main__':\n"
            "    np.random.seed(0)\n    print(noise.TABLE)\n",
        },
    )
    assert ("noise.py", "RPL101", 3) not in findings(tmp_path)
    write(tmp_path, {"run.py": "print('no imports')\n"})
    assert ("noise.py", "RPL101", 3) in findings(tmp_path)


def test_a_library_s_own_set_up_at_import_is_no_script(tmp_path: Path) -> None:
    # A module that other files import fills its tables at top level (a bare call of its own
    # function that draws nothing) and builds an object whose methods draw later: both run
    # as part of the programs importing it, not as a program of their own.
    write(
        tmp_path,
        {
            "configs.py": "import tok\n\nTABLE = {}\n\n\ndef _scan():\n    TABLE['a'] = 1\n\n\n"
            "_scan()\n",
            "tok.py": "import torch\n\n\nclass Tok:\n    def __call__(self, n):\n"
            "        return torch.randperm(n)\n\n\n_tok = Tok()\n",
            "run.py": "import torch\n\nimport configs\nimport tok\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    print(configs.TABLE, tok._tok(3))\n",
        },
    )
    assert findings(tmp_path) == set()
    # Not imported by any file, a module's set-up call starts a script: one that goes on to
    # draw through another module's function is reported, at that call.
    for name in ("configs.py", "tok.py"):
        (tmp_path / name).unlink()
    write(
        tmp_path,
        {
            "split.py": "import torch\n\n\ndef shuffle(n):\n    return torch.randperm(n)\n",
            "prep.py": "from split import shuffle\n\n\ndef setup():\n    print('ready')\n\n\n"
            "setup()\nparts = shuffle(10)\n",
        },
    )
    assert findings(tmp_path) == {("prep.py", "RPL101", 8)}
    # Imported by a program, it is part of that program.
    write(
        tmp_path, {"run.py": "import prep\n\nif __name__ == '__main__':\n    print(prep.parts)\n"}
    )
    assert findings(tmp_path) == {("run.py", "RPL101", 3)}


def test_late_seed_advice_names_where_the_paths_part(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.py": "import torch\n\n\ndef prepare():\n    model = torch.nn.Linear(2, 2)\n"
            "    torch.manual_seed(0)\n    return model\n",
            "train.py": "from setup import prepare\n\nif __name__ == '__main__':\n    prepare()\n",
        },
    )
    results = lint_paths([tmp_path], load_config(tmp_path))
    late = [d for r in results for d in r.diagnostics if d.code == "RPL104"]
    assert len(late) == 1
    assert late[0].fix is not None
    assert late[0].fix.message == "Move the seed at setup.py:6 before setup.py:5"


def test_missing_seed_fix_joins_a_shared_helper_once(tmp_path: Path) -> None:
    helper = (
        "import random\n\nimport torch\n\n\ndef seed_all(seed):\n    random.seed(seed)\n"
        "    torch.manual_seed(seed)\n"
    )
    entry = (
        "import numpy as np\nfrom helpers import seed_all\n\n\ndef main(seed):\n"
        "    seed_all(seed)\n    print(np.random.rand(2))\n\n\n"
        "if __name__ == '__main__':\n    main(7)\n"
    )
    write(tmp_path, {"helpers.py": helper, "a.py": entry, "b.py": entry})
    assert {f for f in findings(tmp_path) if f[1] == "RPL101"} == {
        ("a.py", "RPL101", 10),
        ("b.py", "RPL101", 10),
    }
    fix(tmp_path)
    fixed = (tmp_path / "helpers.py").read_text(encoding="utf-8")
    # However the file spells numpy (the fix may import it as np).
    assert len(re.findall(r"\b(?:np|numpy)\.random\.seed\(seed\)", fixed)) == 1, fixed
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == entry
    assert findings(tmp_path) == set()


def test_worker_in_another_file_gets_its_seeds(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "work.py": "import torch\n\n\ndef worker(rank, args):\n    global STEP\n"
            "    model = torch.nn.Linear(2, 2)\n",
            "launch.py": "import argparse\nimport torch\nimport torch.multiprocessing as mp\n"
            "from work import worker\n\nif __name__ == '__main__':\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--seed', type=int, default=5)\n"
            "    args = parser.parse_args()\n    torch.manual_seed(args.seed)\n"
            "    mp.spawn(worker, args=(args,), nprocs=2)\n",
        },
    )
    assert findings(tmp_path) == {("launch.py", "RPL107", 11)}
    fix(tmp_path)
    assert (tmp_path / "work.py").read_text(encoding="utf-8") == (
        "import torch\n\n\ndef worker(rank, args):\n    global STEP\n"
        "    torch.manual_seed(args.seed + rank)\n    model = torch.nn.Linear(2, 2)\n"
    )
    assert findings(tmp_path) == set()


ACCELERATED = (
    "import torch\nfrom accelerate import Accelerator\n{imports}\n\n"
    "def train():\n    accelerator = Accelerator()\n    data = list(range(64))\n"
    "{loader}"
    "    batch = torch.randint(0, 64, (8,), device=accelerator.device)\n\n\n"
    "if __name__ == '__main__':\n    train()\n"
)


@pytest.mark.parametrize(
    ("imports", "loader", "seed"),
    [
        ("", "", 'torch.manual_seed(int(os.environ.get("RANK", 0)))'),
        # Every rank must build the same dataset for the sampler to split it.
        ("from torch.utils.data import DataLoader, DistributedSampler\n",
         "    loader = DataLoader(data, sampler=DistributedSampler(data))\n",
         "torch.manual_seed(0)"),
    ],
    ids=["own-batches", "split-by-a-sampler"],
)  # fmt: skip
def test_a_script_launched_once_per_process_seeds_each_with_its_rank(
    tmp_path: Path, imports: str, loader: str, seed: str
) -> None:
    write(tmp_path, {"train.py": ACCELERATED.format(imports=imports, loader=loader)})
    fix(tmp_path, "--select", "RPL101")
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert f"if __name__ == '__main__':\n    {seed}\n    train()\n" in text
    assert text.startswith("import os\n\n") == ("RANK" in seed)


def test_a_program_run_by_mpiexec_seeds_each_process_with_its_mpi_rank(tmp_path: Path) -> None:
    # ``mpiexec`` starts the script once per process; the program shards its data by MPI
    # rank itself, so every rank should draw its own noise.
    write(
        tmp_path,
        {
            "dist_util.py": "from mpi4py import MPI\n\n\n"
            "def setup():\n    return MPI.COMM_WORLD.Get_rank()\n",
            "train.py": "import argparse\n\nimport torch\n\nimport dist_util\n\n\n"
            "def main():\n    dist_util.setup()\n    noise = torch.randn(4)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
        },
    )
    fix(tmp_path, "--select", "RPL101")
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == (
        "import argparse\n\nimport torch\nfrom mpi4py import MPI\n\nimport dist_util\n\n\n"
        "def main():\n    dist_util.setup()\n    noise = torch.randn(4)\n\n\n"
        "if __name__ == '__main__':\n    torch.manual_seed(MPI.COMM_WORLD.Get_rank())\n"
        "    main()\n"
    )
    assert findings(tmp_path) == set()


@pytest.mark.parametrize(
    ("default", "seed"),
    [
        ("42", "args.seed + MPI.COMM_WORLD.Get_rank()"),
        ("None", "(args.seed if args.seed is not None else 0) + MPI.COMM_WORLD.Get_rank()"),
    ],
    ids=["default", "none-default"],
)
def test_a_seed_option_of_a_program_run_by_mpiexec_adds_the_rank(
    tmp_path: Path, default: str, seed: str
) -> None:
    write(
        tmp_path,
        {
            "dist_util.py": "from mpi4py import MPI\n\n\n"
            "def setup():\n    return MPI.COMM_WORLD.Get_rank()\n",
            "train.py": "import argparse\n\nimport torch\n\nimport dist_util\n\n\n"
            "def main(args):\n    dist_util.setup()\n    noise = torch.randn(4)\n\n\n"
            "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
            f"    parser.add_argument('--seed', type=int, default={default})\n"
            "    args = parser.parse_args()\n    main(args)\n",
        },
    )
    fix(tmp_path, "--select", "RPL101")
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert f"    args = parser.parse_args()\n    torch.manual_seed({seed})\n" in text, text
    assert "import torch\nfrom mpi4py import MPI\n" in text, text
    assert findings(tmp_path) == set()


def test_an_mpi_import_already_there_is_used(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "train.py": "import torch\nfrom mpi4py import MPI as mpi\n\n\n"
            "def main():\n    shard = mpi.COMM_WORLD.Get_rank()\n    noise = torch.randn(4)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
        },
    )
    fix(tmp_path, "--select", "RPL101")
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert text.startswith("import torch\nfrom mpi4py import MPI as mpi\n\n\n"), text
    assert "    torch.manual_seed(mpi.COMM_WORLD.Get_rank())\n    main()\n" in text


def test_a_random_rendezvous_address_needs_no_seed(tmp_path: Path) -> None:
    # Drawing the port a process group meets at changes no result; seeding ``random`` for
    # it would make concurrent runs pick the same port.
    write(
        tmp_path,
        {
            "train.py": "import argparse\nimport random\n\nimport torch\n\n\n"
            "def main():\n    args = argparse.ArgumentParser().parse_args()\n"
            "    args.dist_url = f'tcp://localhost:{random.randrange(49152, 65535)}'\n"
            "    noise = torch.randn(4)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
        },
    )
    fix(tmp_path, "--select", "RPL101")
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "    torch.manual_seed(0)\n    main()\n" in text
    assert "random.seed" not in text


def test_an_accelerator_the_program_never_builds_gives_no_rank(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "tools.py": "from accelerate import Accelerator\n\n\n"
            "def launch():\n    return Accelerator()\n",
            "train.py": "import torch\n\nimport tools\n\n"
            "if __name__ == '__main__':\n    batch = torch.randint(0, 64, (8,))\n",
        },
    )
    fix(tmp_path, "--select", "RPL101")
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "    torch.manual_seed(0)\n    batch" in text


def test_smoke_tests_get_no_seeds(tmp_path: Path) -> None:
    model = (
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n"
        "        return self.fc(x)\n\n\nif __name__ == '__main__':\n"
        "    print(Net()(torch.randn(2, 4)).shape)\n"
    )
    write(tmp_path, {"net.py": model})
    assert findings(tmp_path) == set()
    fix(tmp_path)
    assert (tmp_path / "net.py").read_text(encoding="utf-8") == model


def test_checkpoint_saver_in_one_file_resume_in_another(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "utils.py": "import torch\n\n\ndef save_checkpoint(state, path):\n"
            "    torch.save(state, path)\n",
            "train.py": "import torch\nfrom utils import save_checkpoint\n\n\n"
            "def main(model, optimizer, args):\n    start = 0\n    if args.resume:\n"
            "        ckpt = torch.load(args.resume)\n        optimizer.load_state_dict(ckpt['optimizer'])\n"
            "        start = ckpt['epoch']\n    for epoch in range(start, 9):\n"
            "        save_checkpoint({'model': model.state_dict(), 'epoch': epoch}, 'last.pt')\n\n\n"
            "if __name__ == '__main__':\n    main(*build())\n",
        },
    )
    assert ("utils.py", "RPL109", 5) in findings(tmp_path)
    (tmp_path / "utils.py").write_text(
        "import random\nimport torch\n\n\ndef save_checkpoint(state, path):\n"
        "    state['rng'] = (torch.get_rng_state(), random.getstate())\n"
        "    torch.save(state, path)\n",
        encoding="utf-8",
    )
    assert {f for f in findings(tmp_path) if f[1] == "RPL109"} == set()


EXPORTING = (
    "import torch\n{imports}\n\n"
    "def main(model, optimizer, args):\n"
    "    start = 0\n"
    "    if args.resume:\n"
    "        ckpt = torch.load('checkpoint.pth')\n"
    "        model.load_state_dict(ckpt['model'])\n"
    "        {restore}\n"
    "    for epoch in range(start, 9):\n"
    "        train_one_epoch(model, optimizer)\n"
    "        {save}\n"
    "    torch.save(model.backbone.state_dict(), 'resnet50.pth')\n\n\n"
    "if __name__ == '__main__':\n    main(*build())\n"
)
SAVER = "import torch\n\n\ndef save_checkpoint(state, path):\n    torch.save(state, path)\n"
RESUMABLE = "{'model': model.state_dict(), 'optimizer': optimizer.state_dict(), 'epoch': epoch}"


@pytest.mark.parametrize(
    ("imports", "restore", "save", "expected"),
    [
        # The program resumes from its whole training state (reported); the final weights
        # beside it are an export.
        (
            "",
            "optimizer.load_state_dict(ckpt['optimizer'])",
            f"torch.save({RESUMABLE}, 'checkpoint.pth')",
            {("train.py", "RPL109", 12)},
        ),
        # The same through a checkpoint saver in another module.
        (
            "from utils import save_checkpoint",
            "optimizer.load_state_dict(ckpt['optimizer'])",
            f"save_checkpoint({RESUMABLE}, 'checkpoint.pth')",
            {("utils.py", "RPL109", 5)},
        ),
        # The optimizer's state saved apart: the resume needs the weights saved too.
        (
            "",
            "optimizer.load_state_dict(ckpt['optimizer'])",
            "torch.save(optimizer.state_dict(), 'optimizer.pth')",
            {("train.py", "RPL109", 12), ("train.py", "RPL109", 13)},
        ),
        # Weights alone, loaded back to continue: both saves are what a resume reads.
        (
            "",
            "start = ckpt['epoch']",
            "torch.save({'model': model.state_dict()}, 'checkpoint.pth')",
            {("train.py", "RPL109", 12), ("train.py", "RPL109", 13)},
        ),
    ],
    ids=["resumable", "through-a-saver", "optimizer-apart", "weights-only"],
)
def test_final_weights_beside_a_whole_training_state_are_an_export(
    tmp_path: Path, imports: str, restore: str, save: str, expected: set[tuple[str, str, int]]
) -> None:
    source = EXPORTING.format(imports=imports, restore=restore, save=save)
    write(tmp_path, {"train.py": source, "utils.py": SAVER})
    assert {f for f in findings(tmp_path) if f[1] == "RPL109"} == expected


RESTORING = (
    "import torch\n\n\ndef save_on_master(*args, **kwargs):\n    torch.save(*args, **kwargs)\n\n\n"
    "def restart_from_checkpoint(path, run_variables=None, **kwargs):\n"
    "    checkpoint = torch.load(path)\n"
    "    for key, value in kwargs.items():\n"
    "        if key in checkpoint:\n"
    "            value.load_state_dict(checkpoint[key])\n"
    "    for name in run_variables or {}:\n"
    "        run_variables[name] = checkpoint[name]\n"
)
TRAINING = (
    "import utils\n\n\n"
    "def main(model, optimizer):\n"
    "    to_restore = {{'epoch': 0}}\n"
    "    utils.restart_from_checkpoint('last.pth', run_variables=to_restore, {handed})\n"
    "    for epoch in range(to_restore['epoch'], 9):\n"
    "        state = {{'model': model.state_dict(), 'optimizer': optimizer.state_dict(),\n"
    "                 'epoch': epoch + 1}}\n"
    "        utils.save_on_master(state, 'last.pth')\n\n\n"
    "if __name__ == '__main__':\n    main(*build())\n"
)


@pytest.mark.parametrize(
    ("handed", "expected"),
    [
        # The helper loads each keyword's state: handing it the optimizer resumes.
        ("model=model, optimizer=optimizer", {("train.py", "RPL109", 10)}),
        ("model=model, lr_scheduler=scheduler", {("train.py", "RPL109", 10)}),
        # The model's weights alone (a warm start): nothing is resumed.
        ("model=model", set()),
    ],
    ids=["optimizer", "scheduler", "weights-only"],
)
def test_a_resume_through_a_helper_restoring_its_keywords(
    tmp_path: Path, handed: str, expected: set[tuple[str, str, int]]
) -> None:
    write(tmp_path, {"utils.py": RESTORING, "train.py": TRAINING.format(handed=handed)})
    assert {f for f in findings(tmp_path) if f[1] == "RPL109"} == expected


def test_entropy_seed_fed_to_three_calls_is_one_finding(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "train.py": "import time\nimport random\nimport numpy as np\nimport torch\n\n\n"
            "def set_seed(seed=None):\n    if seed is None:\n        seed = int(time.time())\n"
            "    random.seed(seed)\n    np.random.seed(seed)\n    torch.manual_seed(seed)\n"
        },
    )
    assert findings(tmp_path) == {("train.py", "RPL103", 9)}
    fix(tmp_path, "--unsafe-fixes")
    text = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert "        seed = 0\n" in text
    assert "random.seed(seed)\n" in text


def test_seed_and_cudnn_fixes_meet_in_one_block(tmp_path: Path) -> None:
    """RPL101 and RPL202 in one program: the settings, the program's seed and the missing
    seed end up together, with the program's seed value (issue 15)."""
    write(
        tmp_path,
        {
            "train.py": "import argparse\n\nimport numpy as np\nimport torch\nfrom torch import nn\n"
            "\n\ndef main(args):\n    torch.manual_seed(args.seed)\n"
            "    model = nn.Conv2d(3, 8, 3).cuda()\n    return model, np.random.rand(4)\n\n\n"
            "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--seed', type=int, default=1)\n"
            "    main(parser.parse_args())\n"
        },
    )
    results = lint_paths([tmp_path], load_config(tmp_path))
    missing = [d for r in results for d in r.diagnostics if d.code == "RPL101"]
    assert [d.fix.message for d in missing if d.fix is not None] == [
        "Seed them next to the program's own seed (train.py:9), with its value"
    ]
    fix(tmp_path)
    assert (tmp_path / "train.py").read_text(encoding="utf-8").split("\n")[7:13] == [
        "def main(args):",
        "    torch.backends.cudnn.deterministic = True",
        "    torch.backends.cudnn.benchmark = False",
        "    torch.manual_seed(args.seed)",
        "    np.random.seed(args.seed)",
        "    model = nn.Conv2d(3, 8, 3).cuda()",
    ]
    assert findings(tmp_path, codes={"RPL101", "RPL202"}) == set()


def test_calls_through_a_dict_of_functions_are_followed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "steps.py": "import random\n\n\ndef jitter(x):\n    return x + random.random()\n\n\n"
            "def same(x):\n    return x\n\n\nSTEPS = {'jitter': jitter, 'same': same}\n"
            "PLAIN = {'same': same}\n",
            "run.py": "from steps import STEPS\n\nif __name__ == '__main__':\n"
            "    print(STEPS['jitter'](1.0))\n",
            "quiet.py": "import steps\n\n\ndef run(name):\n    return steps.PLAIN[name](1.0)\n\n\n"
            "if __name__ == '__main__':\n    print(run('same'))\n",
            "loud.py": "import steps\n\nif __name__ == '__main__':\n"
            "    print(steps.STEPS['jitter'](1.0))\n",
            "tables.py": "from steps import STEPS\n",
            "via.py": "from tables import STEPS\n\nif __name__ == '__main__':\n"
            "    print(STEPS['jitter'](1.0))\n",
        },
    )
    # A table imported from another module (by name, as a module's attribute, or through a
    # module that imports it) is followed to the functions it holds: STEPS's jitter draws;
    # PLAIN's only function does not.
    assert findings(tmp_path) == {
        ("run.py", "RPL101", 3),
        ("loud.py", "RPL101", 3),
        ("via.py", "RPL101", 3),
    }
    for name in ("loud.py", "tables.py", "via.py"):
        (tmp_path / name).unlink()
    write(
        tmp_path,
        {
            "steps.py": (tmp_path / "steps.py").read_text(encoding="utf-8")
            + "\n\ndef apply(name, x):\n    return STEPS[name](x)\n",
            "run.py": "from steps import apply\n\nif __name__ == '__main__':\n"
            "    print(apply('jitter', 1.0))\n",
        },
    )
    assert findings(tmp_path) == {("run.py", "RPL101", 3)}


def test_a_model_picked_from_another_module_s_table_brings_its_kernels(tmp_path: Path) -> None:
    # ``MODELS[args.model](...)``, the table a dict of the models module's constructors: the
    # program builds whichever the option names, so their convolutions are on its path.
    write(
        tmp_path,
        {
            "models.py": "import torch.nn as nn\n\n\ndef small():\n    return nn.Conv2d(3, 8, 3)\n"
            "\n\ndef large():\n    return nn.Conv2d(3, 64, 3)\n\n\n"
            "MODELS = {'small': small, 'large': large}\n",
            "train.py": "import argparse\n\nimport torch\n\nfrom models import MODELS\n\n\n"
            "def main(args):\n    torch.manual_seed(0)\n"
            "    model = MODELS[args.model]().cuda()\n"
            "    model(torch.randn(1, 3, 8, 8, device='cuda')).sum().backward()\n\n\n"
            "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--model', default='small')\n"
            "    main(parser.parse_args())\n",
        },
    )
    assert findings(tmp_path, codes={"RPL101", "RPL202"}) == {("train.py", "RPL202", 14)}


def test_a_fabric_object_seeds_with_its_seed_everything(tmp_path: Path) -> None:
    # Fabric.seed_everything is the Lightning helper, as a static method that code calls on
    # the Fabric object it built.
    main = (
        "import lightning as L\nimport torch\n\n\ndef main():\n"
        "    fabric = L.Fabric(accelerator='cuda')\n    fabric.launch()\n{seed}"
        "    model = torch.nn.Linear(2, 2)\n    return model\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    write(
        tmp_path,
        {
            "seeded.py": main.format(
                seed="    fabric.seed_everything(1337 + fabric.global_rank)\n"
            ),
            "unseeded.py": main.format(seed=""),
        },
    )
    assert findings(tmp_path) == {("unseeded.py", "RPL101", 12)}


def test_a_subclass_of_a_trainer_that_seeds_seeds_where_its_constructor_runs(
    tmp_path: Path,
) -> None:
    # transformers.Trainer.__init__ calls set_seed(args.seed): a project subclass seeds when
    # it is built without an __init__ of its own, or where its __init__ calls super()'s.
    main_block = "if __name__ == '__main__':\n    t = {0}(args)\n    t.train()\n"
    write(
        tmp_path,
        {
            "trainers.py": "import torch\nfrom transformers import Trainer\n\n\n"
            "class Plain(Trainer):\n    def compute_loss(self, model, inputs):\n"
            "        return model(**inputs).loss + torch.randn(1)\n\n\n"
            "class Before(Trainer):\n    def __init__(self, args):\n"
            "        self.noise = torch.randn(3)\n        super().__init__(args=args)\n\n\n"
            "class After(Trainer):\n    def __init__(self, args):\n"
            "        super().__init__(args=args)\n        self.noise = torch.randn(3)\n\n\n"
            "class Inherits(After):\n    pass\n\n\n"
            "class Never(Trainer):\n    def __init__(self, args):\n"
            "        self.noise = torch.randn(3)\n",
            **{
                f"{name.lower()}.py": f"from trainers import {name}\n\nargs = None\n"
                + main_block.format(name)
                for name in ("Plain", "Before", "After", "Inherits", "Never")
            },
        },
    )
    assert findings(tmp_path) == {
        ("before.py", "RPL104", 5),
        ("never.py", "RPL101", 4),
    }
    assert messages(tmp_path, "RPL104") == [
        "Seeds `torch` after a random draw at trainers.py:12 already consumed it"
    ]


def test_a_model_built_in_the_arguments_of_a_seeding_constructor_is_drawn_first(
    tmp_path: Path,
) -> None:
    # Python evaluates a call's arguments before the call: the Runner seeds after Net()
    # drew its weights, whether the model is built inline or on the line before; so does
    # a project subclass of a Trainer, built around a model built in its arguments.
    net = (
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = torch.nn.Linear(3, 3)\n"
    )
    runner = "from mmengine.runner import Runner\n\nfrom net import Net\n\n"
    write(
        tmp_path,
        {
            "net.py": net,
            "trainers.py": "from transformers import Trainer\n\n\nclass Mine(Trainer):\n    pass\n",
            "inline.py": runner + "if __name__ == '__main__':\n"
            "    r = Runner(model=Net(), work_dir='w', randomness=dict(seed=0))\n    r.train()\n",
            "before.py": runner + "if __name__ == '__main__':\n    model = Net()\n"
            "    r = Runner(model=model, work_dir='w', randomness=dict(seed=0))\n    r.train()\n",
            "after.py": runner + "if __name__ == '__main__':\n"
            "    r = Runner(model=dict(type='Net'), work_dir='w', randomness=dict(seed=0))\n"
            "    r.train()\n",
            "subclass.py": "from net import Net\nfrom trainers import Mine\n\n"
            "if __name__ == '__main__':\n    Mine(model=Net()).train()\n",
        },
    )
    assert findings(tmp_path, codes={"RPL104"}) == {
        ("inline.py", "RPL104", 6),
        ("before.py", "RPL104", 7),
        ("subclass.py", "RPL104", 5),
    }


def test_only_the_first_seed_after_a_draw_is_late(tmp_path: Path) -> None:
    # The seeds after the first seed again on purpose (each phase from a known state): the
    # first one came late, and moving it is the fix; the others are not late news, in the
    # same function or in one it calls.
    write(
        tmp_path,
        {
            "phases.py": "import torch\n\n\ndef phase():\n    torch.manual_seed(0)\n"
            "    return torch.randn(3)\n",
            "train.py": "import torch\n\nfrom phases import phase\n\nif __name__ == '__main__':\n"
            "    model = torch.nn.Linear(2, 2)\n    torch.manual_seed(0)\n"
            "    x = torch.randn(3)\n    torch.manual_seed(0)\n    phase()\n",
        },
    )
    assert findings(tmp_path, codes={"RPL104"}) == {("train.py", "RPL104", 7)}


def test_a_dataset_built_by_cls_in_a_classmethod_is_the_class(tmp_path: Path) -> None:
    # ``cls(...)`` in a classmethod builds the class, as its name would: the loaders that
    # ``Mix.loaders()`` makes draw from `random` in the dataset's __getitem__.
    write(
        tmp_path,
        {
            "data.py": "import random\n\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Mix(Dataset):\n    def __len__(self):\n        return 10\n\n"
            "    def __getitem__(self, index):\n        return random.randint(0, 5)\n\n"
            "    @classmethod\n    def splits(cls):\n        return cls(), cls()\n\n"
            "    @classmethod\n    def loaders(cls):\n        train, val = cls.splits()\n"
            "        return DataLoader(train), DataLoader(val)\n",
            "train.py": "import torch\n\nfrom data import Mix\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    train, val = Mix.loaders()\n"
            "    for batch in train:\n        print(batch)\n",
        },
    )
    assert messages(tmp_path, "RPL101") == [
        "This entry point never seeds `random` (consumed at data.py:11)"
    ]


_POSE_MODEL = (
    "from collections import OrderedDict\n\nimport torch.nn as nn\n\n\n"
    "def make_layers(block):\n    layers = []\n    for name, v in block.items():\n"
    "        layers.append((name, nn.Conv2d(v[0], v[1], 3)))\n"
    "    return nn.Sequential(OrderedDict(layers))\n\n\n"
    "class PoseNet(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.body = make_layers(OrderedDict([('c1', [3, 8])]))\n\n"
    "    def forward(self, x):\n        return self.body(x)\n"
)


@pytest.mark.parametrize(
    ("load", "reported"),
    [
        ("        self.model.load_state_dict(torch.load(path))\n", False),
        ("        self.model.module.load_state_dict(torch.load(path))\n", False),
        ("        self.model.load_state_dict(torch.load(path), strict=False)\n", True),
        ("        if path:\n            self.model.load_state_dict(torch.load(path))\n", True),
        ("        self.model.body.load_state_dict(torch.load(path))\n", True),
        ("        self.other.load_state_dict(torch.load(path))\n", True),
    ],
)
def test_a_model_held_as_an_attribute_is_overwritten_by_its_checkpoint(
    tmp_path: Path, load: str, reported: bool
) -> None:
    """An inference wrapper builds the model it holds (``self.model = PoseNet()``) and loads
    its weights: the initial weights are no draw that matters, unless the load may not run,
    loads only some of them, or is of another model."""
    write(
        tmp_path,
        {
            "model.py": _POSE_MODEL,
            "body.py": "import torch\n\nfrom model import PoseNet\n\n\nclass Body:\n"
            "    def __init__(self, path):\n        self.model = PoseNet()\n"
            "        if torch.cuda.is_available():\n            self.model = self.model.cuda()\n"
            + load
            + "        self.model.eval()\n\n    def __call__(self, x):\n"
            "        with torch.no_grad():\n            return self.model(x)\n\n\n"
            "if __name__ == '__main__':\n    print(Body('w.pth')(torch.ones(1, 3, 8, 8)))\n",
        },
    )
    found = findings(tmp_path, codes={"RPL101"})
    assert bool(found) is reported, found
