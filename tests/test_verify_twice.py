"""`verify --run SCRIPT --twice` on small training scripts in the shapes of real code (on the CPU;
the two marked `cuda` train on a GPU).

Each scenario runs the real command once, in a fresh project directory, and its tests read the
JSON report: the verdict, and for runs that differ the step and phase where they part, the
`file:line`, and the static finding linked to it. The scripts live in tests/fixtures/verify/.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.torch

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "verify"


@dataclass(frozen=True)
class Report:
    """What the command printed and how it exited."""

    status: int
    data: dict[str, Any]
    stderr: str
    project: Path

    @property
    def divergence(self) -> dict[str, Any]:
        found: dict[str, Any] = self.data["divergence"]
        assert found is not None, self.data["differences"]
        return found

    def linked(self, code: str) -> dict[str, Any]:
        """The linked finding with this code."""
        found: list[dict[str, Any]] = [f for f in self.data["findings"] if f["code"] == code]
        assert found, (code, [f["code"] for f in self.data["findings"]])
        return found[0]


def project(root: Path, *names: str) -> Path:
    """A project directory holding the named fixture files (or directories)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    for name in names:
        source = FIXTURES / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        else:
            shutil.copy(source, root / name)
    return root


def twice(root: Path, script: str, *args: str, options: tuple[str, ...] = ()) -> Report:
    """Run `repro-lint verify --run SCRIPT --twice` in ``root``, as a user would."""
    command = [sys.executable, "-m", "repro_lint", "verify", "--run", script, "--twice"]
    result = subprocess.run(
        [*command, "--output-format", "json", *options, "--", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return Report(result.returncode, json.loads(result.stdout), result.stderr, root)


def line_of(path: Path, text: str) -> int:
    rows = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(rows) == 1, (text, rows)
    return rows[0]


# -- scripts whose runs agree ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def timed(tmp_path_factory: pytest.TempPathFactory) -> Report:
    root = project(tmp_path_factory.mktemp("timed"), "gpt.py")
    return twice(root, "gpt.py", "--out_dir", "out")


def test_timing_lines_and_progress_bars_do_not_decide(timed: Report) -> None:
    """A seeded nanoGPT-style trainer prints durations, rates, its pid, host, a temporary
    directory and a progress bar: the runs print differently, and are reproducible."""
    assert (timed.status, timed.data["verdict"]) == (0, "reproducible"), timed.data
    assert timed.data["printed_output"] == []
    compared = timed.data["compared"]
    assert compared["losses"] == compared["steps"] == 8
    assert compared["saved_tensors"] > 0
    assert (timed.project / "out" / "ckpt.pt").exists()


def test_raw_timing_output_differs_between_runs(tmp_path: Path) -> None:
    from repro_lint.verify.rerun import Settings, run_twice

    root = project(tmp_path, "gpt.py")
    args = ["--max_iters", "2", "--out_dir", str(root / "out")]
    outcome = run_twice(root / "gpt.py", args, Settings(roots=(root,)))
    assert outcome.verdict == "reproducible"
    assert outcome.runs[0].stdout != outcome.runs[1].stdout
    assert outcome.output == []


@pytest.fixture(scope="module")
def word_lm(tmp_path_factory: pytest.TempPathFactory) -> Report:
    root = project(tmp_path_factory.mktemp("word_lm"), "word_lm")
    return twice(root, "word_lm/main.py", "--save", "model.pt")


def test_whole_model_saved_with_its_class_next_to_the_script(word_lm: Report) -> None:
    """`torch.save(model, f)` of a class from `model.py` beside the script: compared through
    its tensors at save time, never unpickled by the comparing process."""
    assert (word_lm.status, word_lm.data["verdict"]) == (0, "reproducible"), word_lm.data
    assert word_lm.data["compared"]["saved_objects"] == 1
    assert word_lm.data["compared"]["saved_tensors"] == 7
    assert word_lm.data["not_compared"] == []
    assert (word_lm.project / "model.pt").exists()


def test_manual_sgd_steps_are_backward_calls(word_lm: Report) -> None:
    runs = word_lm.data["runs"]
    assert [(r["steps"], r["step_unit"]) for r in runs] == [(6, "backward")] * 2
    assert word_lm.data["compared"]["losses"] == 6


def test_manual_sgd_stops_after_max_steps(tmp_path: Path) -> None:
    root = project(tmp_path, "word_lm")
    report = twice(root, "word_lm/main.py", options=("--max-steps", "2"))
    assert (report.status, report.data["verdict"]) == (0, "reproducible"), report.data
    assert [(r["steps"], r["stopped"]) for r in report.data["runs"]] == [(2, "max-steps")] * 2
    # Stopped early: the state at that point is compared, generators included.
    assert "torch's CPU generator" in report.data["compared"]["generators"]
    assert report.data["compared"]["parameters_and_buffers"] == 7
    # The script's save at its end was never reached.
    assert not (root / "model.pt").exists()


def test_max_steps_compares_optimizer_state(tmp_path: Path) -> None:
    root = project(tmp_path, "gpt.py")
    report = twice(root, "gpt.py", "--out_dir", "out", options=("--max-steps", "3"))
    assert report.data["verdict"] == "reproducible", report.data
    assert report.data["compared"]["steps"] == 3
    assert report.data["compared"]["optimizer_state_tensors"] > 0


def test_generators_the_run_never_used_do_not_decide(tmp_path: Path) -> None:
    """numpy and `random` are seeded from the operating system and differ in every run; a
    script that never draws from them is still reproducible when stopped early."""
    root = project(tmp_path)
    (root / "torch_only.py").write_text(
        "import random\nimport numpy as np\nimport torch\n\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Linear(2, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(5):\n"
        "    optimizer.zero_grad()\n"
        "    model(torch.randn(3, 2)).sum().backward()\n"
        "    optimizer.step()\n",
        encoding="utf-8",
    )
    report = twice(root, "torch_only.py", options=("--max-steps", "3"))
    assert report.data["verdict"] == "reproducible", report.data
    assert report.data["compared"]["generators"] == ["torch's CPU generator"]


@pytest.mark.slow
def test_max_seconds_stops_both_runs_at_the_same_step(tmp_path: Path) -> None:
    root = project(tmp_path, "steady.py")
    report = twice(root, "steady.py", options=("--max-seconds", "1.5", "--timeout", "120"))
    first, second = report.data["runs"]
    assert first["stopped"] == "max-seconds"
    assert second["stopped"] == "max-steps"
    assert first["steps"] == second["steps"] > 0
    assert report.data["verdict"] == "reproducible", report.data


def test_seeded_shuffling_loader_with_two_workers_is_reproducible(tmp_path: Path) -> None:
    root = project(tmp_path, "shuffle_workers.py")
    report = twice(root, "shuffle_workers.py", "--seed")
    assert (report.status, report.data["verdict"]) == (0, "reproducible"), report.data
    assert report.data["compared"]["batches"] >= 16


def test_checkpoints_are_put_back_between_runs(tmp_path: Path) -> None:
    """A script that resumes from its own checkpoint would resume in the second run; the
    checkpoint run 1 saved is set aside, so both runs start afresh."""
    root = project(tmp_path, "resume_checkpoint.py")
    report = twice(root, "resume_checkpoint.py")
    assert report.data["verdict"] == "reproducible", report.data
    assert [r["steps"] for r in report.data["runs"]] == [4, 4]
    assert (root / "last.pt").exists()


def test_single_process_ddp_over_gloo(tmp_path: Path) -> None:
    root = project(tmp_path, "ddp.py")
    report = twice(root, "ddp.py")
    assert (report.status, report.data["verdict"]) == (0, "reproducible"), report.data
    assert report.data["compared"]["steps"] == 8


def test_spawned_workers_reading_the_current_directory(tmp_path: Path) -> None:
    root = project(tmp_path, "spawn_workers.py")
    (root / "values.txt").write_text("\n".join(str(i) for i in range(16)), encoding="utf-8")
    report = twice(root, "spawn_workers.py")
    assert (report.status, report.data["verdict"]) == (0, "reproducible"), report.data
    assert report.data["compared"]["steps"] == 4


# -- scripts whose runs differ --------------------------------------------------------------------


@pytest.fixture(scope="module")
def unseeded(tmp_path_factory: pytest.TempPathFactory) -> Report:
    return twice(
        project(tmp_path_factory.mktemp("unseeded"), "unseeded_init.py"), "unseeded_init.py"
    )


@pytest.mark.slow
def test_unseeded_initialisation(unseeded: Report) -> None:
    assert (unseeded.status, unseeded.data["verdict"]) == (1, "not-reproducible")
    divergence = unseeded.divergence
    assert (divergence["step"], divergence["phase"]) == (1, "initialisation")
    script = unseeded.project / "unseeded_init.py"
    assert divergence["filename"] == "unseeded_init.py"
    assert divergence["line"] == line_of(script, "self.hidden = nn.Linear(4, 16)")
    assert (divergence["module"], divergence["module_type"]) == ("hidden", "Linear")
    assert divergence["cause"]["kind"] == "initialisation"
    assert divergence["located"] is True
    finding = unseeded.linked("RPL101")
    assert finding["filename"] == "unseeded_init.py"
    assert unseeded.data["linter_missed"] is False


@pytest.mark.slow
def test_differences_name_what_decides_the_result(unseeded: Report) -> None:
    kinds = [d["kind"] for d in unseeded.data["differences"]]
    assert kinds[0] == "step"
    assert {"loss", "final", "saved"} <= set(kinds)
    saved = next(d for d in unseeded.data["differences"] if d["kind"] == "saved")
    assert saved["max_abs_diff"] > 0
    # Printed losses differ too, but only as a note.
    assert unseeded.data["printed_output"][0]["line"] == 1


@pytest.mark.slow
def test_random_split_without_a_generator(tmp_path: Path) -> None:
    root = project(tmp_path, "split.py")
    report = twice(root, "split.py")
    assert report.data["verdict"] == "not-reproducible"
    divergence = report.divergence
    assert (divergence["step"], divergence["phase"]) == (1, "data")
    assert divergence["line"] == line_of(root / "split.py", "= random_split(")
    assert divergence["op"] == "aten.randperm.generator"
    assert divergence["cause"]["kind"] == "data-order"
    assert report.linked("RPL303")["at_line"] is True
    assert [f["code"] for f in report.data["findings"]][:2] == ["RPL303", "RPL104"]


@pytest.mark.slow
def test_shuffling_loader_with_workers_and_no_seed(tmp_path: Path) -> None:
    """The weights start from zeros, so the runs agree until the loader shuffles: the
    divergence is in the data, at the loop that iterates the loader built without
    `generator=` (the initial random weights, overwritten, are not it)."""
    root = project(tmp_path, "shuffle_workers.py")
    report = twice(root, "shuffle_workers.py")
    assert report.data["verdict"] == "not-reproducible"
    divergence = report.divergence
    script = root / "shuffle_workers.py"
    assert (divergence["step"], divergence["phase"]) == (1, "data")
    assert divergence["site"]["line"] == line_of(script, "for x, y in loader:")
    assert divergence["origin"]["line"] == line_of(script, "loader = DataLoader(")
    assert divergence["cause"]["kind"] == "data-order"
    finding = report.linked("RPL302")
    assert finding["at_line"] is True
    assert finding["location"]["row"] == line_of(script, "loader = DataLoader(")


@pytest.mark.slow
def test_augmentation_from_an_unseeded_numpy_generator(tmp_path: Path) -> None:
    root = project(tmp_path, "augment.py")
    report = twice(root, "augment.py")
    assert report.data["verdict"] == "not-reproducible"
    divergence = report.divergence
    assert (divergence["step"], divergence["phase"]) == (1, "data")
    assert divergence["line"] == line_of(root / "augment.py", "np.random.normal(")
    assert divergence["op"] == "numpy.normal"
    assert divergence["cause"]["kind"] == "data-content"
    finding = report.linked("RPL101")
    assert "numpy" in finding["message"]


@pytest.mark.slow
def test_batches_passed_as_keyword_arguments(tmp_path: Path) -> None:
    """`model(**batch)`: the model's input is seen in its keyword arguments too."""
    root = project(tmp_path, "keyword_batches.py")
    report = twice(root, "keyword_batches.py")
    assert report.data["verdict"] == "not-reproducible"
    assert report.data["first_difference"]["kind"] == "input"
    divergence = report.divergence
    assert (divergence["step"], divergence["phase"]) == (1, "data")
    assert divergence["line"] == line_of(root / "keyword_batches.py", "torch.rand(8, 4)")
    assert report.linked("RPL101")["filename"] == "keyword_batches.py"


@pytest.mark.slow
def test_nondeterministic_kernel_on_two_threads(tmp_path: Path) -> None:
    """The sums race on two threads: in most steps, not necessarily in the first."""
    root = project(tmp_path, "scatter_threads.py")
    report = twice(root, "scatter_threads.py", "4")
    assert report.data["verdict"] == "not-reproducible"
    divergence = report.divergence
    assert divergence["phase"] == "forward"
    assert divergence["step"] == report.data["first_difference"]["step"]
    assert divergence["line"] == line_of(root / "scatter_threads.py", "table.index_put_(")
    assert (divergence["op"], divergence["module"]) == ("aten.index_put_", "features")
    assert divergence["detail"] == "same inputs, different output"
    assert divergence["cause"]["kind"] == "nondeterministic-kernel"
    assert divergence["cause"]["entries"] == ["index-put-accumulate-true-cpu"]
    assert report.linked("RPL402")["at_line"] is True


@pytest.mark.cuda
def test_atomic_adds_on_a_gpu_part_the_runs_at_the_op(tmp_path: Path) -> None:
    """`index_add_` with duplicate indices on a CUDA device: the atomics race on the GPU."""
    root = project(tmp_path, "cuda_atomics.py")
    report = twice(root, "cuda_atomics.py", "4")
    assert report.data["verdict"] == "not-reproducible", report.data
    divergence = report.divergence
    assert divergence["phase"] == "forward"
    assert divergence["line"] == line_of(root / "cuda_atomics.py", "table.index_add_(")
    assert (divergence["op"], divergence["module"]) == ("aten.index_add_", "features")
    assert divergence["detail"] == "same inputs, different output"
    assert divergence["cause"]["kind"] == "nondeterministic-kernel"
    assert divergence["cause"]["entries"] == ["index-add-cuda"]


@pytest.mark.cuda
def test_deterministic_mode_makes_the_gpu_runs_agree(tmp_path: Path) -> None:
    root = project(tmp_path, "cuda_atomics.py")
    report = twice(root, "cuda_atomics.py", "4", "--deterministic")
    assert (report.status, report.data["verdict"]) == (0, "reproducible"), report.data
    assert report.data["compared"]["steps"] == 4


@pytest.mark.slow
def test_the_linter_missing_a_hazard_is_said_plainly(tmp_path: Path) -> None:
    """The seed is skipped by a flag the linter cannot judge: nothing explains the divergence."""
    root = project(tmp_path, "gpt.py")
    report = twice(root, "gpt.py", "--no_seed", "--max_iters", "2", "--out_dir", "out")
    assert report.data["verdict"] == "not-reproducible"
    assert report.divergence["phase"] == "initialisation"
    assert report.divergence["module"] == "transformer.wte"
    assert report.data["findings"] == []
    assert report.data["linter_missed"] is True


# -- runs that fail -------------------------------------------------------------------------------


def test_a_script_that_fails_in_both_runs(tmp_path: Path) -> None:
    root = project(tmp_path, "fails.py")
    report = twice(root, "fails.py")
    assert (report.status, report.data["verdict"]) == (2, "no-verdict")
    failures = [r["failure"] for r in report.data["runs"]]
    assert all("RuntimeError" in f and "fails.py:11" in f for f in failures), failures
    # What ran before the failure was compared, and agrees.
    assert report.data["compared"]["steps"] == 2
    assert report.data["differences"] == []


def test_a_script_that_fails_in_one_run_only(tmp_path: Path) -> None:
    root = project(tmp_path, "resume.py")
    report = twice(root, "resume.py")
    assert (report.status, report.data["verdict"]) == (1, "not-reproducible")
    assert report.data["differences"][0]["kind"] == "run"
    assert "holds a finished run" in report.data["runs"][1]["failure"]


def test_an_unpicklable_save_is_reported_not_compared(tmp_path: Path) -> None:
    root = project(tmp_path, "unpicklable.py")
    report = twice(root, "unpicklable.py")
    assert report.data["verdict"] == "no-verdict"
    assert any("PicklingError" in item for item in report.data["not_compared"])
    assert report.data["compared"]["saved_objects"] == 0


def _timeout_past_one_step() -> int:
    """A ``--timeout`` (seconds) that leaves a run of ``slow.py`` room for importing torch and
    one step, sized by how long importing torch takes on this machine now (a run killed before
    its first step has nothing to compare): a run's first step takes about 2.5 times that
    import (the harness and the script's own start), so 8 times it leaves a wide margin on a
    loaded machine, and an idle one waits 15 s per run rather than a fixed 45."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import torch"], check=True, timeout=300)
    return max(15, math.ceil(8 * (time.monotonic() - started)))


@pytest.mark.slow
def test_a_run_past_the_timeout_is_killed_and_reported(tmp_path: Path) -> None:
    root = project(tmp_path, "slow.py")
    # The script sleeps 600 s after its first step.
    report = twice(root, "slow.py", options=("--timeout", str(_timeout_past_one_step())))
    assert (report.status, report.data["verdict"]) == (2, "no-verdict")
    assert all(r["timed_out"] for r in report.data["runs"])
    # The step each run finished before it was killed was compared.
    assert report.data["compared"]["steps"] == 1


# -- the text report and the command line ---------------------------------------------------------


@pytest.mark.slow
def test_text_report_gives_the_verdict_then_the_source_line_and_the_fix(tmp_path: Path) -> None:
    root = project(tmp_path, "split.py")
    result = subprocess.run(
        [sys.executable, "-m", "repro_lint", "verify", "--run", "split.py", "--twice"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert result.returncode == 1
    assert lines[0] == "not reproducible: two runs of `split.py` differ"
    row = line_of(root / "split.py", "= random_split(")
    marked = [line for line in lines if line.lstrip().startswith(f"> {row} |")]
    assert marked and "random_split(dataset, [64, 32])" in marked[0]
    finding = next(line for line in lines if "RPL303" in line)
    assert finding.strip().startswith(f"finding  split.py:{row}:")
    assert any(line.strip().startswith("fix: Pass `generator=") for line in lines)


def test_twice_usage_errors_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from repro_lint.cli import main

    script = project(tmp_path, "split.py") / "split.py"
    runner = CliRunner()
    for args in (
        ["verify", "--run", str(script), "--timeout", "5"],
        ["verify", "--run", str(script), "--twice", "--output-format", "sarif"],
        ["verify", "--twice"],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.startswith("error: ")


def test_the_comparing_process_imports_no_torch_until_it_must() -> None:
    code = (
        "import sys\n"
        "import repro_lint.verify.rerun, repro_lint.verify.twice, repro_lint.verify.linking\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
