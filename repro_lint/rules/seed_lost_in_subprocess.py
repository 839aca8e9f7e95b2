"""RPL107: a worker started in a fresh interpreter never seeds, while its parent does."""

from __future__ import annotations

import re
from collections.abc import Iterator

from repro_lint.diagnostics import Edit, FixSafety
from repro_lint.fixes import INDENT
from repro_lint.program import EntryPoint, Profile, Program, ProjectReport, ProjectRule, Spawn
from repro_lint.randomness import FAMILIES
from repro_lint.rule import Invalid, Valid

_DETERMINISTIC = "torch.backends.cudnn.deterministic"


class SeedLostInSubprocess(ProjectRule):
    """
    ## What it does
    Flags `torch.multiprocessing.spawn(fn, ...)`, `start_processes(fn, ...)` and
    `Process(target=fn)` on a spawn or forkserver context (`get_context("spawn")`, or after
    `set_start_method("spawn")`) when the parent process seeds but `fn`'s path, in its fresh
    interpreter, never seeds a generator it consumes.

    ## Why is this bad?
    A spawned process starts a new interpreter: it re-imports the main module (without its
    `__main__` block) and the worker's module, and every generator starts from OS entropy.
    The parent's `torch.manual_seed` does not reach it, so each worker initialises and
    shuffles differently in every run, although the script looks seeded. Seeds in the
    top-level code of those modules do run in the child and count.

    ## Fix safety
    Safe: seed calls for the generators the worker consumes are inserted at the start of
    `fn` (after its docstring and `global`/`nonlocal` declarations), also when `fn` lives
    in another file. The seed is the program's own when the worker receives it (the parent
    seeds with `args.seed` and `fn` takes `args`), else the configured `seed`. Where the
    parent seeds only when given a seed (under `if args.seed is not None:`), the worker's
    seeds go under the same test, so a run the user left unseeded stays so, with
    `cudnn.deterministic = True` where the parent sets it there (the flag is per process
    too); under another condition the configured seed is the fallback, and a user's seed is
    never overridden. The seed is offset by the process index when that is an int on every
    path: `torch.multiprocessing.spawn` passes it first (for `Process`, when the first
    parameter is named like a rank) and nothing calls `fn` directly with another first
    argument; workers then draw different but repeatable streams (`rank` alone when the
    seed is 0).

    ## Options
    `seed` (default 0) is the base value inserted.

    ## Known limitations
    Forked processes (the default `Process` start method on Linux before Python 3.14) inherit
    the parent's seeded state and are not reported. Workers started through pools or
    executors are not followed.

    ## References
    - PyTorch: "Multiprocessing best practices"; `torch.multiprocessing.spawn`
    - Python: `multiprocessing` "Contexts and start methods"
    """

    CODE = "RPL107"
    MESSAGE = "A spawned worker never seeds: the parent's seeds do not reach it"
    FIX_TITLE = "Seed at the start of the worker function"
    FIX_SAFETY = FixSafety.SAFE
    INVALID = (
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank, size):\n"
            "    torch.cuda.manual_seed(rank)\n    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n    mp.spawn(worker, args=(2,), nprocs=2)\n",
            fixed="import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank, size):\n"
            "    torch.manual_seed(rank)\n    torch.cuda.manual_seed(rank)\n"
            "    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n    mp.spawn(worker, args=(2,), nprocs=2)\n",
            note="seeding only CUDA in the worker leaves its CPU generator unseeded",
        ),
        Invalid(
            'import multiprocessing\nimport random\n\n\ndef work(queue):\n    """Sample."""\n'
            "    queue.put(random.random())\n\n\n"
            "if __name__ == '__main__':\n    random.seed(0)\n"
            "    ctx = multiprocessing.get_context('spawn')\n"
            "    ctx.Process(target=work, args=(q,)).start()\n",
            fixed='import multiprocessing\nimport random\n\n\ndef work(queue):\n    """Sample."""\n'
            "    random.seed(0)\n    queue.put(random.random())\n\n\n"
            "if __name__ == '__main__':\n    random.seed(0)\n"
            "    ctx = multiprocessing.get_context('spawn')\n"
            "    ctx.Process(target=work, args=(q,)).start()\n",
        ),
        Invalid(
            "import multiprocessing as mp\nimport numpy as np\n\n\ndef work(rank):\n"
            "    np.random.rand(3)\n\n\nif __name__ == '__main__':\n    np.random.seed(0)\n"
            "    mp.set_start_method('spawn')\n    p = mp.Process(target=work, args=(0,))\n",
            fixed="import multiprocessing as mp\nimport numpy as np\n\n\ndef work(rank):\n"
            "    np.random.seed(rank)\n    np.random.rand(3)\n\n\n"
            "if __name__ == '__main__':\n    np.random.seed(0)\n"
            "    mp.set_start_method('spawn')\n    p = mp.Process(target=work, args=(0,))\n",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\n\n\nclass Launcher:\n"
            "    def worker(self, rank):\n        torch.randn(3)\n\n    def run(self):\n"
            "        mp.spawn(self.worker, nprocs=2)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n    Launcher().run()\n",
            fixed="import torch\nimport torch.multiprocessing as mp\n\n\nclass Launcher:\n"
            "    def worker(self, rank):\n        torch.manual_seed(rank)\n        torch.randn(3)\n\n"
            "    def run(self):\n        mp.spawn(self.worker, nprocs=2)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n    Launcher().run()\n",
            note="a method as the worker: the rank follows `self`",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\n\nbest = 0.0\n\n\n"
            'def main_worker(gpu, args):\n    """One process per GPU."""\n    global best\n'
            "    model = torch.nn.Linear(2, 2)\n\n\ndef main(args):\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "    if args.multiprocessing:\n        mp.spawn(main_worker, nprocs=2, args=(args,))\n"
            "    else:\n        main_worker(args.gpu, args)\n\n\n"
            "if __name__ == '__main__':\n    main(parse_args())\n",
            fixed="import torch\nimport torch.multiprocessing as mp\n\nbest = 0.0\n\n\n"
            'def main_worker(gpu, args):\n    """One process per GPU."""\n    global best\n'
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "    model = torch.nn.Linear(2, 2)\n\n\ndef main(args):\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "    if args.multiprocessing:\n        mp.spawn(main_worker, nprocs=2, args=(args,))\n"
            "    else:\n        main_worker(args.gpu, args)\n\n\n"
            "if __name__ == '__main__':\n    main(parse_args())\n",
            note="the worker seeds with the user's seed (it gets `args`) when the parent does, "
            "after its docstring and `global`; no rank offset, since a direct call may pass "
            "`gpu=None`",
        ),
        Invalid(
            "import torch\nimport torch.backends.cudnn as cudnn\nimport torch.multiprocessing as mp\n"
            "\n\ndef worker(gpu, args):\n    model = torch.nn.Conv2d(3, 8, 3)\n\n\n"
            "def main(args):\n    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "        cudnn.deterministic = True\n    mp.spawn(worker, nprocs=2, args=(args,))\n\n\n"
            "if __name__ == '__main__':\n    main(parse_args())\n",
            fixed="import torch\nimport torch.backends.cudnn as cudnn\nimport torch.multiprocessing as mp\n"
            "\n\ndef worker(gpu, args):\n    if args.seed is not None:\n"
            "        torch.manual_seed(args.seed + gpu)\n        cudnn.deterministic = True\n"
            "    model = torch.nn.Conv2d(3, 8, 3)\n\n\n"
            "def main(args):\n    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "        cudnn.deterministic = True\n    mp.spawn(worker, nprocs=2, args=(args,))\n\n\n"
            "if __name__ == '__main__':\n    main(parse_args())\n",
            note="the cuDNN flag the parent sets with its seed is lost in the spawned worker too",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank, args):\n"
            "    model = torch.nn.Linear(2, 2)\n\n\ndef main(args):\n"
            "    if args.deterministic:\n        torch.manual_seed(args.seed)\n"
            "    mp.spawn(worker, nprocs=2, args=(args,))\n\n\n"
            "if __name__ == '__main__':\n    main(parse_args())\n",
            fixed="import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank, args):\n"
            "    torch.manual_seed((args.seed if args.seed is not None else 0) + rank)\n"
            "    model = torch.nn.Linear(2, 2)\n\n\ndef main(args):\n"
            "    if args.deterministic:\n        torch.manual_seed(args.seed)\n"
            "    mp.spawn(worker, nprocs=2, args=(args,))\n\n\n"
            "if __name__ == '__main__':\n    main(parse_args())\n",
            note="seeded under another condition: the configured seed is the fallback",
        ),
    )
    VALID = (
        Valid(
            "import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank):\n"
            "    torch.manual_seed(rank)\n    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n    mp.spawn(worker, nprocs=2)\n",
        ),
        Valid(
            "import torch\nimport torch.multiprocessing as mp\n\ntorch.manual_seed(0)\n\n\n"
            "def worker(rank):\n    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    mp.spawn(worker, nprocs=2)\n",
            note="top-level code of the main module runs again in the child",
        ),
        Valid(
            "import lightning as L\nimport torch\nimport torch.multiprocessing as mp\n\n\n"
            "def setup(rank):\n    L.seed_everything(rank)\n\n\ndef worker(rank):\n"
            "    setup(rank)\n    torch.randn(3)\n\n\n"
            "if __name__ == '__main__':\n    L.seed_everything(0)\n    mp.spawn(worker, nprocs=2)\n",
            note="the worker seeds through a helper",
        ),
        Valid(
            "import multiprocessing\nimport torch\n\n\ndef work():\n    torch.randn(3)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    multiprocessing.Process(target=work).start()\n",
            note="a forked child inherits the seeded state",
        ),
        Valid(
            "import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank):\n"
            "    model = torch.nn.Linear(2, 2)\n\n\nif __name__ == '__main__':\n"
            "    mp.spawn(worker, nprocs=2)\n",
            note="the parent does not seed either: RPL101's finding",
        ),
        Valid(
            "import torch\nimport mylib\n\n\ndef worker(rank):\n    torch.randn(3)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n    mylib.spawn(worker, nprocs=2)\n",
            note="a look-alike spawn from another library",
        ),
        Valid(
            "import torch\n\n\ndef worker(rank):\n    torch.randn(3)\n\n\ndef launch():\n"
            "    torch.multiprocessing.spawn(worker, nprocs=2)\n",
            note="a library module",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        for entry in program.entries:
            if not entry.seeded:
                continue
            for spawn, worker in entry.workers:
                unseeded = worker.unseeded()
                missing = [family for family in FAMILIES if family in unseeded]
                if not missing:
                    continue
                site = program.anchor(entry, spawn.chain)
                if site[0] != entry.unit.index:
                    continue
                names = ", ".join(f"`{family}`" for family in missing)
                function = spawn.key.rsplit(".", 1)[-1]
                edits = cls._fix(program, entry, spawn, worker, missing)
                yield ProjectReport(
                    entry.unit,
                    site[1],
                    f"`{function}` runs in a fresh process that never seeds {names}",
                    edits=edits,
                    fix_safety=FixSafety.SAFE if edits else None,
                )

    @staticmethod
    def _fix(
        program: Program, entry: EntryPoint, spawn: Spawn, worker: Profile, families: list[str]
    ) -> tuple[Edit, ...]:
        placement = program.worker_start(spawn)
        if placement is None:
            return ()
        value = None
        checked = False
        seeded = program.program_seed(entry)
        if seeded is not None:
            text = seeded.text
            root = re.match(r"[A-Za-z_]\w*", text)
            if root is not None and root.group() in placement.params:
                # The parent's seed reaches the worker as an argument: the worker seeds with
                # it, never overriding it. Where the parent seeds only when given a seed
                # (``if args.seed is not None:``), so does the worker; under another guard
                # the configured seed is the fallback.
                value = text
                checked = seeded.checked
                if seeded.guarded and not checked:
                    value = f"{text} if {text} is not None else {program.options.seed}"
        offset = program.rank(placement)
        made = program.seed_lines(placement.unit, families, placement.at.row, offset, value=value)
        if made is None:
            return ()
        lines, imports = made
        if checked and seeded is not None:
            if "cudnn" in seeded.beside() and "cudnn" not in worker.settings:
                # The parent turns cuDNN's deterministic mode on with its seed; that flag is
                # per process too.
                spelled = program.spell(placement.unit, _DETERMINISTIC, placement.at.row)
                if spelled is None:
                    return ()
                lines.append(f"{spelled[0]} = True")
                if spelled[1] is not None and spelled[1] not in imports:
                    imports.append(spelled[1])
            lines = [f"if {value} is not None:", *(INDENT + line for line in lines)]
        return program.insert(placement, lines, imports, finding=entry.unit) or ()
