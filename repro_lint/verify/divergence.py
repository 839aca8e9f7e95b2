"""Where two runs part, and why: the first op (or host generator draw) whose result differs in
the op-level traces of the first differing step, classified into a likely cause with the rule
codes that address it. Without an op-level difference, the step-level record says what it
can. Imports no torch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro_lint.verify.compare import PHASES, FirstDifference

_DATA_ORDER = ("RPL302", "RPL303", "RPL304", "RPL101", "RPL104", "RPL103")
_DATA_CONTENT = ("RPL301", "RPL305", "RPL306", "RPL101", "RPL102", "RPL103")
_KERNEL = ("RPL401", "RPL402", "RPL202")
_INITIALISATION = ("RPL101", "RPL104", "RPL103")
_RANDOM = ("RPL102", "RPL107", "RPL101", "RPL104", "RPL103")
_FAMILY = {"numpy": "numpy", "random": "Python's `random`"}


@dataclass(frozen=True)
class Cause:
    """A likely cause, with the rules that address it (most specific first)."""

    kind: str
    summary: str
    codes: tuple[str, ...]
    # Catalog entries of a nondeterministic kernel.
    entries: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "summary": self.summary,
            "codes": list(self.codes),
            "entries": list(self.entries),
        }


@dataclass(frozen=True)
class Place:
    """Lines of a file (absolute path)."""

    path: str
    line: int
    end_line: int

    def holds(self, path: str, row: int) -> bool:
        return self.path == path and self.line <= row <= self.end_line

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "end_line": self.end_line}

    @classmethod
    def read(cls, data: object) -> Place | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(str(data["path"]), int(data["line"]), int(data["end_line"]))
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Divergence:
    """The earliest difference between the runs, located as precisely as the traces allow."""

    step: int
    phase: str
    cause: Cause
    # What differs, in words ("the output of `aten.index_put_`").
    what: str
    # How the op's inputs and outputs compare ("same inputs, different output").
    detail: str
    op: str | None = None
    module: str | None = None
    module_type: str | None = None
    # The innermost line in the user's files, and where the module or DataLoader involved
    # was built.
    site: Place | None = None
    origin: Place | None = None
    # Found by the op-level re-runs (False: only the step-level records say where).
    located: bool = False
    note: str | None = None
    after_last: bool = False

    @property
    def places(self) -> tuple[Place, ...]:
        return tuple(p for p in (self.site, self.origin) if p is not None)

    @property
    def where(self) -> str:
        if self.after_last:
            return "after the last step"
        if self.phase == "initialisation" and self.step == 1:
            return "before the first step, in initialisation"
        return f"step {self.step}, {self.phase}"

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "phase": self.phase,
            "after_last_step": self.after_last,
            "what": self.what,
            "detail": self.detail,
            "op": self.op,
            "module": self.module,
            "module_type": self.module_type,
            "site": self.site.to_json() if self.site else None,
            "origin": self.origin.to_json() if self.origin else None,
            "located": self.located,
            "note": self.note,
            "cause": self.cause.to_json(),
        }


def _op_name(event: dict[str, Any]) -> str:
    name = str(event.get("op", "?"))
    # "aten.index_put_.default" -> "aten.index_put_"
    return name.removesuffix(".default")


def _cause_of_draw(event: dict[str, Any]) -> Cause:
    family = _FAMILY.get(str(event.get("family")), str(event.get("family")))
    own = bool(event.get("generator"))
    source = f"a {event.get('owner')} object" if own else f"{family}'s global generator"
    phase = event.get("phase")
    if event.get("state") is None:
        return Cause(
            "random-draw",
            f"{source} draws from the operating system's entropy: no seed makes it repeatable",
            ("RPL103", "RPL102"),
        )
    codes = ("RPL102", "RPL301", "RPL101") if own else ("RPL101", "RPL103", "RPL301", "RPL102")
    if phase == "initialisation":
        return Cause(
            "initialisation",
            f"initialisation draws from {source}, which is not seeded (or seeded late)",
            (*codes, "RPL104"),
        )
    if phase == "data":
        return Cause(
            "data-content",
            f"data loading (augmentation or sampling in the dataset) draws from {source}, "
            "which is not seeded",
            (*codes, "RPL306"),
        )
    return Cause(
        "random-draw",
        f"{source} draws differently: it is not seeded, or its seed is lost in a worker or "
        "spawned process",
        (*codes, "RPL107"),
    )


def _cause_of_random_op(event: dict[str, Any]) -> Cause:
    phase = event.get("phase")
    if event.get("generator"):
        return Cause(
            "random-draw",
            "a random op draws from a `torch.Generator` seeded from a varying source (`seed()`, "
            "the time, or torch's unseeded default generator)",
            ("RPL103", "RPL102", "RPL302", "RPL303"),
        )
    if phase == "initialisation":
        return Cause(
            "initialisation",
            "the parameters differ before the first step: initialisation draws from torch's "
            "default generator, which is unseeded or seeded late",
            _INITIALISATION,
        )
    if phase == "data":
        return Cause(
            "data-order",
            "data loading draws from torch's default generator (shuffling, sampling, "
            "random_split, random batches), which is unseeded or seeded late",
            _DATA_ORDER,
        )
    return Cause(
        "random-draw",
        "a random op draws differently: torch's default generator is unseeded, seeded late, or "
        "its seed is lost in a worker or spawned process",
        _RANDOM,
    )


def _cause_of_op(first: dict[str, Any], second: dict[str, Any]) -> tuple[Cause, str]:
    """The likely cause of a differing op, and how its inputs and outputs compare."""
    same_inputs = first.get("inputs") == second.get("inputs")
    same_outputs = first.get("outputs") == second.get("outputs")
    name = _op_name(first)
    if first.get("reads_uninitialised") and same_inputs:
        cause = Cause(
            "uninitialised-memory",
            f"`{name}` reads memory that was never written (from `torch.empty` or the like): "
            "its contents are whatever the allocator returned",
            (),
        )
        return cause, "reads uninitialised memory"
    if first.get("external") and same_inputs:
        cause = Cause(
            "data-content",
            f"`{name}` builds a tensor from memory filled outside the traced process (a "
            "DataLoader worker's batch, a file): its contents differ, so the data does",
            _DATA_CONTENT,
        )
        return cause, "its data come from outside the traced ops"
    if same_inputs:
        if first.get("random"):
            return _cause_of_random_op(first), "a random op: same inputs, different draw"
        entries = tuple(str(e) for e in first.get("entries", ()))
        if entries:
            summary = (
                f"the same inputs give a different output: `{name}` is nondeterministic on this "
                f"device (catalog: {', '.join(entries)})"
            )
        else:
            summary = (
                f"the same inputs give a different output: `{name}` is nondeterministic here, "
                "and the catalog does not list it"
            )
        return Cause("nondeterministic-kernel", summary, _KERNEL, entries), (
            "same inputs, different output"
        )
    detail = "its inputs already differ" + ("" if same_outputs else ", and so does its output")
    if name in ("aten.lift_fresh", "aten.lift", "aten._to_copy") or first.get("phase") in (
        "data",
        "initialisation",
    ):
        cause = Cause(
            "data-content",
            "the data the script reads differs before any traced op or generator produced it: "
            "file order, a DataLoader worker's generator, Python's hash order, or the time",
            _DATA_CONTENT,
        )
        return cause, detail
    cause = Cause(
        "unexplained",
        "the op's inputs differ, yet no earlier op or generator draw in this step did: state "
        "carried over from before the step, or computed outside torch",
        (),
    )
    return cause, detail


def _user_called(event: dict[str, Any]) -> bool:
    return bool(event.get("user_called"))


def _differing_draws(
    first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Host generator draws whose generator's state differs, the likeliest explanation first:
    the user's own draws before library ones, and of each the latest (the nearest to the op
    they explain)."""
    draws_a = [e for e in first if e.get("kind") == "draw"]
    draws_b = [e for e in second if e.get("kind") == "draw"]
    differing = [
        a
        for a, b in zip(draws_a, draws_b, strict=False)
        if a.get("op") != b.get("op") or a.get("state") != b.get("state") or a.get("state") is None
    ]
    latest_first = list(reversed(differing))
    return sorted(latest_first, key=lambda e: not _user_called(e))


