"""`repro-lint verify`: the real command on real files, real torch on the CPU."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from repro_lint.catalog import ENTRIES, Device
from repro_lint.cli import main
from repro_lint.verify import INSTALL_HINT

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CHECK_KEYS = {
    "code", "name", "message", "filename", "cell", "location", "end_location", "fix",
    "noqa_row", "severity", "url",
}  # fmt: skip


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _project(tmp_path: Path, code: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "ops.py").write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
    return tmp_path


def _line(path: Path, text: str) -> int:
    rows = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(rows) == 1, (text, rows)
    return rows[0]


ACCUMULATE = """
import torch

idx = torch.randint(0, 64, (1000,))
counts = torch.zeros(64).index_put_((idx,), torch.randn(1000), accumulate=True)
"""


@pytest.mark.torch
def test_a_finding_confirmed_on_the_cpu_exits_1_with_its_verdict(tmp_path: Path) -> None:
    project = _project(tmp_path, ACCUMULATE)
    result = invoke(
        "verify", str(project), "--device", "cpu", "--runs", "3", "--output-format", "json"
    )
    assert result.exit_code == 1, result.output
    (finding,) = json.loads(result.stdout)
    assert set(finding) == CHECK_KEYS | {"verification"}
    assert finding["code"] == "RPL402"
    verification = finding["verification"]
    assert verification["entry"] == "index-put-accumulate-true-cpu"
    assert verification["verdict"] == "fixed-by-deterministic-mode"
    assert verification["default_mode"]["verdict"] == "nondeterministic"
    assert verification["confirmed"] is True
    assert result.stderr == ""


@pytest.mark.torch
def test_check_output_has_no_verification(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project(tmp_path, ACCUMULATE)
    monkeypatch.chdir(project)
    result = invoke("check", ".", "--no-cache", "--output-format", "json")
    assert {key for f in json.loads(result.stdout) for key in f} == CHECK_KEYS


@pytest.mark.torch
def test_sarif_carries_the_verification(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        """
        import torch
        from torch import nn

        unpool = nn.MaxUnpool2d(2)
        """,
    )
    result = invoke(
        "verify", str(project), "--device", "cpu", "--runs", "2", "--output-format", "sarif"
    )
    assert result.exit_code == 1
    (sarif_result,) = json.loads(result.stdout)["runs"][0]["results"]
    verification = sarif_result["properties"]["verification"]
    assert (verification["verdict"], verification["caller"]) == (
        "raises-in-deterministic-mode",
        "max_unpooling2d_forward_out",
    )


@pytest.mark.torch
def test_findings_not_applicable_here_exit_0(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        """
        import torch.nn.functional as F

        def upsample(x):
            return F.interpolate(x, scale_factor=2, mode="bicubic")
        """,
    )
    result = invoke("verify", str(project), "--device", "cpu", "--output-format", "json")
    assert result.exit_code == 0
    (finding,) = json.loads(result.stdout)
    assert finding["verification"]["verdict"] == "not-applicable"


@pytest.mark.torch
def test_nothing_to_verify_exits_0(tmp_path: Path) -> None:
    project = _project(tmp_path, "import torch\nx = torch.zeros(3)\n")
    assert invoke("verify", str(project), "--device", "cpu").exit_code == 0


@pytest.mark.torch
def test_the_catalog_report_for_this_device(tmp_path: Path) -> None:
    report = tmp_path / "catalog.json"
    args = ("verify", "--catalog", "--device", "cpu", "--runs", "2", "--output-format", "json")
    result = invoke(*args, "--output-file", str(report))
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["environment"]["device"] == "cpu"
    results = {r["entry"]: r for r in document["results"]}
    assert set(results) == {entry.id for entry in ENTRIES}
    assert sum(document["summary"].values()) == len(ENTRIES)
    assert document["disagreements"] == []
    for entry in ENTRIES:
        if entry.device is Device.CUDA:
            assert results[entry.id]["verdict"] == "not-applicable"
    assert results["put-accumulate-false"]["caller"] == "put_"


@pytest.mark.torch
def test_the_catalog_lists_third_party_entries_and_skips_those_not_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RPL403's entries are probed only where their package is installed; elsewhere each is
    listed with the package it needs (as if none of them were installed here)."""
    import importlib.util

    from repro_lint.catalog import third_party

    packages = {entry.package for entry in third_party()}
    find_spec = importlib.util.find_spec

    def absent(name: str, package: str | None = None) -> Any:
        return None if name in packages else find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", absent)
    args = ("verify", "--catalog", "--device", "cpu", "--runs", "2", "-q")
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert third_party() and packages == {"torch_geometric", "torch_scatter", "dgl", "torchvision"}
    for entry in third_party():
        row = rows[entry.id]
        assert "not-applicable" in row
        assert f"skipped: its package {entry.package} is not installed" in row, row


