"""Which catalog entry each RPL401/RPL402 finding is about.

Diagnostics carry no entry id (their JSON is pinned to ruff's keys), so the file is classified
again with the rules' own classifier and each finding is matched with the call that starts at
its position. Imports no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from repro_lint.catalog import ENTRIES, HAS_NO_DETERMINISTIC_KERNEL, NEEDS_DETERMINISTIC_MODE, Entry
from repro_lint.diagnostics import Diagnostic, FileResult
from repro_lint.files import module_name
from repro_lint.names import Names
from repro_lint.positions import Positions
from repro_lint.rules.nondeterministic_op import Finding, classify
from repro_lint.torch_versions import TorchVersion

# The rule codes whose findings name a catalog entry, and the behaviours each reports.
CODES = {"RPL401": HAS_NO_DETERMINISTIC_KERNEL, "RPL402": NEEDS_DETERMINISTIC_MODE}


@dataclass(frozen=True)
class OpFinding:
    """A static RPL401/RPL402 finding and the catalog entry it is about."""

    diagnostic: Diagnostic
    entry: Entry
    # The file's absolute path (run-time source lines are matched against it).
    path: Path

    @property
    def candidates(self) -> tuple[Entry, ...]:
        """The entry, then those it shadows: the same calls match them, on another device
        (``put_(accumulate=True)`` is one entry on CUDA and another on the CPU)."""
        return (self.entry, *(e for e in ENTRIES if e.shadowed_by == self.entry.id))


def _calls_by_position(
    source: str, path: Path | None, target: TorchVersion
) -> dict[tuple[int, int], Finding]:
    module = cst.parse_module(source)
    name, is_package = module_name(path) if path is not None else ("__main__", False)
    positions = Positions(module)
    found = {}
    for call, finding in classify(module, Names(module, name, is_package), target).items():
        start = positions.syntactic(call).start
        found[(start.line, start.column + 1)] = finding
    return found


def op_findings(
    results: Sequence[FileResult], paths: Mapping[str, Path], target: TorchVersion
) -> tuple[list[OpFinding], list[Diagnostic]]:
    """The RPL401/RPL402 findings of ``results`` with their entries, in report order, and
    those no entry could be matched to.

    ``paths`` maps each result's display name to its file; ``target`` is the torch version the
    rules judged for.
    """
    mapped: list[OpFinding] = []
    unmapped: list[Diagnostic] = []
    for result in results:
        wanted = [d for d in result.diagnostics if d.code in CODES]
        if not wanted or result.source is None:
            continue
        path = paths.get(result.filename)
        by_position = _calls_by_position(result.source, path, target)
        for diagnostic in wanted:
            finding = by_position.get((diagnostic.location.row, diagnostic.location.column))
            # The classifier must agree with the rule on the kind of hazard; anything else
            # means the position belongs to another call.
            if finding is None or finding.behaviour not in CODES[diagnostic.code]:
                unmapped.append(diagnostic)
                continue
            absolute = (path or Path(result.filename)).resolve()
            mapped.append(OpFinding(diagnostic, finding.entry, absolute))
    return sorted(mapped, key=lambda f: f.diagnostic.sort_key), unmapped
