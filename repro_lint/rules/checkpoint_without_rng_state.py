"""RPL109: checkpoints saved and resumed without the RNG states."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from repro_lint.diagnostics import FixSafety
from repro_lint.program import Program, ProjectReport, ProjectRule, Unit
from repro_lint.rule import Invalid, Valid
from repro_lint.summary_format import RESUMABLE, strongest

Json = Any

WHAT = (
    "`torch.get_rng_state()`, `torch.cuda.get_rng_state_all()`, `np.random.get_state()` "
    "and `random.getstate()`"
)


def _facts(unit: Unit) -> Mapping[str, Json]:
    found: Mapping[str, Json] = unit.summary.get("ckpt") or {}
    return found


class CheckpointWithoutRngState(ProjectRule):
    """
    ## What it does
    Flags a checkpoint save (`torch.save`) in a program that resumes from its checkpoints
    but never saves the RNG states: neither `torch.get_rng_state()`,
    `torch.cuda.get_rng_state_all()`, `np.random.get_state()`, `random.getstate()` nor a
    generator's state is read anywhere in the project.

    A program resumes when it loads a checkpoint back to continue: it restores an
    optimizer's state (`optimizer.load_state_dict(checkpoint["optimizer"])`), reads an
    epoch or step counter back (`start_epoch = checkpoint["epoch"]`), hands an optimizer or
    scheduler by keyword to a project function that loads a checkpoint into whatever it is
    handed (`restart_from_checkpoint(path, model=model, optimizer=optimizer)`, whose loop
    calls `value.load_state_dict(checkpoint[key])`), or loads saved weights into a model and
    then trains on the same path (a final evaluation of the best weights after training is
    not a resume). A checkpoint is what a save writes: model,
    optimizer or scheduler state and counters. A checkpoint of model weights alone is
    reported only in a program that loads weights back to continue training and does not
    also save its whole training state (the model's weights with the optimizer or scheduler
    state or a counter, in one checkpoint): a program that does resumes from that one, which
    is reported, and its weights alone are an export (a backbone's weights saved after the
    last epoch). The finding sits on the `torch.save`; where a generic helper saves
    whatever it is given (`save_on_master(*args, **kwargs)`), on the call that hands it
    the checkpoint.

    ## Why is this bad?
    A resumed run restarts every generator from the seed (or from entropy), not from the
    state it had when the checkpoint was written: the data order, augmentations, dropout
    masks and noise after the restart differ from those of an uninterrupted run, so a run
    that was interrupted and resumed cannot be reproduced by one that was not (nor by
    another resume from a different point).

    ## Fix safety
    No automatic fix: the message names what to add. Save the states with the checkpoint
    (`"rng": {"torch": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all(),
    "numpy": np.random.get_state(), "random": random.getstate()}`, plus the state of any
    generator a sampler or loader owns) and restore them with `torch.set_rng_state`,
    `torch.cuda.set_rng_state_all`, `np.random.set_state` and `random.setstate` when
    resuming. Hugging Face Accelerate's `save_state`/`load_state` do this.

    ## Options
    None.

    ## Known limitations
    Saves through other APIs (`accelerator.save_state`, Lightning and Fabric checkpoints,
    which keep the states themselves) are not reported. Checkpoint content is recognised by
    its keys and `state_dict()` calls; a checkpoint assembled across functions, and
    registry-built objects whose methods save, may be missed.

    ## References
    - PyTorch notes on randomness; `torch.get_rng_state`, `torch.cuda.get_rng_state_all`
    - Accelerate: "Checkpointing" (`save_state` stores the RNG states)
    """

    CODE = "RPL109"
    MESSAGE = "Checkpoint saved without the RNG states: a resumed run diverges"
    FIX_TITLE = f"Save {WHAT} with the checkpoint and restore them when resuming"
    FIX_SAFETY = FixSafety.DISPLAY_ONLY
    # Files that save, load back or read RNG states take part, whether or not another
    # rule parses them.
    TRIGGERS = ("save", "load_state_dict", "get_rng_state", "getstate")
    INVALID = (
        Invalid(
            "import torch\n\n\ndef train(model, optimizer, loader, args):\n"
            "    start = 0\n    if args.resume:\n        checkpoint = torch.load(args.resume)\n"
            "        model.load_state_dict(checkpoint['model'])\n"
            "        optimizer.load_state_dict(checkpoint['optimizer'])\n"
            "        start = checkpoint['epoch'] + 1\n    for epoch in range(start, 10):\n"
            "        for x, y in loader:\n            loss = model(x, y)\n"
            "            loss.backward()\n            optimizer.step()\n"
            "        torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(),\n"
            "                    'epoch': epoch}, 'checkpoint.pth')\n",
            note="resumed through the optimizer and the epoch counter",
        ),
        Invalid(
            "import argparse\nimport torch\nfrom torch import nn\n\n"
            "parser = argparse.ArgumentParser()\nparser.add_argument('--epoch', type=int, default=0)\n"
            "opt = parser.parse_args()\nnet = nn.Linear(4, 1)\nif opt.epoch != 0:\n"
            "    net.load_state_dict(torch.load('net_%d.pth' % opt.epoch))\n"
            "optimizer = torch.optim.Adam(net.parameters())\n"
            "for epoch in range(opt.epoch, 100):\n    loss = net(torch.randn(8, 4)).sum()\n"
            "    loss.backward()\n    optimizer.step()\n"
            "    torch.save(net.state_dict(), 'net_%d.pth' % epoch)\n",
            note="weights loaded back to continue training from a given epoch",
        ),
        Invalid(
            "import torch\n\n\ndef save_checkpoint(state, filename):\n"
            "    torch.save(state, filename)\n\n\ndef main(model, optimizer, args):\n"
            "    if args.resume:\n        checkpoint = torch.load(args.resume)\n"
            "        optimizer.load_state_dict(checkpoint['optimizer'])\n"
            "    save_checkpoint({'state_dict': model.state_dict(),\n"
            "                     'optimizer': optimizer.state_dict()}, 'last.pth')\n",
            note="a checkpoint saver: reported on its torch.save",
        ),
        Invalid(
            "import torch\n\n\ndef save_on_master(*args, **kwargs):\n    torch.save(*args, **kwargs)\n\n\n"
            "def main(model, optimizer, args):\n    if args.resume:\n"
            "        checkpoint = torch.load(args.resume)\n"
            "        optimizer.load_state_dict(checkpoint['optimizer'])\n"
            "    save_on_master({'model': model.state_dict(), 'optimizer': optimizer.state_dict(),\n"
            "                    'epoch': 3}, 'checkpoint.pth')\n",
            note="a generic helper: reported on the call that hands it the checkpoint",
        ),
    )
    VALID = (
        Valid(
            "import random\nimport numpy as np\nimport torch\n\n\n"
            "def save(model, optimizer, epoch):\n"
            "    torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict(),\n"
            "                'epoch': epoch, 'rng': {'torch': torch.get_rng_state(),\n"
            "                'cuda': torch.cuda.get_rng_state_all(),\n"
            "                'numpy': np.random.get_state(), 'random': random.getstate()}},\n"
            "               'checkpoint.pth')\n\n\ndef resume(model, optimizer):\n"
            "    checkpoint = torch.load('checkpoint.pth')\n"
            "    optimizer.load_state_dict(checkpoint['optimizer'])\n"
            "    torch.set_rng_state(checkpoint['rng']['torch'])\n"
            "    return checkpoint['epoch'] + 1\n",
            note="the RNG states are saved and restored",
        ),
        Valid(
            "import torch\n\n\ndef train(model, optimizer, loader):\n    for x, y in loader:\n"
            "        model(x, y).backward()\n        optimizer.step()\n"
            "    torch.save(model.state_dict(), 'final.pth')\n",
            note="final weights, never loaded back to resume",
        ),
        Valid(
            "import torch\n\n\ndef train(model, optimizer, loader):\n    for x, y in loader:\n"
            "        model(x, y).backward()\n        optimizer.step()\n"
            "    torch.save(model.state_dict(), 'best.pth')\n"
            "    model.load_state_dict(torch.load('best.pth'))\n    return evaluate(model)\n",
            note="the best weights reloaded for a final evaluation, after training",
        ),
        Valid(
            "import argparse\nimport torch\n\n\ndef main(model, optimizer, args):\n"
            "    if args.load_model:\n        model.load_state_dict(torch.load('checkpoint.pt'))\n"
            "    if not args.load_model:\n        for batch in loader:\n"
            "            model(batch).backward()\n            optimizer.step()\n"
            "        torch.save(model.state_dict(), 'checkpoint.pt')\n",
            note="weights loaded only on the path that does not train",
        ),
        Valid(
            "import torch\n\n\ndef main(model, optimizer, args):\n"
            "    checkpoint = torch.load(args.resume)\n"
            "    optimizer.load_state_dict(checkpoint['optimizer'])\n"
            "    torch.save(coco_evaluator.eval, 'eval.pth')\n",
            note="evaluation results, not a checkpoint",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        entries = program.entries
        units = [unit for unit in program.units if not unit.deferred]
        if any(_facts(unit).get("rng") for unit in units):
            return
        resumes = {unit.index for unit in units if _facts(unit).get("resume")}
        # A call that hands an optimizer by keyword to a function restoring whatever it is
        # handed (``restart_from_checkpoint(path, optimizer=optimizer)``) resumes too.
        restorers = {
            (unit.index, str(key)) for unit in units for key in _facts(unit).get("restorers", ())
        }
        if restorers:
            for unit in units:
                for ref in _facts(unit).get("restores", ()):
                    target = program.referent(unit, ref)
                    if target is not None and (target[1].index, target[2]) in restorers:
                        resumes.add(unit.index)
        reloads = {
            unit.index
            for unit in units
            if any(event[0] == "l" for events in unit.functions().values() for event in events)
            and program.reloads_to_train(unit)
        }
        if not resumes and not reloads:
            return
        wrappers, handed = cls._wrappers(program, units)
        # The files that save a whole training state (the model's weights with the optimizer
        # or scheduler state or a counter).
        whole = {
            unit.filename
            for unit in units
            if any(kind == "full" for kind, _ in cls._saves(program, unit, wrappers, handed))
        }
        # The files of the programs that load checkpoints back to continue and save model
        # weights alone: a program that also saves its whole training state resumes from
        # that (reported), and its weights alone are an export.
        weights: set[str] = set()
        for entry in entries:
            reached = program.reached_files(entry)
            if whole.isdisjoint(reached) and any(
                program.units[i].filename in reached for i in resumes | reloads
            ):
                weights |= reached
        for unit in units:
            if not unit.linted:
                continue
            for kind, statement in cls._saves(program, unit, wrappers, handed):
                if cls._reported(kind, unit, weights):
                    yield cls._report(unit, statement)

    @staticmethod
    def _saves(
        program: Program,
        unit: Unit,
        wrappers: dict[tuple[int, str], str],
        handed: dict[tuple[int, str], str],
    ) -> Iterator[tuple[str | None, int]]:
        """A file's checkpoint saves, each with what it holds and its statement: its own
        (a function that saves what its callers hand it holds the strongest of that), and
        the calls that hand a checkpoint to a generic helper."""
        facts = _facts(unit)
        for key, statement, _row, saved in facts.get("saves", ()):
            if saved == "args":
                continue
            kind = handed.get((unit.index, str(key))) if saved == "param" else saved
            yield kind, int(statement)
        for _key, statement, _row, ref, kind in facts.get("calls", ()):
            target = program.referent(unit, ref)
            if target is None or target[0] != "function":
                continue
            if wrappers.get((target[1].index, target[2])) == "args":
                yield str(kind), int(statement)

    @staticmethod
    def _wrappers(
        program: Program, units: list[Unit]
    ) -> tuple[dict[tuple[int, str], str], dict[tuple[int, str], str]]:
        """The project functions that save what they are given (and how), and for each,
        the strongest checkpoint content its callers hand it."""
        wrappers = {
            (unit.index, str(key)): str(kind)
            for unit in units
            for key, kind in _facts(unit).get("wrappers", {}).items()
        }
        handed: dict[tuple[int, str], str] = {}
        for unit in units:
            for _key, _statement, _row, ref, kind in _facts(unit).get("calls", ()):
                target = program.referent(unit, ref)
                if target is None or target[0] != "function":
                    continue
                where = (target[1].index, target[2])
                if where in wrappers:
                    handed[where] = str(strongest((handed.get(where), str(kind))))
        return wrappers, handed

    @staticmethod
    def _reported(kind: str | None, unit: Unit, weights: set[str]) -> bool:
        """A resumable checkpoint is reported in a project that resumes; model weights
        alone only where a program that reaches them loads checkpoints back and saves no
        whole training state."""
        if kind in RESUMABLE:
            return True
        return kind == "weights" and unit.filename in weights

    @classmethod
    def _report(cls, unit: Unit, statement: int) -> ProjectReport:
        return ProjectReport(
            unit,
            statement,
            f"Checkpoint saved without the RNG states, so a resumed run diverges: also save "
            f"{WHAT} (and any sampler's generator state) and restore them on resume",
            fix_title=cls.FIX_TITLE,
            fix_safety=FixSafety.DISPLAY_ONLY,
        )
