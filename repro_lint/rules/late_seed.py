"""RPL104: a seed call that runs after the generator it seeds was already consumed."""

from __future__ import annotations

from collections.abc import Iterator

from repro_lint.diagnostics import FixSafety
from repro_lint.program import Chain, Program, ProjectReport, ProjectRule, Site
from repro_lint.randomness import FAMILIES
from repro_lint.rule import Invalid, Valid


class LateSeed(ProjectRule):
    """
    ## What it does
    Flags a seed call that runs after the generator it seeds was consumed on the same path:
    a model with randomly initialised weights built, data split or drawn, random tensors
    created. Order is followed across function calls (the seed may sit in a helper, the
    consumption in a constructor in another module), in source order within each function,
    where a call comes after its arguments. Only the first seed after a draw is late: a
    seed that an earlier seed of the generator precedes seeds again, and is not reported.

    Control flow is followed: a seed is late only after a draw that runs on every path to
    it (a draw in the other arm of an `if`, in an exception handler or under a condition
    the seed does not share does not count; `if`s on one condition are followed together).
    A draw that only makes the seed value (`args.seed = random.randint(...)`) is the
    seed's derivation, RPL103's finding, not a consumption. Framework seeding counts where
    it happens: the Hugging Face `Trainer` and an mmengine `Runner` seed in their
    constructors (a project subclass's where its `__init__` calls `super().__init__`, or on
    construction when it defines none), an ultralytics model's `train()` seeds before
    training, so a model built (or a peft adapter added) before them, also in their own
    arguments (`Runner(model=Net(), ...)`), is drawn unseeded.

    ## Why is this bad?
    Whatever ran before the seed drew from an unseeded generator: the initial weights (or
    the split, or the noise) differ in every run, and everything after the seed is
    reproducible only on top of that random start. Moving the seed earlier is the fix; the
    point is easy to miss when the consumption hides in a constructor.

    ## Fix safety
    Display-only: the fix names the consumption the seed must precede. Moving a statement
    can change what the program computes, so it is left to the author.

    ## Options
    None.

    ## Known limitations
    Within a path, order is source order: a seed in a loop body after a draw in the same
    loop is reported even if the loop reseeds on every pass. Objects built before the seed
    whose consumption comes later (a `DataLoader` shuffles when iterated, a dropout layer in
    `forward`) are not consumption at construction time and are never reported.

    ## References
    - PyTorch notes on randomness: "Controlling sources of randomness"
    """

    CODE = "RPL104"
    MESSAGE = "The seed runs after the generator it seeds was already consumed"
    FIX_TITLE = "Move the seed before the first consumption"
    FIX_SAFETY = FixSafety.DISPLAY_ONLY
    INVALID = (
        Invalid(
            "import torch\n\nif __name__ == '__main__':\n    model = torch.nn.Linear(2, 2)\n"
            "    torch.manual_seed(0)\n",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n\n"
            "def seed_all():\n    torch.manual_seed(0)\n\n\ndef main():\n    net = Net()\n"
            "    seed_all()\n\n\nif __name__ == '__main__':\n    main()\n",
            note="the consumption is in a constructor, the seed in a helper",
        ),
        Invalid(
            "import numpy as np\n\nif __name__ == '__main__':\n    idx = np.random.permutation(10)\n"
            "    np.random.seed(1)\n",
        ),
        Invalid(
            "import torch\n\n\ndef main(args):\n    model = torch.nn.Linear(2, 2)\n"
            "    if args.seed is not None:\n        torch.manual_seed(args.seed)\n\n\n"
            "if __name__ == '__main__':\n    main(parse_args())\n",
            note="the model is built on every path before the opt-in seed",
        ),
        Invalid(
            "from ultralytics import YOLO\n\nmodel = YOLO('yolov8s-custom.yaml')\n"
            "model.train(data='coco.yaml', epochs=10)\n",
            note="a model built from a config, then a trainer that seeds in its constructor",
        ),
        Invalid(
            "import transformers\nfrom peft import LoraConfig, get_peft_model\n\n\n"
            "def train(model, data, args):\n    model = get_peft_model(model, LoraConfig(r=8))\n"
            "    trainer = transformers.Trainer(model=model, train_dataset=data, args=args)\n"
            "    trainer.train()\n\n\nif __name__ == '__main__':\n    train(*load())\n",
            note="LoRA weights initialised before the Trainer's constructor seeds",
        ),
    )
    VALID = (
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    model = torch.nn.Linear(2, 2)\n",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n\nif __name__ == '__main__':\n"
            "    loader = DataLoader(data, shuffle=True)\n    torch.manual_seed(0)\n"
            "    for batch in loader:\n        pass\n",
            note="a loader shuffles when iterated, after the seed",
        ),
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    x = torch.rand(3)\n"
            "    torch.manual_seed(0)  # noqa: RPL104\n    y = torch.rand(3)\n",
            note="suppressed on the seed's line",
        ),
        Valid(
            "import torch, random\n\nif __name__ == '__main__':\n    random.shuffle(items)\n"
            "    torch.manual_seed(0)\n    model = torch.nn.Linear(2, 2)\n",
            note="different generators: random was consumed, torch is seeded in time",
        ),
        Valid(
            "import lightning as L\nimport torch\n\n\ndef main():\n    L.seed_everything(0)\n"
            "    model = torch.nn.Linear(2, 2)\n    L.seed_everything(1)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            note="re-seeding after a first, timely seed",
        ),
        Valid(
            "import torch\n\n\ndef make():\n    model = torch.nn.Linear(2, 2)\n"
            "    torch.manual_seed(0)\n    return model\n",
            note="a library module: only entry points are judged",
        ),
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    if args.seed is not None:\n"
            "        torch.manual_seed(args.seed)\n    model = torch.nn.Linear(2, 2)\n",
            note="opt-in seeding before the model",
        ),
        Valid(
            "from transformers import set_seed\nimport torch\n\nif __name__ == '__main__':\n"
            "    set_seed(0)\n    model = torch.nn.Linear(2, 2)\n",
        ),
        Valid(
            "import numpy as np\n\nif __name__ == '__main__':\n    rng = np.random.default_rng(1)\n"
            "    noise = rng.normal(size=3)\n    np.random.seed(0)\n",
            note="a Generator object's draws do not touch the global generator",
        ),
        Valid(
            "import torch  # repro-lint: noqa: RPL104\n\nif __name__ == '__main__':\n"
            "    model = torch.nn.Linear(2, 2)\n    torch.manual_seed(0)\n",
            note="file-level suppression",
        ),
        Valid(
            "import torch\n\n\ndef setup(cfg):\n    if cfg.seed is not None:\n"
            "        torch.manual_seed(cfg.seed)\n    else:\n        noise = torch.rand(3)\n\n\n"
            "if __name__ == '__main__':\n    setup(cfg)\n",
            note="a seed in the `if` branch does not come after a draw in the `else` branch",
        ),
        Valid(
            "import os\nimport torch\n\nif __name__ == '__main__':\n"
            "    if os.environ.get('SELF_TEST'):\n        probe = torch.randn(3)\n"
            "    torch.manual_seed(0)\n    model = torch.nn.Linear(2, 2)\n",
            note="the draw runs only on a path that is not the program's usual one: "
            "a seed is late only after a draw on every path to it",
        ),
        Valid(
            "import argparse\nimport random\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--manualSeed', type=int)\nopt = parser.parse_args()\n"
            "if opt.manualSeed is None:\n    opt.manualSeed = random.randint(1, 10000)\n"
            "random.seed(opt.manualSeed)\ntorch.manual_seed(opt.manualSeed)\n",
            note="the draw makes the seed value itself (an entropy seed: RPL103), it is not "
            "randomness consumed before the seed",
        ),
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    if args.resume:\n"
            "        torch.manual_seed(1)\n    if args.resume:\n        model = torch.nn.Linear(2, 2)\n",
            note="branches on one condition are followed together",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        for entry in program.entries:
            late: dict[Site, list[tuple[str, Chain, Chain]]] = {}
            for family, seed, use in entry.profile.late:
                site = program.anchor(entry, seed)
                found = late.setdefault(site, [])
                if all(family != known for known, _, _ in found):
                    found.append((family, seed, use))
            for site, pairs in late.items():
                names = ", ".join(
                    f"`{family}`" for family in FAMILIES if family in {f for f, _, _ in pairs}
                )
                _, seed, use = pairs[0]
                leaf = use[-1]
                yield ProjectReport(
                    entry.unit,
                    site[1],
                    f"Seeds {names} after a {leaf[3]} at {program.where(leaf)} already consumed it",
                    fix_title=cls._move(program, site, seed, use),
                    fix_safety=FixSafety.DISPLAY_ONLY,
                )

    @staticmethod
    def _move(program: Program, site: Site, seed: Chain, use: Chain) -> str:
        """What to move where, in the function where the seed's path and the use's part:
        the steps there are in one body, so the advice can be followed."""
        depth = 0
        while depth < len(seed) - 1 and depth < len(use) - 1 and seed[depth][:2] == use[depth][:2]:
            depth += 1
        mover, before = seed[depth], use[depth]
        if mover[:2] == site[:2]:
            return f"Move this seed before {program.where(before)}"
        return f"Move the seed at {program.where(mover)} before {program.where(before)}"
