"""The text report of ``--twice``: the verdict first, then where the runs part and why, with
the source line and the finding that addresses it, then every difference. Written to a stream
the CLI passes in; imports no torch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from repro_lint.verify.divergence import Place
from repro_lint.verify.linking import display, snippet
from repro_lint.verify.rerun import NOT_REPRODUCIBLE, REPRODUCIBLE, Outcome
from repro_lint.verify.runs import Run


def _steps(run: Run) -> str:
    unit = run.trace.unit
    plural = "" if run.steps == 1 else "s"
    if unit == "backward":
        return f"{run.steps} step{plural} (a backward() call each)"
    if unit == "optimizer":
        return f"{run.steps} optimizer step{plural}"
    return f"{run.steps} step{plural}"


def _agreed(outcome: Outcome) -> str:
    steps = outcome.comparison.counts.steps
    if not steps:
        return ""
    return f"; the {steps} step{'s' if steps != 1 else ''} before agree"


def _verdict_line(outcome: Outcome) -> str:
    first = outcome.runs[0]
    command = f"`{outcome.command}`"
    verdict = outcome.verdict
    if verdict == REPRODUCIBLE:
        if outcome.by_output:
            return (
                f"reproducible: two runs of {command} printed the same output (judged by printed "
                "output alone: no optimizer step, model or saved tensor to compare)"
            )
        stopped = f", stopped at step {first.steps}" if first.stopped else ""
        each = f"{_steps(first)} each{stopped}"
        return f"reproducible: two runs of {command} gave identical results ({each})"
    if verdict == NOT_REPRODUCIBLE:
        return f"not reproducible: two runs of {command} differ"
    failed = [run for run in outcome.runs if not run.completed]
    if len(failed) == 2 and all(run.timed_out for run in failed):
        return f"no verdict: both runs of {command} timed out{_agreed(outcome)}"
    if len(failed) == 2:
        return f"no verdict: {command} failed in both runs{_agreed(outcome)}"
    if failed:
        return f"no verdict: run {failed[0].number} of {command} timed out{_agreed(outcome)}"
    return (
        f"no verdict: two runs of {command} gave nothing to compare (no optimizer step, model, "
        "saved tensor or printed output)"
    )


def _relative(text: str, cwd: Path) -> str:
    """Text with the paths below ``cwd`` written relative to it."""
    return text.replace(f"{cwd}{os.sep}", "")


def _place(place: Place | None, cwd: Path) -> str:
    return f"{display(place.path, cwd)}:{place.line}" if place is not None else "(unknown)"


def _write_divergence(out: TextIO, outcome: Outcome, cwd: Path) -> None:
    divergence = outcome.divergence
    if divergence is None:
        return
    out.write(f"\nFirst divergence: {divergence.where}\n")
    if divergence.site is not None or divergence.module:
        where = _place(divergence.site, cwd) if divergence.site else ""
        if divergence.module:
            kind = divergence.module_type
            kind = f" ({kind})" if kind and kind != divergence.module else ""
            where += f"{' in ' if where else ''}`{divergence.module}`{kind}"
        if divergence.origin is not None and divergence.origin != divergence.site:
            where += f", built at {_place(divergence.origin, cwd)}"
        out.write(f"  at       {where}\n")
    out.write(f"  differs  {divergence.what}: {divergence.detail}\n")
    shown = divergence.site or divergence.origin
    found = snippet(shown) if shown is not None else None
    if found is not None:
        width = len(str(found.lines[-1][0]))
        for number, text, marked in found.lines:
            out.write(f"  {'>' if marked else ' '} {number:>{width}} | {text}".rstrip() + "\n")
    out.write(f"  cause    {divergence.cause.summary}\n")
    if divergence.note:
        out.write(f"  note     {divergence.note}\n")
    if not outcome.linked:
        if divergence.cause.codes or divergence.located:
            out.write(
                "  finding  none: no static finding explains it; the linter missed this hazard\n"
            )
        return
    for linked in outcome.linked:
        d = linked.diagnostic
        label = "finding " if linked.at_line else "related "
        out.write(
            f"  {label} {d.filename}:{d.location.row}:{d.location.column}: {d.code} "
            f"[{d.name}] {d.message}\n"
        )
        if linked.fix:
            out.write(f"           fix: {linked.fix}\n")


def write_twice(out: TextIO, outcome: Outcome, cwd: Path) -> None:
    """``--twice``: the verdict first, then where the runs part and why, then the details."""
    out.write(_verdict_line(outcome) + "\n")
    _write_divergence(out, outcome, cwd)
    if outcome.differences:
        out.write("\nDifferences:\n")
        for difference in outcome.differences:
            out.write(f"  - {_relative(difference.message, cwd)}\n")
    if outcome.output and not outcome.by_output:
        out.write("\nPrinted output (a note, not the verdict):\n")
        for found in outcome.output:
            out.write(f"  - {found.message}\n")
    if outcome.comparison.not_compared:
        out.write("\nNot compared:\n")
        for item in outcome.comparison.not_compared:
            out.write(f"  - {_relative(item, cwd)}\n")
    failures = [run for run in outcome.runs if not run.completed]
    notes = [f"run {run.number} {run.failure}" for run in failures] + outcome.notes
    notes = [_relative(note, cwd) for note in notes]
    if notes:
        out.write("\nNotes:\n")
        for note in notes:
            out.write(f"  - {note}\n")
    compared = "printed output only" if outcome.by_output else outcome.comparison.counts.text()
    out.write(f"\nCompared: {compared}.\n")
    runs = "; ".join(
        f"run {run.number}: {_steps(run)} in {run.seconds:.1f} s" for run in outcome.runs
    )
    if outcome.located:
        seconds = sum(run.seconds for run in outcome.located)
        step = outcome.divergence.step if outcome.divergence else "?"
        count = len(outcome.located)
        runs += f"; located in {seconds:.1f} s by {count} re-runs tracing step {step} op by op"
    out.write(f"Runs: {runs}.\n")
