"""What `repro-lint verify --run SCRIPT --twice --max-steps 20` costs next to one plain 20-step
run of the same script (issue 19's targets: at most 3.5x when the runs agree, at most 6x when
they differ, the op-level localisation included): medians of several runs, wall time.

Usage: python benchmarks/verify_twice.py [--runs 5] [--steps 20]
(run with the project's virtual environment, torch installed)

Scenarios, on the scripts the tests run (tests/fixtures/verify/):
- agree: gpt.py, a seeded nanoGPT-style trainer (timed log lines, a progress bar, a checkpoint);
- differ, initialisation: gpt.py --no_seed (the weights differ before the first step);
- differ, kernel: scatter_threads.py, `index_put_(accumulate=True)` on two CPU threads (the
  output of one op differs in the forward pass of step 1).
The plain run is `python SCRIPT` for exactly STEPS steps; the verified run is given a script
that would run ten times longer and stopped by --max-steps. Plain and verified runs alternate,
so that both see the same machine load. Each verified run's verdict is checked. Prints a table
and saves it under benchmarks/results/ with the date and the core count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import saved  # noqa: E402  (a sibling script, not a package)
from saved import cores  # noqa: E402

ROOT = HERE.parent
FIXTURES = ROOT / "tests" / "fixtures" / "verify"


@dataclass(frozen=True)
class Scenario:
    name: str
    script: str
    # The script's arguments for a run of `steps` steps.
    args: tuple[str, ...]
    expected: str
    target: float

    def arguments(self, steps: int) -> list[str]:
        return [a.replace("{steps}", str(steps)) for a in self.args]


SCENARIOS = (
    Scenario(
        "agree", "gpt.py", ("--max_iters", "{steps}", "--out_dir", "out"), "reproducible", 3.5
    ),
    Scenario(
        "differ: initialisation",
        "gpt.py",
        ("--no_seed", "--max_iters", "{steps}", "--out_dir", "out"),
        "not-reproducible",
        6.0,
    ),
    Scenario("differ: kernel", "scatter_threads.py", ("{steps}",), "not-reproducible", 6.0),
)


def timed(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, result


def measure(scenario: Scenario, steps: int, runs: int, work: Path) -> dict[str, object]:
    project = work / scenario.name.replace(" ", "").replace(":", "-")
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "bench"\n', encoding="utf-8")
    shutil.copy(FIXTURES / scenario.script, project / scenario.script)
    plain_command = [sys.executable, scenario.script, *scenario.arguments(steps)]
    verify_command = [
        sys.executable, "-m", "repro_lint", "verify", "--run", scenario.script, "--twice",
        "--max-steps", str(steps), "--output-format", "json", "--",
        *scenario.arguments(10 * steps),
    ]  # fmt: skip
    plain: list[float] = []
    verified: list[float] = []
    located: list[float] = []
    for _ in range(runs):
        seconds, result = timed(plain_command, project)
        if result.returncode != 0:
            raise SystemExit(f"{scenario.name}: the plain run failed:\n{result.stderr}")
        plain.append(seconds)
        seconds, result = timed(verify_command, project)
        report = json.loads(result.stdout)
        if report["verdict"] != scenario.expected:
            raise SystemExit(f"{scenario.name}: expected {scenario.expected}, got {report}")
        if [r["steps"] for r in report["runs"]] != [steps, steps]:
            raise SystemExit(f"{scenario.name}: the runs did not stop at step {steps}")
        verified.append(seconds)
        located.append(sum(r["seconds"] for r in report["located_by"]))
    ratio = statistics.median(verified) / statistics.median(plain)
    return {
        "scenario": scenario.name,
        "plain": statistics.median(plain),
        "verified": statistics.median(verified),
        "locating": statistics.median(located),
        "ratio": ratio,
        "target": scenario.target,
        "met": ratio <= scenario.target,
        "plain_runs": plain,
        "verified_runs": verified,
    }


def table(rows: list[dict[str, object]], steps: int, runs: int, load: str) -> str:
    lines = [
        f"verify --twice --max-steps {steps} against one plain {steps}-step run; "
        f"median of {runs} runs each, wall time",
        f"python {platform.python_version()}, {cores()} cores, {platform.platform()}",
        f"load average (1 min) before and after: {load}",
        "",
        f"{'scenario':<24} {'plain s':>8} {'twice s':>8} {'locate s':>9} {'ratio':>6} "
        f"{'target':>7}  met",
    ]
    for row in rows:
        lines.append(
            f"{row['scenario']!s:<24} {row['plain']:>8.2f} {row['verified']:>8.2f} "
            f"{row['locating']:>9.2f} {row['ratio']:>5.2f}x {row['target']:>6.1f}x  "
            f"{'yes' if row['met'] else 'NO'}"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    options = parser.parse_args()
    try:
        import torch
    except ImportError:
        raise SystemExit("torch is needed: install repro-lint[verify]") from None
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="verify-twice-bench-") as temporary:
        rows = [measure(s, options.steps, options.runs, Path(temporary)) for s in SCENARIOS]
    # The machine may be shared: the load says how far the absolute times can be trusted
    # (plain and verified runs alternate, so the ratios suffer less).
    load = f"{before:.1f}, {os.getloadavg()[0]:.1f}"
    text = f"torch {torch.__version__}\n" + table(rows, options.steps, options.runs, load)
    print(text, end="")
    print(f"saved to {saved.save(text, 'verify-twice').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