def locate(
    first: Sequence[dict[str, Any]],
    second: Sequence[dict[str, Any]],
    step: int,
    phase: str = "initialisation",
) -> Divergence | None:
    """The first op whose result differs in two op-level traces of the same step's window;
    when its inputs came from outside torch, the host generator draw that explains them.

    Ops anchor the search: a draw that never reaches a tensor (a temporary file's random
    name) decides nothing, so draws only explain an op whose inputs differ. Events of phases
    before ``phase`` are skipped: the step-level records showed that what they produced
    agrees (weights drawn at random and then set to zeros)."""
    if phase in PHASES:
        earlier = set(PHASES[: PHASES.index(phase)])
        first = [e for e in first if e.get("phase") not in earlier]
        second = [e for e in second if e.get("phase") not in earlier]
    ops_a = [(i, e) for i, e in enumerate(first) if e.get("kind") == "op"]
    ops_b = [(i, e) for i, e in enumerate(second) if e.get("kind") == "op"]
    for (i, a), (j, b) in zip(ops_a, ops_b, strict=False):
        if a.get("op") != b.get("op"):
            cause = Cause(
                "control-flow",
                f"the runs took different paths: run 1 ran `{_op_name(a)}` where run 2 ran "
                f"`{_op_name(b)}` (a decision on a differing value, or on set or dict order)",
                ("RPL106",),
            )
            return _explained(first[:i], second[:j], step) or _divergence(
                a, step, cause, "the runs took different paths", "control flow"
            )
        if a.get("inputs") == b.get("inputs") and a.get("outputs") == b.get("outputs"):
            continue
        cause, detail = _cause_of_op(a, b)
        if a.get("inputs") != b.get("inputs"):
            explained = _explained(first[:i], second[:j], step)
            if explained is not None:
                return explained
        return _divergence(a, step, cause, f"the output of `{_op_name(a)}`", detail)
    if len(ops_a) != len(ops_b) and ops_a and ops_b:
        shorter = min(len(ops_a), len(ops_b))
        _, event = (ops_a if len(ops_a) > shorter else ops_b)[shorter]
        cause = Cause(
            "control-flow", "one run did more work in this step than the other", ("RPL106",)
        )
        return _divergence(event, step, cause, "the runs took different paths", "control flow")
    return _explained(first, second, step)


