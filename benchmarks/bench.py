"""Side-by-side timings on the benchmark corpus (issues 8 and 13): medians of several runs.

Usage: python benchmarks/bench.py [--runs 5] [--slow-runs 5] [--stride 20] [--no-slow]
                                  [--waits-only]
(run with the project's virtual environment; build the corpus first: bash benchmarks/corpus.sh)

Measures, in rounds so that every tool sees the same machine load:
- the libcst parse floor: every file read and parsed once with libcst.parse_module in a pool of
  one process per core (no interpreter start-up);
- repro-lint cold (--no-cache), warm (cache, nothing changed), after editing one file (a
  comment appended, which moves no line, and a line inserted at the top, which moves them all;
  the biggest file with a finding, the worst case, and a median-sized one; a comment appended
  to a module that no rule parses but whose whole summary the project pass reads, the
  median-sized of them, which the run must summarise again; and a function
  added to the median-sized one, which changes its summary: the project pass runs again over
  the whole program, and the findings differ, so they are not compared), one file as
  pre-commit runs it (its hook entry, start-up included, the file itself changed so that only
  its imports come from the cache); wall time of the real command;
- the same waits through a daemon the benchmark starts (`repro-lint daemon start`): warm, a
  comment appended to and a line inserted at the top of the median-sized file, a line inserted
  in the biggest, and pre-commit on the median-sized file; client start-up included, each check
  made once the daemon is idle, counted by the daemon (so none ran on its own), and its output
  asserted equal to the process-of-its-own run's. Every other command runs in a process of its
  own (``REPRO_LINT_NO_DAEMON``);
- the start-up every one-file run and edit pays before any work: the interpreter with click
  and libcst imported (no repro-lint code), and with the modules a one-file run imports;
- ruff cold (--no-cache) and warm (its cache), default rules;
- TorchFix and Fixit (default rules) on a documented subset (every STRIDE-th file): they take
  minutes on the whole corpus; per-file rates and the ratio to repro-lint cold on the same subset
  are reported, with a full-corpus estimate marked as one;
- peak memory of a cold run (resident memory of all its processes summed, sampled every 10 ms),
  and of a warm run after a function is added to one file (the project pass runs again over
  the summaries the cache holds);
- `python -X importtime` of the one-file run (top entries; torch must not be imported);
- the language server over stdio with a real LSP client (benchmarks/lsp_latency.py):
  didChange -> diagnostics on a 1,000-line training script, and codeAction at a cursor;
- and asserts, on every run, that the findings are byte-identical: warm and after an edit as
  cold; --jobs 1 as the default; with the text prefilter and the docstring and comment gates
  off (in-process, also timing the project pass).

The corpus is copied to a temporary directory outside the repository first (the repository's
.gitignore would hide it from every linter). Prints a table and saves it under
benchmarks/results/ with the date and the core count.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import datetime
import json
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The modules a one-file run imports before it reads anything (rules included).
# What a one-file run imports before any work (and all it imports when its file is settled
# from its text); and what it imports in all when it parses the file and analyses a program.
# As the console script imports them: with the compiled code of dataclasses' methods at hand.
ONE_FILE_IMPORTS = (
    "from repro_lint import dataclass_code; dataclass_code.install(); "
    "import repro_lint.cli, repro_lint.settings, repro_lint.engine, repro_lint.run_cache"
)
PARSED_IMPORTS = f"{ONE_FILE_IMPORTS}; repro_lint.engine.import_analysis()"
sys.path.insert(0, str(HERE))
import lsp_latency  # noqa: E402  (sibling scripts, not a package)
import saved  # noqa: E402
from saved import cores  # noqa: E402

ROOT = HERE.parent
CORPUS = HERE / "corpus" / "src"
TOOLS = HERE / "corpus" / "tools-venv"
TOOL_PINS = ("torchfix==0.7.0", "fixit==2.2.1", "ruff==0.17.6")
BIN = Path(sys.executable).parent
RUFF_RULES = "E4,E7,E9,F"
# Exit status 1 means "found something" for every tool measured here.
OK = (0, 1)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


# -- running things ---------------------------------------------------------------------------


def timed(command: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    """Wall time of a command (start-up included); fails loudly on a crash."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in OK or "Traceback" in done.stderr:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed


def timed_output(
    command: Sequence[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, str]:
    """Wall time and standard output of a command (start-up included)."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in OK or "Traceback" in done.stderr:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed, done.stdout


def run_output(command: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    return timed_output(command, cwd, env)[1]


# A script whose check parses it and runs the project pass: the run imports libcst, the rules
# and the program model, whose dataclasses' compiled code it then stores.
_WARM_UP_SCRIPT = """import torch
from torch.utils.data import DataLoader

torch.backends.cudnn.benchmark = True


def main():
    loader = DataLoader(list(range(8)), batch_size=2, shuffle=True, num_workers=2)
    for batch in loader:
        torch.nn.functional.interpolate(batch, scale_factor=2, mode="bilinear").sum().backward()


if __name__ == "__main__":
    main()
"""


def as_installed(code: Path) -> None:
    """Make the repro-lint of checkout ``code`` start as an installed copy does, whatever the
    environment says: its modules compiled to bytecode, and the compiled code of dataclasses'
    methods stored (``repro_lint.dataclass_code``: a run writes it as it exits, but not where
    Python writes no bytecode). Where ``PYTHONDONTWRITEBYTECODE`` is set, a fresh worktree's
    run would otherwise compile every module it imports, in every process, on every run (a run
    after a one-file edit measured twice as slow), and a checkout whose code changed since its
    bytecode was written, the modules that changed: two checkouts compare only so."""
    if not compileall.compile_dir(str(code / "repro_lint"), quiet=1):
        raise SystemExit(f"{code}: repro_lint does not compile")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(code), REPRO_LINT_NO_DAEMON="1")
    with tempfile.TemporaryDirectory(prefix="repro-lint-warm-up-") as temp:
        Path(temp, "train.py").write_text(_WARM_UP_SCRIPT, encoding="utf-8")
        run_output([sys.executable, "-m", "repro_lint", ".", "--no-cache", "-q"], Path(temp), env)


@contextlib.contextmanager
def daemon(repro: str, directory: Path) -> Iterator[dict[str, str]]:
    """A repro-lint daemon of its own (its socket in ``directory``): the environment that
    hands checks to it. Every other command of the benchmark runs in a process of its own."""
    env = {k: v for k, v in os.environ.items() if k != "REPRO_LINT_NO_DAEMON"}
    env["REPRO_LINT_DAEMON_DIR"] = str(directory)
    start = [repro, "daemon", "start", "--idle-timeout", "7200"]
    started = subprocess.run(start, env=env, capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(f"the daemon did not start:\n{started.stderr}")
    try:
        yield env
    finally:
        subprocess.run([repro, "daemon", "stop"], env=env, capture_output=True)


def daemon_checks(repro: str, env: dict[str, str]) -> int:
    """How many checks the daemon has run (each measured one must be among them); it answers
    once it is idle, having done what it does between checks."""
    status = subprocess.run([repro, "daemon", "status"], env=env, capture_output=True, text=True)
    found = re.search(r"(\d+) checks run", status.stdout)
    if status.returncode != 0 or found is None:
        raise SystemExit(f"the daemon is not running: {status.stdout}{status.stderr}")
    return int(found.group(1))


def _tree_rss(pid: int) -> int:
    """Resident memory (bytes) of a process and all its descendants."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += rss.get(current, 0)
        todo.extend(children.get(current, []))
    return total


def peak_memory(command: Sequence[str], cwd: Path) -> tuple[int, int, str, float]:
    """(peak summed RSS of the process tree, largest single-process peak RSS) in bytes, the
    command's standard output, and its wall time."""
    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=output, stderr=subprocess.DEVNULL)
        peak = 0
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, _tree_rss(process.pid))
                stop.wait(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        _, rusage_status, rusage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        stop.set()
        sampler.join()
        process.returncode = os.waitstatus_to_exitcode(rusage_status)
        if process.returncode not in OK:
            raise SystemExit(f"{' '.join(command)} failed ({process.returncode})")
        output.seek(0)
        text = output.read().decode()
    return peak, rusage.ru_maxrss * 1024, text, elapsed


def _parse_one(path: str) -> None:
    import libcst

    with open(path, "rb") as handle:
        data = handle.read()
    # The floor counts the attempt, whatever the file holds.
    with contextlib.suppress(Exception):
        libcst.parse_module(data)


def parse_floor(paths: Sequence[Path]) -> float:
    """Every file parsed once with libcst on all cores, biggest first (the best balance)."""
    ordered = sorted((str(p) for p in paths), key=lambda p: -os.path.getsize(p))
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(cores()) as pool:
        for _ in pool.imap_unordered(_parse_one, ordered, chunksize=1):
            pass
    return time.perf_counter() - start


def import_times(command: Sequence[str], cwd: Path) -> tuple[list[tuple[float, str]], bool]:
    """Top-level imports by cumulative time (ms), and whether torch was imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command], cwd=cwd, capture_output=True, text=True
    )
    entries: list[tuple[float, str]] = []
    torch = False
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if not match:
            continue
        name = match.group(3)
        torch = torch or name == "torch" or name.startswith("torch.")
        if len(match.group(2)) == 1:
            entries.append((int(match.group(1)) / 1000, name))
    return sorted(entries, reverse=True), torch


# -- the corpus ---------------------------------------------------------------------------------


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def describe(files: Sequence[Path]) -> tuple[int, int, int]:
    lines = size = 0
    for path in files:
        data = path.read_bytes()
        lines += data.count(b"\n")
        size += len(data)
    return len(files), lines, size


def ensure_tools() -> Path | None:
    """The pinned comparison tools' bin directory; None when they cannot be installed (no
    network): ruff then comes from this environment (the dev tools pin the same release)
    and TorchFix and Fixit are left out."""
    if not (TOOLS / "bin" / "fixit").exists():
        subprocess.run([sys.executable, "-m", "venv", str(TOOLS)], check=True)
        done = subprocess.run(
            [str(TOOLS / "bin" / "python"), "-m", "pip", "install", "--quiet", *TOOL_PINS],
            capture_output=True,
        )
        if done.returncode != 0:
            shutil.rmtree(TOOLS, ignore_errors=True)
            print(
                "comparison tools not installable here: TorchFix and Fixit left out",
                file=sys.stderr,
            )
            return None
    return TOOLS / "bin"


def corpus_pins(corpus: Path) -> str:
    """What the corpus is: the pinned packages of ``corpus.sh``, or another tree's name."""
    if corpus.resolve() != CORPUS.resolve():
        return f"the tree {corpus.name!r} (--corpus)"
    script = (HERE / "corpus.sh").read_text(encoding="utf-8")
    return ", ".join(re.findall(r'^\s+"(\S+==\S+)"$', script, flags=re.MULTILINE))


# -- prefilter check ----------------------------------------------------------------------------


