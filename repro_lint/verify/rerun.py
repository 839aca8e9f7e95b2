"""``--twice``: run a script twice, each time in a fresh process under the recorder, and hold
the runs against each other. When they differ, run both again up to the first differing step
with an op-level trace, to say where they part and why. Imports no torch.

The verdict rests on tensors (losses, parameters, buffers, optimizer state, saved objects);
printed output is compared with its volatile fields masked, and a difference there is a note.
Only a script that gives nothing else to compare is judged by what it prints.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro_lint.verify.compare import Comparison, Difference, compare, measure
from repro_lint.verify.divergence import Divergence, Place, from_records, locate
from repro_lint.verify.linking import Linked, display, snippet
from repro_lint.verify.masking import OutputDifference, differences
from repro_lint.verify.runs import Run, run_once

REPRODUCIBLE = "reproducible"
NOT_REPRODUCIBLE = "not-reproducible"
NO_VERDICT = "no-verdict"
EXIT_STATUS = {REPRODUCIBLE: 0, NOT_REPRODUCIBLE: 1, NO_VERDICT: 2}
# Pairs of op-level re-runs tried before the divergence is reported from the step records.
_ATTEMPTS = 2


@dataclass(frozen=True)
class Settings:
    """How to run: where to stop, how long to wait, which files are the user's."""

    max_steps: int | None = None
    # Run 1 stops at the first step boundary after this long; run 2 at the same step.
    max_seconds: float | None = None
    # A run that takes longer is killed (no verdict, unless the runs already differ).
    timeout: float | None = None
    roots: tuple[Path, ...] = ()
    keep_bytes: int = 256 << 20
    # Locate the first divergence with the op-level re-runs.
    locate: bool = True

    def options(self, **changes: Any) -> dict[str, Any]:
        """The recorder's options for one run."""
        options: dict[str, Any] = {
            "max_steps": self.max_steps,
            "max_seconds": None,
            "locate": None,
            "locate_initialisation": None,
            "roots": [str(root) for root in self.roots],
            "keep_bytes": self.keep_bytes,
        }
        options.update(changes)
        return options


@dataclass
class Outcome:
    """Two runs held against each other, and where they part."""

    command: str
    runs: tuple[Run, Run]
    comparison: Comparison
    output: list[OutputDifference]
    located: tuple[Run, ...] = ()
    divergence: Divergence | None = None
    # Judged by printed output alone: nothing else could be compared.
    by_output: bool = False
    # Findings that address the divergence (filled in by the caller, which lints).
    linked: list[Linked] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def differences(self) -> list[Difference]:
        return self.comparison.differences

    @property
    def verdict(self) -> str:
        first, second = self.runs
        if self.differences:
            return NOT_REPRODUCIBLE
        if not (first.completed and second.completed):
            return NO_VERDICT
        if not self.comparison.counts.anything and not self.by_output:
            return NO_VERDICT
        return REPRODUCIBLE

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]

    def to_json(self, cwd: Path) -> dict[str, Any]:
        divergence = None
        if self.divergence is not None:
            divergence = self.divergence.to_json()
            shown = self.divergence.site or self.divergence.origin
            if shown is not None:
                found = snippet(shown)
                divergence["filename"] = display(shown.path, cwd)
                divergence["line"] = shown.line
                divergence["source"] = found.to_json() if found is not None else []
        return {
            "verdict": self.verdict,
            "exit_status": self.exit_status,
            "command": self.command,
            "judged_by_printed_output": self.by_output,
            "runs": [run.to_json() for run in self.runs],
            **self.comparison.to_json(),
            "printed_output": [
                {"stream": d.stream, "line": d.line, "first": d.first, "second": d.second}
                for d in self.output
            ],
            "divergence": divergence,
            "findings": [linked.to_json() for linked in self.linked],
            "linter_missed": self.divergence is not None
            and not self.linked
            and bool(self.divergence.cause.codes or self.divergence.located),
            "located_by": [run.to_json() for run in self.located],
            "notes": self.notes,
        }


class Workspace:
    """The files the script saves with ``torch.save``, put back between runs, so that each
    run starts from the files the first one found (a script that resumes from its own
    checkpoint would otherwise resume in the second run)."""

    def __init__(self, work: Path) -> None:
        self.aside = work / "aside"
        # Each target's content before the first run: a backup copy, or None (no file).
        self.initial: dict[str, Path | None] = {}
        self.count = 0

    def learn(self, run: Run) -> None:
        for target in run.trace.targets:
            path = str(target.get("path"))
            if path in self.initial:
                continue
            if not target.get("existed"):
                self.initial[path] = None
            elif target.get("backup"):
                kept = self._set_aside(run.directory / str(target["backup"]))
                if kept is not None:
                    self.initial[path] = kept

    def _set_aside(self, path: Path) -> Path | None:
        self.aside.mkdir(parents=True, exist_ok=True)
        self.count += 1
        destination = self.aside / f"{self.count:04d}"
        try:
            shutil.copy2(path, destination)
        except OSError:
            return None
        return destination

    def reset(self) -> dict[str, Path | None]:
        """Put each target back as it was before the first run; what each held until now."""
        held: dict[str, Path | None] = {}
        for path, initial in self.initial.items():
            target = Path(path)
            held[path] = self._set_aside(target) if target.is_file() else None
            try:
                if initial is None:
                    target.unlink(missing_ok=True)
                else:
                    shutil.copy2(initial, target)
            except OSError:
                continue
        return held

    def restore(self, held: dict[str, Path | None]) -> None:
        """Put back what ``reset`` found."""
        for path, content in held.items():
            target = Path(path)
            try:
                if content is None:
                    target.unlink(missing_ok=True)
                else:
                    shutil.copy2(content, target)
            except OSError:
                continue


