"""Kernels behind options that default off: a program that leaves the option off never runs
them (RPL202 does not count them, RPL402's fix does not go to that program), and one that
turns it on in any of the ways a library takes options does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from click.testing import CliRunner
from projects import relative_json

from repro_lint.cli import main
from repro_lint.gates import Gate, GateFacts

ATTEND = """\
import torch.nn.functional as F
from torch import nn


class Attend(nn.Module):
    def __init__(self, heads, flash=False, talking_heads=False):
        super().__init__()
        self.flash = flash
        self.mix = nn.Conv2d(heads, heads, 1) if talking_heads else None

    def fused(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)

    def forward(self, q, k, v):
        if self.flash and q.is_cuda:
            return self.fused(q, k, v)
        sim = q @ k.transpose(-1, -2)
        return sim.softmax(dim=-1) @ v


class Layer(nn.Module):
    def __init__(self, heads, use_flash=False, **kwargs):
        super().__init__()
        routed = {k[len("attn_") :]: v for k, v in kwargs.items() if k.startswith("attn_")}
        self.attend = Attend(heads, flash=use_flash, **routed)

    def forward(self, x):
        return self.attend(x, x, x)
"""


def script(build: str, after: str = "") -> str:
    return (
        "import torch\n\nfrom attend import Attend, Layer\n\n\n"
        "def main():\n"
        "    torch.manual_seed(0)\n"
        f"    model = {build}.cuda()\n"
        f"{after}"
        "    x = torch.randn(2, 4, 8).cuda()\n"
        "    model(x, x, x).sum().backward()\n\n\n"
        'if __name__ == "__main__":\n    main()\n'
    )


def run(
    root: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], select: str
) -> list[Any]:
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\ndependencies = ["torch>=2.10"]\n'
        f'[tool.repro-lint]\nselect = ["{select}"]\n',
        encoding="utf-8",
    )
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(root)
    result = CliRunner().invoke(
        main, ["check", ".", "--no-cache", "--output-format", "json"], catch_exceptions=False
    )
    found: list[Any] = relative_json(result.stdout)
    return found


def rpl202(root: Path, monkeypatch: pytest.MonkeyPatch, train: str, **more: str) -> list[str]:
    found = run(root, monkeypatch, {"attend.py": ATTEND, "train.py": train, **more}, "RPL202")
    return [str(f["message"]) for f in found if f["filename"] == "train.py"]


def test_a_kernel_behind_an_option_the_program_leaves_off_is_not_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rpl202(tmp_path, monkeypatch, script("Attend(8)")) == []


def test_a_keyword_turns_the_option_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (message,) = rpl202(tmp_path, monkeypatch, script("Attend(8, flash=True)"))
    assert "attention backward (attend.py:12, `F.scaled_dot_product_attention`)" in message


def test_an_option_of_a_conditional_expression_gates_the_layer_it_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (message,) = rpl202(tmp_path, monkeypatch, script("Attend(8, talking_heads=True)"))
    assert "cuDNN convolutions (attend.py:9, `nn.Conv2d`)" in message
    assert "attention backward" not in message


def test_an_option_set_on_the_built_model_turns_it_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train = script("Attend(8)", "    model.flash = True\n")
    assert len(rpl202(tmp_path, monkeypatch, train)) == 1


def test_an_option_passed_on_under_another_name_follows_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rpl202(tmp_path, monkeypatch, script("Layer(8)")) == []
    assert len(rpl202(tmp_path, monkeypatch, script("Layer(8, use_flash=args.flash)"))) == 1


def test_a_keyword_routed_by_a_prefix_the_code_names_turns_the_option_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (message,) = rpl202(tmp_path, monkeypatch, script("Layer(8, attn_talking_heads=True)"))
    assert "cuDNN convolutions" in message


def test_a_dict_key_turns_the_option_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    train = script("Attend(8, **options)").replace(
        "def main():\n", 'def main():\n    options = {"flash": True}\n'
    )
    assert len(rpl202(tmp_path, monkeypatch, train)) == 1


def test_only_the_files_the_program_reaches_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test module that turns the option on is not part of the training program."""
    other = "from attend import Attend\n\n\ndef test_flash():\n    Attend(8, flash=True)\n"
    found = rpl202(tmp_path, monkeypatch, script("Attend(8)"), **{"tests/test_attend.py": other})
    assert found == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            "    def fused(self, q, k, v):\n",
            "    def compile(self):\n        self.flash = torch_supports()\n\n"
            "    def fused(self, q, k, v):\n",
            id="attribute set outside __init__",
        ),
        pytest.param(
            "        self.flash = flash\n",
            "        flash = flash or torch_supports()\n        self.flash = flash\n",
            id="parameter bound again",
        ),
    ],
)
def test_code_that_may_turn_the_value_on_itself_is_no_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str
) -> None:
    files = {"attend.py": ATTEND.replace(old, new), "train.py": script("Attend(8)")}
    assert len(run(tmp_path, monkeypatch, files, "RPL202")) == 1


