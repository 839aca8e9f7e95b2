"""Each RPL401/RPL402 finding maps to the catalog entry it is about (no torch needed)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from repro_lint.config import Config, load_config
from repro_lint.engine import lint_files
from repro_lint.files import discover
from repro_lint.names import Names
from repro_lint.rules.nondeterministic_op import classify
from repro_lint.settings import Settings
from repro_lint.torch_versions import TorchVersion
from repro_lint.verify.findings import OpFinding, op_findings

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _findings(root: Path, config: Config | None = None) -> list[OpFinding]:
    config = config or load_config(root)
    settings = Settings.from_config(config)
    files = discover([root], settings.config).files
    results = lint_files(files, settings)
    mapped, unmapped = op_findings(
        results, {f.display: f.path for f in files}, settings.target.version
    )
    assert unmapped == []
    return mapped


def test_example_findings_map_to_their_entries() -> None:
    found = {
        (Path(f.diagnostic.filename).name, f.diagnostic.code, f.entry.id, f.path)
        for f in _findings(EXAMPLES)
    }
    model = EXAMPLES / "model.py"
    assert found == {
        ("model.py", "RPL401", "reflection-pad2d-backward-cuda", model),
        ("model.py", "RPL402", "interpolate-bilinear-backward-cuda", model),
        ("model.py", "RPL402", "index-add-cuda", model),
    }


def test_positions_match_the_reported_call(tmp_path: Path) -> None:
    """Two calls on one line map to their own entries (and the CPU entry the CUDA one
    shadows comes along as a candidate)."""
    first = "torch.zeros(3).put_(idx, torch.ones(3), accumulate=True)"
    second = "torch.zeros(3).put_(idx, torch.ones(3))"
    line = f"a = {first}; b = {second}"
    (tmp_path / "ops.py").write_text(
        f"import torch\nidx = torch.tensor([0, 1, 1])\n{line}\n", encoding="utf-8"
    )
    found = sorted(
        (f.diagnostic.location.column, f.entry.id, tuple(e.id for e in f.candidates))
        for f in _findings(tmp_path, Config(root=tmp_path))
    )
    assert found == [
        (
            line.index(first) + 1,
            "put-accumulate-true-cuda",
            ("put-accumulate-true-cuda", "put-accumulate-true-cpu"),
        ),
        (line.index(second) + 1, "put-accumulate-false", ("put-accumulate-false",)),
    ]


def test_classifier_sees_function_scopes_as_the_rules_do() -> None:
    """A parameter named like an imported module hides the import inside its function."""
    source = (
        "import torch.nn.functional as F\n"
        "def resize(F, x):\n"
        "    return F.interpolate(x, mode='bicubic')\n"
        "y = F.interpolate(torch_input, mode='bicubic')\n"
    )
    module = cst.parse_module(source)
    found = classify(module, Names(module, "__main__"), TorchVersion(2, 13))
    assert [finding.entry.id for finding in found.values()] == ["interpolate-bicubic-backward-cuda"]
