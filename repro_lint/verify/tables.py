"""Plain-text reports of the verifier (verdicts per finding, the catalog on this device, a
traced run), written to a stream the CLI passes in."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from repro_lint.verify.crossref import CrossReference, Status, program_wide
from repro_lint.verify.findings import OpFinding
from repro_lint.verify.runner import Repeats, Result, Verdict
from repro_lint.verify.trace import Event, Site


def _table(out: TextIO, rows: Sequence[Sequence[str]]) -> None:
    """Left-aligned columns; the last column is free text and not padded."""
    if not rows:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")


def environment_line(env: Mapping[str, Any]) -> str:
    parts = [f"torch {env['torch']}", f"device {env['device']}"]
    if env.get("gpu"):
        parts.append(str(env["gpu"]))
    parts.append(f"CUDA {env['cuda'] or 'none (CPU build)'}")
    if env.get("cudnn"):
        parts.append(f"cuDNN {env['cudnn']}")
    if str(env["device"]).startswith("cpu"):
        parts.append(f"{env['cpu_threads']} CPU threads")
    return ", ".join(parts)


def _no_cuda_note(env: Mapping[str, Any]) -> str | None:
    if env.get("cuda_available"):
        return None
    return (
        "No CUDA device here: CUDA-only entries are not applicable and only what is "
        "nondeterministic on the CPU could be checked."
    )


def _repeats(repeats: Repeats | None) -> str:
    if repeats is None:
        return ""
    text = f"{repeats.differing}/{repeats.runs - 1} repeats differed"
    if repeats.max_abs_diff is not None:
        text += f" (max abs diff {repeats.max_abs_diff:.3g})"
    return text


def evidence(result: Result) -> str:
    """A result's evidence in a few words."""
    if result.verdict is Verdict.NOT_APPLICABLE:
        return result.note or ""
    parts = [f"default mode: {_repeats(result.default)}"]
    if result.caller is not None:
        parts.append(f"deterministic mode raises `{result.caller}`")
    elif result.deterministic is not None:
        parts.append(f"deterministic mode: {_repeats(result.deterministic)}")
    return "; ".join(parts)


def write_findings(
    out: TextIO,
    verified: Sequence[tuple[OpFinding, Result]],
    env: Mapping[str, Any],
    runs: int,
) -> None:
    """``repro-lint verify PATHS``: each finding with its entry's verdict on this device."""
    out.write(f"Verified on {environment_line(env)}; {runs} runs per probe and mode.\n")
    note = _no_cuda_note(env)
    if note:
        out.write(note + "\n")
    out.write("\n")
    rows = [
        (
            f"{f.diagnostic.filename}:{f.diagnostic.location.row}:{f.diagnostic.location.column}",
            f.diagnostic.code,
            result.entry.id,
            result.verdict.value,
            evidence(result),
        )
        for f, result in verified
    ]
    _table(out, rows)
    confirmed = sum(1 for _, result in verified if result.confirmed)
    total = len(verified)
    noun = "finding" if total == 1 else "findings"
    out.write(f"\n{confirmed} of {total} {noun} confirmed on {env['device']}.\n")


def write_catalog(
    out: TextIO, results: Sequence[Result], env: Mapping[str, Any], runs: int
) -> None:
    """``repro-lint verify --catalog``: every entry's verdict, and where the catalog and this
    device disagree."""
    out.write(f"Catalog verified on {environment_line(env)}; {runs} runs per probe and mode.\n")
    note = _no_cuda_note(env)
    if note:
        out.write(note + "\n")
    out.write("\n")
    rows = [
        (
            result.entry.id,
            result.verdict.value,
            result.agreement,
            evidence(result),
        )
        for result in results
    ]
    _table(out, rows)
    counts = Counter(result.verdict.value for result in results)
    out.write("\n" + ", ".join(f"{count} {verdict}" for verdict, count in counts.items()) + ".\n")
    differ = [r for r in results if r.agreement in ("disagrees", "probe-failed")]
    if not differ:
        out.write("The catalog agrees with this device wherever the runs could tell.\n")
        return
    out.write("Where the catalog and this device disagree:\n")
    for result in differ:
        expected = result.expected.value if result.expected else "unknown"
        out.write(
            f"- {result.entry.id}: catalog says {expected}, the runs show "
            f"{result.verdict.value} ({evidence(result)})\n"
        )