class _Feed(cst.CSTVisitor):
    """Feeds a module to GateFacts as the summary's traversal does (functions, calls, dicts,
    strings, assignments) and keeps each ``if`` test's gates."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.facts = GateFacts()
        self.tests: list[list[Gate]] = []
        cst.parse_module(code).visit(self)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.facts.enter_function(node, method=False)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.facts.leave_function()

    def visit_If(self, node: cst.If) -> None:
        self.tests.append(self.facts.test(node.test, None))

    def visit_Call(self, node: cst.Call) -> None:
        self.facts.call(node)

    def visit_Dict(self, node: cst.Dict) -> None:
        self.facts.dict_literal(node)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.facts.string(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.facts.assign([t.target for t in node.targets], node.value, None)


def gates_of(code: str) -> list[list[str]]:
    """The option names each ``if`` test of ``code`` gates, as GateFacts reads them
    (module-level tests have no options)."""
    fed = _Feed(code)
    return [fed.facts.resolve(gates) for gates in fed.tests]


def test_what_counts_as_an_option_defaulting_off() -> None:
    code = (
        "def f(a=False, b=None, c=True, *, d=False):\n"
        "    if a: pass\n"
        "    if b: pass\n"
        "    if c: pass\n"
        "    if d and ready: pass\n"
        "    if not a: pass\n"
        "    if a or d: pass\n"
    )
    assert gates_of(code) == [["a"], [], [], ["d"], [], []]
    rebound = "def f(a=False, b=False):\n    if a and b: pass\n    a, c = a or probe(), 1\n"
    assert gates_of(rebound) == [["b"]]


def test_what_a_module_turns_on() -> None:
    code = (
        "def build(use_flash=False, x=False):\n"
        "    Attend(flash=use_flash, causal=True, hard=False, sparse=None, topk=0)\n"
        "    cfg['talking'] = 1\n"
        "    model.fast = x if x else None\n"
        "    return {'mix': True, 'pre_': None, 'off': False}\n"
        "PREFIX = 'attn_'\n"
    )

    assert _Feed(code).facts.summary() == {
        "enables": ["causal", "mix", "talking"],
        "passes": [["fast", "x"], ["flash", "use_flash"]],
        "prefixes": ["attn_", "pre_"],
    }


MODEL = """\
import torch
from torch import nn


class Histogram(nn.Module):
    def forward(self, labels):
        totals = torch.zeros(10, device=labels.device)
        totals.index_add_(0, labels, torch.ones(len(labels), device=labels.device))
        return totals


class Model(nn.Module):
    def __init__(self, histogram=False):
        super().__init__()
        self.histogram = Histogram() if histogram else None

    def forward(self, labels):
        return labels if self.histogram is None else self.histogram(labels)
"""


def entry(build: str) -> str:
    return (
        "import torch\n\nfrom model import Model\n\n\n"
        "def main():\n"
        f"    print({build}(torch.tensor([1, 2, 2])))\n\n\n"
        'if __name__ == "__main__":\n    main()\n'
    )


def test_the_mode_goes_only_to_programs_that_turn_the_option_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "model.py": MODEL,
        "plain.py": entry("Model()"),
        "counts.py": entry("Model(histogram=True)"),
    }
    (found,) = run(tmp_path, monkeypatch, files, "RPL402")
    assert (found["filename"], found["location"]["row"]) == ("model.py", 8)
    assert {e["filename"] for e in found["fix"]["edits"]} == {"counts.py"}


def test_a_finding_no_program_turns_on_stands_without_a_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"model.py": MODEL, "plain.py": entry("Model()")}
    (found,) = run(tmp_path, monkeypatch, files, "RPL402")
    assert (found["filename"], found["location"]["row"]) == ("model.py", 8)
    assert found["fix"] is None
