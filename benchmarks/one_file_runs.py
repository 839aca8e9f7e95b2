"""One-file runs as the pre-commit hook makes them, over a sample of the corpus.

    python benchmarks/one_file_runs.py [--corpus DIR] [--every 15] [--runs 3]

``bench.py``'s pre-commit row times one median-sized file, and which file it is changes what
a one-file run does: a module that may start a program has what it imports followed. This
runs the hook's entry (``.pre-commit-hooks.yaml``) on every Nth Python file of a copy of the
corpus (its own project root and cache, filled by one run over the whole copy first), each
file ``--runs`` times in turn with ruff's check of the same file, the file changed before each
run as a commit changes it (a comment appended), keeps each file's median,
and prints the distribution for both: the total, the median, the 90th percentile, the
slowest files, and how many files take longer than the 0.4 s that issue 13 allows pre-commit.
A daemon the user runs is not used. Not run by the test suite.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench  # noqa: E402  (sibling scripts, not a package)
import saved  # noqa: E402

ALLOWED = 0.4  # seconds: issue 13's pre-commit target


def distribution(label: str, times: dict[str, float]) -> list[str]:
    ordered = sorted(times.values())
    slowest = sorted(times, key=times.__getitem__, reverse=True)[:3]
    return [
        f"{label}: {len(ordered)} files, total {sum(ordered):.1f} s, "
        f"median {statistics.median(ordered):.3f} s, "
        f"90th percentile {ordered[int(0.9 * (len(ordered) - 1))]:.3f} s, "
        f"slowest {ordered[-1]:.3f} s, over {ALLOWED} s: {sum(t > ALLOWED for t in ordered)}",
        "  slowest: " + ", ".join(f"{name} {times[name]:.3f} s" for name in slowest),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=bench.CORPUS)
    parser.add_argument("--every", type=int, default=15, help="every Nth file, sorted by path")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        raise SystemExit(f"no corpus at {args.corpus}: run `bash benchmarks/corpus.sh` first")
    repro = str(bench.BIN / "repro-lint")
    hook = [repro, *bench._hook_entry()[1:]]
    tools = bench.TOOLS / "bin" / "ruff"
    ruff = [str(tools if tools.exists() else bench.BIN / "ruff"), "check"]
    ruff += ["--select", bench.RUFF_RULES, "--force-exclude", "--quiet"]
    env = {**os.environ, "REPRO_LINT_NO_DAEMON": "1"}
    with tempfile.TemporaryDirectory(prefix="repro-lint-one-file-") as temp:
        work = Path(temp) / "src"
        shutil.copytree(args.corpus, work, ignore=shutil.ignore_patterns(".repro_lint_cache"))
        ruff += ["--cache-dir", str(Path(temp) / "ruff-cache")]
        files = [str(p.relative_to(work)) for p in bench.python_files(work)][:: args.every]
        print(f"warming the caches over {work.name}/ ...", file=sys.stderr)
        bench.run_output([repro, ".", "-q", "--output-format", "concise"], work, env)
        bench.run_output([*ruff, "."], work, env)
        ours: dict[str, float] = {}
        theirs: dict[str, float] = {}
        for index, name in enumerate(files, 1):
            mine, other = [], []
            edit = bench.Edit(work / name)
            for run in range(args.runs):
                edit.append(f"\n# one-file run {run}\n")
                mine.append(bench.timed([*hook, name], work, env))
                other.append(bench.timed([*ruff, name], work, env))
            edit.restore()
            ours[name], theirs[name] = statistics.median(mine), statistics.median(other)
            print(f"  {index}/{len(files)} {ours[name]:.3f} s {name}", file=sys.stderr)
    print(f"repro-lint one-file runs, {date.today().isoformat()}")
    print(
        f"machine: {saved.cores()} cores ({bench.cpu_model()}), {platform.system()} "
        f"{platform.machine()}, Python {platform.python_version()}; "
        f"load average at the end {os.getloadavg()[0]:.1f}"
    )
    print(f"one-file runs of every {args.every}th file, median of {args.runs} runs each")
    print(f"repro-lint: {' '.join(hook[1:])} FILE; ruff: check --select {bench.RUFF_RULES} FILE")
    for line in [*distribution("repro-lint", ours), *distribution("ruff", theirs)]:
        print(line)


if __name__ == "__main__":
    main()
