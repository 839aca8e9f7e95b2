"""Two runs' traces held against each other: the first step and phase where they part, and
every difference in what decides the result (losses, parameters and buffers, optimizer state,
saved objects, and the generators' states where the runs were stopped early).

Digests are compared here; torch is imported only to measure how far differing tensors are
apart, from the copies the runs kept.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro_lint.verify.runs import Run, Trace

PHASES = ("initialisation", "data", "forward", "backward", "optimizer")

# What each record kind is, in a report.
_KINDS = {
    "state": "parameter or buffer",
    "indices": "sampler indices",
    "batch": "batch",
    "input": "model input",
    "output": "model output",
    "loss": "loss",
    "gradient": "gradient",
    "parameter": "parameter",
}
_FAMILIES = {
    "torch": "torch's CPU generator",
    "random": "Python's `random`",
    "numpy": "numpy's global generator",
}


# A tensor kept by a run: the file of copies and the key in it.
Kept = tuple[Path | None, str]


@dataclass(frozen=True)
class Difference:
    """One thing that differs between the runs."""

    kind: str
    text: str
    step: int | None = None
    phase: str | None = None
    # The first differing tensor or entry, named after the text.
    name: str | None = None
    max_abs_diff: float | None = None
    # Where each run kept the first differing tensor, to measure ``max_abs_diff``.
    kept: tuple[Kept, Kept] | None = None

    @property
    def message(self) -> str:
        if self.kept is None or self.name is None:
            return self.text
        largest = self.max_abs_diff
        magnitude = f", max abs difference {largest:.3g}" if largest is not None else ""
        return f"{self.text} (first: {self.name}{magnitude})"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "step": self.step,
            "phase": self.phase,
            "name": self.name,
            "max_abs_diff": self.max_abs_diff,
        }


@dataclass(frozen=True)
class FirstDifference:
    """The earliest record that differs: in which step, which phase, and what."""

    step: int
    phase: str
    kind: str
    owner: str
    name: str
    first: dict[str, Any] | None
    second: dict[str, Any] | None
    # The runs recorded different things here (a different path through the program).
    structure: bool = False
    # After the last optimizer step (an evaluation, say).
    after_last: bool = False

    @property
    def what(self) -> str:
        kind = _KINDS.get(self.kind, self.kind)
        subject = " ".join(p for p in (self.owner, self.name) if p)
        if self.kind == "loss":
            values = [r.get("value") for r in (self.first, self.second) if r is not None]
            shown = " vs ".join(_number(v) for v in values if v is not None)
            return f"the loss ({shown})" if shown else "the loss"
        if self.kind in ("indices", "batch"):
            return f"the {kind} of {self.owner}"
        if self.kind in ("input", "output"):
            return f"the {kind} of {self.owner}"
        return f"{kind} `{self.name or self.owner}`" if subject else kind

    @property
    def where(self) -> str:
        if self.after_last:
            return "after the last step"
        if self.phase == "initialisation" and self.step == 1:
            return "before the first step (initialisation)"
        return f"step {self.step}, {self.phase}"

    @property
    def message(self) -> str:
        if self.structure:
            return f"{self.where}: the runs recorded different things ({self.what})"
        return f"{self.where}: {self.what} differs"

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "phase": self.phase,
            "kind": self.kind,
            "owner": self.owner,
            "name": self.name,
            "structure": self.structure,
            "after_last": self.after_last,
            "message": self.message,
        }


@dataclass
class Counts:
    """How much was compared."""

    steps: int = 0
    losses: int = 0
    batches: int = 0
    tensors: int = 0
    optimizer: int = 0
    saves: int = 0
    saved_tensors: int = 0
    generators: list[str] = field(default_factory=list)

    @property
    def anything(self) -> bool:
        return bool(self.steps or self.tensors or self.saved_tensors or self.losses)

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "losses": self.losses,
            "batches": self.batches,
            "parameters_and_buffers": self.tensors,
            "optimizer_state_tensors": self.optimizer,
            "saved_objects": self.saves,
            "saved_tensors": self.saved_tensors,
            "generators": self.generators,
        }

    def text(self) -> str:
        parts = []
        if self.steps:
            parts.append(f"{self.steps} step{_s(self.steps)}")
        if self.losses:
            parts.append(f"{self.losses} loss{'es' if self.losses != 1 else ''}")
        if self.batches:
            parts.append(f"{self.batches} batch{'es' if self.batches != 1 else ''}")
        if self.tensors:
            parts.append(f"{self.tensors} parameters and buffers")
        if self.optimizer:
            parts.append(f"{self.optimizer} optimizer state tensor{_s(self.optimizer)}")
        if self.saves:
            parts.append(
                f"{self.saves} saved object{_s(self.saves)} "
                f"({self.saved_tensors} tensor{_s(self.saved_tensors)})"
            )
        if self.generators:
            parts.append("the states of " + ", ".join(self.generators))
        return ", ".join(parts) or "nothing"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _number(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _key(record: dict[str, Any]) -> tuple[str, str, str]:
    return (str(record.get("kind")), str(record.get("owner")), str(record.get("name", "")))


def _first_in(
    step: int, first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]], after_last: bool
) -> FirstDifference | None:
    for phase in PHASES:
        left = [r for r in first if r.get("phase") == phase]
        right = [r for r in second if r.get("phase") == phase]
        for a, b in zip(left, right, strict=False):
            if _key(a) != _key(b):
                kind, owner, name = _key(a)
                return FirstDifference(step, phase, kind, owner, name, a, b, True, after_last)
            if a.get("digest") != b.get("digest") or a.get("shape") != b.get("shape"):
                kind, owner, name = _key(a)
                return FirstDifference(step, phase, kind, owner, name, a, b, False, after_last)
        if len(left) != len(right):
            longer = left if len(left) > len(right) else right
            kind, owner, name = _key(longer[min(len(left), len(right))])
            shorter = min(len(left), len(right))
            return FirstDifference(
                step,
                phase,
                kind,
                owner,
                name,
                left[shorter] if len(left) > shorter else None,
                right[shorter] if len(right) > shorter else None,
                True,
                after_last,
            )
    return None


def first_difference(first: Trace, second: Trace) -> FirstDifference | None:
    """The earliest differing record in the steps both runs finished (and after the last
    step, when both ran to their end with the same number of steps)."""
    for a, b in zip(first.steps, second.steps, strict=False):
        found = _first_in(int(a.get("step", 0)), a["records"], b["records"], after_last=False)
        if found is not None:
            return found
    ended = first.end is not None and second.end is not None
    if ended and first.step_count == second.step_count and (first.tail or second.tail):
        return _first_in(first.step_count + 1, first.tail, second.tail, after_last=True)
    return None


# -- the whole comparison ---------------------------------------------------------------------


@dataclass
class Comparison:
    """Everything that differs between two runs, and how much was compared."""

    differences: list[Difference] = field(default_factory=list)
    first: FirstDifference | None = None
    counts: Counts = field(default_factory=Counts)
    not_compared: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "first_difference": self.first.to_json() if self.first else None,
            "differences": [d.to_json() for d in self.differences],
            "compared": self.counts.to_json(),
            "not_compared": self.not_compared,
        }


class _Copies:
    """The tensor copies runs kept, loaded on demand (the only use of torch here)."""

    def __init__(self) -> None:
        self._files: dict[Path, dict[str, Any] | None] = {}

    def get(self, path: Path | None, key: str) -> Any:
        if path is None:
            return None
        if path not in self._files:
            try:
                import torch

                self._files[path] = torch.load(path, map_location="cpu", weights_only=True)
            except Exception:  # a copy that cannot be read only loses the magnitude
                self._files[path] = None
        found = self._files[path]
        return found.get(key) if found is not None else None

    def largest(self, a: Kept, b: Kept) -> float | None:
        """The largest absolute difference of two kept floating-point tensors."""
        left, right = self.get(*a), self.get(*b)
        if left is None or right is None or left.shape != right.shape:
            return None
        if not (left.is_floating_point() or left.is_complex()):
            return None
        import torch

        wide = torch.complex128 if left.is_complex() else torch.float64
        diff = (left.to(wide) - right.to(wide)).abs()
        finite = diff[torch.isfinite(diff)]
        return float(finite.max()) if finite.numel() else math.nan


def _copy(run: Run, name: object) -> Path | None:
    return run.directory / str(name) if isinstance(name, str) else None


def _losses(trace: Trace) -> list[list[dict[str, Any]]]:
    return [[r for r in step["records"] if r.get("kind") == "loss"] for step in trace.steps]


def _compare_losses(first: Run, second: Run, comparison: Comparison) -> None:
    left, right = _losses(first.trace), _losses(second.trace)
    compared = differing = 0
    first_step = None
    shown = ""
    for number, (a, b) in enumerate(zip(left, right, strict=False), start=1):
        for x, y in zip(a, b, strict=False):
            compared += 1
            if x.get("digest") != y.get("digest"):
                differing += 1
                if first_step is None:
                    first_step = number
                    shown = f"{_number(x.get('value'))} vs {_number(y.get('value'))}"
    comparison.counts.losses = compared
    if first_step is not None:
        comparison.differences.append(
            Difference(
                "loss",
                f"{differing} of {compared} losses differ, from step {first_step} ({shown})",
                step=first_step,
            )
        )


def _final(trace: Trace) -> dict[str, dict[str, Any]]:
    end = trace.end or {}
    return {r["key"]: r for r in end.get("final", []) if "key" in r}


def _compare_final(first: Run, second: Run, comparison: Comparison) -> None:
    left, right = _final(first.trace), _final(second.trace)
    if not left and not right:
        return
    counts = comparison.counts
    counts.tensors = sum(1 for r in left.values() if r.get("kind") != "optimizer")
    counts.optimizer = sum(1 for r in left.values() if r.get("kind") == "optimizer")
    when = (
        f"at step {first.steps}"
        if first.stopped in ("max-steps", "max-seconds")
        else "after the last step"
    )
    if left.keys() != right.keys():
        missing = sorted(left.keys() ^ right.keys())
        comparison.differences.append(
            Difference("final", f"the runs hold different tensors {when}: {missing[0]} ...")
        )
    for kind, label in (
        ("model", "parameters and buffers"),
        ("optimizer", "optimizer state tensors"),
        ("tensor", "trained tensors"),
    ):
        keys = [k for k, r in left.items() if r.get("kind") == kind and k in right]
        differing = [k for k in keys if _tensor_differs(left[k], right[k])]
        if not differing:
            continue
        key = differing[0]
        kept = (
            (_copy(first, (first.trace.end or {}).get("copy")), key),
            (_copy(second, (second.trace.end or {}).get("copy")), key),
        )
        comparison.differences.append(
            Difference(
                "optimizer" if kind == "optimizer" else "final",
                f"{len(differing)} of {len(keys)} {label} differ {when}",
                name=left[key]["name"],
                kept=kept,
            )
        )


def _tensor_differs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a.get("digest"), a.get("shape"), a.get("dtype")) != (
        b.get("digest"),
        b.get("shape"),
        b.get("dtype"),
    )


def _target_name(record: dict[str, Any]) -> str:
    return str(record.get("target", "(save)"))


def _compare_saves(first: Run, second: Run, comparison: Comparison) -> None:
    left, right = first.trace.saves, second.trace.saves
    counts = comparison.counts
    counts.saves = min(len(left), len(right))
    if len(left) != len(right) and first.completed and second.completed:
        comparison.differences.append(
            Difference("saved", f"the runs saved {len(left)} and {len(right)} objects")
        )
    for a, b in zip(left, right, strict=False):
        target = _target_name(a)
        if a.get("error") or b.get("error"):
            counts.saves -= 1
        for record, run in ((a, first), (b, second)):
            if record.get("not_compared"):
                reason = record["not_compared"]
                note = f"{_target_name(record)} (run {run.number}): not compared: {reason}"
                comparison.not_compared.append(note)
            if record.get("error"):
                comparison.not_compared.append(
                    f"{_target_name(record)} (run {run.number}): not compared: the save raised "
                    f"{record['error']}"
                )
        if "leaves" not in a or "leaves" not in b:
            continue
        leaves_a = {leaf["path"]: leaf for leaf in a["leaves"]}
        leaves_b = {leaf["path"]: leaf for leaf in b["leaves"]}
        counts.saved_tensors += sum(1 for leaf in leaves_a.values() if "dtype" in leaf)
        if leaves_a.keys() != leaves_b.keys():
            only = sorted(leaves_a.keys() ^ leaves_b.keys())
            comparison.differences.append(
                Difference("saved", f"{target}: the runs saved different entries ({only[0]} ...)")
            )
        differing = []
        for path, leaf in leaves_a.items():
            other = leaves_b.get(path)
            if other is None:
                continue
            if "dtype" in leaf or "dtype" in other:
                if _tensor_differs(leaf, other):
                    differing.append(path)
            elif leaf.get("value") != other.get("value"):
                differing.append(path)
        if not differing:
            continue
        path = differing[0]
        tensors = sum(1 for p in differing if "dtype" in leaves_a[p])
        what = f"{len(differing)} of {len(leaves_a)} entries differ"
        if tensors == len(differing):
            what = (
                f"{tensors} of {sum(1 for v in leaves_a.values() if 'dtype' in v)} tensors differ"
            )
        comparison.differences.append(
            Difference(
                "saved",
                f"{target} (save {int(a.get('index', 0)) + 1}): {what}",
                step=a.get("step"),
                name=path,
                kept=((_copy(first, a.get("copy")), path), (_copy(second, b.get("copy")), path)),
            )
        )


def _used(trace: Trace, family: str) -> bool:
    start = (trace.start or {}).get("rng", {})
    end = (trace.end or {}).get("rng", {})
    return family in end and start.get(family) != end.get(family)


def _compare_generators(first: Run, second: Run, comparison: Comparison) -> None:
    """The generators' states where the runs stopped early: the steps after would draw from
    them. A generator neither run touched is left out (it decides nothing seen so far)."""
    if first.trace.end is None or second.trace.end is None:
        return
    left = first.trace.end.get("rng", {})
    right = second.trace.end.get("rng", {})
    for family in sorted(left.keys() & right.keys()):
        if not (_used(first.trace, family) or _used(second.trace, family)):
            continue
        name = _FAMILIES.get(family, family)
        comparison.counts.generators.append(name)
        if left[family] != right[family]:
            comparison.differences.append(
                Difference(
                    "rng",
                    f"the state of {name} differs at step {first.steps}: "
                    "the steps that follow would draw differently",
                    step=first.steps,
                    name=family,
                )
            )


def _count(trace: Trace, kinds: Iterable[str]) -> int:
    wanted = set(kinds)
    return sum(1 for step in trace.steps for r in step["records"] if r.get("kind") in wanted)


def compare(first: Run, second: Run) -> Comparison:
    """Hold two runs against each other."""
    comparison = Comparison()
    comparison.first = first_difference(first.trace, second.trace)
    counts = comparison.counts
    counts.steps = min(first.steps, second.steps)
    counts.batches = _count(first.trace, ("batch", "input"))
    if comparison.first is not None:
        comparison.differences.append(
            Difference(
                "step",
                comparison.first.message,
                step=comparison.first.step,
                phase=comparison.first.phase,
                name=comparison.first.name or comparison.first.owner,
            )
        )
    _compare_losses(first, second, comparison)
    if first.trace.end is not None and second.trace.end is not None:
        if first.completed and second.completed and first.steps != second.steps:
            comparison.differences.append(
                Difference("steps", f"run 1 took {first.steps} steps, run 2 {second.steps}")
            )
        elif first.steps == second.steps:
            _compare_final(first, second, comparison)
        if first.stopped in ("max-steps", "max-seconds") and first.steps == second.steps:
            _compare_generators(first, second, comparison)
    _compare_saves(first, second, comparison)
    return comparison


def measure(comparison: Comparison) -> None:
    """Fill in how far apart the first differing tensor of each difference is, from the copies
    the runs kept (this imports torch: it is done apart from the comparison, so that it can
    run while the divergence is being located)."""
    copies = _Copies()
    comparison.differences = [
        dataclasses.replace(d, max_abs_diff=copies.largest(*d.kept)) if d.kept else d
        for d in comparison.differences
    ]
