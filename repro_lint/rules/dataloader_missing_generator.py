"""RPL302: a shuffling DataLoader, or a random sampler, without its own ``generator=``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from repro_lint.datasets import data, loaders, span
from repro_lint.diagnostics import Edit, FixSafety
from repro_lint.program import Program, ProjectReport, ProjectRule, Unit
from repro_lint.rule import Invalid, Valid


class DataloaderMissingGenerator(ProjectRule):
    """
    ## What it does
    Flags a DataLoader (any alias, project subclass, `functools.partial` or known wrapper
    such as PyG's loaders and DGL's `GraphDataLoader`) that shuffles, `shuffle=True` by
    keyword or by position (`DataLoader(ds, 8, True)`), a value that may be true, or a
    `**kwargs` dict that may set it, or that gets a `RandomSampler`, `SubsetRandomSampler`
    or `WeightedRandomSampler` built without `generator=` (directly, through a variable or
    inside a `BatchSampler`), and has no `generator=` of its own. Also flags those samplers
    themselves.

    Arguments are followed as people pass them: variables assigned in either branch of an
    `if` (a sampler that is a `DistributedSampler` or `None`, with
    `shuffle=(sampler is None)`), dicts built with literals, `dict(...)`, `{**a, **b}`,
    `.update()` (also in a branch, and with another dict), item assignment or a
    conditional expression; and the parameters of the function that builds the loader,
    through what every known caller passes (a `**loader_kwargs` dict handed to a
    `Process` or `mp.spawn` worker included, and a parameter's default where a caller
    leaves it out).

    ## When it does not fire
    - The loader has `generator=`, or a `**mapping` the rule cannot see may hold one.
    - The loader does not shuffle: `shuffle` absent, `False` or `None`, a deterministic
      sampler (`SequentialSampler`, a custom one), or a `DistributedSampler`, which shuffles
      with its own generator seeded from its `seed` argument and ignores the loader's.
      Evaluation loaders are quiet for this reason.
    - A random sampler with `generator=` (a loader given such a sampler is quiet too, unless
      it shuffles by itself, which torch rejects anyway).
    - Code that can never run: the `else` of `if True:` (a switch commented out).

    ## Why is this bad?
    Without a generator, a shuffling loader draws its order from the global torch
    generator at every `iter(loader)`, and every loader draws its workers' base seed there
    too. The data order then depends on every other use of the global generator: adding a
    validation pass, a dropout layer or a random augmentation before the next epoch changes
    the order of all later batches. With its own seeded generator, a loader's order depends
    only on that seed and the epoch count.

    ## Fix safety
    Safe: `generator=torch.Generator().manual_seed(<seed>)` is added (with `+ rank` when a
    rank-named variable is in scope in distributed code, so that ranks shuffle differently).
    The seed is the program's own where it passes one to a seeding call earlier in the same
    function on every path to the loader (`torch.manual_seed(args.seed)`, `set_seed(seed)`),
    with no rank added when that seed already has one; otherwise the configured `seed`.
    The order is still random, now from its own repeatable stream. No fix is offered for a
    project subclass whose `__init__` takes no `generator` (nor `**kwargs`).

    ## Options
    `seed` (default 0) is the value inserted where the program passes no seed of its own.

    ## Known limitations
    Samplers are followed through assignments in the same function; a sampler built in
    another function or kept in an attribute counts as deterministic. A change to a dict
    under a condition is taken as possible, without relating it to other conditions (a
    `shuffle` set only `if sampler is None` counts as set whatever the callers pass).

    ## References
    - PyTorch: "Reproducibility", DataLoader section (`generator`)
    - PyTorch: `torch.utils.data.DataLoader`, `RandomSampler`
    """

    CODE = "RPL302"
    MESSAGE = "A shuffling DataLoader without `generator=` takes its order from the global RNG"
    FIX_TITLE = "Pass `generator=torch.Generator().manual_seed(<seed>)`"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("Loader", "loader", "Sampler", "shuffle")
    INVALID = (
        Invalid(
            "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, shuffle=True)\n",
            fixed="import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(ds, batch_size=8, shuffle=True,\n"
            "                    generator=torch.Generator().manual_seed(0))\n",
        ),
        Invalid(
            "from torch.utils.data import DataLoader\nloader = DataLoader(ds, 8, True)\n",
            fixed="import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(ds, 8, True, generator=torch.Generator().manual_seed(0))\n",
            note="`shuffle=True` by position",
        ),
        Invalid(
            "import torch\nfrom torch.utils.data import RandomSampler\nsampler = RandomSampler(ds)\n",
            fixed="import torch\nfrom torch.utils.data import RandomSampler\n"
            "sampler = RandomSampler(ds, generator=torch.Generator().manual_seed(0))\n",
            note="a random sampler without its own generator",
        ),
        Invalid(
            "import torch\n\n\ndef main(args, train_set, use_cuda):\n"
            "    train_kwargs = {'batch_size': args.batch_size}\n    if use_cuda:\n"
            "        cuda_kwargs = {'num_workers': 1, 'pin_memory': True, 'shuffle': True}\n"
            "        train_kwargs.update(cuda_kwargs)\n"
            "    return torch.utils.data.DataLoader(train_set, **train_kwargs)\n",
            note="`shuffle` set through `.update()` with another dict, in a branch",
        ),
        Invalid(
            "import torch.utils.data as data\n\n\ndef loader(train_set, use_cuda):\n"
            "    extra = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}\n"
            "    return data.DataLoader(train_set, batch_size=8, **{**extra, 'shuffle': True})\n",
            note="a module alias and a merged dict",
        ),
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n\n\n"
            "def loader(dataset, distributed):\n    if distributed:\n"
            "        sampler = DistributedSampler(dataset)\n    else:\n        sampler = None\n"
            "    return DataLoader(dataset, sampler=sampler, shuffle=(sampler is None))\n",
            note="single-process runs shuffle from the global RNG",
        ),
        Invalid(
            "from torch.utils.data import DataLoader\n\n\n"
            "def get_loader(dataset, batch_size, shuffle=False):\n"
            "    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle)\n\n\n"
            "train_loader = get_loader(train_set, 32, shuffle=True)\n",
            note="a caller of the helper asks for shuffling",
        ),
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def main(args, train_set):\n    torch.manual_seed(args.seed)\n"
            "    return DataLoader(train_set, batch_size=64, shuffle=True)\n",
            fixed="import torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def main(args, train_set):\n    torch.manual_seed(args.seed)\n"
            "    return DataLoader(train_set, batch_size=64, shuffle=True,\n"
            "                      generator=torch.Generator().manual_seed(args.seed))\n",
            note="the generator gets the seed the program already passes",
        ),
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def main(args, train_set):\n    if args.seed is not None:\n"
            "        torch.manual_seed(args.seed)\n"
            "    return DataLoader(train_set, batch_size=64, shuffle=True)\n",
            fixed="import torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def main(args, train_set):\n    if args.seed is not None:\n"
            "        torch.manual_seed(args.seed)\n"
            "    return DataLoader(train_set, batch_size=64, shuffle=True,\n"
            "                      generator=torch.Generator().manual_seed(0))\n",
            note="a seed passed only on some paths may be None here: the configured seed",
        ),
    )
    VALID = (
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "loader = DataLoader(ds, shuffle=True, generator=torch.Generator().manual_seed(0))\n",
        ),
        Valid(
            "from torch.utils.data import DataLoader, DistributedSampler\n"
            "loader = DataLoader(ds, sampler=DistributedSampler(ds))\n",
            note="`DistributedSampler` shuffles with its own seeded generator",
        ),
        Valid(
            "from torch.utils.data import DataLoader, SequentialSampler\n"
            "loader = DataLoader(ds, sampler=SequentialSampler(ds))\n",
            note="a deterministic sampler",
        ),
        Valid(
            "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=64)\n",
            note="no shuffling: an evaluation loader",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader, RandomSampler\n"
            "g = torch.Generator().manual_seed(0)\n"
            "loader = DataLoader(ds, sampler=RandomSampler(ds, generator=g))\n",
            note="the random sampler has its own generator",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def main(dataset):\n    if True:  # args.distributed\n"
            "        sampler = torch.utils.data.DistributedSampler(dataset, shuffle=True)\n"
            "    else:\n        sampler = torch.utils.data.RandomSampler(dataset)\n"
            "    return DataLoader(dataset, sampler=sampler, batch_size=64)\n",
            note="the random sampler is in code that never runs",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n\n"
            "def get_loader(dataset, batch_size, shuffle=False):\n"
            "    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle)\n\n\n"
            "test_loader = get_loader(test_set, 256)\n",
            note="every caller keeps the default: no shuffling",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n\n"
            "base = {'batch_size': 32, 'shuffle': True}\n"
            "loader = DataLoader(ds, **dict(base, generator=torch.Generator().manual_seed(0)))\n",
            note="`dict(a, **b)` with a generator",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        for loader in loaders(program):
            if loader.given("generator") or loader.opaque:
                continue
            kinds = loader.samplers()
            shuffle = loader.args.get("shuffle", {"v": False}).get("v", True) not in (False, None)
            if "random" in kinds:
                message = (
                    "This DataLoader's random sampler has no `generator=`: its order comes "
                    "from the global RNG"
                )
            elif shuffle and kinds & {"none", "other"}:
                # Also ``shuffle=(sampler is None)`` where the sampler may be None.
                message = cls.MESSAGE
            else:
                continue
            yield cls._report(
                program, loader.unit, loader.record, message, fixable=loader.takes("generator")
            )
        for unit in program.units:
            if not unit.linted:
                continue
            for record in data(unit).get("samplers", ()):
                message = (
                    f"`{record['class']}` without `generator=` takes its order from the global RNG"
                )
                yield cls._report(program, unit, record, message)

    @classmethod
    def _report(
        cls,
        program: Program,
        unit: Unit,
        record: Mapping[str, Any],
        message: str,
        fixable: bool = True,
    ) -> ProjectReport:
        start, end = span(record)
        imports = program.import_edits(unit, ["torch"] if record.get("import") else [], start)
        edits: tuple[Edit, ...] = ()
        # A project subclass whose ``__init__`` takes no ``generator`` would raise with one.
        if imports is not None and fixable:
            edits = (*imports, Edit(str(record["generator"]), start, end))
        return ProjectReport(
            unit,
            int(record["s"]),
            message,
            edits=edits,
            fix_safety=FixSafety.SAFE if edits else None,
            span=(start, end),
        )