def findings_json(work: Path, gated: bool) -> tuple[list[object], float, float]:
    """Findings of an in-process cold run, with the raw-text prefilter and the docstring and
    comment gates on or off; its wall time and the part of it spent in the project phase (cross-file
    analysis, including the summaries it loads for imported files that were not linted)."""
    from repro_lint import engine, file_pass
    from repro_lint.config import load_config
    from repro_lint.files import discover
    from repro_lint.settings import Settings

    real = file_pass.triggered
    real_gate = file_pass.gate_text
    real_comments = file_pass.comments_gated
    # (The name engine calls, replaced in its namespace: engine does not export it.)
    namespace = vars(engine)
    real_project = namespace["project_pass"]
    phase = 0.0

    def project_phase(*args: Any, **kwargs: Any) -> Any:
        nonlocal phase
        start = time.perf_counter()
        try:
            return real_project(*args, **kwargs)
        finally:
            phase += time.perf_counter() - start

    if not gated:
        file_pass.triggered = lambda rule, text: True
        file_pass.gate_text = lambda text, docstrings: text
        file_pass.comments_gated = lambda *args: None
    namespace["project_pass"] = project_phase
    try:
        previous = Path.cwd()
        os.chdir(work)
        settings = Settings.from_config(load_config(work, None))
        files = discover([work], settings.config).files
        start = time.perf_counter()
        results = engine.lint_files(files, settings, jobs=cores())
        elapsed = time.perf_counter() - start
    finally:
        file_pass.triggered = real
        file_pass.gate_text = real_gate
        file_pass.comments_gated = real_comments
        namespace["project_pass"] = real_project
        os.chdir(previous)
    return [d.to_json() for r in results for d in r.diagnostics], elapsed, phase


# -- the benchmark ------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def row(label: str, values: Sequence[float], note: str = "") -> str:
    return (
        f"{label:<44} {median(values):>9.3f} {min(values):>8.3f} {max(values):>8.3f}  {note}"
    ).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--slow-runs", type=int, default=5)
    parser.add_argument("--stride", type=int, default=20, help="subset: every N-th file")
    parser.add_argument("--no-slow", action="store_true", help="skip TorchFix and Fixit")
    parser.add_argument("--edge-runs", type=int, default=3, help="runs of each edge case")
    parser.add_argument("--lsp-edits", type=int, default=30, help="didChange samples")
    parser.add_argument("--lsp-actions", type=int, default=60, help="codeAction samples")
    parser.add_argument(
        "--waits-only",
        action="store_true",
        help="only where users wait (warm, edits, pre-commit, language server, ruff warm): "
        "no parse floor, cold rounds, memory, gate, edge cases or slow tools; one cold run "
        "still gives the reference findings",
    )
    parser.add_argument(
        "--edges-only",
        action="store_true",
        help="only issue 18's edge cases (many findings, its twin, a huge module, the corpus's "
        "biggest file), each with --edge-runs runs",
    )
    parser.add_argument(
        "--corpus", type=Path, default=CORPUS, help="another tree (to try the script out)"
    )
    args = parser.parse_args()
    # Every command runs in a process of its own, even where a daemon of the user's runs;
    # the daemon's rows use one the benchmark starts.
    os.environ["REPRO_LINT_NO_DAEMON"] = "1"
    if not args.corpus.is_dir():
        sys.exit("no corpus: run `bash benchmarks/corpus.sh` first")
    as_installed(ROOT)
    if args.edges_only:
        with tempfile.TemporaryDirectory(prefix="repro-lint-bench-") as temp:
            report = edges_only(args, str(BIN / "repro-lint"), Path(temp))
        print(report)
        print(f"\nsaved {saved.save(report, 'edges').relative_to(ROOT)}")
        return
    tools = ensure_tools()
    if tools is None:
        args.no_slow = True
    repro = str(BIN / "repro-lint")
    with tempfile.TemporaryDirectory(prefix="repro-lint-bench-") as temp:
        work = Path(temp) / "corpus"
        shutil.copytree(args.corpus, work)
        files = python_files(work)
        subset_dir = Path(temp) / "subset"
        subset = files[:: args.stride]
        for path in subset:
            target = subset_dir / path.relative_to(work)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        with daemon(repro, Path(temp) / "daemon") as daemon_env:
            report = run_all(args, tools, repro, work, files, subset_dir, daemon_env)
    print(report)
    # (A run of the waits alone is saved apart: it lacks the cold rows of a full run.)
    print(f"\nsaved {saved.save(report, 'waits' if args.waits_only else '').relative_to(ROOT)}")


