"""``--twice``: run a script twice in fresh processes and compare what it prints and saves."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro_lint.verify import require_torch


@dataclass(frozen=True)
class Run:
    """One run: its exit status, output and the objects it saved (copies on disk)."""

    returncode: int
    stdout: str
    stderr: str
    saves: tuple[tuple[str, Path], ...]


@dataclass
class Comparison:
    """The verdict on two runs; ``differences`` names what differs, first difference first."""

    first: Run
    second: Run
    differences: list[str] = field(default_factory=list)

    @property
    def reproducible(self) -> bool:
        return not self.differences and self.first.returncode == self.second.returncode == 0


def run_once(script: Path, args: Sequence[str], work: Path, timeout: float | None) -> Run:
    capture = work / "capture"
    process = subprocess.run(
        [sys.executable, "-m", "repro_lint.verify.capture", str(capture), str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    saves: list[tuple[str, Path]] = []
    index = capture / "saves.json"
    if index.exists():
        for item in json.loads(index.read_text(encoding="utf-8")):
            saves.append((item["target"], capture / item["copy"]))
    return Run(process.returncode, process.stdout, process.stderr, tuple(saves))


def _first_line_difference(a: str, b: str) -> str | None:
    left, right = a.splitlines(), b.splitlines()
    for number, (x, y) in enumerate(zip(left, right, strict=False), start=1):
        if x != y:
            return f"output line {number} differs:\n  first:  {x}\n  second: {y}"
    if len(left) != len(right):
        return f"output has {len(left)} lines in the first run, {len(right)} in the second"
    return None


def _leaves(obj: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for key in obj:
            yield from _leaves(obj[key], f"{path}[{key!r}]")
    elif isinstance(obj, list | tuple):
        for index, item in enumerate(obj):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path or "(object)", obj


def _compare_saved(target: str, first: Path, second: Path) -> str | None:
    torch = require_torch()
    a = torch.load(first, map_location="cpu", weights_only=False)
    b = torch.load(second, map_location="cpu", weights_only=False)
    left, right = dict(_leaves(a)), dict(_leaves(b))
    if left.keys() != right.keys():
        missing = sorted(left.keys() ^ right.keys())[:3]
        return f"{target}: different entries ({', '.join(missing)})"
    for key, x in left.items():
        y = right[key]
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.dtype != y.dtype or x.shape != y.shape:
                return f"{target}{key}: dtype or shape differs"
            # Bitwise: NaNs with the same bits are equal, -0.0 and 0.0 are not. A 0-d tensor
            # (BatchNorm's step count) must be flattened before its bytes can be viewed.
            left_bytes = x.contiguous().reshape(-1).view(torch.uint8)
            if left_bytes.ne(y.contiguous().reshape(-1).view(torch.uint8)).any():
                diff = (
                    (x.double() - y.double()).abs().max().item()
                    if x.is_floating_point()
                    else float("nan")
                )
                return f"{target}{key}: tensors differ (max abs difference {diff:.3g})"
        elif x != y:
            return f"{target}{key}: {x!r} != {y!r}"
    return None


def run_twice(script: Path, args: Sequence[str], timeout: float | None = None) -> Comparison:
    """Run ``script`` twice with the same arguments; compare output and saved objects."""
    with tempfile.TemporaryDirectory(prefix="repro-lint-twice-") as tmp:
        first = run_once(script, args, Path(tmp) / "1", timeout)
        second = run_once(script, args, Path(tmp) / "2", timeout)
        comparison = Comparison(first, second)
        for number, run in enumerate((first, second), start=1):
            if run.returncode != 0:
                tail = run.stderr.strip().splitlines()[-1:] or ["(no error output)"]
                comparison.differences.append(f"run {number} failed ({run.returncode}): {tail[0]}")
        line = _first_line_difference(first.stdout, second.stdout)
        if line is not None:
            comparison.differences.append(line)
        if len(first.saves) != len(second.saves):
            comparison.differences.append("the runs saved a different number of objects")
        for (target, a), (_, b) in zip(first.saves, second.saves, strict=False):
            found = _compare_saved(target, a, b)
            if found is not None:
                comparison.differences.append(found)
        # The copies live in the temporary directory: keep only what was compared.
        return comparison
