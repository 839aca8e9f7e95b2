"""Where a program has seeded torch on every path: code that runs only after its seed.

Where torch is seeded on every path to a line, ``torch.initial_seed()`` there returns the
program's seed (per process: ``seed + rank`` where the program seeds so), so a fix may seed
a generator with it where no seed variable is in scope, such as a loader built in a helper
that the seeded training function calls (see ``program_seed`` for the sources in scope).

``SeededPaths`` follows every entry point, and every worker it starts in a fresh
interpreter, into the project functions it calls, the way the profiles do, and keeps for
each function whether torch is seeded on every path into it. A line is seeded when its
function is only entered seeded, or when its function seeds torch earlier on every path to
it; code that no entry point reaches is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro_lint.program import Ctx, Profile, Program, Unit
from repro_lint.summary_format import MAIN, MODULE

Json = Any
_TORCH = "torch"
# Events that run other project code: calls, processes, references, imports.
_RUNS = frozenset({"c", "p", "f", "i"})


class SeededPaths:
    """Whether torch is seeded on every path to a line of the program (built on first use)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._entered: dict[tuple[int, str], bool] | None = None

    def _roots(self) -> list[tuple[Unit, str, bool]]:
        """Where programs start, each with whether torch is seeded there already."""
        program = self.program
        roots: list[tuple[Unit, str, bool]] = []
        for entry in program.entries:
            unit = entry.unit
            top = program.profile(unit, MODULE)
            roots.append((unit, MODULE, False))
            # The ``__main__`` block runs after the module's top-level code.
            roots.append((unit, MAIN, top.covered(_TORCH, ())))
            for spawn, _ in entry.workers:
                # A fresh interpreter imports the main module and the worker's module (their
                # top-level code runs) before it calls the worker.
                worker_unit = program.units[spawn.unit]
                before = Profile()
                before.absorb(top, ())
                if worker_unit is not unit:
                    before.absorb(program.profile(worker_unit, MODULE), ())
                roots.append((worker_unit, spawn.key, before.covered(_TORCH, ())))
        return roots

    def _build(self) -> dict[tuple[int, str], bool]:
        """Whether each function the programs reach is entered seeded on every path. A
        function is visited again only when a path into it turns out unseeded."""
        program = self.program
        entered: dict[tuple[int, str], bool] = {}
        todo = self._roots()
        while todo:
            unit, key, seeded = todo.pop()
            known = entered.get((unit.index, key))
            if known is not None and (not known or seeded):
                continue
            entered[(unit.index, key)] = seeded
            profile = Profile()
            contexts = unit.contexts(key)
            for index, event in enumerate(unit.functions().get(key, ())):
                if event[0] in _RUNS and not program.starts_fresh(unit, event):
                    here = seeded or profile.covered(_TORCH, contexts.get(index, ()))
                    for callee, callee_key in program.event_callees(unit, event):
                        todo.append((callee, callee_key, here))
                program.step(profile, unit, key, index)
        return entered

    def seeded(self, unit: Unit, key: str, row: int, context: Sequence[Sequence[int]]) -> bool:
        """Whether torch is seeded on every path to ``row`` of function ``key`` (``context``:
        the branches the line runs in there, as the summary writes them)."""
        if self._entered is None:
            self._entered = self._build()
        at_entry = self._entered.get((unit.index, key))
        if at_entry is None:
            return False
        if at_entry:
            return True
        where: Ctx = tuple((unit.index, int(branch), int(arm)) for branch, arm in context)
        profile = Profile()
        for index, event in enumerate(unit.functions().get(key, ())):
            if int(event[-1]) >= row:
                break
            self.program.step(profile, unit, key, index)
        return profile.covered(_TORCH, where)


def seeded_paths(program: Program) -> SeededPaths:
    """The program's seeded paths (built once, shared by the rules)."""
    return program.derived(SeededPaths)


__all__ = ["SeededPaths", "seeded_paths"]