def run_all(
    args: argparse.Namespace,
    tools: Path | None,
    repro: str,
    work: Path,
    files: Sequence[Path],
    subset_dir: Path,
    daemon_env: dict[str, str],
) -> str:
    count, lines, size = describe(files)
    cold = [repro, ".", "--no-cache", "-q", "--output-format", "concise"]
    warm = [repro, ".", "-q", "--output-format", "concise"]
    # ruff's classic default rules (its defaults grew in later releases), concise output as for
    # repro-lint: with thousands of findings, rendering code frames would dominate its time.
    ruff_bin = tools / "ruff" if tools is not None else BIN / "ruff"
    ruff = [str(ruff_bin), "check", "--select", RUFF_RULES, "--output-format", "concise"]
    ruff_cold = [*ruff, "--no-cache", "--quiet", "."]
    ruff_warm = [*ruff, "--quiet", "--cache-dir", str(work.parent / "ruff-cache"), "."]
    # The default output, as a user at a terminal sees it: every finding with its code frame.
    warm_frames = [repro, "."]
    ruff_warm_frames = [
        str(ruff_bin),
        "check",
        "--select",
        RUFF_RULES,
        "--cache-dir",
        str(work.parent / "ruff-cache"),
        "--output-format",
        "full",
        ".",
    ]

    # The file to edit: the biggest one with a finding (the worst case for a re-lint), and a
    # typical one: the median size among those the linter parses.
    reference = run_output(cold, work)
    flagged = sorted({line.split(":", 1)[0] for line in reference.splitlines() if ":" in line})
    big = max(flagged or [str(files[0].relative_to(work))], key=lambda p: (work / p).stat().st_size)
    parsed = _parsed_files(work, files)
    typical = str(
        sorted(parsed, key=lambda p: p.stat().st_size)[len(parsed) // 2].relative_to(work)
    )
    hook = _hook_entry()
    edits = {name: Edit(work / name) for name in (big, typical)}

    run_output(warm, work)
    # A module that no rule parses but the program reads whole (as most of a training
    # project's modules are): after an edit, its summary is what the run needs.
    module = _read_whole(work, parsed)
    edits[module] = Edit(work / module)
    subprocess.run(ruff_warm, cwd=work, capture_output=True)
    times: dict[str, list[float]] = {}
    # The daemon's first check imports and reads what the next ones keep.
    same_first = run_output(warm, work, daemon_env) == reference
    assert same_first, "through the daemon: findings differ from the cold run's"

    def add(key: str, value: float) -> None:
        # Each figure on stderr as it is taken: a run cut short still tells what it measured.
        print(f"  {key}: {value:.2f} s", file=sys.stderr)
        times.setdefault(key, []).append(value)

    def same(output: str, what: str) -> None:
        # Byte-identical findings with and without the cache: checked on every run.
        assert output == reference, f"{what}: findings differ from the cold run's"

    full = not args.waits_only
    alone_env = {**os.environ, "REPRO_LINT_NO_HELPER": "1"}
    for index in range(args.runs):
        print(f"round {index + 1}/{args.runs}", file=sys.stderr)
        if full:
            add("floor", parse_floor(files))
            elapsed, output = timed_output(cold, work)
            add("cold", elapsed)
            same(output, "cold run")
        elapsed, output = timed_output(warm, work)
        add("warm", elapsed)
        same(output, "warm run")
        add("warm_frames", timed(warm_frames, work))
        for label, name in (("big", big), ("typical", typical)):
            edit = edits[name]
            # A comment appended: no line moves, the project pass is reused.
            edit.append(f"# edit {index}\n")
            elapsed, output = timed_output(warm, work)
            add(f"touched_{label}", elapsed)
            same(output, f"after appending a comment to {name}")
            edit.restore()
            run_output(warm, work)
            # A line inserted at the top: every line moves, the project pass runs again.
            edit.prepend(f"# edit {index}\n")
            add(f"moved_{label}", timed([*warm], work))
            edit.restore()
            run_output(warm, work)
            if label == "typical":
                # The same without the helper process a check forks (``repro_lint.helper``).
                edit.prepend(f"# edit {index}, alone\n")
                add("moved_typical_alone", timed([*warm], work, alone_env))
                edit.restore()
                run_output(warm, work)
            # Pre-commit passes the changed file alone; its imports come from the cache.
            edit.append(f"# pre-commit {index}\n")
            add(f"precommit_{label}", timed([repro, *hook[1:], name], work))
            edit.restore()
            run_output(warm, work)
            if label == "typical":
                # A comment appended to a module the program reads whole.
                edits[module].append(f"# edit {index}\n")
                elapsed, output = timed_output(warm, work)
                add("touched_module", elapsed)
                same(output, f"after appending a comment to {module}")
                edits[module].restore()
                run_output(warm, work)
                # A function added: the file's summary changes, so the project pass runs again
                # over the whole program (no target: where an edit of code waits today).
                edit.append(f"\n\ndef _bench_edit_{index}():\n    return {index}\n")
                add("code_typical", timed([*warm], work))
                edit.restore()
                run_output(warm, work)
        # The same waits through the daemon (``repro-lint daemon start``): each check is
        # handed to it (counted), answers as the process of its own did, and is timed from the
        # client's start to its exit.
        # Each timed check starts once the daemon is idle (a status answer comes after what it
        # does between checks), as after an edit made in an editor.
        checks = daemon_checks(repro, daemon_env)
        elapsed, output = timed_output(warm, work, daemon_env)
        add("daemon_warm", elapsed)
        same(output, "warm run through the daemon")
        edit = edits[typical]
        edit.append(f"# daemon edit {index}\n")
        daemon_checks(repro, daemon_env)
        elapsed, output = timed_output(warm, work, daemon_env)
        add("daemon_touched_typical", elapsed)
        same(output, f"through the daemon, after appending a comment to {typical}")
        edit.restore()
        run_output(warm, work, daemon_env)
        for label, name in (("big", big), ("typical", typical)):
            edits[name].prepend(f"# daemon edit {index}\n")
            daemon_checks(repro, daemon_env)
            elapsed, output = timed_output(warm, work, daemon_env)
            add(f"daemon_moved_{label}", elapsed)
            alone = run_output(warm, work)
            assert output == alone, f"through the daemon, after a line inserted in {name}"
            edits[name].restore()
            run_output(warm, work, daemon_env)
        edit.append(f"# daemon pre-commit {index}\n")
        daemon_checks(repro, daemon_env)
        add("daemon_precommit_typical", timed([repro, *hook[1:], typical], work, daemon_env))
        edit.restore()
        run_output(warm, work, daemon_env)
        assert daemon_checks(repro, daemon_env) == checks + 9, "a check was not handed over"
        # What a one-file run pays before any work (the floor under the edit targets).
        add("startup_libraries", timed([sys.executable, "-c", "import click, libcst"], work))
        add("startup_ours", timed([sys.executable, "-c", ONE_FILE_IMPORTS], work))
        add("startup_parsed", timed([sys.executable, "-c", PARSED_IMPORTS], work))
        if full:
            add("ruff_cold", timed(ruff_cold, work))
        add("ruff_warm", timed(ruff_warm, work))
        add("ruff_warm_frames", timed(ruff_warm_frames, work))

    # The short measurements first (a run cut short still has them).
    print("language server", file=sys.stderr)
    lsp_times = asyncio.run(lsp_latency.measure(1000, args.lsp_edits, args.lsp_actions))
    print(f"  lsp: {lsp_times}", file=sys.stderr)

    edges: dict[str, Any] = {}
    if full:
        print("edge cases", file=sys.stderr)
        edges = edge_cases(repro, work.parent, work, work / big, args.edge_runs)
        print(f"  edges: {edges}", file=sys.stderr)
    command = ["-m", "repro_lint", *hook[1:], "--no-cache", big]
    imports, torch_imported = import_times(command, work)
    assert not torch_imported, "the one-file run imported torch"

    # After an edit that moves lines, the cached run answers what a cold run answers.
    edits[big].prepend("# moved\n")
    moved_same = run_output(warm, work) == run_output(cold, work)
    edits[big].restore()
    assert moved_same, "after an edit that moves lines: findings differ from a cold run's"
    run_output(warm, work)
    if not full:
        return render(
            args, count, lines, size, times, {}, (0, 0, 0), None, imports, 0, None, 0.0,
            big, typical, module, hook, lsp_times, edges,
        )  # fmt: skip

    peak_sum, peak_one, output, _ = peak_memory(cold, work)
    same(output, "cold run measured for memory")
    peak_serial, _, output, _ = peak_memory([*cold, "--jobs", "1"], work)
    same(output, "cold run with --jobs 1")
    # After a code edit, one process holds every file's summary from the cache.
    run_output(warm, work)
    edits[typical].append("\n\ndef _bench_memory():\n    return 0\n")
    peak_edit, _, output, _ = peak_memory(warm, work)
    same(output, "warm run after a function added, measured for memory")
    edits[typical].restore()
    run_output(warm, work)
    print(
        f"  peak memory: {peak_sum / 2**20:.0f} MiB, --jobs 1 {peak_serial / 2**20:.0f} MiB, "
        f"after a code edit {peak_edit / 2**20:.0f} MiB",
        file=sys.stderr,
    )
    filtered, filtered_s, phase_s = findings_json(work, gated=True)
    unfiltered, unfiltered_s, _ = findings_json(work, gated=False)
    identical = json.dumps(filtered, sort_keys=True) == json.dumps(unfiltered, sort_keys=True)
    assert identical, "the prefilter or the gate changed the findings"
    print(
        f"  gate: {filtered_s:.1f} s with, {unfiltered_s:.1f} s without, identical", file=sys.stderr
    )

    slow: dict[str, list[float]] = {}
    sub_count, sub_lines, sub_size = describe(python_files(subset_dir))
    if not args.no_slow and tools is not None:
        for index in range(args.slow_runs):
            print(f"slow round {index + 1}/{args.slow_runs}", file=sys.stderr)
            slow.setdefault("repro", []).append(timed(cold, subset_dir))
            slow.setdefault("torchfix", []).append(
                timed([str(tools / "torchfix"), "."], subset_dir)
            )
            slow.setdefault("fixit", []).append(
                timed([str(tools / "fixit"), "lint", "."], subset_dir)
            )

    return render(
        args, count, lines, size, times, slow, (sub_count, sub_lines, sub_size),
        (peak_sum, peak_one, peak_serial, peak_edit), imports, len(filtered),
        (filtered_s, unfiltered_s), phase_s, big, typical, module, hook, lsp_times, edges,
    )  # fmt: skip


def edge_rows(edges: dict[str, Any]) -> list[str]:
    """The edge cases' rows of the report."""
    mb, mib = 1e6, 1024 * 1024
    many_s, many_peak, many_found, many_size = edges["many"]
    twin_s, twin_peak, _, twin_size = edges["twin"]
    huge_s, huge_peak, _, huge_size = edges["huge"]
    big_s, big_peak, _, big_size = edges["largest"]
    partial_s, partial_peak, _, partial_files = edges["partial"]
    return [
        f"edge cases (issue 18), alone, --jobs 1; median of {len(many_s)} runs; peak RSS:",
        row(
            f"{many_found:,} findings, generated ({many_size / mb:.1f} MB)",
            many_s,
            f"{median(many_s) / median(twin_s):.2f}x its twin; {many_peak / mib:.0f} MiB",
        ),
        row(
            f"  its twin, no finding ({twin_size / mb:.1f} MB)",
            twin_s,
            f"{twin_peak / mib:.0f} MiB",
        ),
        row(
            f"generated module {huge_size / mb:.1f} MB, defaults",
            huge_s,
            f"refused unparsed (too large); {huge_peak / mib:.0f} MiB",
        ),
        row(
            f"the corpus's biggest file ({big_size / 1000:.0f} KB), defaults",
            big_s,
            f"{big_peak / mib:.0f} MiB",
        ),
        row(
            f"partial tree ({partial_files:,} files), defaults",
            partial_s,
            f"{partial_peak / mib:.0f} MiB",
        ),
    ]


def edge_targets(
    edges: dict[str, Any], peak_sum: int, cold: float | None = None
) -> list[tuple[str, bool]]:
    """Issue 18's targets; ``peak_sum``: the cold run's peak, also a run on default settings;
    ``cold``: the whole corpus's cold run (median), which a third of it must not exceed."""
    many_s, many_peak = edges["many"][:2]
    default_peak = max(peak_sum, edges["huge"][1], edges["largest"][1])
    partial_s, partial_peak = edges["partial"][:2]
    return [
        ("40,000 findings <= 2x its twin", median(many_s) <= 2 * median(edges["twin"][0])),
        ("and peak < 500 MB", many_peak < 500e6),
        ("default runs peak < 1 GB", default_peak < 1e9),
        ("partial tree peak < 500 MB", partial_peak < 500e6),
        *(
            [("partial tree <= the whole tree's cold run", median(partial_s) <= cold)]
            if cold is not None
            else []
        ),
    ]


def edges_only(args: argparse.Namespace, repro: str, temp: Path) -> str:
    """``--edges-only``: issue 18's cases alone, with their targets."""
    files = python_files(args.corpus)
    largest = max(files, key=lambda p: p.stat().st_size)
    edges = edge_cases(repro, temp, args.corpus, largest, args.edge_runs)
    targets = edge_targets(edges, 0)
    return "\n".join(
        [
            f"repro-lint edge cases, {datetime.date.today().isoformat()}, {cores()} cores "
            f"({cpu_model()}); load average at the end {os.getloadavg()[0]:.1f}",
            "",
            f"{'scenario':<44} {'median':>9} {'min':>8} {'max':>8}  note",
            *edge_rows(edges),
            "",
            "targets (issue 18): "
            + "; ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in targets),
        ]
    )


def edge_cases(repro: str, temp: Path, corpus: Path, largest: Path, runs: int) -> dict[str, Any]:
    """Issue 18's cases, each linted alone with --jobs 1: a generated module with 40,000
    findings (one op call per function) next to its twin, the same functions with an op
    call that is no finding (so that both are parsed: the difference is the cost of the
    findings); a 16.6 MB generated module on the default settings (refused unparsed by the
    size guard); and the corpus's biggest file on the default settings. Then a partial tree
    on the default settings: every third file of ``corpus``, so that packages lack modules
    and ``__init__.py`` files, as in a tree copied in part or one whose compiled modules are
    absent (star imports of missing modules once made its run take minutes and gigabytes)."""
    found: dict[str, Any] = {}
    root = temp / "edges"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[tool.repro-lint]\nmax-file-size = "16MB"\n', encoding="utf-8"
    )
    head = "import torch\n\nt = torch.zeros(8)\n\n"
    calls = {"many": "t.index_add_(0, i, s)", "twin": "t.scatter_(0, i, 1.00)"}
    for name, call in calls.items():
        text = head + "".join(f"def f{n}(i, s):\n    return {call}\n" for n in range(40_000))
        (root / f"{name}.py").write_text(text, encoding="utf-8")
        command = [repro, f"{name}.py", "--no-cache", "--jobs", "1", "--output-format", "concise"]
        samples = [peak_memory(command, root) for _ in range(runs)]
        findings = samples[0][2].count(": RPL40")
        found[name] = ([s[3] for s in samples], max(s[0] for s in samples), findings, len(text))
    huge = temp / "huge"
    huge.mkdir()
    module = "import torch\n\n" + "".join(
        f"def layer_{n}(x, w):\n    y = torch.matmul(x, w) * {n % 7 + 1}\n    return y.relu()\n\n"
        for n in range(190_000)
    )
    (huge / "generated.py").write_text(module, encoding="utf-8")
    samples = [
        peak_memory([repro, "generated.py", "--no-cache", "--output-format", "concise"], huge)
        for _ in range(runs)
    ]
    assert "too large" in samples[0][2], "the size guard did not refuse the huge module"
    found["huge"] = ([s[3] for s in samples], max(s[0] for s in samples), 0, len(module))
    shutil.copy2(largest, huge / largest.name)
    samples = [
        peak_memory([repro, largest.name, "--no-cache", "--output-format", "concise"], huge)
        for _ in range(runs)
    ]
    assert "too large" not in samples[0][2], "the corpus's biggest file was refused"
    size = largest.stat().st_size
    found["largest"] = ([s[3] for s in samples], max(s[0] for s in samples), 0, size)
    partial = temp / "partial"
    kept = python_files(corpus)[::3]
    for path in kept:
        target = partial / path.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    command = [repro, ".", "--no-cache", "-q", "--output-format", "concise"]
    samples = [peak_memory(command, partial) for _ in range(runs)]
    assert len({s[2] for s in samples}) == 1, "a partial tree's findings changed between runs"
    found["partial"] = ([s[3] for s in samples], max(s[0] for s in samples), 0, len(kept))
    return found