Progress = Callable[[str], None]


def _ignore(message: str) -> None:
    return None


def run_twice(
    script: Path,
    args: Sequence[str],
    settings: Settings | None = None,
    progress: Progress = _ignore,
    meanwhile: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """Run ``script`` twice and compare; locate the first divergence when they differ.

    ``meanwhile`` is called with the outcome once the runs are compared, while the re-runs
    that locate the divergence go on in a thread of their own (the caller lints then: the
    re-runs are other processes, so the work overlaps)."""
    settings = settings or Settings()
    script = script.resolve()
    command = " ".join([script.name, *args])
    with tempfile.TemporaryDirectory(prefix="repro-lint-twice-") as temporary:
        work = Path(temporary)
        files = Workspace(work)
        progress("run 1 of 2")
        first = run_once(
            1,
            script,
            args,
            work / "1",
            settings.options(max_seconds=settings.max_seconds),
            settings.timeout,
        )
        files.learn(first)
        files.reset()
        # With --max-seconds, run 2 stops where run 1 did.
        stop = first.steps if first.stopped == "max-seconds" else settings.max_steps
        progress("run 2 of 2")
        second = run_once(
            2, script, args, work / "2", settings.options(max_steps=stop), settings.timeout
        )
        files.learn(second)
        outcome = _hold(command, first, second)
        if outcome.comparison.first is None or not settings.locate:
            measure(outcome.comparison)
            if meanwhile is not None:
                meanwhile(outcome)
            return outcome
        held = files.reset()
        try:
            with ThreadPoolExecutor(max_workers=1) as pool:
                located = pool.submit(
                    _locate, outcome, script, args, work, settings, files, progress
                )
                measure(outcome.comparison)
                if meanwhile is not None:
                    meanwhile(outcome)
                located.result()
        finally:
            files.restore(held)
        return outcome


def _hold(command: str, first: Run, second: Run) -> Outcome:
    comparison = compare(first, second)
    outcome = Outcome(command, (first, second), comparison, [])
    failures = [run for run in (first, second) if not run.completed]
    if len(failures) == 1 and not failures[0].timed_out:
        failed = failures[0]
        other = second if failed is first else first
        comparison.differences.insert(
            0,
            Difference(
                "run",
                f"run {failed.number} {failed.failure}, while run {other.number} completed",
            ),
        )
        outcome.notes.append(
            "The runs share the working directory: a file one run writes can change the next. "
            "Files saved with torch.save are put back between runs; others are not."
        )
    if first.completed and second.completed:
        outcome.output = differences(
            [("stdout", first.stdout, second.stdout), ("stderr", first.stderr, second.stderr)]
        )
        if not comparison.counts.anything and not comparison.differences:
            outcome.by_output = bool(first.stdout.strip() or second.stdout.strip())
            if outcome.by_output and outcome.output:
                comparison.differences.append(
                    Difference("output", "printed output differs: " + outcome.output[0].message)
                )
    for run in (first, second):
        for note in (run.trace.end or {}).get("notes", []):
            outcome.notes.append(f"run {run.number}: {note}")
        if run.trace.damaged:
            outcome.notes.append(f"run {run.number}: {run.trace.damaged} trace lines were damaged")
    return outcome


def _locate(
    outcome: Outcome,
    script: Path,
    args: Sequence[str],
    work: Path,
    settings: Settings,
    files: Workspace,
    progress: Progress,
) -> None:
    first = outcome.comparison.first
    assert first is not None
    step = first.step
    # A model's initialisation happened before it first ran, perhaps steps earlier: trace
    # from the start up to its first forward.
    initialisation = first.owner if first.phase == "initialisation" else None
    options = settings.options(
        locate=step,
        locate_initialisation=initialisation,
        max_steps=None if first.after_last else step,
    )
    slowest = max(run.seconds for run in outcome.runs)
    timeout = settings.timeout or max(60.0, 3 * slowest)
    owners = {
        label: place
        for label, site in outcome.runs[0].trace.owners.items()
        if (place := Place.read(site)) is not None
    }
    note = None
    # A pair that parted before this step (its first differing op here already has differing
    # inputs, and nothing in the step explains them): kept in case no pair parts in it.
    earlier: Divergence | None = None
    # A race may not recur in one pair of re-runs: a second pair is tried before giving up.
    for attempt in range(_ATTEMPTS):
        pair = []
        for number in (3 + 2 * attempt, 4 + 2 * attempt):
            progress(
                f"locating the divergence: re-run {number - 2} (op-level trace of step {step})"
            )
            run = run_once(number, script, args, work / str(number), options, timeout)
            files.learn(run)
            files.reset()
            pair.append(run)
        outcome.located = (*outcome.located, *pair)
        a, b = pair
        failed = [run for run in pair if not run.trace.ops and not run.completed]
        if failed:
            note = f"the op-level re-run {failed[0].number - 2} {failed[0].failure}"
            break
        found = locate(a.trace.ops, b.trace.ops, step, first.phase)
        if found is not None and first.after_last:
            found = dataclasses.replace(found, after_last=True)
        if found is not None and found.cause.kind == "unexplained" and attempt + 1 < _ATTEMPTS:
            # A race that struck an earlier step in this pair (only this step is traced):
            # another pair may part where the first runs did.
            earlier = earlier or found
            continue
        if found is not None:
            outcome.divergence = found
            return
        note = (
            f"the op-level re-runs did not part in step {step} ({attempt + 1} pairs): the "
            "difference did not recur"
        )
    outcome.divergence = earlier or from_records(first, owners, note)
