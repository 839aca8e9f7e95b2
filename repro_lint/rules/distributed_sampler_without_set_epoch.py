"""RPL304: a shuffling DistributedSampler whose ``set_epoch`` is never called."""

from __future__ import annotations

from collections.abc import Iterator

from repro_lint.datasets import data, flags, span
from repro_lint.diagnostics import FixSafety
from repro_lint.program import Program, ProjectReport, ProjectRule, Unit
from repro_lint.rule import Invalid, Valid

# Flags of a file that calls ``set_epoch``, or builds a Lightning Trainer (which calls it).
SETS_EPOCH = frozenset({"set_epoch", "trainer"})


def _imports(program: Program, unit: Unit) -> Iterator[Unit]:
    """The project modules ``unit`` imports, anywhere in it."""
    for events in unit.functions().values():
        for event in events:
            if event[0] != "i":
                continue
            for name in event[1]:
                found = program.module(str(name), unit)
                if found is not None and found is not unit:
                    yield found


class DistributedSamplerWithoutSetEpoch(ProjectRule):
    """
    ## What it does
    Flags `DistributedSampler(...)` (any alias) that shuffles (`shuffle` absent, `True`, or a
    value that may be true) when nothing in the project calls `set_epoch`.

    ## When it does not fire
    - `shuffle=False`: the order is fixed by design.
    - Any file of the run, or a project module it imports, calls `.set_epoch(...)` on
      anything (the sampler is usually reached through another name:
      `loader.sampler.set_epoch(epoch)`), or builds a Lightning `Trainer`, whose fit loop
      calls `set_epoch` on the samplers of its loaders.
    - The sampler feeds evaluation only: it is the `sampler=` of loaders that are used only
      for `len()` and iterated only under `torch.no_grad()` or `torch.inference_mode()`
      (a `with` block, or a decorated function), where they are built or in a function of
      the same file they are passed to. Their order changes what an evaluation reads, never
      what training learns.

    ## Why is this bad?
    `DistributedSampler` shuffles with its own generator seeded with `seed + epoch`, and the
    epoch only changes through `sampler.set_epoch(epoch)`. Without that call every epoch
    visits the samples in exactly the same order on every rank (pytorch/pytorch#31771):
    runs repeat, but training quietly loses the reshuffling it was written with. The
    sampler ignores the DataLoader's `generator=`.

    ## Fix safety
    Display-only: the fix names the call to add at the start of each epoch, before the loader
    is iterated; where the epoch loop is cannot be known statically.

    ## Known limitations
    Project-wide on purpose: one `set_epoch` call anywhere silences every sampler, even one
    it is not called on. A loader handed to a function of another module, or kept in an
    attribute, is not followed: its sampler is reported as if it fed training. Calls in
    project files that are neither linted nor imported by a linted file are not seen.
    Accelerate and the Hugging Face `Trainer` set the epoch of the samplers they create
    themselves; a sampler built by hand and handed to them is reported.

    ## References
    - PyTorch: `torch.utils.data.distributed.DistributedSampler` (the `set_epoch` note)
    - pytorch/pytorch#31771
    """

    CODE = "RPL304"
    MESSAGE = "`DistributedSampler` without `set_epoch` calls: every epoch has the same order"
    FIX_TITLE = "Call `sampler.set_epoch(epoch)` at the start of every epoch"
    FIX_SAFETY = FixSafety.DISPLAY_ONLY
    TRIGGERS = ("DistributedSampler", "set_epoch")
    INVALID = (
        Invalid(
            "from torch.utils.data import DataLoader\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n\n"
            "def train(dataset, epochs):\n    sampler = DistributedSampler(dataset)\n"
            "    loader = DataLoader(dataset, sampler=sampler)\n    for epoch in range(epochs):\n"
            "        for batch in loader:\n            step(batch)\n",
        ),
    )
    VALID = (
        Valid(
            "from torch.utils.data import DataLoader\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n\n"
            "def train(dataset, epochs):\n    sampler = DistributedSampler(dataset)\n"
            "    loader = DataLoader(dataset, sampler=sampler)\n    for epoch in range(epochs):\n"
            "        sampler.set_epoch(epoch)\n        for batch in loader:\n            step(batch)\n",
        ),
        Valid(
            "from torch.utils.data.distributed import DistributedSampler\n"
            "sampler = DistributedSampler(dataset, shuffle=False)\n",
            note="no shuffling: the order is fixed by design",
        ),
        Valid(
            "import lightning as L\nfrom torch.utils.data.distributed import DistributedSampler\n"
            "sampler = DistributedSampler(dataset)\ntrainer = L.Trainer()\n",
            note="Lightning's fit loop calls `set_epoch`",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        found = [
            (unit, record)
            for unit in program.units
            if unit.linted
            for record in data(unit).get("distributed", ())
            if record.get("shuffle", {"v": True}).get("v", True) not in (False, None)
            # A sampler that feeds evaluation only: its order changes no training.
            and not record.get("eval")
        ]
        if not found:
            return
        # The linted files, and the project modules their entry points reach (loaded now).
        reached = {name for entry in program.entries for name in program.reached_files(entry)}
        if any(
            flags(unit) & SETS_EPOCH
            for unit in program.units
            if unit.linted or unit.filename in reached
        ):
            return
        # The project modules the files with samplers import (pre-commit passes a changed
        # library file alone, which no entry point reaches).
        for unit in {unit.index: unit for unit, _ in found}.values():
            if any(flags(imported) & SETS_EPOCH for imported in _imports(program, unit)):
                return
        for unit, record in found:
            name = record.get("name") or "sampler"
            start, end = span(record)
            yield ProjectReport(
                unit,
                int(record["s"]),
                cls.MESSAGE,
                fix_title=f"Call `{name}.set_epoch(epoch)` at the start of every epoch",
                fix_safety=FixSafety.DISPLAY_ONLY,
                span=(start, end),
            )
