"""What each rule adds to a cold run on the benchmark corpus (issue 12: no rule may make the
cold run more than 10% slower).

Usage: python benchmarks/rule_cost.py [--stride 10] [--runs 3] [--rule RPLxxx ...]
(run with the project's virtual environment; build the corpus first: bash benchmarks/corpus.sh)

A rule's cost is measured by leaving it out: the cold run (`--no-cache`, the real command, wall
time) with every rule selected, against the same run with one rule deselected. The difference,
over the run without the rule, is how much slower that rule makes a cold run. Rules share the
per-file traversal and the project summary, which every run pays; what a rule adds on top (its
visitors, its text trigger, its project-level judgement) is what leaving it out removes.

Every STRIDE-th file of the corpus is copied, with its relative path, to a temporary directory
(the repository's .gitignore would hide the corpus from the linter): the whole corpus takes
minutes per run, and every rule needs several. Rounds interleave the configurations in a
shuffled order so that every configuration sees the same machine load; each figure is the
median of RUNS rounds. The findings of each run are checked too: leaving a rule out must
remove exactly that rule's findings (a rule that changes another rule's findings would make
the comparison meaningless).

Prints a table and saves it under benchmarks/results/ with the date and the core count.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import saved  # noqa: E402  (a sibling script, not a package)

CORPUS = HERE / "corpus" / "src"
CONSOLE = Path(sys.executable).parent / "repro-lint"
LIMIT = 0.10  # the bound: at most 10% slower


def rule_codes() -> list[str]:
    """Every rule the installed repro-lint has, RPL000 aside (it cannot be deselected)."""
    listing = subprocess.run(
        [str(CONSOLE), "rules", "--output-format", "json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return [rule["code"] for rule in json.loads(listing.stdout) if rule["code"] != "RPL000"]


def subset(stride: int, target: Path) -> tuple[int, int]:
    """Copy every ``stride``-th Python file of the corpus (sorted paths) under ``target``."""
    files = sorted(path for path in CORPUS.rglob("*.py") if path.is_file())
    count = size = 0
    for path in files[::stride]:
        copy = target / path.relative_to(CORPUS)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        count += 1
        size += path.stat().st_size
    return count, size


def run(tree: Path, selected: list[str]) -> tuple[float, Counter[str]]:
    """Wall seconds of one cold run selecting ``selected``, and its findings per code."""
    command = [
        str(CONSOLE),
        "check",
        ".",
        "--no-cache",
        "--exit-zero",
        "--output-format",
        "json",
        "--select",
        ",".join(selected),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"repro-lint failed ({done.returncode}): {done.stderr[-2000:]}")
    findings = Counter(finding["code"] for finding in json.loads(done.stdout or "[]"))
    return elapsed, findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=10, help="every STRIDE-th corpus file")
    parser.add_argument("--runs", type=int, default=3, help="rounds (median)")
    parser.add_argument("--rule", action="append", default=[], help="only these rules")
    parser.add_argument("--seed", type=int, default=0, help="order of the configurations")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        print("no corpus: run `bash benchmarks/corpus.sh` first", file=sys.stderr)
        return 2
    codes = rule_codes()
    measured = args.rule or codes
    unknown = sorted(set(measured) - set(codes))
    if unknown:
        print(f"unknown rule codes: {', '.join(unknown)}", file=sys.stderr)
        return 2
    order = random.Random(args.seed)
    times: dict[str, list[float]] = {name: [] for name in ["all", *measured]}
    found: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="repro-lint-rule-cost-") as work:
        tree = Path(work)
        files, size = subset(args.stride, tree)
        for index in range(args.runs):
            names = ["all", *measured]
            order.shuffle(names)
            for name in names:
                selected = codes if name == "all" else [code for code in codes if code != name]
                elapsed, findings = run(tree, selected)
                times[name].append(elapsed)
                found.setdefault(name, findings)
            print(f"round {index + 1}/{args.runs} done", file=sys.stderr)
    base = statistics.median(times["all"])
    lines = [
        f"repro-lint rule cost, {datetime.date.today().isoformat()}",
        f"machine: {len(os.sched_getaffinity(0))} cores, Python {sys.version.split()[0]}, "
        f"load average (1 min) at the end {os.getloadavg()[0]:.1f}",
        f"corpus subset: every {args.stride}th file, {files} files, {size / 1e6:.1f} MB",
        f"cold run (--no-cache), wall seconds, median of {args.runs} rounds; "
        f"every rule selected: {base:.2f} s",
        "",
        f"{'rule':<8} {'without s':>10} {'adds':>8}  {'findings':>8}  bound (10%)",
    ]
    over = []
    for code in measured:
        without = statistics.median(times[code])
        adds = (base - without) / without
        expected = found["all"].copy()
        expected.pop(code, None)
        consistent = +found[code] == +expected
        verdict = "over" if adds > LIMIT else "within"
        if adds > LIMIT:
            over.append(code)
        note = "" if consistent else "  (other rules' findings changed without it)"
        lines.append(
            f"{code:<8} {without:>10.2f} {adds:>+8.1%}  {found['all'][code]:>8}  {verdict}{note}"
        )
    lines.append("")
    lines.append(
        "every rule within the bound" if not over else f"over the bound: {', '.join(over)}"
    )
    report = "\n".join(lines)
    print(report)
    print(f"saved {saved.save(report, 'rule-cost').relative_to(HERE.parent)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
