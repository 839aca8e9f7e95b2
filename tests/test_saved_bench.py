"""benchmarks/saved.py: a benchmark's report is saved under a name of its own, never over one
already there (a run of the waits alone had replaced the day's full table)."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import saved


def test_reports_of_one_day_are_kept_side_by_side(tmp_path: Path) -> None:
    stem = f"{datetime.date.today().isoformat()}-{saved.cores()}cores"
    full = saved.save("full table", directory=tmp_path)
    again = saved.save("second full table\n", directory=tmp_path)
    waits = saved.save("waits only", "waits", directory=tmp_path)
    assert full.name == f"{stem}.txt"
    assert again.name == f"{stem}-2.txt"
    assert waits.name == f"{stem}-waits.txt"
    assert full.read_text(encoding="utf-8") == "full table\n"
    assert again.read_text(encoding="utf-8") == "second full table\n"
    assert waits.read_text(encoding="utf-8") == "waits only\n"
    assert saved.save("third", directory=tmp_path).name == f"{stem}-3.txt"
    assert full.read_text(encoding="utf-8") == "full table\n"
