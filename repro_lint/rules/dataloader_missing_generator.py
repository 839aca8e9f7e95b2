"""RPL302: a shuffling DataLoader, or a random sampler, without its own ``generator=``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from repro_lint.datasets import Context, contexts, data, loaders, span
from repro_lint.diagnostics import Edit, FixSafety
from repro_lint.loaders import GENERATORS_SINCE
from repro_lint.program import Program, ProjectReport, ProjectRule, Unit
from repro_lint.rule import Invalid, Valid
from repro_lint.seed_paths import seeded_paths
from repro_lint.summary_format import MAIN, MODULE


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
    Safe: `generator=torch.Generator().manual_seed(<seed>)` is added, seeded with the
    program's own seed wherever the loader can reach it, so that `--seed 3` still decides
    the order:
    - the seed a seeding call passes earlier in the same function on every path
      (`torch.manual_seed(args.seed + rank)`, `set_seed(config["seed"])`); a seed passed
      under `if args.seed is not None:` is used the same way,
      `... .manual_seed(args.seed) if args.seed is not None else None`, which keeps a run
      without a seed as the program had it;
    - the file's parsed `--seed` option where its namespace is in scope (`args.seed`,
      conditional as above when it defaults to None), the function's own seed parameter,
      a seed the function passes after the loader from variables that already hold it
      (`seed = int(config["seed"])`, the loader, `set_seed(seed)`), the one integer the
      function passes as a seed, in a method the one seed the other methods of its class
      pass from the instance (`set_seed(self.args.seed)` in `__init__`), or the one integer
      the module's top-level code passes as a seed, also after the loader
      (`seed_everything(666)`);
    - `torch.initial_seed()` where every path from the program's entry points seeds torch
      before the loader is built (a helper that the seeded training function calls): it
      returns that seed, in each process the one the program gave it;
    - `torch.initial_seed()` also in a library function (in a file that starts no
      program) with no rank in scope: a constant there would give every caller one order
      whatever each seeds, where `torch.initial_seed()` follows the seed the caller gave
      torch;
    - otherwise (in a program's own file) the configured `seed`.

    `+ rank` is added when a rank-named variable is in scope in distributed code and the
    seed has no rank yet (the rank alone for a seed of 0), so that ranks shuffle
    differently. A loader whose order comes from a random sampler, and that does not
    shuffle by itself, gets a generator only when it has workers (their base seeds come from
    it): the sampler's own finding gives the sampler one, and without workers one on the
    loader would change nothing. The order is still random, now from its own
    repeatable stream. No fix is offered where a constant would override the program's
    seed: the function seeds later with a value of its own (a loop over seeds), or the
    program seeds each rank apart and no rank is in scope (every process would get the same
    order), or the call is built again on every pass (inside a loop, or in a generator
    function that yields one pass, such as a minibatch generator called per update, rather
    than an endless `while True:` stream), where a generator seeded alike each time would
    repeat one order; nor before torch 1.6, which has no `generator=` parameter; nor for a project
    subclass whose `__init__` takes no `generator` (nor `**kwargs`).

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
            "    return DataLoader(\n        train_set,\n        batch_size=64,\n"
            "        shuffle=True,\n"
            "        generator=torch.Generator().manual_seed(args.seed) if args.seed is not None else None,\n"
            "    )\n",
            note="a seed given only on request: the same choice for the loader",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\n\n\n"
            "def train(rank, args, model, dataset, dataloader_kwargs):\n"
            "    torch.manual_seed(args.seed + rank)\n"
            "    train_loader = torch.utils.data.DataLoader(dataset, **dataloader_kwargs)\n"
            "    for data, target in train_loader:\n        model(data)\n\n\n"
            "def main(args, model, dataset):\n"
            "    kwargs = {'batch_size': args.batch_size, 'shuffle': True}\n"
            "    for rank in range(args.num_processes):\n"
            "        mp.Process(target=train, args=(rank, args, model, dataset, kwargs)).start()\n",
            fixed="import torch\nimport torch.multiprocessing as mp\n\n\n"
            "def train(rank, args, model, dataset, dataloader_kwargs):\n"
            "    torch.manual_seed(args.seed + rank)\n"
            "    train_loader = torch.utils.data.DataLoader(\n        dataset,\n"
            "        **dataloader_kwargs,\n"
            "        generator=torch.Generator().manual_seed(args.seed + rank),\n    )\n"
            "    for data, target in train_loader:\n        model(data)\n\n\n"
            "def main(args, model, dataset):\n"
            "    kwargs = {'batch_size': args.batch_size, 'shuffle': True}\n"
            "    for rank in range(args.num_processes):\n"
            "        mp.Process(target=train, args=(rank, args, model, dataset, kwargs)).start()\n",
            note="each process seeds apart: its loader keeps its own order",
        ),
        Invalid(
            "import argparse\n\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', default=None, type=int)\n\n\ndef main():\n"
            "    args = parser.parse_args()\n"
            "    loader = torch.utils.data.DataLoader(train_set, batch_size=256, shuffle=True)\n",
            fixed="import argparse\n\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--seed', default=None, type=int)\n\n\ndef main():\n"
            "    args = parser.parse_args()\n"
            "    loader = torch.utils.data.DataLoader(\n        train_set,\n"
            "        batch_size=256,\n        shuffle=True,\n"
            "        generator=torch.Generator().manual_seed(args.seed) if args.seed is not None else None,\n"
            "    )\n",
            note="the `--seed` option, read where its namespace is",
        ),
        Invalid(
            "import torch\n\n\ndef build_dataloader(dataset, opt, sampler=None, seed=None):\n"
            "    return torch.utils.data.DataLoader(\n"
            "        dataset, batch_size=opt['batch_size'], shuffle=sampler is None, sampler=sampler\n"
            "    )\n",
            fixed="import torch\n\n\ndef build_dataloader(dataset, opt, sampler=None, seed=None):\n"
            "    return torch.utils.data.DataLoader(\n"
            "        dataset, batch_size=opt['batch_size'], shuffle=sampler is None, sampler=sampler,\n"
            "        generator=torch.Generator().manual_seed(seed) if seed is not None else None\n"
            "    )\n",
            note="the seed parameter of the function that builds the loader",
        ),
        Invalid(
            "import torch\nfrom accelerate.utils import set_seed\n"
            "from torch.utils.data import DataLoader\n\n\n"
            "def get_dataloaders(dataset, batch_size=16):\n"
            "    return DataLoader(dataset, shuffle=True, batch_size=batch_size)\n\n\n"
            "def training_function(config, dataset):\n    seed = int(config['seed'])\n"
            "    set_seed(seed)\n"
            "    train_dataloader = get_dataloaders(dataset, config['batch_size'])\n\n\n"
            "if __name__ == '__main__':\n"
            "    training_function({'seed': 42, 'batch_size': 16}, list(range(8)))\n",
            fixed="import torch\nfrom accelerate.utils import set_seed\n"
            "from torch.utils.data import DataLoader\n\n\n"
            "def get_dataloaders(dataset, batch_size=16):\n"
            "    return DataLoader(dataset, shuffle=True, batch_size=batch_size,\n"
            "                      generator=torch.Generator().manual_seed(torch.initial_seed()))\n\n\n"
            "def training_function(config, dataset):\n    seed = int(config['seed'])\n"
            "    set_seed(seed)\n"
            "    train_dataloader = get_dataloaders(dataset, config['batch_size'])\n\n\n"
            "if __name__ == '__main__':\n"
            "    training_function({'seed': 42, 'batch_size': 16}, list(range(8)))\n",
            note="seeded on every path before the helper runs: `torch.initial_seed()` is that seed",
        ),
        Invalid(
            "from lightning.pytorch import Trainer, seed_everything\n"
            "from torch.utils.data import DataLoader\n\n"
            "if __name__ == '__main__':\n"
            "    train_loader = DataLoader(train_ds, batch_size=8, shuffle=True)\n"
            "    seed_everything(666)\n    Trainer().fit(model, train_loader)\n",
            fixed="import torch\nfrom lightning.pytorch import Trainer, seed_everything\n"
            "from torch.utils.data import DataLoader\n\n"
            "if __name__ == '__main__':\n"
            "    train_loader = DataLoader(train_ds, batch_size=8, shuffle=True,\n"
            "                              generator=torch.Generator().manual_seed(666))\n"
            "    seed_everything(666)\n    Trainer().fit(model, train_loader)\n",
            note="the one seed the same block passes, even after the loader",
        ),
        Invalid(
            "from torch.utils.data import DataLoader\nfrom transformers import set_seed\n\n\n"
            "def training_function(config, train_set):\n    seed = int(config['seed'])\n"
            "    train_dataloader = DataLoader(train_set, shuffle=True, batch_size=16)\n"
            "    set_seed(seed)\n    return train_dataloader\n",
            fixed="import torch\nfrom torch.utils.data import DataLoader\n"
            "from transformers import set_seed\n\n\n"
            "def training_function(config, train_set):\n    seed = int(config['seed'])\n"
            "    train_dataloader = DataLoader(train_set, shuffle=True, batch_size=16,\n"
            "                                  generator=torch.Generator().manual_seed(seed))\n"
            "    set_seed(seed)\n    return train_dataloader\n",
            note="seeded just after the loader, with a variable that already holds the seed",
        ),
        Invalid(
            "from torch.utils.data import DataLoader, SubsetRandomSampler\n\n"
            "train_sampler = SubsetRandomSampler(train_idx)\n"
            "train_loader = DataLoader(dataset, sampler=train_sampler, batch_size=32)\n",
            fixed="import torch\nfrom torch.utils.data import DataLoader, SubsetRandomSampler\n\n"
            "train_sampler = SubsetRandomSampler(train_idx,\n"
            "                                    generator=torch.Generator().manual_seed(0))\n"
            "train_loader = DataLoader(dataset, sampler=train_sampler, batch_size=32)\n",
            note="the sampler decides the order: it gets the generator, the loader none",
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
        known = contexts(program)
        target = program.options.target_torch
        # Before torch 1.6 there is no ``generator=`` to pass: the finding stands, unfixed.
        available = target is None or target >= GENERATORS_SINCE
        for loader in loaders(program):
            if loader.given("generator") or loader.opaque:
                continue
            kinds = loader.samplers()
            shuffle = loader.args.get("shuffle", {"v": False}).get("v", True) not in (False, None)
            # Also ``shuffle=(sampler is None)`` where the sampler may be None.
            shuffles_itself = shuffle and bool(kinds & {"none", "other"})
            if "random" in kinds:
                message = (
                    "This DataLoader's random sampler has no `generator=`: its order comes "
                    "from the global RNG"
                )
            elif shuffles_itself:
                message = cls.MESSAGE
            else:
                continue
            # A random sampler decides the order where the loader does not shuffle itself: its
            # own finding gives it the generator. One on the loader still seeds the workers'
            # base seeds; without workers it would change nothing.
            needed = shuffles_itself or loader.may_be_positive("num_workers")
            fixable = available and loader.takes("generator") and needed
            yield cls._report(program, loader.unit, loader.record, message, known, fixable=fixable)
        for unit in program.units:
            if not unit.linted:
                continue
            for record in data(unit).get("samplers", ()):
                message = (
                    f"`{record['class']}` without `generator=` takes its order from the global RNG"
                )
                yield cls._report(program, unit, record, message, known, fixable=available)

    @classmethod
    def _report(
        cls,
        program: Program,
        unit: Unit,
        record: Mapping[str, Any],
        message: str,
        known: Mapping[int, Context],
        fixable: bool = True,
    ) -> ProjectReport:
        start, end = span(record)
        generator = cls._generator(program, unit, record, known)
        edits: tuple[Edit, ...] = ()
        # A project subclass whose ``__init__`` takes no ``generator`` would raise with one.
        if generator is not None and fixable:
            text, needs_import = generator
            imports = program.import_edits(unit, ["torch"] if needs_import else [], start)
            if imports is not None:
                edits = (*imports, Edit(text, start, end))
        return ProjectReport(
            unit,
            int(record["s"]),
            message,
            edits=edits,
            fix_safety=FixSafety.SAFE if edits else None,
            span=(start, end),
        )

    @staticmethod
    def _generator(
        program: Program, unit: Unit, record: Mapping[str, Any], known: Mapping[int, Context]
    ) -> tuple[str, bool] | None:
        """The call with its generator (and whether it needs ``import torch``): seeded with
        the program's seed in scope, else ``torch.initial_seed()`` where torch is seeded on
        every path before it or in a library function, else the configured seed. None
        where a constant would override the program's choice: a seed the same function
        passes later (a loop over seeds), ranks the program seeds apart (every process would
        get one order), or a call built again on every pass (in a loop, or in a generator
        function that yields one pass), where a generator seeded alike each time repeats
        one order."""
        if record.get("repeats"):
            return None
        if not record.get("fallback"):
            return str(record["generator"]), bool(record.get("import"))
        paths = seeded_paths(program)
        if "fn" in record and paths.seeded(
            unit, str(record["fn"]), int(record["row"]), record.get("ctx", ())
        ):
            needs = bool(record.get("import")) or bool(record.get("initial_import"))
            return str(record["initial"]), needs
        if record.get("seeded_later"):
            return None
        if "rank_seed" in known[unit.index].flags and not record.get("ranked"):
            return None
        library = record.get("fn") not in (None, MODULE, MAIN) and not any(
            entry.unit is unit for entry in program.entries
        )
        if library and not record.get("ranked"):
            # A library function: a constant would give every caller one order, whatever
            # each seeds; ``torch.initial_seed()`` is the seed its caller gave torch (with
            # a rank in scope, the configured seed plus the rank keeps ranks apart).
            needs = bool(record.get("import")) or bool(record.get("initial_import"))
            return str(record["initial"]), needs
        return str(record["generator"]), bool(record.get("import"))
