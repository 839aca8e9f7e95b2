"""RPL104: a seed call that runs after the generator it seeds was already consumed."""

from __future__ import annotations

from collections.abc import Iterator

from repro_lint.diagnostics import FixSafety
from repro_lint.program import Program, ProjectReport, ProjectRule, Site
from repro_lint.randomness import FAMILIES
from repro_lint.rule import Invalid, Valid


class LateSeed(ProjectRule):
    """
    ## What it does
    Flags a seed call that runs after the generator it seeds was consumed on the same path:
    a model with randomly initialised weights built, data split or drawn, random tensors
    created. Order is followed across function calls (the seed may sit in a helper, the
    consumption in a constructor in another module), in source order within each function.

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
    Order is source order: a seed in a loop body after a draw in the same loop is reported
    even if the loop reseeds on every pass. Objects built before the seed whose consumption
    comes later (a `DataLoader` shuffles when iterated, a dropout layer in `forward`) are
    not consumption at construction time and are never reported.

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
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        for entry in program.entries:
            profile = entry.profile
            late: dict[Site, list[str]] = {}
            for family in FAMILIES:
                if profile.first.get(family) == "use" and family in profile.seed:
                    site = program.anchor(entry, profile.seed[family])
                    late.setdefault(site, []).append(family)
            for site, families in late.items():
                use = profile.use[families[0]]
                leaf = use[-1]
                names = ", ".join(f"`{family}`" for family in families)
                where = program.where(leaf)
                yield ProjectReport(
                    entry.unit,
                    site[1],
                    f"Seeds {names} after a {leaf[3]} at {where} already consumed it",
                    fix_title=f"Move this seed before {program.where(program.anchor(entry, use))}",
                    fix_safety=FixSafety.DISPLAY_ONLY,
                )
