"""RPL202 beyond its examples: no fix where a later statement switches the setting off or
warn-only mode is on already (the examples cannot say "no fix"), and the device strings that
select CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from projects import write

from repro_lint.cli import main
from repro_lint.config import Config, parse_table
from repro_lint.engine import lint_paths, lint_text
from repro_lint.rule import Invalid
from repro_lint.rules.missing_deterministic_config import MissingDeterministicConfig
from repro_lint.settings import Settings

SWITCHED_OFF = [
    example
    for example in MissingDeterministicConfig.INVALID
    if example.fixed is None and "later" in (example.note or "")
]


def test_both_kinds_of_switch_are_covered() -> None:
    codes = "".join(example.code for example in SWITCHED_OFF)
    assert "cudnn.deterministic = False" in codes
    assert "use_deterministic_algorithms(False)" in codes


@pytest.mark.parametrize("example", SWITCHED_OFF, ids=lambda e: e.note)
def test_no_fix_when_a_later_statement_switches_the_setting_off(example: Invalid) -> None:
    code = example.code
    settings = Settings.from_config(Config(**parse_table({"select": ["RPL202"]}, None)))
    found = [d for d in lint_text(code, "example.py", settings).diagnostics if d.code == "RPL202"]
    assert found, code
    assert all(d.fix is None for d in found)
    assert all("switched off at" in d.message for d in found)


def test_no_second_setting_next_to_warn_only_mode() -> None:
    """Warn-only mode already on: no strict call (it would be undone by the warn-only one
    after it) and no second CUBLAS_WORKSPACE_CONFIG next to RPL204's."""
    code = (
        "import torch\nimport torch.nn.functional as F\n\n\ndef main():\n"
        "    torch.manual_seed(0)\n    torch.use_deterministic_algorithms(True, warn_only=True)\n"
        "    q = torch.randn(2, 4, 8, 16, device='cuda', requires_grad=True)\n"
        "    F.scaled_dot_product_attention(q, q, q).sum().backward()\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    table = {"select": ["RPL202", "RPL204"], "target-torch": "2.4"}
    settings = Settings.from_config(Config(**parse_table(table, None)))
    found = {d.code: d for d in lint_text(code, "example.py", settings).diagnostics}
    assert set(found) == {"RPL202", "RPL204"}
    assert found["RPL202"].fix is None
    assert "make it strict there" in found["RPL202"].message


@pytest.mark.parametrize(
    "device",
    ['"cuda"', '"cuda:1"', 'f"cuda:{rank}"', '"cuda:%d" % rank', '"cuda:" + str(rank)'],
)
def test_a_gpu_picked_by_index_selects_cuda(device: str) -> None:
    code = (
        "import torch\nfrom torch import nn\n\n\ndef main(rank):\n    torch.manual_seed(0)\n"
        f"    net = nn.Conv2d(3, 8, 3).to({device})\n    net(x).sum().backward()\n\n\n"
        "if __name__ == '__main__':\n    main(0)\n"
    )
    settings = Settings.from_config(Config(**parse_table({"select": ["RPL202"]}, None)))
    codes = {d.code for d in lint_text(code, "example.py", settings).diagnostics}
    assert codes == {"RPL202"}, code


def test_a_cpu_program_is_not_judged() -> None:
    code = (
        "import torch\nfrom torch import nn\n\n\ndef main(rank):\n    torch.manual_seed(0)\n"
        '    net = nn.Conv2d(3, 8, 3).to(f"cpu:{rank}")\n    net(x).sum().backward()\n\n\n'
        "if __name__ == '__main__':\n    main(0)\n"
    )
    settings = Settings.from_config(Config(**parse_table({"select": ["RPL202"]}, None)))
    assert not lint_text(code, "example.py", settings).diagnostics


def test_launchers_of_a_shared_train_function_take_its_one_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`train.py` seeds in its `train()`, which two launchers call too: the settings go
    once, into `train()` before its seed, not again at each launcher's start."""
    train = (
        "import torch\nimport torchvision\n\n\ndef train(name='resnet18'):\n"
        "    net = torchvision.models.get_model(name).cuda()\n    torch.manual_seed(0)\n"
        "    net(torch.randn(2, 3, 32, 32).cuda()).sum().backward()\n\n\n"
        "if __name__ == '__main__':\n    train()\n"
    )
    launcher = "from train import train\n\nif __name__ == '__main__':\n    train('resnet50')\n"
    write(tmp_path, {"train.py": train, "big.py": launcher, "other.py": launcher})
    monkeypatch.chdir(tmp_path)
    table = {"select": ["RPL202"]}
    settings = Settings.from_config(Config(**parse_table(table, None)))
    found = [d for r in lint_paths([tmp_path], settings.config) for d in r.diagnostics]
    assert sorted(Path(d.filename).name for d in found) == ["big.py", "other.py", "train.py"]
    result = CliRunner().invoke(main, ["check", ".", "--select", "RPL202", "--fix", "--no-cache"])
    assert result.exit_code == 0, result.output
    fixed = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert fixed == train.replace(
        "    torch.manual_seed(0)\n",
        "    torch.backends.cudnn.deterministic = True\n"
        "    torch.backends.cudnn.benchmark = False\n    torch.manual_seed(0)\n",
    )
    assert (tmp_path / "big.py").read_text(encoding="utf-8") == launcher
    assert (tmp_path / "other.py").read_text(encoding="utf-8") == launcher


_SET_SEED = (
    "import torch\n\n\ndef set_seed(seed, deterministic=False):\n    torch.manual_seed(seed)\n"
    "    if deterministic:\n        torch.backends.cudnn.deterministic = True\n"
    "        torch.backends.cudnn.benchmark = False\n"
    "    else:\n        torch.backends.cudnn.benchmark = True\n\n\n"
    "def mode(m):\n    if m == 'fast':\n        torch.backends.cudnn.benchmark = True\n"
    "    elif m == 'exact':\n        torch.backends.cudnn.benchmark = False\n\n\n"
    "def fast(flag):\n    if flag:\n        torch.backends.cudnn.benchmark = True\n"
    "    else:\n        print('slow')\n"
)


@pytest.mark.parametrize(("main_block", "fixed_rows"), [("", {22}), ("main", {10, 15, 22})])
def test_a_library_s_choice_of_benchmarking_is_reported_without_a_fix(
    main_block: str, fixed_rows: set[int]
) -> None:
    """A library helper that sets ``cudnn.benchmark = False`` in one arm and ``True`` in the
    other lets its callers choose: the ``True`` is reported, not switched off. A script
    (``__main__`` block) or an arm whose other arm does not switch it off gets the fix."""
    code = _SET_SEED + ("\n\nif __name__ == '__main__':\n    set_seed(0)\n" if main_block else "")
    settings = Settings.from_config(Config(**parse_table({"select": ["RPL201"]}, None)))
    found = lint_text(code, "seeding.py", settings).diagnostics
    assert {d.location.row for d in found} == {10, 15, 22}
    assert {d.location.row for d in found if d.fix is not None} == fixed_rows
