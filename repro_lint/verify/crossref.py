"""Static RPL401/RPL402 findings against what a traced run executed: confirmed,
executed-but-safe-here, never-executed, and the hazards only the run found."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro_lint.catalog import Phase, Scope
from repro_lint.verify.findings import OpFinding
from repro_lint.verify.trace import Alert, Event, Trace


class Status(enum.Enum):
    # The op ran on a device where the catalog calls it nondeterministic (and, for a
    # backward-phase op, was differentiated), or PyTorch's alert fired for it.
    CONFIRMED = "confirmed"
    # The op ran, but not in a way that is nondeterministic here.
    SAFE_HERE = "executed-but-safe-here"
    NEVER = "never-executed"


@dataclass(frozen=True)
class Checked:
    """One static finding and the run's evidence about it."""

    finding: OpFinding
    status: Status
    events: tuple[Event, ...]
    alerts: tuple[Alert, ...]

    @property
    def reason(self) -> str:
        """The evidence in words."""
        if self.status is Status.NEVER:
            return "the run never reached this call"
        calls = sum(event.calls for event in self.events)
        devices = ", ".join(sorted({event.device for event in self.events}))
        ran = f"ran {calls} time{'s' if calls != 1 else ''} on {devices}"
        if self.alerts:
            return f"{ran}; PyTorch's alert `{self.alerts[0].caller}` fired"
        if self.status is Status.CONFIRMED:
            return f"{ran}, where it is nondeterministic"
        return f"{ran}; {why_safe(self.events)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "reason": self.reason,
            "events": [event.to_json() for event in self.events],
            "alerts": [alert.to_json() for alert in self.alerts],
        }


def why_safe(events: Sequence[Event]) -> str:
    """Why ops that ran were not nondeterministic here."""
    if all(e.entry.phase is Phase.BACKWARD and not e.differentiated for e in events):
        return "never differentiated, so its backward (the hazard) never ran"
    if any(event.hazard_on_cuda for event in events):
        return "nondeterministic only on CUDA"
    return "deterministic in this torch release"


@dataclass(frozen=True)
class CrossReference:
    """A traced run held against the static findings of the same files."""

    trace: Trace
    checked: tuple[Checked, ...]
    # Hazardous ops (here or on CUDA) at places no static finding points to.
    runtime_only: tuple[Event, ...]

    @property
    def confirmed(self) -> tuple[Checked, ...]:
        return tuple(c for c in self.checked if c.status is Status.CONFIRMED)

    @property
    def hazard_here(self) -> bool:
        """Whether the run showed a nondeterminism hazard on the device it used."""
        return (
            bool(self.confirmed)
            or any(event.hazard_here for event in self.runtime_only)
            or bool(self.trace.alerts)
        )

    def cuda_only(self) -> list[Event]:
        """Ops that ran (not on CUDA) and would be nondeterministic on a CUDA device."""
        return [
            event
            for event in self.trace.events
            if event.hazard_on_cuda and not event.device.startswith("cuda")
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            **self.trace.to_json(),
            "findings": [
                {
                    # Absolute, as in the check command's JSON (and ruff's).
                    "filename": str(c.finding.path),
                    "location": c.finding.diagnostic.location.to_json(),
                    "code": c.finding.diagnostic.code,
                    "entry": c.finding.entry.id,
                    **c.to_json(),
                }
                for c in self.checked
            ],
            "runtime_only": [event.to_json() for event in self.runtime_only],
            "would_be_nondeterministic_on_cuda": [event.to_json() for event in self.cuda_only()],
        }


def _at(finding: OpFinding, event: Event) -> bool:
    path, row = str(finding.path), finding.diagnostic.location.row
    return any(
        site is not None and site.holds(path, row) for site in (event.site, event.module_site)
    )


def cross_reference(trace: Trace, findings: Sequence[OpFinding]) -> CrossReference:
    """Match each finding with the ops that ran at its call (or in the module built there)."""
    checked = []
    matched: set[int] = set()
    for finding in findings:
        events = tuple(e for e in trace.events if _at(finding, e))
        matched.update(id(e) for e in events)
        entries = {e.entry.id for e in events}
        alerts = tuple(a for a in trace.alerts if entries & {entry.id for entry in a.entries})
        if not events:
            status = Status.NEVER
        elif alerts or any(event.hazard_here for event in events):
            status = Status.CONFIRMED
        else:
            status = Status.SAFE_HERE
        checked.append(Checked(finding, status, events, alerts))
    runtime_only = tuple(
        e for e in trace.events if id(e) not in matched and (e.hazard_here or e.hazard_on_cuda)
    )
    return CrossReference(trace, tuple(checked), runtime_only)


def program_wide(event: Event) -> bool:
    """Ops the rules do not report per call (RPL202 covers convolutions, indexing, ...)."""
    return event.entry.scope is not Scope.CALL
