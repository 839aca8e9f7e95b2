"""The tracer: real scripts run in-process, their catalogued ops and alerts located in the
user's code, and cross-referenced with the static findings."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from repro_lint.catalog import Entry
from repro_lint.config import Config
from repro_lint.engine import lint_files
from repro_lint.files import discover
from repro_lint.settings import Settings
from repro_lint.verify.findings import OpFinding, op_findings

pytestmark = pytest.mark.torch


def _write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
    return path


def _line(path: Path, text: str) -> int:
    """The 1-based line of ``path`` that contains ``text`` (exactly one)."""
    rows = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(rows) == 1, (text, rows)
    return rows[0]


def _static(root: Path) -> list[OpFinding]:
    settings = Settings.from_config(Config(root=root))
    files = discover([root], settings.config).files
    results = lint_files(files, settings)
    found, _ = op_findings(results, {f.display: f.path for f in files}, settings.target.version)
    return found


def _run(script: Path, root: Path, *args: str, **limits: Any) -> Any:
    from repro_lint.verify.trace import run_script

    return run_script(script, list(args), [root], **limits)


# -- the catalog against the tracer --------------------------------------------------------------


def _traced() -> list[Entry]:
    # Parametrizing needs the list at collection time, where torch may be missing.
    if importlib.util.find_spec("torch") is None:
        return []
    from repro_lint.verify.trace import traced_entries

    # Third-party kernels are not PyTorch operators the tracer can recognise (their probes
    # need packages that may be missing); a run sees them only through PyTorch's alerts.
    return [entry for entry in traced_entries() if entry.package is None]


# Their operators are CUDA kernels: on the CPU, SDPA dispatches to a CPU-only operator.
CUDA_OPERATORS = {
    "sdpa-flash-backward-cuda",
    "sdpa-efficient-backward-cuda",
    "sdpa-cudnn-backward-cuda",
}


@pytest.mark.parametrize("entry", _traced(), ids=lambda e: e.id)
def test_the_tracer_recognises_every_probe(entry: Entry) -> None:
    """Each probe, run on CPU tensors under the tracer, is recorded as its own entry: the
    catalog's API conditions and aten operators match what really runs."""
    import torch

    from repro_lint.verify.probes import PROBES
    from repro_lint.verify.trace import Tracer

    with Tracer([Path(__file__).parent]) as tracer, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        PROBES[entry.id](torch.device("cpu"))
    recorded = {event.entry.id for event in tracer.events.values()}
    if entry.id in CUDA_OPERATORS:
        assert entry.id not in recorded
    else:
        assert entry.id in recorded


# -- scripts -------------------------------------------------------------------------------------

SCRIPT = """
import sys
import torch
sys.path.insert(0, sys.argv[1])
from helpers import add_counts

idx = torch.randint(0, 64, (100_000,), generator=torch.Generator().manual_seed(0))
src = torch.randn(100_000)
direct = torch.zeros(64).index_put_((idx,), src, accumulate=True)
hidden = add_counts(idx, src)
torch.zeros(4).put_(torch.tensor([0, 0]), torch.ones(2))


def never_called():
    return torch.zeros(64).index_put_((idx,), src, accumulate=True)
"""

# A library the static pass does not see (outside the project).
HELPERS = """
import torch


def add_counts(idx, src):
    return torch.zeros(64).index_put_((idx,), src, accumulate=True)
"""


def test_findings_are_confirmed_or_refuted_and_hidden_hazards_found(tmp_path: Path) -> None:
    from repro_lint.verify.crossref import Status, cross_reference

    project = tmp_path / "project"
    script = _write(project / "train.py", SCRIPT)
    _write(tmp_path / "lib" / "helpers.py", HELPERS)
    trace = _run(script, project, str(tmp_path / "lib"))
    assert trace.error is None and trace.stopped is None
    crossref = cross_reference(trace, _static(project))

    statuses = {
        (c.finding.diagnostic.location.row, c.finding.diagnostic.code): c.status
        for c in crossref.checked
    }
    assert statuses == {
        (_line(script, "direct ="), "RPL402"): Status.CONFIRMED,
        (_line(script, "torch.zeros(4).put_("), "RPL401"): Status.CONFIRMED,
        (_line(script, "return torch.zeros"), "RPL402"): Status.NEVER,
    }
    hidden = [(e.entry.id, e.site.line, e.hazard_here) for e in crossref.runtime_only if e.site]
    assert hidden == [("index-put-accumulate-true-cpu", _line(script, "hidden ="), True)]
    assert [(a.caller, a.site.line if a.site else None) for a in trace.alerts] == [
        ("put_", _line(script, "torch.zeros(4).put_("))
    ]
    assert crossref.hazard_here