@pytest.mark.torch
def test_run_finds_the_ops_the_examples_execute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = invoke(
        "verify", "--run", "examples/train.py", "--output-format", "json", "--",
        "--epochs", "1", "--workers", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    model, train = EXAMPLES / "model.py", EXAMPLES / "train.py"
    statuses = {(f["location"]["row"], f["entry"]): f["status"] for f in report["findings"]}
    assert statuses == {
        (_line(model, "nn.ReflectionPad2d(1)"), "reflection-pad2d-backward-cuda"): (
            # The first layer's input needs no gradient: its backward never runs.
            "executed-but-safe-here"
        ),
        (_line(model, "F.interpolate("), "interpolate-bilinear-backward-cuda"): (
            "executed-but-safe-here"
        ),
        (_line(model, ".index_add_("), "index-add-cuda"): "executed-but-safe-here",
    }
    on_cuda = {
        (Path(e["site"]["path"]).name, e["site"]["line"], e["entry"])
        for e in report["would_be_nondeterministic_on_cuda"]
    }
    assert {
        ("model.py", _line(model, "F.interpolate("), "interpolate-bilinear-backward-cuda"),
        ("model.py", _line(model, ".index_add_("), "index-add-cuda"),
    } <= on_cuda
    # Only a run sees that the loss gets spatial (N, C, H, W) logits: nll_loss2d on CUDA.
    runtime_only = {
        (e["site"]["line"], e["entry"])
        for e in report["runtime_only"]
        if "train.py" in e["site"]["path"]
    }
    assert runtime_only == {
        (line, "nll-loss2d-forward-cuda")
        for line, text in enumerate(train.read_text().splitlines(), 1)
        if "F.cross_entropy(" in text
    }
    assert report["steps"] == 5 and report["error"] is None


@pytest.mark.torch
def test_run_reports_a_hazard_confirmed_here_with_exit_1(tmp_path: Path) -> None:
    project = _project(tmp_path, ACCUMULATE)
    result = invoke("verify", "--run", str(project / "ops.py"))
    assert result.exit_code == 1


@pytest.mark.torch
def test_run_stops_after_max_steps(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        """
        import torch

        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        while True:
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()
        """,
    )
    result = invoke(
        "verify", "--run", str(project / "ops.py"), "--max-steps", "2", "--output-format", "json"
    )
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert (report["stopped"], report["steps"]) == ("max-steps", 2)


@pytest.mark.torch
def test_a_failing_script_exits_2(tmp_path: Path) -> None:
    project = _project(tmp_path, "raise RuntimeError('broken')\n")
    assert invoke("verify", "--run", str(project / "ops.py")).exit_code == 2


# -- --twice ---------------------------------------------------------------------------------------


def _twice(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.chdir(cwd)
    checkpoint = cwd / "checkpoint.pt"
    return invoke(
        "verify", "--run", "examples/train.py", "--twice", "--",
        "--epochs", "1", "--workers", "0", "--checkpoint", str(checkpoint),
    )  # fmt: skip


@pytest.mark.torch
@pytest.mark.slow
def test_twice_says_the_unfixed_examples_are_not_reproducible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    result = _twice(tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert result.stdout.startswith("not reproducible")


def _fix(cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(EXAMPLES, cwd / "examples")
    monkeypatch.chdir(cwd)
    assert invoke("check", "examples", "--fix", "--no-cache", "-q").exit_code in (0, 1)


@pytest.mark.torch
@pytest.mark.slow
def test_twice_says_the_fixed_examples_are_reproducible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fix(tmp_path, monkeypatch)
    result = _twice(tmp_path, monkeypatch)
    assert result.stdout.startswith("reproducible"), result.stdout
    assert result.exit_code == 0


# -- errors and isolation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("verify", "--twice"),
        ("verify", "--max-steps", "3"),
        ("verify", "--catalog", "src"),
        ("verify", "--run", "examples/train.py", "--timeout", "2"),
        ("verify", "--catalog", "--output-format", "sarif"),
        ("verify", "--only", "put-accumulate-false"),
        ("verify", "--catalog", "--device", "cpu", "--only", "no-such-entry"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert invoke(*args).exit_code == 2


@pytest.mark.torch
def test_only_the_catalog_entries_named_are_probed(tmp_path: Path) -> None:
    report = tmp_path / "catalog.json"
    named = ("put-accumulate-false", ENTRIES[0].id)
    args = ("verify", "--catalog", "--device", "cpu", "--runs", "2", "--output-format", "json")
    result = invoke(*args, "--only", named[0], "--only", named[1], "-o", str(report))
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text(encoding="utf-8"))
    # In the catalog's order, whatever the order named.
    assert [r["entry"] for r in document["results"]] == [ENTRIES[0].id, "put-accumulate-false"]
    assert "stopped" not in document


@pytest.mark.torch
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_a_stopped_catalog_run_reports_the_entries_probed(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or SIGTERM during the third probe: the report holds the two probed before it,
    and names the others; the exit status says which signal stopped it."""
    import os
    import signal

    from repro_lint.verify import runner

    real = runner.run_probe
    calls: list[str] = []

    def probe(entry: Any, options: Any, *rest: Any) -> Any:
        calls.append(entry.id)
        if len(calls) == 3:
            if how == "SIGINT":
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)  # (the handler raises before this ends)
        return real(entry, options, *rest)

    monkeypatch.setattr(runner, "run_probe", probe)
    before = signal.getsignal(signal.SIGTERM)
    report = tmp_path / "catalog.json"
    args = ("verify", "--catalog", "--device", "cpu", "--runs", "2", "--output-format", "json")
    result = invoke(*args, "-o", str(report))
    assert result.exit_code == (143 if how == "SIGTERM" else 130)
    assert signal.getsignal(signal.SIGTERM) is before
    document = json.loads(report.read_text(encoding="utf-8"))
    assert [r["entry"] for r in document["results"]] == calls[:2]
    assert document["stopped"] == {"by": how, "not_probed": [e.id for e in ENTRIES[2:]]}
    assert sum(document["summary"].values()) == 2
    assert f"stopped by {how}" in result.stderr
    calls.clear()
    text = invoke("verify", "--catalog", "--device", "cpu", "--runs", "2", "-q")
    assert text.exit_code == (143 if how == "SIGTERM" else 130)
    assert f"Stopped by {how} after 2 of {len(ENTRIES)} entries; not probed: " in text.stdout


@pytest.mark.torch
def test_an_unavailable_device_exits_2() -> None:
    import torch

    result = invoke("verify", "--catalog", "--device", f"cuda:{torch.cuda.device_count()}")
    assert result.exit_code == 2


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_without_torch_verify_explains_how_to_install_it() -> None:
    result = _python(
        "import sys\n"
        "sys.modules['torch'] = None  # as if torch were not installed\n"
        "from repro_lint.cli import run\n"
        "sys.argv = ['repro-lint', 'verify', '--catalog']\n"
        "run()\n"
    )
    assert result.returncode == 2
    assert INSTALL_HINT in result.stderr


def test_checking_never_imports_torch() -> None:
    result = _python(
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from repro_lint.cli import main\n"
        "CliRunner().invoke(main, ['check', 'examples', '--no-cache'])\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    assert result.stdout.strip() == "[]", result.stderr
