"""One run of a script under the recorder, in a fresh process, and what it left: its exit
status, output and trace. Imports no torch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Trace:
    """A run's trace as the recorder wrote it (``recorder.py``)."""

    start: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    tail: list[dict[str, Any]] = field(default_factory=list)
    saves: list[dict[str, Any]] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)
    # Models and DataLoaders by label, to where they were built.
    owners: dict[str, Any] = field(default_factory=dict)
    end: dict[str, Any] | None = None
    # The op-level trace of a locating run.
    ops: list[dict[str, Any]] = field(default_factory=list)
    # Lines that could not be read (a run killed while writing one).
    damaged: int = 0

    @classmethod
    def read(cls, directory: Path) -> Trace:
        trace = cls()
        for item in _lines(directory / "trace.jsonl", trace):
            kind = item.get("type")
            if kind == "start":
                trace.start = item
            elif kind == "step":
                trace.steps.append(item)
            elif kind == "tail":
                trace.tail.extend(item.get("records", []))
            elif kind == "save":
                trace.saves.append(item)
            elif kind == "target":
                trace.targets.append(item)
            elif kind == "owner":
                trace.owners[str(item.get("label"))] = item.get("built")
            elif kind == "end":
                trace.end = item
        trace.ops = list(_lines(directory / "ops.jsonl", trace))
        return trace

    @property
    def files(self) -> list[str]:
        """The user's files the run imported, the script first."""
        return [str(f) for f in (self.end or {}).get("files", [])]

    @property
    def step_count(self) -> int:
        return len(self.steps)

    @property
    def unit(self) -> str | None:
        for step in self.steps:
            unit = step.get("unit")
            if isinstance(unit, str):
                return unit
        return None


def _lines(path: Path, trace: Trace) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            trace.damaged += 1
            continue
        if isinstance(item, dict):
            found.append(item)
    return found


@dataclass
class Run:
    """One run: how it ended, what it printed, and its trace."""

    number: int
    directory: Path
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    trace: Trace

    @property
    def stopped(self) -> str | None:
        """Why the recorder stopped the script early (None: it ran to its end)."""
        end = self.trace.end
        return end.get("stopped") if end else None

    @property
    def completed(self) -> bool:
        """Whether the script ran to its end (or to the step it was asked to stop at)."""
        return self.failure is None

    @property
    def failure(self) -> str | None:
        """How the run failed, in a line; None when it did not."""
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s"
        end = self.trace.end
        if end is not None and end.get("error"):
            return f"raised {end['error']}"
        status = end.get("exit_status") if end is not None else None
        if isinstance(status, str):
            return f"exited: {status}"
        if status not in (None, 0):
            return f"exited with status {status}"
        if self.returncode not in (0, None):
            return f"ended with status {self.returncode}: {self.last_error_line()}"
        if end is None:
            return "ended without finishing its trace (the process was killed or called os._exit)"
        return None

    def last_error_line(self) -> str:
        lines = [line for line in self.stderr.strip().splitlines() if line.strip()]
        return lines[-1].strip() if lines else "(no error output)"

    @property
    def steps(self) -> int:
        return self.trace.step_count

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.number,
            "returncode": self.returncode,
            "seconds": round(self.seconds, 3),
            "timed_out": self.timed_out,
            "steps": self.steps,
            "step_unit": self.trace.unit,
            "stopped": self.stopped,
            "failure": self.failure,
        }


def run_once(
    number: int,
    script: Path,
    args: Sequence[str],
    directory: Path,
    options: dict[str, Any],
    timeout: float | None,
) -> Run:
    """Run ``script`` once under the recorder; never raises for the script's sake."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "options.json").write_text(json.dumps(options), encoding="utf-8")
    stdout_path, stderr_path = directory / "stdout.txt", directory / "stderr.txt"
    command = [sys.executable, "-m", "repro_lint.verify.capture", str(directory), str(script)]
    started = time.monotonic()
    timed_out = False
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        # A session of its own: a timeout ends the script's DataLoader workers with it.
        process = subprocess.Popen(
            [*command, *args], stdout=stdout, stderr=stderr, start_new_session=True
        )
        try:
            returncode: int | None = process.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            returncode = None
        finally:
            if process.poll() is None:
                _kill(process)
    seconds = time.monotonic() - started
    return Run(
        number,
        directory,
        returncode,
        stdout_path.read_text(encoding="utf-8", errors="replace"),
        stderr_path.read_text(encoding="utf-8", errors="replace"),
        seconds,
        timed_out,
        Trace.read(directory),
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        process.kill()
    process.wait()
