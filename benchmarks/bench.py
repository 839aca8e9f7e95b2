"""Side-by-side timings on the benchmark corpus (issue 8's targets): medians of several runs.

Usage: python benchmarks/bench.py [--runs 5] [--slow-runs 5] [--stride 20] [--no-slow]
(run with the project's virtual environment; build the corpus first: bash benchmarks/corpus.sh)

Measures, in rounds so that every tool sees the same machine load:
- the libcst parse floor: every file read and parsed once with libcst.parse_module in a pool of
  one process per core (no interpreter start-up);
- repro-lint cold (--no-cache), warm (cache, nothing changed), after editing one file, one file
  as pre-commit runs it (its hook entry, start-up included); wall time of the real command;
- ruff cold (--no-cache) and warm (its cache), default rules;
- TorchFix and Fixit (default rules) on a documented subset (every STRIDE-th file): they take
  minutes on the whole corpus; per-file rates and the ratio to repro-lint cold on the same subset
  are reported, with a full-corpus estimate marked as one;
- peak memory of a cold run (resident memory of all its processes summed, sampled every 10 ms);
- `python -X importtime` of the one-file run (top entries; torch must not be imported);
- whether findings are identical with the prefilter on and off (one run each, in-process), and
  the time of the project phase within the in-process run with the prefilter.

The corpus is copied to a temporary directory outside the repository first (the repository's
.gitignore would hide it from every linter). Prints a table and saves it under
benchmarks/results/ with the date and the core count.
"""

from __future__ import annotations

import argparse
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "corpus" / "src"
TOOLS = HERE / "corpus" / "tools-venv"
RESULTS = HERE / "results"
TOOL_PINS = ("torchfix==0.7.0", "fixit==2.2.1", "ruff==0.17.6")
BIN = Path(sys.executable).parent
RUFF_RULES = "E4,E7,E9,F"
# Exit status 1 means "found something" for every tool measured here.
OK = (0, 1)


def cores() -> int:
    return len(os.sched_getaffinity(0))


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