def test_a_module_hazard_is_found_where_the_module_is_built(tmp_path: Path) -> None:
    from repro_lint.verify.crossref import Status, cross_reference

    script = _write(
        tmp_path / "unpool.py",
        """
        import torch
        from torch import nn

        unpool = nn.MaxUnpool2d(2)
        pool = nn.MaxPool2d(2, return_indices=True)
        out, indices = pool(torch.randn(1, 1, 8, 8))
        restored = unpool(out, indices)
        """,
    )
    trace = _run(script, tmp_path)
    crossref = cross_reference(trace, _static(tmp_path))
    (checked,) = crossref.checked
    assert checked.finding.entry.id == "max-unpool2d"
    assert checked.status is Status.CONFIRMED
    (event,) = checked.events
    assert event.site is not None and event.site.line == _line(script, "restored =")
    assert event.module_site is not None and event.module_site.line == _line(script, "unpool =")
    assert [alert.caller for alert in checked.alerts] == ["max_unpooling2d_forward_out"]


def test_a_backward_hazard_that_is_never_differentiated_is_safe(tmp_path: Path) -> None:
    from repro_lint.verify.crossref import Status, cross_reference

    # Statically the images may require grad (they come back from pickle); the run shows
    # that they do not. (Under ``torch.no_grad()`` the static pass is already quiet.)
    script = _write(
        tmp_path / "pad.py",
        """
        import pickle

        import torch
        import torch.nn.functional as F

        images = pickle.loads(pickle.dumps(torch.randn(1, 2, 8, 8)))
        padded = F.pad(images, (1, 1, 1, 1), mode="reflect")
        """,
    )
    crossref = cross_reference(_run(script, tmp_path), _static(tmp_path))
    (checked,) = crossref.checked
    assert checked.finding.entry.id == "reflection-pad2d-backward-cuda"
    assert checked.status is Status.SAFE_HERE
    assert not crossref.cuda_only()


STEPS = """
import torch

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
while True:
    optimizer.zero_grad()
    model(torch.ones(4, 2)).sum().backward()
    optimizer.step()
"""


def test_max_steps_stops_after_that_many_optimizer_steps(tmp_path: Path) -> None:
    trace = _run(_write(tmp_path / "loop.py", STEPS), tmp_path, max_steps=3)
    assert (trace.stopped, trace.steps, trace.error) == ("max-steps", 3, None)


@pytest.mark.parametrize("body", ["pass", "torch.ones(1) + 1"])
def test_max_seconds_stops_a_script_that_never_ends(tmp_path: Path, body: str) -> None:
    script = _write(tmp_path / "forever.py", f"import torch\nwhile True:\n    {body}\n")
    trace = _run(script, tmp_path, max_seconds=0.5)
    assert trace.stopped == "max-seconds" and trace.error is None
    assert trace.seconds < 5


def test_the_interpreter_is_left_as_it_was(tmp_path: Path) -> None:
    import torch

    _write(tmp_path / "helper_module_for_trace.py", "VALUE = 1\n")
    script = _write(
        tmp_path / "main.py",
        """
        import helper_module_for_trace
        import torch
        raise ValueError("the script fails")
        """,
    )
    argv, path = sys.argv[:], sys.path[:]
    init, show = torch.nn.Module.__init__, warnings.showwarning
    before = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    trace = _run(script, tmp_path, "--flag")
    assert trace.error is not None and trace.error.startswith("ValueError")
    assert str(script) in trace.error
    assert (sys.argv, sys.path) == (argv, path)
    assert torch.nn.Module.__init__ is init and warnings.showwarning is show
    assert "helper_module_for_trace" not in sys.modules
    assert (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    ) == before


def test_the_script_sees_its_arguments_and_exit_status(tmp_path: Path) -> None:
    script = _write(tmp_path / "args.py", "import sys\nsys.exit(len(sys.argv))\n")
    assert _run(script, tmp_path, "a", "b").exit_status == 3
