"""What the project phase costs, relative to parsing, on a large corpus.

    python benchmarks/project_phase.py [--corpus DIR] [--runs 3] [--limit N]

The default corpus is the installed torch package's Python files (found without importing
torch); any directory of Python files will do. Its .py files are copied to a temporary
project (so that neighbouring installed packages are not taken for project modules). Each
run measures, on one core:

    parse     libcst.parse_module of every file (the floor of any libcst linter)
    lint      linting with the per-file rules only (their text prefilter skips files that
              mention none of their trigger words)
    +summary  the same with the project rules selected, without the project phase: files
              that may be entry points are parsed too, and every parsed file's summary is
              collected in the same traversal as the rules
    +project  the whole run: +summary, then the project phase, which also summarises the
              files an entry point reaches that were not parsed yet
    join      the project phase alone, every summary at hand (resolving calls, profiles,
              entry points, project rules)

and prints the median of each and, as shares of parsing, what the project rules add to a
run (+project - lint), split into the join, summarising in the per-file pass (+summary -
lint) and summarising reached files on demand (the rest). Not run by the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import libcst as cst

from repro_lint.config import Config
from repro_lint.engine import lint_files
from repro_lint.files import SourceFile, display_name
from repro_lint.program import Unit, analyse
from repro_lint.project_pass import summary_loader
from repro_lint.rules.table import ALL_RULES
from repro_lint.settings import Settings


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
    source = (args.corpus or default_corpus()).resolve()
    with tempfile.TemporaryDirectory(prefix="repro-lint-bench-") as temporary:
        root = Path(temporary)
        (root / "pyproject.toml").write_text('[project]\nname = "corpus"\n', encoding="utf-8")
        for path in sorted(source.rglob("*.py"))[: args.limit]:
            copy = root / source.name / path.relative_to(source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
        measure(source, root, args.runs)


def measure(source: Path, root: Path, runs: int) -> None:
    corpus = root / source.name
    paths = sorted(corpus.rglob("*.py"))
    files = [SourceFile(display_name(path), path) for path in paths]
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in paths]
    size = sum(len(text) for text in texts)
    print(f"corpus: {source} ({len(files)} files, {size / 1e6:.1f} MB), {runs} runs")

    full = Settings.from_config(Config(root=root, select=("ALL",)))
    project_codes = frozenset(r.CODE for r in full.project_rules)
    per_file = tuple(r.CODE for r in ALL_RULES if r.CODE not in project_codes)
    plain = Settings.from_config(Config(root=root, select=per_file))
    assert not plain.project_rules, "a per-file selection kept a project rule"

    def parse() -> None:
        for text in texts:
            with contextlib.suppress(cst.ParserSyntaxError):
                cst.parse_module(text)

    # Every summary the project phase will want, computed once, for timing the join alone.
    results = lint_files(files, full, jobs=1, project=False)
    by_name = {file.display: file.path for file in files}
    load = summary_loader(full)
    loaded: dict[tuple[Path, bool], tuple[str, Mapping[str, Any]] | None] = {}

    def remembered(path: Path, imported: bool) -> tuple[str, Mapping[str, Any]] | None:
        if (path, imported) not in loaded:
            loaded[path, imported] = load(path, imported)
        return loaded[path, imported]

    def join() -> int:
        units = [
            Unit(r.filename, by_name[r.filename], r.summary, True, project_codes) for r in results
        ]
        found, _ = analyse(units, full.project_rules, full.project_options(), remembered)
        return sum(len(diagnostics) for diagnostics in found.values())

    findings = join()
    parsed = sum(1 for r in results if r.summary and not r.summary.get("deferred"))
    samples: dict[str, list[float]] = {
        "parse": [],
        "lint": [],
        "+summary": [],
        "+project": [],
        "join": [],
    }
    for run in range(runs):
        samples["parse"].append(timed(parse))
        samples["lint"].append(timed(lambda: lint_files(files, plain, jobs=1)))
        samples["+summary"].append(timed(lambda: lint_files(files, full, jobs=1, project=False)))
        samples["+project"].append(timed(lambda: lint_files(files, full, jobs=1)))
        samples["join"].append(timed(join))
        print(f"run {run + 1}: " + "  ".join(f"{k} {v[-1]:.2f}s" for k, v in samples.items()))
    median = {key: statistics.median(values) for key, values in samples.items()}
    floor = median["parse"]
    added = median["+project"] - median["lint"]
    in_pass = median["+summary"] - median["lint"]
    print()
    print(
        f"files: {len(files)}; summarised in the per-file pass: {parsed}; summarised on "
        f"demand: {sum(1 for v in loaded.values() if v and not v[1].get('deferred'))}; "
        f"project findings: {findings}"
    )
    for key, value in median.items():
        print(f"median {key:<9} {value:8.2f} s")
    shares = (
        ("project rules in all", added),
        ("  join", median["join"]),
        ("  summaries, per-file pass", in_pass),
        ("  summaries on demand", added - in_pass - median["join"]),
    )
    for label, value in shares:
        print(f"{label:<28}{value:8.2f} s  ({100 * value / floor:5.1f}% of parse)")


if __name__ == "__main__":
    main()
