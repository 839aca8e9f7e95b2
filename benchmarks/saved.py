"""Where a benchmark script saves its report: ``benchmarks/results/``, named for the day, the
cores this process may use and what was measured, never over a report already there (a second
run on the same day, or a partial one, gets a name of its own: ``-2``, ``-3``, ...)."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def save(report: str, kind: str = "", directory: Path = RESULTS) -> Path:
    """Write ``report`` to a new file in ``directory`` and return its path: named
    ``<date>-<cores>cores[-kind].txt``, or with ``-2``, ``-3``, ... before ``.txt`` where
    that name is taken. The file is created exclusively: two runs saving at once get two."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{datetime.date.today().isoformat()}-{cores()}cores" + (f"-{kind}" if kind else "")
    number = 1
    while True:
        path = directory / (f"{stem}.txt" if number == 1 else f"{stem}-{number}.txt")
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(report if report.endswith("\n") else report + "\n")
        except FileExistsError:
            number += 1
            continue
        return path
