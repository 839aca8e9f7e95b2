"""RPL202: a seeded program runs cuDNN convolutions without deterministic cuDNN."""

from __future__ import annotations

from collections.abc import Iterator

from repro_lint.diagnostics import Edit, FixSafety, Location
from repro_lint.program import Chain, EntryPoint, Program, ProjectReport, ProjectRule
from repro_lint.rule import Invalid, Valid

DETERMINISTIC = "torch.backends.cudnn.deterministic"
BENCHMARK = "torch.backends.cudnn.benchmark"


class MissingDeterministicConfig(ProjectRule):
    """
    ## What it does
    Flags an entry point whose program seeds (so it wants repeatable results) and builds or
    runs convolutions (`nn.Conv1d/2d/3d`, transposed and lazy variants, `F.conv*`, or
    convolutional model factories such as `torchvision.models.*` and `timm.create_model`)
    but never sets `torch.backends.cudnn.deterministic = True` nor
    `torch.use_deterministic_algorithms(True)` anywhere on its path. Helpers that set them
    count (`transformers.enable_full_determinism`,
    `mmengine.runner.set_random_seed(..., deterministic=True)`, Lightning's
    `Trainer(deterministic=True)`), and so do values that are not literals
    (`cudnn.deterministic = args.deterministic`).

    ## Why is this bad?
    On CUDA, cuDNN picks among several convolution algorithms, some of which accumulate in a
    nondeterministic order (atomics in the backward pass); the weights then drift apart
    between runs even with every seed fixed. A convolution uses a deterministic algorithm
    only when `cudnn.deterministic` or `use_deterministic_algorithms(True)` is on. Seeding
    without it gives a false sense of reproducibility. (On a CPU-only run the setting has no
    effect and costs nothing.)

    ## Fix safety
    Safe: `torch.backends.cudnn.deterministic = True` and
    `torch.backends.cudnn.benchmark = False` are inserted just before the statement that
    seeds. They may slow convolutions down; they never change what is computed beyond fixing
    the algorithm (unlike `use_deterministic_algorithms(True)`, which can raise).

    ## Options
    None.

    ## Known limitations
    A setting made in the parent process counts for workers it spawns, although flags do not
    cross process boundaries; the rule errs towards silence there.

    ## References
    - PyTorch notes on randomness: "CUDA convolution determinism"
    - `torch.backends.cudnn.deterministic`
    """

    CODE = "RPL202"
    MESSAGE = "A seeded program runs cuDNN convolutions without deterministic cuDNN"
    FIX_TITLE = "Set `torch.backends.cudnn.deterministic = True` next to the seeding"
    FIX_SAFETY = FixSafety.SAFE
    INVALID = (
        Invalid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    model = nn.Conv2d(3, 8, 3)\n",
            fixed="import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.backends.cudnn.deterministic = True\n"
            "    torch.backends.cudnn.benchmark = False\n"
            "    torch.manual_seed(0)\n    model = nn.Conv2d(3, 8, 3)\n",
        ),
        Invalid(
            "import lightning as L\nimport torchvision\nfrom torch.backends import cudnn\n\n\n"
            "def main():\n    L.seed_everything(0)\n    net = torchvision.models.resnet18()\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            fixed="import lightning as L\nimport torchvision\nfrom torch.backends import cudnn\n\n\n"
            "def main():\n    cudnn.deterministic = True\n    cudnn.benchmark = False\n"
            "    L.seed_everything(0)\n    net = torchvision.models.resnet18()\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            note="a torchvision model factory; the existing `cudnn` import is reused",
        ),
        Invalid(
            "import random\nimport torch.nn.functional as F\n\n\ndef step(x, w):\n"
            "    return F.conv2d(x, w)\n\n\nif __name__ == '__main__':\n    random.seed(0)\n"
            "    step(x, w)\n",
            fixed="import random\nimport torch\nimport torch.nn.functional as F\n\n\ndef step(x, w):\n"
            "    return F.conv2d(x, w)\n\n\nif __name__ == '__main__':\n"
            "    torch.backends.cudnn.deterministic = True\n"
            "    torch.backends.cudnn.benchmark = False\n    random.seed(0)\n    step(x, w)\n",
        ),
    )
    VALID = (
        Valid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    torch.backends.cudnn.deterministic = True\n"
            "    model = nn.Conv2d(3, 8, 3)\n",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    torch.use_deterministic_algorithms(True)\n"
            "    model = nn.Conv2d(3, 8, 3)\n",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
            "    model = nn.Conv2d(3, 8, 3)\n",
            note="not seeded: the program does not ask for repeatable results (see RPL101)",
        ),
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    model = torch.nn.Linear(3, 8)\n",
            note="no convolution",
        ),
        Valid(
            "from transformers import enable_full_determinism\nimport timm\n\n"
            "if __name__ == '__main__':\n    enable_full_determinism(0)\n"
            "    model = timm.create_model('resnet50')\n",
        ),
        Valid(
            "import lightning as L\nimport torchvision\n\nif __name__ == '__main__':\n"
            "    L.seed_everything(0)\n    trainer = L.Trainer(deterministic=True)\n"
            "    net = torchvision.models.resnet18()\n",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n\ndef setup(args):\n"
            "    torch.manual_seed(args.seed)\n    torch.backends.cudnn.deterministic = args.det\n\n\n"
            "if __name__ == '__main__':\n    setup(parse())\n    nn.Conv1d(1, 1, 3)\n",
            note="set in a helper, with a value decided at run time",
        ),
        Valid(
            "import torch\nfrom mylib import Conv2d\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    layer = Conv2d(3, 8, 3)\n",
            note="a look-alike convolution from another library",
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\n\nif __name__ == '__main__':\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n"
            "        torch.backends.cudnn.deterministic = True\n    F.conv2d(x, w)\n",
            note="opt-in seeding and determinism together",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n\ndef build():\n    torch.manual_seed(0)\n"
            "    return nn.Conv2d(3, 8, 3)\n",
            note="a library module",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        for entry in program.entries:
            profiles = [entry.profile, *(worker for _, worker in entry.workers)]
            if not any(p.seeded for p in profiles) or any(p.settings for p in profiles):
                continue
            conv = next((p.conv for p in profiles if p.conv is not None), None)
            if conv is None:
                continue
            edits = cls._fix(program, entry)
            yield ProjectReport(
                entry.unit,
                entry.statement,
                f"Seeded, but convolutions ({program.where(conv[-1])}) may pick "
                "nondeterministic cuDNN algorithms",
                edits=edits,
                fix_safety=FixSafety.SAFE if edits else None,
            )

    @staticmethod
    def _fix(program: Program, entry: EntryPoint) -> tuple[Edit, ...]:
        profile = entry.profile
        chain: Chain | None = profile.first_seed
        if chain is None:
            chain = next(iter((*profile.seed.values(), *profile.later_seed.values())), None)
        if chain is None:
            return ()
        site = program.anchor(entry, chain)
        if site[0] != entry.unit.index or site[1] < 0:
            return ()
        unit = entry.unit
        row, _, indent, _ = unit.statement(site[1])
        lines: list[str] = []
        imports: list[str] = []
        for name in (DETERMINISTIC, BENCHMARK):
            spelled = program.spell(unit, name, row)
            if spelled is None:
                return ()
            text, module = spelled
            lines.append(f"{text} = {name == DETERMINISTIC}")
            if module is not None and module not in imports:
                imports.append(module)
        at = Location(int(row), 1)
        return program.insertion(unit, at, lines, imports, indent=str(indent)) or ()