class Edit:
    """A file of the copied corpus, edited and put back as it was."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.original = path.read_bytes()
        self.stat = path.stat()

    def append(self, text: str) -> None:
        self.path.write_bytes(self.original + text.encode())

    def prepend(self, text: str) -> None:
        self.path.write_bytes(text.encode() + self.original)

    def restore(self) -> None:
        self.path.write_bytes(self.original)
        os.utime(self.path, ns=(self.stat.st_atime_ns, self.stat.st_mtime_ns))


def _parsed_files(work: Path, files: Sequence[Path]) -> list[Path]:
    """The files that a run of their own parses with libcst: those the per-file pass hands to
    ``tree_pass`` (some rule's trigger in their code, or a summary wanted), as the project's
    settings decide. The parse itself is left out: only the decision is asked for."""
    from repro_lint import file_pass, tree_pass
    from repro_lint.config import load_config
    from repro_lint.diagnostics import FileResult
    from repro_lint.settings import Settings

    settings = Settings.from_config(load_config(work, None))
    real = tree_pass.lint_parsed
    parsed: list[Path] = []

    def noted(text: str, filename: str, *args: Any, **kwargs: Any) -> FileResult:
        parsed.append(Path(filename))
        return FileResult(filename, ())

    tree_pass.lint_parsed = noted
    try:
        for path in files:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            file_pass.lint_one(text, str(path), settings, path)
    finally:
        tree_pass.lint_parsed = real
    return parsed


def _read_whole(work: Path, parsed: Sequence[Path]) -> str:
    """The median-sized module whose summary a run defers (no rule parses it: ``parsed`` are
    those that are parsed) and whose whole summary the project pass of the run just made read
    (the run record says which): after an edit, its summary is made again for the pass."""
    from repro_lint import run_cache
    from repro_lint.config import load_config
    from repro_lint.engine import asked_whole

    here = os.getcwd()
    # (A run's record is found as the run found it: from where it ran, which is also the
    # project's root when no marker file says otherwise.)
    os.chdir(work)
    try:
        config = load_config(work, None)
        record = run_cache.load(config.root, run_cache.run_key(config, ["."], False, False), [])
    finally:
        os.chdir(here)
    assert record is not None and record.project is not None, "no run record to read"
    skipped = {os.path.realpath(path) for path in parsed}
    read = [
        Path(path)
        for path in asked_whole(record)
        if path not in skipped and Path(path).is_relative_to(work.resolve())
    ]
    assert read, "no module read whole by the project pass is left unparsed"
    chosen = sorted(read, key=lambda p: (p.stat().st_size, str(p)))[len(read) // 2]
    return str(chosen.relative_to(work.resolve()))


def _hook_entry() -> list[str]:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    match = re.search(r"^\s+entry:\s*(.+)$", text, flags=re.MULTILINE)
    assert match is not None, "no hook entry in .pre-commit-hooks.yaml"
    return match.group(1).split()


def render(
    args: argparse.Namespace,
    count: int,
    lines: int,
    size: int,
    times: dict[str, list[float]],
    slow: dict[str, list[float]],
    subset: tuple[int, int, int],
    memory: tuple[int, int, int, int] | None,
    imports: list[tuple[float, str]],
    findings: int,
    gate_s: tuple[float, float] | None,
    phase_s: float,
    big: str,
    typical: str,
    module: str,
    hook: list[str],
    lsp_times: dict[str, list[float]],
    edges: dict[str, Any],
) -> str:
    from repro_lint import __version__

    mib = 1024 * 1024
    out = [
        f"repro-lint {__version__} benchmark, {datetime.date.today().isoformat()}",
        f"machine: {cores()} cores ({cpu_model()}), {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}; load average at the end "
        f"{os.getloadavg()[0]:.1f}",
        f"corpus: {corpus_pins(args.corpus)}: {count} files, {lines:,} lines, {size / 1e6:.1f} MB",
        f"wall seconds, median of {args.runs} runs (min, max); rounds interleave the tools",
        "",
        f"{'scenario':<44} {'median':>9} {'min':>8} {'max':>8}  note",
    ]
    full = "cold" in times
    ruff_warm = median(times["ruff_warm"])
    warm_note = f"{median(times['warm']) / ruff_warm:.2f}x ruff warm"
    if full:
        floor = median(times["floor"])
        cold = median(times["cold"])
        out += [
            row("libcst parse floor (all files, all cores)", times["floor"], "in-process pool"),
            row("repro-lint cold (--no-cache)", times["cold"], f"{cold / floor:.2f}x floor"),
        ]
    out += [
        row("repro-lint warm (cache, nothing changed)", times["warm"], warm_note),
        row(
            "  the same, default output (code frames)",
            times["warm_frames"],
            f"{median(times['warm_frames']) / median(times['ruff_warm_frames']):.2f}x ruff's",
        ),
        row("after a comment appended to one file", times["touched_big"], f"biggest: {big}"),
        row("  the same, a median-sized file", times["touched_typical"], typical),
        row("  the same, a module read whole, unparsed", times["touched_module"], module),
        row("after a line inserted at the top of one", times["moved_big"], "biggest file"),
        row("  the same, a median-sized file", times["moved_typical"], "median-sized file"),
        row(
            "  the same, without the helper process",
            times["moved_typical_alone"],
            "REPRO_LINT_NO_HELPER=1",
        ),
        row("after a function added to one (re-analysed)", times["code_typical"], "median-sized"),
        row("one file as pre-commit runs it", times["precommit_big"], "biggest file"),
        row("  the same, a median-sized file", times["precommit_typical"], " ".join(hook)),
        row(
            "start-up: python with click and libcst",
            times["startup_libraries"],
            "no repro-lint code",
        ),
        row("  with what a one-file run imports", times["startup_ours"], "before any work"),
        row("  and all a parsed file's run imports", times["startup_parsed"], "libcst, rules"),
        "through the daemon (`repro-lint daemon start`; client start-up included):",
        row("  warm (nothing changed)", times["daemon_warm"]),
        row("  a comment appended, median-sized file", times["daemon_touched_typical"]),
        row("  a line inserted at the top, median-sized", times["daemon_moved_typical"]),
        row("  the same, the biggest file", times["daemon_moved_big"]),
        row("  pre-commit, median-sized file", times["daemon_precommit_typical"]),
    ]
    if full:
        out.append(row(f"ruff cold (--no-cache, --select {RUFF_RULES})", times["ruff_cold"]))
    out += [
        row("ruff warm (cache)", times["ruff_warm"]),
        row("  the same, --output-format full", times["ruff_warm_frames"]),
    ]
    change_ms = [1000 * t for t in lsp_times["change"]]
    action_ms = [1000 * t for t in lsp_times["action"]]
    out += [
        "",
        "language server over stdio (pygls client, VS Code's capabilities), milliseconds:",
        f"{'didChange -> diagnostics, 1,016-line script':<44} {median(change_ms):>9.1f} "
        f"{min(change_ms):>8.1f} {max(change_ms):>8.1f}  {len(change_ms)} edits",
        f"{'codeAction at a cursor, random lines':<44} {median(action_ms):>9.1f} "
        f"{min(action_ms):>8.1f} {max(action_ms):>8.1f}  {len(action_ms)} requests",
    ]
    if slow:
        sub_count, sub_lines, sub_size = subset
        repro_s, torchfix_s, fixit_s = (median(slow[k]) for k in ("repro", "torchfix", "fixit"))

        def rate(seconds: float) -> str:
            return f"{1000 * seconds / sub_count:.1f} ms/file; {seconds / repro_s:.1f}x repro-lint"

        out += [
            "",
            f"subset (every {args.stride}th file): {sub_count} files, {sub_lines:,} lines, "
            f"{sub_size / 1e6:.1f} MB; median of {args.slow_runs} runs",
            row("repro-lint cold on the subset", slow["repro"], rate(repro_s)),
            row("TorchFix 0.7.0 (default rules)", slow["torchfix"], rate(torchfix_s)),
            row("Fixit 2.2.1 lint (default rules)", slow["fixit"], rate(fixit_s)),
            f"estimate for the whole corpus at the subset's rate per byte: TorchFix "
            f"{torchfix_s * size / sub_size:.0f} s ({torchfix_s * size / sub_size / cold:.0f}x "
            f"repro-lint cold), Fixit {fixit_s * size / sub_size:.0f} s "
            f"({fixit_s * size / sub_size / cold:.0f}x)",
        ]

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    waits = [
        ("warm <= 3x ruff warm", median(times["warm"]) <= 3 * ruff_warm),
        (
            "one edited file <= 0.3 s (median-sized, line inserted)",
            median(times["moved_typical"]) <= 0.3,
        ),
        (
            "the same through the daemon",
            median(times["daemon_moved_typical"]) <= 0.3,
        ),
        ("pre-commit <= 0.4 s (median-sized)", median(times["precommit_typical"]) <= 0.4),
        ("didChange <= 150 ms", median(change_ms) <= 150),
        ("codeAction <= 30 ms", median(action_ms) <= 30),
    ]
    if not full or memory is None or gate_s is None:
        out += [
            "",
            "findings byte-identical (asserted): warm and after each edit as cold",
            "one-file run, `python -X importtime`, top-level imports by cumulative ms "
            "(torch not imported):",
            "  " + ", ".join(f"{name} {ms:.0f}" for ms, name in imports[:8]),
            "",
            "targets where users wait (issue 13; --waits-only: cold, memory and edge cases "
            "not measured): " + "; ".join(f"{name}: {verdict(ok)}" for name, ok in waits),
        ]
        return "\n".join(out)
    out += ["", *edge_rows(edges)]
    peak_sum, peak_one, peak_serial, peak_edit = memory
    out += [
        "",
        f"peak memory of a cold run: {peak_sum / mib:.0f} MiB summed over its processes "
        f"(largest single process {peak_one / mib:.0f} MiB); --jobs 1: "
        f"{peak_serial / mib:.0f} MiB; a warm run after a function added to the median-sized "
        f"file: {peak_edit / mib:.0f} MiB",
        "findings byte-identical (asserted): warm and after each edit as cold; --jobs 1 as "
        f"--jobs {cores()}; prefilter, docstring and comment gates off as on ({findings} findings; "
        f"in-process, {gate_s[0]:.1f} s with, {gate_s[1]:.1f} s without)",
        f"project phase (cross-file analysis): {phase_s:.2f} s of the {gate_s[0]:.1f} s "
        f"in-process run ({100 * phase_s / gate_s[0]:.1f}%)",
        "one-file run, `python -X importtime`, top-level imports by cumulative ms "
        "(torch not imported):",
        "  " + ", ".join(f"{name} {ms:.0f}" for ms, name in imports[:8]),
        "",
    ]

    targets = [
        ("cold <= 1.3x floor", cold <= 1.3 * floor),
        *waits,
        ("peak < 500 MB (cold)", peak_sum < 500e6),
        ("peak < 500 MB (after a code edit)", peak_edit < 500e6),
        *edge_targets(edges, max(peak_sum, peak_edit), cold),
    ]
    out.append(
        "targets (issues 13 and 18): " + "; ".join(f"{name}: {verdict(ok)}" for name, ok in targets)
    )
    if slow:
        out[-1] += (
            f"; >= 25x TorchFix: {verdict(torchfix_s >= 25 * repro_s)}"
            f"; >= 20x Fixit: {verdict(fixit_s >= 20 * repro_s)} (on the subset, issue 8)"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()