def _where(site: Site | None, cwd: Path) -> str:
    if site is None:
        return "(outside the user's files)"
    return f"{_display(site.path, cwd)}:{site.line}"


def _display(path: str, cwd: Path) -> str:
    try:
        return Path(os.path.relpath(path, cwd)).as_posix() if path.startswith(str(cwd)) else path
    except ValueError:
        return path


def _event_line(event: Event, cwd: Path) -> tuple[str, str, str]:
    built = f", module built at line {event.module_site.line}" if event.module_site else ""
    calls = f"{event.calls} call{'s' if event.calls != 1 else ''} on {event.device}{built}"
    if event.hazard_here:
        verdict = "nondeterministic here"
    elif event.hazard_on_cuda:
        verdict = "nondeterministic on CUDA"
    else:
        verdict = "safe"
    if program_wide(event):
        verdict += " (program-wide op: RPL202 covers it)"
    return (_where(event.site, cwd), event.entry.id, f"{calls}; {verdict}")


def write_run(out: TextIO, crossref: CrossReference, cwd: Path) -> None:
    """``repro-lint verify --run SCRIPT``: the static findings checked against the run."""
    trace = crossref.trace
    command = " ".join([_display(trace.script, cwd), *trace.args])
    ended = {
        None: "ran to its end",
        "max-steps": "stopped at --max-steps",
        "max-seconds": "stopped at --max-seconds",
    }[trace.stopped]
    out.write(
        f"\nTraced `{command}`: {trace.steps} optimizer step{'s' if trace.steps != 1 else ''} "
        f"in {trace.seconds:.1f} s; {ended}.\n"
    )
    if trace.error:
        out.write(f"The script failed: {trace.error}\n")
    out.write("\nStatic findings (RPL401/RPL402):\n")
    if not crossref.checked:
        out.write("  none\n")
    rows = [
        (
            f"  {c.finding.diagnostic.filename}:{c.finding.diagnostic.location.row}:"
            f"{c.finding.diagnostic.location.column}",
            c.finding.diagnostic.code,
            c.finding.entry.id,
            c.status.value,
            c.reason,
        )
        for c in crossref.checked
    ]
    _table(out, rows)
    out.write("\nHazards found only at run time:\n")
    if not crossref.runtime_only:
        out.write("  none\n")
    _table(
        out, [("  " + a, b, c) for a, b, c in (_event_line(e, cwd) for e in crossref.runtime_only)]
    )
    out.write("\nNondeterminism alerts (deterministic mode, warn-only):\n")
    if not trace.alerts:
        out.write("  none\n")
    for alert in trace.alerts:
        entries = ", ".join(entry.id for entry in alert.entries) or "not in the catalog"
        out.write(f"  {_where(alert.site, cwd)}  `{alert.caller}` x{alert.count} ({entries})\n")
    cuda = crossref.cuda_only()
    if cuda:
        out.write("\nThese ops ran off CUDA and would be nondeterministic on a CUDA device:\n")
        by_entry: dict[str, list[str]] = {}
        for event in cuda:
            by_entry.setdefault(event.entry.id, []).append(_where(event.site, cwd))
        for entry_id, places in by_entry.items():
            out.write(f"  {entry_id}: {', '.join(dict.fromkeys(places))}\n")
    confirmed = len(crossref.confirmed)
    never = sum(1 for c in crossref.checked if c.status is Status.NEVER)
    out.write(
        f"\n{confirmed} of {len(crossref.checked)} static findings confirmed, {never} never "
        f"executed; {len(crossref.runtime_only)} hazards found only at run time.\n"
    )
