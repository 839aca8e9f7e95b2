"""Where a cold run's work goes, by what the per-file pass does with each file.

    python benchmarks/cold_split.py CORPUS [--stride N]

In one process, every file (every N-th with ``--stride``) is linted as a cold run lints it
(the default settings, the project rules selected) and timed, then put in one class:

    findings       at least one finding (parsed, or refused unparsed: a syntax error)
    catalog-only   parsed for catalog trigger words (RPL401-RPL403) alone, no finding
    rules-only     parsed for other rules' trigger words, no finding
    entry-only     parsed only because it may be an entry point (no rule triggered)
    deferred       not parsed: its summary is deferred (a cold run's workers summarise up
                   to ``engine.AHEAD_BYTES`` of these as they lint them, and a worker beside
                   its project pass the rest: the "ahead" column times summarising every
                   one, ``summarise=True``, an upper bound on that work)
    settled        not parsed and no summary at all (a file that imports nothing)

It also times libcst's parse of the same files (the floor ``bench.py`` compares a cold run
with) and, for comparison, Python's own ``ast`` parse of them with a walk over every node
(where an analysis on ``ast`` would start from), and prints each class's files, megabytes and
CPU-seconds with the share of the floor.
A cold run within 1.3x of the floor has 1.3 times the floor's CPU-seconds for everything
(the parse floor counts every file; a run pays the classes' sum, the project pass and its
start). Not run by the test suite; ``tests/test_cold_split_bench.py`` keeps it working.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst

from repro_lint import file_pass, tree_pass
from repro_lint.config import Config
from repro_lint.settings import Settings
from repro_lint.source import SourceError, decode

CATALOG = frozenset({"RPL401", "RPL402", "RPL403"})
CLASSES = ("findings", "catalog-only", "rules-only", "entry-only", "deferred", "settled")


@dataclass
class Row:
    files: int = 0
    size: int = 0
    seconds: float = 0.0
    ahead: float = 0.0
    rules: dict[str, int] = field(default_factory=dict)


@contextlib.contextmanager
def parsed_for(seen: dict[str, Any]) -> Iterator[None]:
    """Note the rules the tree pass runs a file for (``seen["active"]``) while inside."""
    original = tree_pass.lint_parsed

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen["active"] = [rule.CODE for rule in args[5]]
        return original(*args, **kwargs)

    tree_pass.lint_parsed = spy
    try:
        yield
    finally:
        tree_pass.lint_parsed = original


def timed(action: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """CPU-seconds of ``action(*args, **kwargs)``, and what it returned."""
    start = time.process_time()
    value = action(*args, **kwargs)
    return time.process_time() - start, value


def classify(paths: Sequence[Path], settings: Settings) -> dict[str, Row]:
    """Each file linted once, timed, and counted in its class."""
    rows = {name: Row() for name in CLASSES}
    file_pass.import_tree_pass()
    seen: dict[str, Any] = {}
    with parsed_for(seen):
        for path in paths:
            try:
                text = decode(path.read_bytes()).text
            except (OSError, SourceError):
                continue
            seen.clear()
            seconds, result = timed(file_pass.lint_one, text, str(path), settings, path)
            active: list[str] | None = seen.get("active")
            ahead = 0.0
            if result.diagnostics:
                name = "findings"
            elif active is None:
                name = "deferred" if result.summary.get("deferred") else "settled"
                if name == "deferred":
                    ahead, _ = timed(
                        file_pass.lint_one, text, str(path), settings, path, summarise=True
                    )
            elif not active:
                name = "entry-only"
            elif set(active) <= CATALOG:
                name = "catalog-only"
            else:
                name = "rules-only"
            row = rows[name]
            row.files += 1
            row.size += len(text)
            row.seconds += seconds
            row.ahead += ahead
            for code in active or ():
                row.rules[code] = row.rules.get(code, 0) + 1
    return rows


def _parse_seconds(paths: Sequence[Path], parse: Callable[[str], object]) -> float:
    """CPU-seconds of ``parse`` on the text of every file (a file it fails on counts too)."""
    total = 0.0
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        start = time.process_time()
        with contextlib.suppress(Exception):
            parse(text)
        total += time.process_time() - start
    return total


def parse_floor(paths: Sequence[Path]) -> float:
    """CPU-seconds of libcst's parse of every file (syntax errors count as parsed)."""
    return _parse_seconds(paths, cst.parse_module)


def _walked(text: str) -> None:
    for _ in ast.walk(ast.parse(text)):
        pass


def ast_walk(paths: Sequence[Path]) -> float:
    """CPU-seconds of Python's ``ast`` parse of every file and a walk over all its nodes
    (syntax errors count as parsed, as in ``parse_floor``)."""
    return _parse_seconds(paths, _walked)


def report(rows: dict[str, Row], floor: float, python: float | None = None) -> str:
    lines = [
        f"{'class':<14}{'files':>7}{'MB':>8}{'CPU-s':>9}{'ahead':>8}{'of floor':>10}  rules (files)"
    ]
    total = 0.0
    for name in CLASSES:
        row = rows[name]
        spent = row.seconds + row.ahead
        total += spent
        rules = ", ".join(f"{code} {count}" for code, count in sorted(row.rules.items()))
        lines.append(
            f"{name:<14}{row.files:>7}{row.size / 1e6:>8.1f}{row.seconds:>9.1f}"
            f"{row.ahead:>8.1f}{spent / floor if floor else 0:>10.2f}  {rules}"
        )
    lines.append(
        f"{'all':<14}{sum(r.files for r in rows.values()):>7}"
        f"{sum(r.size for r in rows.values()) / 1e6:>8.1f}{total:>17.1f}"
        f"{total / floor if floor else 0:>10.2f}"
    )
    lines.append(f"libcst parse floor: {floor:.1f} CPU-s; 1.3x of it: {1.3 * floor:.1f} CPU-s")
    if python is not None:
        lines.append(
            f"ast parse and walk of every node: {python:.1f} CPU-s"
            f" ({python / floor if floor else 0:.2f} of the floor)"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--stride", type=int, default=1, help="every N-th file only")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    paths = sorted(args.corpus.rglob("*.py"))[:: args.stride]
    settings = Settings.from_config(Config())
    rows = classify(paths, settings)
    print(report(rows, parse_floor(paths), ast_walk(paths)))


if __name__ == "__main__":
    main()
