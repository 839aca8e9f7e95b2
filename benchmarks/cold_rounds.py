"""Cold runs of two checkouts of repro-lint on one tree, in interleaved rounds, beside libcst's
parse floor.

    python benchmarks/cold_rounds.py TREE BASELINE [--runs N]

BASELINE is a checkout of another commit (``git worktree add /tmp/base COMMIT``). TREE is
copied to a temporary directory first (as ``bench.py`` does: the corpus under ``benchmarks/``
is git-ignored here, and a run skips ignored files). Each round parses every file of the copy
once with libcst on all cores (``bench.parse_floor``), then runs
``python -m repro_lint . --no-cache -q`` in it with BASELINE's code and with this checkout's,
each on ``PYTHONPATH`` in turn (same interpreter, same packages). Interleaving spreads a
machine's drift over both; ``bench.py`` measures one checkout against everything else. Prints
each run's wall seconds, then the medians, each as a ratio of the floor, and fails if the two
checkouts' findings differ. Each run's CPU-seconds (user and system, of every process it
waited for: a run's workers, the floor's pool) are printed beside its wall seconds, with their
medians as a ratio of the floor's: on a machine whose speed drifts between runs they move less
than wall time (a change of a few percent is seen in them before it is in the wall seconds;
the target is wall time). Both checkouts are first made to start as installed copies do
(``bench.as_installed``: compiled, with their dataclass code stored). Not run by the test
suite; ``tests/test_cold_rounds_bench.py`` keeps it working.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import as_installed, parse_floor, timed_output

HERE = Path(__file__).resolve().parent.parent


def cold_run(tree: Path, code: Path) -> tuple[float, str]:
    """Wall seconds of a cold run of ``code``'s repro-lint over ``tree``, and its output."""
    env = {**os.environ, "PYTHONPATH": str(code), "REPRO_LINT_NO_DAEMON": "1"}
    command = [sys.executable, "-m", "repro_lint", ".", "--no-cache", "-q"]
    return timed_output(command, tree, env)


def children_cpu() -> float:
    """CPU-seconds (user and system) of the processes this one waited for, so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("baseline", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    baseline = args.baseline.resolve()
    for code in (baseline, HERE):
        as_installed(code)
    with tempfile.TemporaryDirectory() as temp:
        tree = Path(temp) / "tree"
        shutil.copytree(args.tree, tree, symlinks=True)
        rounds(tree, baseline, args.runs)


def rounds(tree: Path, baseline: Path, runs: int) -> None:
    files = sorted(tree.rglob("*.py"))
    times: dict[str, list[float]] = {"floor": [], "baseline": [], "this": []}
    cpu: dict[str, list[float]] = {name: [] for name in times}
    outputs: dict[str, str] = {}
    for index in range(runs):
        before = children_cpu()
        times["floor"].append(parse_floor(files))
        cpu["floor"].append(children_cpu() - before)
        for name, code in (("baseline", baseline), ("this", HERE)):
            before = children_cpu()
            elapsed, outputs[name] = cold_run(tree, code)
            cpu[name].append(children_cpu() - before)
            times[name].append(elapsed)
        shown = ", ".join(
            f"{name} {values[-1]:.1f} s ({cpu[name][-1]:.1f} CPU-s)"
            for name, values in times.items()
        )
        print(f"round {index + 1}/{runs}: {shown}", flush=True)
    floor = statistics.median(times["floor"])
    floor_cpu = statistics.median(cpu["floor"])
    for name, values in times.items():
        median = statistics.median(values)
        each = ", ".join(f"{value:.1f}" for value in values)
        ratio = f"{median / floor:.2f}x floor" if floor else ""
        print(f"{name:<9} median {median:8.2f} s  ({each})  {ratio}")
    for name, values in cpu.items():
        median = statistics.median(values)
        each = ", ".join(f"{value:.1f}" for value in values)
        ratio = f"{median / floor_cpu:.2f}x floor" if floor_cpu else ""
        print(f"{name:<9} median {median:8.2f} CPU-s  ({each})  {ratio}")
    if outputs["baseline"] != outputs["this"]:
        raise SystemExit("the two checkouts' findings differ")
    print(f"findings identical: {len(outputs['this'].splitlines())} lines")


if __name__ == "__main__":
    main()