def peak_memory(command: Sequence[str], cwd: Path) -> tuple[int, int]:
    """(peak summed RSS of the process tree, largest single-process peak RSS), in bytes."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
    stop.set()
    sampler.join()
    process.returncode = os.waitstatus_to_exitcode(rusage_status)
    if process.returncode not in OK:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode})")
    return peak, rusage.ru_maxrss * 1024


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


def ensure_tools() -> Path:
    if not (TOOLS / "bin" / "fixit").exists():
        subprocess.run([sys.executable, "-m", "venv", str(TOOLS)], check=True)
        subprocess.run(
            [str(TOOLS / "bin" / "python"), "-m", "pip", "install", "--quiet", *TOOL_PINS],
            check=True,
        )
    return TOOLS / "bin"


def corpus_pins() -> str:
    script = (HERE / "corpus.sh").read_text(encoding="utf-8")
    return ", ".join(re.findall(r'^\s+"(\S+==\S+)"$', script, flags=re.MULTILINE))


# -- prefilter check ----------------------------------------------------------------------------


def findings_json(work: Path, prefilter: bool) -> tuple[list[object], float, float]:
    """Findings of an in-process cold run, with the raw-text prefilter on or off; its wall
    time and the part of it spent in the project phase (cross-file analysis, including the
    summaries it loads for imported files that were not linted)."""
    from repro_lint import engine, file_pass
    from repro_lint.config import load_config
    from repro_lint.files import discover
    from repro_lint.settings import Settings

    real = file_pass.triggered
    real_project = engine.with_project
    phase = 0.0

    def project_phase(*args: Any, **kwargs: Any) -> Any:
        nonlocal phase
        start = time.perf_counter()
        try:
            return real_project(*args, **kwargs)
        finally:
            phase += time.perf_counter() - start

    if not prefilter:
        file_pass.triggered = lambda rule, text: True
    engine.with_project = project_phase
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
        engine.with_project = real_project
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
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit("no corpus: run `bash benchmarks/corpus.sh` first")
    tools = ensure_tools()
    repro = str(BIN / "repro-lint")
    with tempfile.TemporaryDirectory(prefix="repro-lint-bench-") as temp:
        work = Path(temp) / "corpus"
        shutil.copytree(CORPUS, work)
        files = python_files(work)
        subset_dir = Path(temp) / "subset"
        subset = files[:: args.stride]
        for path in subset:
            target = subset_dir / path.relative_to(work)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        report = run_all(args, tools, repro, work, files, subset_dir)
    print(report)
    RESULTS.mkdir(exist_ok=True)
    name = f"{datetime.date.today().isoformat()}-{cores()}cores.txt"
    (RESULTS / name).write_text(report + "\n", encoding="utf-8")
    print(f"\nsaved benchmarks/results/{name}")


def run_all(
    args: argparse.Namespace,
    tools: Path,
    repro: str,
    work: Path,
    files: Sequence[Path],
    subset_dir: Path,
) -> str:
    count, lines, size = describe(files)
    cold = [repro, ".", "--no-cache", "-q", "--output-format", "concise"]
    warm = [repro, ".", "-q", "--output-format", "concise"]
    # ruff's classic default rules (its defaults grew in later releases), concise output as for
    # repro-lint: with thousands of findings, rendering code frames would dominate its time.
    ruff = [str(tools / "ruff"), "check", "--select", RUFF_RULES, "--output-format", "concise"]
    ruff_cold = [*ruff, "--no-cache", "--quiet", "."]
    ruff_warm = [*ruff, "--quiet", "--cache-dir", str(work.parent / "ruff-cache"), "."]

    # The file to edit: the biggest one with a finding (the worst case for a re-lint).
    listing = subprocess.run(cold, cwd=work, capture_output=True, text=True).stdout
    flagged = sorted({line.split(":", 1)[0] for line in listing.splitlines() if ":" in line})
    edited = max(
        flagged or [str(files[0].relative_to(work))], key=lambda p: (work / p).stat().st_size
    )
    edited_path = work / edited
    original = edited_path.read_bytes()
    # A typical file for the pre-commit case: the median size among those the linter parses.
    parsed = [p for p in files if _mentions_trigger(p)]
    typical = str(
        sorted(parsed, key=lambda p: p.stat().st_size)[len(parsed) // 2].relative_to(work)
    )
    typical_path = work / typical
    typical_original = typical_path.read_bytes()
    hook = _hook_entry()

    subprocess.run(warm, cwd=work, capture_output=True)
    subprocess.run(ruff_warm, cwd=work, capture_output=True)
    times: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        times.setdefault(key, []).append(value)

    for index in range(args.runs):
        print(f"round {index + 1}/{args.runs}", file=sys.stderr)
        add("floor", parse_floor(files))
        add("cold", timed(cold, work))
        add("warm", timed(warm, work))
        edited_path.write_bytes(original + f"# edit {index}\n".encode())
        add("touched", timed(warm, work))
        edited_path.write_bytes(original + f"# pre-commit {index}\n".encode())
        add("precommit", timed([repro, *hook[1:], edited], work))
        edited_path.write_bytes(original)
        typical_path.write_bytes(typical_original + f"# pre-commit {index}\n".encode())
        add("precommit_typical", timed([repro, *hook[1:], typical], work))
        typical_path.write_bytes(typical_original)
        subprocess.run(warm, cwd=work, capture_output=True)
        add("ruff_cold", timed(ruff_cold, work))
        add("ruff_warm", timed(ruff_warm, work))

    peak_sum, peak_one = peak_memory(cold, work)
    peak_serial, _ = peak_memory([*cold, "--jobs", "1"], work)
    imports, torch_imported = import_times(
        ["-m", "repro_lint", *hook[1:], "--no-cache", edited], work
    )
    assert not torch_imported, "the one-file run imported torch"

    filtered, filtered_s, phase_s = findings_json(work, prefilter=True)
    unfiltered, unfiltered_s, _ = findings_json(work, prefilter=False)
    identical = json.dumps(filtered, sort_keys=True) == json.dumps(unfiltered, sort_keys=True)

    slow: dict[str, list[float]] = {}
    sub_count, sub_lines, sub_size = describe(python_files(subset_dir))
    if not args.no_slow:
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
        (peak_sum, peak_one, peak_serial), imports, identical, len(filtered),
        (filtered_s, unfiltered_s), phase_s, edited, typical, hook,
    )  # fmt: skip


def _mentions_trigger(path: Path) -> bool:
    """Whether the prefilter lets the file through to libcst (some rule's trigger occurs)."""
    from repro_lint.rules import ALL_RULES

    text = path.read_text(encoding="utf-8", errors="replace")
    return any(trigger in text for rule in ALL_RULES for trigger in rule.TRIGGERS)


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
    memory: tuple[int, int, int],
    imports: list[tuple[float, str]],
    identical: bool,
    findings: int,
    prefilter_s: tuple[float, float],
    phase_s: float,
    edited: str,
    typical: str,
    hook: list[str],
) -> str:
    from repro_lint import __version__

    mib = 1024 * 1024
    out = [
        f"repro-lint {__version__} benchmark, {datetime.date.today().isoformat()}",
        f"machine: {cores()} cores ({cpu_model()}), {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}",
        f"corpus: {corpus_pins()}: {count} files, {lines:,} lines, {size / 1e6:.1f} MB",
        f"wall seconds, median of {args.runs} runs (min, max); rounds interleave the tools",
        "",
        f"{'scenario':<44} {'median':>9} {'min':>8} {'max':>8}  note",
    ]
    floor = median(times["floor"])
    cold = median(times["cold"])
    ruff_warm = median(times["ruff_warm"])
    warm_note = f"{median(times['warm']) / ruff_warm:.2f}x ruff warm"
    out += [
        row("libcst parse floor (all files, all cores)", times["floor"], "in-process pool"),
        row("repro-lint cold (--no-cache)", times["cold"], f"{cold / floor:.2f}x floor"),
        row("repro-lint warm (cache, nothing changed)", times["warm"], warm_note),
        row("repro-lint after editing one file", times["touched"], f"edited {edited}"),
        row("repro-lint one file as pre-commit runs it", times["precommit"], " ".join(hook)),
        row("  the same, a median-sized file", times["precommit_typical"], typical),
        row(f"ruff cold (--no-cache, --select {RUFF_RULES})", times["ruff_cold"]),
        row("ruff warm (cache)", times["ruff_warm"]),
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
    peak_sum, peak_one, peak_serial = memory
    out += [
        "",
        f"peak memory of a cold run: {peak_sum / mib:.0f} MiB summed over its processes "
        f"(largest single process {peak_one / mib:.0f} MiB); --jobs 1: {peak_serial / mib:.0f} MiB",
        f"prefilter: findings identical with and without it: {'yes' if identical else 'NO'} "
        f"({findings} findings; in-process, {prefilter_s[0]:.1f} s with, "
        f"{prefilter_s[1]:.1f} s without)",
        f"project phase (cross-file analysis): {phase_s:.2f} s of the {prefilter_s[0]:.1f} s "
        f"in-process run ({100 * phase_s / prefilter_s[0]:.1f}%)",
        "one-file run, `python -X importtime`, top-level imports by cumulative ms "
        "(torch not imported):",
        "  " + ", ".join(f"{name} {ms:.0f}" for ms, name in imports[:8]),
        "",
        "targets (issue 8): cold <= 1.3x floor: "
        + ("met" if cold <= 1.3 * floor else "MISSED")
        + f"; warm <= 2x ruff warm: {'met' if median(times['warm']) <= 2 * ruff_warm else 'MISSED'}"
        + f"; edited file < 1 s: {'met' if median(times['touched']) < 1 else 'MISSED'}"
        + f"; pre-commit < 0.4 s: {'met' if median(times['precommit_typical']) < 0.4 else 'MISSED'}"
        + " (median-sized file)"
        + f"; peak < 500 MB: {'met' if peak_sum < 500e6 else 'MISSED'}"
        + f"; project phase < 10%: {'met' if phase_s < 0.1 * prefilter_s[0] else 'MISSED'}",
    ]
    if slow:
        out[-1] += (
            f"; >= 25x TorchFix: {'met' if torchfix_s >= 25 * repro_s else 'MISSED'}"
            f"; >= 20x Fixit: {'met' if fixit_s >= 20 * repro_s else 'MISSED'} (on the subset)"
        )
    return "\n".join(out)


if __name__ == "__main__":
    main()
