"""What the project phase costs, relative to parsing, on a large corpus.

    python benchmarks/project_phase.py [--corpus DIR] [--runs 3] [--limit N]

The default corpus is the installed torch package's Python files (found without importing
torch); any directory of Python files will do. Each run measures, on one core:

    parse       libcst.parse_module of every file (the floor of any libcst linter)
    lint        per-file linting with the per-file rules only (the rules' text prefilter
                lets it skip files that mention none of their trigger words)
    +summary    the same with the project rules selected, without the join: every file that
                imports something is parsed, and its summary collected in the same traversal
    join        the project phase proper (resolving calls, profiles, entry points, project
                rules) over those summaries
    same/plain  per-file linting of only the files the per-file rules parse anyway ...
    same/+sum   ... and of the same files with the summaries collected: the difference is
                what collecting costs in a traversal that happens anyway

and prints the median of each and, as shares of parsing: the join, the collection in the
shared traversal, and the rest of +summary - lint (parsing and traversing files only the
project rules need). With --limit, modules outside the subset stay unresolved (a partial
run would load them from disk, which is per-file linting). Not run by the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import libcst as cst

from repro_lint.config import Config
from repro_lint.engine import Settings, lint_files
from repro_lint.files import SourceFile, display_name
from repro_lint.project import Unit, analyse
from repro_lint.rules import ALL_RULES


def default_corpus() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed: pass --corpus DIR")
    return Path(next(iter(spec.submodule_search_locations)))


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="only the first N files")
    args = parser.parse_args()
    corpus = (args.corpus or default_corpus()).resolve()
    paths = sorted(corpus.rglob("*.py"))[: args.limit]
    files = [SourceFile(display_name(path), path) for path in paths]
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in paths]
    size = sum(len(text) for text in texts)
    print(f"corpus: {corpus} ({len(files)} files, {size / 1e6:.1f} MB), {args.runs} runs")

    root = corpus.parent
    project_codes = {"RPL101", "RPL104", "RPL107", "RPL202"}
    per_file = tuple(r.CODE for r in ALL_RULES if r.CODE not in project_codes)
    plain = Settings.from_config(Config(root=root, select=per_file))
    full = Settings.from_config(Config(root=root, select=("ALL",)))
    assert len(full.project_rules) == len(project_codes)

    def parse(sources: list[str]) -> None:
        for text in sources:
            with contextlib.suppress(cst.ParserSyntaxError):
                cst.parse_module(text)

    # Files the per-file rules parse anyway (one of their trigger words appears).
    rules = [r for r in ALL_RULES if r.CODE in per_file and r.CODE != "RPL000"]
    shared = [
        file
        for file, text in zip(files, texts, strict=True)
        if any(not r.TRIGGERS or any(t in text for t in r.TRIGGERS) for r in rules)
    ]

    results = lint_files(files, full, jobs=1, project=False)
    by_name = {file.display: file.path for file in files}
    codes = frozenset(project_codes)
    units = [Unit(r.filename, by_name[r.filename], r.summary, True, codes) for r in results]
    found = analyse(units, full.project_rules, full.project_options())
    findings = sum(len(diagnostics) for diagnostics in found.values())
    summarised = sum(1 for r in results if r.summary)

    def join() -> None:
        fresh = [Unit(u.filename, u.path, u.summary, True, codes) for u in units]
        analyse(fresh, full.project_rules, full.project_options())

    samples: dict[str, list[float]] = {
        "parse": [],
        "lint": [],
        "+summary": [],
        "join": [],
        "same/plain": [],
        "same/+sum": [],
    }
    for run in range(args.runs):
        samples["parse"].append(timed(lambda: parse(texts)))
        samples["lint"].append(timed(lambda: lint_files(files, plain, jobs=1)))
        samples["+summary"].append(timed(lambda: lint_files(files, full, jobs=1, project=False)))
        samples["join"].append(timed(join))
        samples["same/plain"].append(timed(lambda: lint_files(shared, plain, jobs=1)))
        samples["same/+sum"].append(timed(lambda: lint_files(shared, full, jobs=1, project=False)))
        print(f"run {run + 1}: " + "  ".join(f"{k} {v[-1]:.2f}s" for k, v in samples.items()))
    median = {key: statistics.median(values) for key, values in samples.items()}
    collection = median["same/+sum"] - median["same/plain"]
    extra = median["+summary"] - median["lint"] - collection
    floor = median["parse"]
    print()
    print(
        f"files: {len(files)}; with a summary: {summarised}; parsed by the per-file rules "
        f"anyway: {len(shared)}"
    )
    print(f"project findings: {findings}")
    for key, value in median.items():
        print(f"median {key:<11} {value:8.2f} s")
    shares = (
        ("project phase (join)", median["join"]),
        ("collection (shared pass)", collection),
        ("files only it needs", extra),
    )
    for label, value in shares:
        print(f"{label:<25}{value:8.2f} s  ({100 * value / floor:5.1f}% of parse)")


if __name__ == "__main__":
    main()
