"""Robustness on real code and long property runs (too slow for the test suite).

Usage: python benchmarks/robustness.py [--examples 5000] [--no-properties]
(run with the project's virtual environment; build the corpus first: bash benchmarks/corpus.sh)

On a copy of the corpus (outside the repository, whose .gitignore would hide it):
- lint it four times: --jobs 1, --jobs 2, and --jobs 2 again, plus the default; the JSON
  findings must be byte-identical (a linter for nondeterminism must itself be deterministic);
- --fix (with --unsafe-fixes) the copy: no traceback, exit status 0 or 1, every fixed file still
  compiles, and a second --fix changes nothing;
- then the property tests of tests/test_property_fixes.py with many random examples.
Exits non-zero on the first failure; prints what it checked.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "corpus" / "src"


def lint(work: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [sys.executable, "-m", "repro_lint", "check", ".", *args], cwd=work, capture_output=True
    )
    if done.returncode not in (0, 1) or b"Traceback" in done.stderr:
        raise SystemExit(
            f"repro-lint {' '.join(args)} failed ({done.returncode}):\n{done.stderr!r}"
        )
    return done


def snapshot(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(root.rglob("*.py")) if path.is_file()}


def check_corpus() -> None:
    with tempfile.TemporaryDirectory(prefix="repro-lint-robustness-") as temp:
        work = Path(temp) / "corpus"
        shutil.copytree(CORPUS, work)
        before = snapshot(work)
        json_args = ("--no-cache", "--output-format", "json", "--unsafe-fixes")
        outputs = {
            label: lint(work, *json_args, *extra).stdout
            for label, extra in [
                ("jobs 1", ("--jobs", "1")),
                ("jobs 2", ("--jobs", "2")),
                ("jobs 2 again", ("--jobs", "2")),
                ("default jobs", ()),
            ]
        }
        reference = outputs["jobs 1"]
        for label, output in outputs.items():
            assert output == reference, f"findings differ between jobs 1 and {label}"
        print(f"{len(before)} files: JSON findings byte-identical across {', '.join(outputs)}")
        assert snapshot(work) == before, "linting without --fix changed files"

        lint(work, "--fix", "--unsafe-fixes", "--no-cache")
        after = snapshot(work)
        changed = [path for path in after if after[path] != before.get(path)]
        assert set(after) == set(before), "fixing added or removed files"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            for path in changed:
                compile(after[path], str(path), "exec")
        print(f"--fix --unsafe-fixes changed {len(changed)} files; all of them compile:")
        for path in changed:
            print(f"  {path.relative_to(work)}")
        lint(work, "--fix", "--unsafe-fixes", "--no-cache")
        assert snapshot(work) == after, "a second --fix changed files"
        print("a second --fix changed nothing")


def run_properties(examples: int) -> None:
    env = {**os.environ, "REPRO_LINT_PROPERTY_EXAMPLES": str(examples)}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::SyntaxWarning",
        str(ROOT / "tests" / "test_property_fixes.py"),
    ]
    print(f"property tests with {examples} examples (hypothesmith: a third of that each):")
    subprocess.run(command, cwd=ROOT, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--no-properties", action="store_true")
    parser.add_argument("--no-corpus", action="store_true")
    args = parser.parse_args()
    if not args.no_corpus:
        if not CORPUS.is_dir():
            sys.exit("no corpus: run `bash benchmarks/corpus.sh` first")
        check_corpus()
    if not args.no_properties:
        run_properties(args.examples)


if __name__ == "__main__":
    main()