def _explained(
    first: Sequence[dict[str, Any]], second: Sequence[dict[str, Any]], step: int
) -> Divergence | None:
    """The divergence a host generator draw explains, if one differs."""
    draws = _differing_draws(first, second)
    if not draws:
        return None
    draw = draws[0]
    cause = _cause_of_draw(draw)
    return _divergence(
        draw, step, cause, f"the draw `{draw.get('op')}`", "the generator's state differs before it"
    )


def _divergence(
    event: dict[str, Any], step: int, cause: Cause, what: str, detail: str
) -> Divergence:
    return Divergence(
        step=step,
        phase=str(event.get("phase", "?")),
        cause=cause,
        what=what,
        detail=detail,
        op=_op_name(event),
        module=event.get("module"),
        module_type=event.get("module_type"),
        site=Place.read(event.get("site")),
        origin=Place.read(event.get("origin")),
        located=True,
    )


def from_records(first: FirstDifference, origins: dict[str, Place], note: str | None) -> Divergence:
    """What the step-level records alone say (the op-level re-runs did not locate it)."""
    phase, kind = first.phase, first.kind
    if phase == "initialisation":
        cause = Cause(
            "initialisation",
            "the parameters differ before the first step: initialisation is unseeded or "
            "seeded late",
            _INITIALISATION,
        )
    elif kind == "indices":
        cause = Cause(
            "data-order",
            "the sampler draws different indices: data order or sampling is unseeded",
            _DATA_ORDER,
        )
    elif kind == "batch":
        cause = Cause(
            "data-content",
            "the DataLoader returns different data: augmentation, a worker's generator or file "
            "order",
            _DATA_CONTENT,
        )
    elif phase == "data":
        cause = Cause(
            "data-order",
            "the first batch differs: data order, sampling or augmentation",
            (*_DATA_ORDER, *_DATA_CONTENT),
        )
    elif phase in ("forward", "backward", "optimizer"):
        cause = Cause(
            "nondeterministic-kernel",
            f"the {phase} pass gives a different result for the same inputs and parameters: a "
            "nondeterministic kernel (or an unseeded random op such as dropout)",
            (*_KERNEL, "RPL102", "RPL101"),
        )
    else:
        cause = Cause("unexplained", "the runs differ here", ())
    origin = origins.get(first.owner)
    return Divergence(
        step=first.step,
        phase=phase,
        cause=cause,
        what=first.what,
        detail="step-level record",
        module=first.owner or None,
        origin=origin,
        located=False,
        note=note,
        after_last=first.after_last,
    )
