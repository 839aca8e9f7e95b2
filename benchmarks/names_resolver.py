"""Cost of resolving names: repro-lint's import-table resolver vs libcst's providers.

Usage: python benchmarks/names_resolver.py [DIR] [--files N] [--runs R]

Parses each file once (not timed), then times, per file: building ``Names`` and resolving every
Name/Attribute in the module, against libcst's ScopeProvider + QualifiedNameProvider resolving
the same nodes. Prints medians over the runs. (Answers are compared in tests/test_names.py.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, QualifiedNameProvider

from repro_lint.names import Names


def expressions(module: cst.Module) -> list[cst.BaseExpression]:
    found: list[cst.BaseExpression] = []

    class Collect(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            found.append(node)

        def visit_Name(self, node: cst.Name) -> None:
            found.append(node)

    module.visit(Collect())
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", nargs="?", default=None)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.directory is None:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or spec.origin is None:
            sys.exit("give a directory (torch is not installed to use its sources)")
        args.directory = str(Path(spec.origin).parent)
    paths = sorted(Path(args.directory).rglob("*.py"))[: args.files]
    modules = []
    for path in paths:
        try:
            modules.append(cst.parse_module(path.read_text(encoding="utf-8")))
        except (cst.ParserSyntaxError, UnicodeDecodeError):
            continue
    ours_times, theirs_times = [], []
    for _ in range(args.runs):
        start = time.perf_counter()
        for module in modules:
            names = Names(module, "m")
            [names.qualified_name(e) for e in expressions(module)]
        ours_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        for module in modules:
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            resolved = wrapper.resolve(QualifiedNameProvider)
            for e in expressions(module):
                value = resolved.get(e, set())
                # Recent libcst computes this provider lazily.
                {q.name for q in (value() if callable(value) else value)}
        theirs_times.append(time.perf_counter() - start)
    n = len(modules)
    ours_s, theirs_s = statistics.median(ours_times), statistics.median(theirs_times)
    print(f"files: {n} from {args.directory}; runs: {args.runs} (median)")
    print(f"repro-lint Names           : {ours_s:8.3f} s  ({1000 * ours_s / n:6.2f} ms/file)")
    print(f"libcst QualifiedNameProvider: {theirs_s:8.3f} s  ({1000 * theirs_s / n:6.2f} ms/file)")
    print(f"speed-up: {theirs_s / ours_s:.1f}x (both include one walk collecting the nodes)")


if __name__ == "__main__":
    main()
