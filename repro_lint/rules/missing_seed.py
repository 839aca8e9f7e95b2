"""RPL101: an entry point consumes random numbers from a generator nothing on its path seeds."""

from __future__ import annotations

from collections.abc import Iterator

from repro_lint import randomness as rng
from repro_lint.diagnostics import Edit, FixSafety
from repro_lint.program import EntryPoint, Program, ProjectReport, ProjectRule
from repro_lint.randomness import FAMILIES
from repro_lint.rule import Invalid, Valid

# The rule that gives scikit-learn calls `random_state=` (its fix makes numpy's seed moot).
_RANDOM_STATE = "RPL105"


# A script an accelerate launcher runs once per process.
_ACCELERATE = (
    "import torch\nfrom accelerate import Accelerator\n\n\ndef train():\n"
    "    accelerator = Accelerator()\n"
    "    model = accelerator.prepare(torch.nn.Linear(2, 2))\n"
    "    batch = torch.randint(0, 100, (8, 2), device=accelerator.device)\n\n\n"
    "if __name__ == '__main__':\n    train()\n"
)


class MissingSeed(ProjectRule):
    """
    ## What it does
    Flags an entry point whose program draws from a global random number generator,
    torch's, numpy's or Python's `random`, that nothing on its path seeds. One finding per
    entry point names every unseeded generator and one place each is consumed: random
    draws (`torch.rand`, `np.random.rand`, `random.random`), layers with randomly
    initialised weights (also graph layers of PyTorch Geometric and DGL, and peft
    adapters), dropout, random splits, shuffling loaders, random transforms, and
    scikit-learn calls without `random_state` (they draw from numpy's generator).

    Entry points are modules with an `if __name__ == "__main__":` block, files matched by
    `entry-points`, and scripts that run at module level: their top-level statements
    (loops and assignments included) train, call a function of their own file that draws
    or trains (or a class whose constructor does), or call project code that trains; a
    call standing alone (`main()`) also when the project code it calls draws, or, in a
    file no other file of the run imports, whatever it does; or the file, imported by no
    other file of the run, draws random numbers at module level on every path. A model
    file's `__main__` block that only pushes random inputs through a model (it never
    trains) is an entry point in form only and is not reported.

    The path is followed through calls into project functions, across files and
    transitively (also names bound by `from module import *`, `globals()[name](...)`,
    calls through a module's registry dict (`TABLE[name](...)`, filled by a decorator of
    the module or written as a dict of its functions; in its module or imported from it),
    and
    methods called on a variable built from a project class), through class constructors
    (and the methods of constructed objects), functions passed as `target=` or by position
    (`model.apply(init_weights)`, a launcher's `launch(main, ...)`) and modules imported
    for their side effects; a library that the linted tree itself contains is project
    code. Code that never runs is not on the path: a block under `if False:`, `if 0:` or
    `while False:`, the `else` of `if True:` (a switch turned off by hand), and imports
    under `if TYPE_CHECKING:`. Draws whose results are replaced before use do not count:
    initial weights that a checkpoint load overwrites on every path (`model.load_state_dict`
    also through `self.model`, and over a part built apart, `model.fc = nn.Linear(...)`,
    when the whole model is loaded), a random free port (or
    the `dist_url`/`init_method` address a process group meets at), a draw that derives a
    seed (RPL103's finding). Seeds count wherever they are on the path:
    in the `__main__` block, in a helper in another module, in an opt-in branch
    (`if args.seed is not None: torch.manual_seed(args.seed)`), or through a known helper:
    `lightning.seed_everything` (and the `pytorch_lightning`/`lightning.fabric` spellings,
    and a Fabric object's `fabric.seed_everything`),
    `transformers.set_seed`, `transformers.enable_full_determinism`, the
    `transformers.Trainer` and mmengine `Runner` constructors (and those of project
    subclasses, where they call `super().__init__`), an ultralytics model's
    `train()`, `accelerate.utils.set_seed`, `mmengine.runner.set_random_seed`,
    `detectron2.utils.env.seed_all_rng` and `detectron2.engine.default_setup`,
    `timm.utils.random_seed`, and the functions listed in `seed-functions`.

    ## Why is this bad?
    An unseeded generator starts from OS entropy, so every run initialises weights, splits
    data and drops units differently and its results cannot be repeated.
    `torch.cuda.manual_seed(_all)` does not help the CPU generator: weight initialisation,
    shuffling and dropout on the CPU stay unseeded; `torch.manual_seed` seeds both.

    ## Fix safety
    Safe: the missing seed calls (`torch.manual_seed(...)`, `np.random.seed(...)`, with
    `# noqa: NPY002` where the project's ruff configuration checks that rule,
    `random.seed(...)`) are inserted with the imports they need; it pins the
    randomness down and changes nothing else. Where the program already seeds a generator
    itself, the others are seeded right after that call with the same value (its argument,
    option or config field, in its file). Otherwise they go where the work runs, with the
    configured `seed` (or the program's seed option, right after the entry point parses
    it, when nothing is drawn before): the start of the entry point (the top of its
    `__main__` block, or after the imports of a script), and the start of each worker
    function started in a fresh process (`mp.spawn`), offset by the process index when it
    is an int on every path (`mp.spawn` passes it, and every direct call passes an int
    literal). A program that builds an accelerate `Accelerator` is run once per process by
    `accelerate launch`: its entry point's seed (the configured one or its seed option)
    is offset by the process's rank,
    `int(os.environ.get("RANK", 0))` (0 when run alone), so the processes draw different
    batches and noise (the prepared model starts from rank 0's weights); so is a program
    that calls into MPI (`mpi4py`), which `mpiexec` runs once per process, by
    `MPI.COMM_WORLD.Get_rank()` (`from mpi4py import MPI` is added where the file lacks it).
    Ranks that split one dataset with a `DistributedSampler` share one seed: each must build
    the same dataset. Each process is seeded for the generators it consumes
    itself; work the main process does by calling a worker function directly is seeded at
    that function's start. numpy is left out where its only consumers are scikit-learn
    calls that RPL105 gives `random_state=`. A model file's smoke test gets no finding and
    no seeds; a launcher that hands the work to a cluster job (a submitit executor) gets
    no seeds: the job runs elsewhere, and its own entry point is the place. In a notebook,
    seeds that would open a cell doing something else become a code cell of their own
    above it and above the markdown that introduces it, with the imports they need.

    ## Options
    `seed` (default 0) is the value inserted; `seed-functions` lists project functions that
    seed every generator (qualified, e.g. `mypkg.utils.seed_all`); `entry-points` lists glob
    patterns of files that are entry points whatever their shape.

    ## Known limitations
    Branches are not told apart: a seed in any branch counts. Calls through objects whose
    class is not known statically (`trainer.fit()`), registries filled by calls
    (`Registry.register_module`) and keyword callbacks (other than
    `target=`) are not followed;
    seeds reached only that way are missed, so the rule may report a program
    that is in fact seeded: list the seeding function in `seed-functions`, or suppress on the
    entry line. The top-level code an import runs is followed only in modules that mention
    seeding (`seed`, `determinism` or a `seed-functions` name): random numbers drawn at
    import time by other modules are not seen.

    ## References
    - PyTorch notes on randomness: "Controlling sources of randomness"
    - NumPy: "Random sampling (numpy.random)", legacy global `RandomState`
    """

    CODE = "RPL101"
    MESSAGE = "An entry point consumes random numbers from a generator it never seeds"
    FIX_TITLE = "Seed the missing generators at the start of the entry point"
    FIX_SAFETY = FixSafety.SAFE
    # A file that draws at module level may be a script of its own: it is summarised even
    # when no per-file rule parses it (numpy's and Python's ``random``, torch's ``rand*``).
    TRIGGERS = ("rand",)
    INVALID = (
        Invalid(
            "import torch\n\nif __name__ == '__main__':\n    x = torch.rand(3)\n",
            fixed="import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    x = torch.rand(3)\n",
        ),
        Invalid(
            '"""Train."""\nimport numpy as np\nimport torch\n\n\ndef main():\n'
            "    torch.manual_seed(0)\n    data = np.random.rand(10)\n\n\n"
            'if __name__ == "__main__":\n    main()\n',
            fixed='"""Train."""\nimport numpy as np\nimport torch\n\n\ndef main():\n'
            "    torch.manual_seed(0)\n    np.random.seed(0)\n"
            "    data = np.random.rand(10)\n\n\n"
            'if __name__ == "__main__":\n    main()\n',
            config={"seed": 1234},
            note="the program seeds torch but forgets numpy: numpy is seeded next to it, "
            "with the program's seed, not the configured one",
        ),
        Invalid(
            "import random\nfrom torch import nn\n\n\ndef main():\n    model = nn.Linear(2, 2)\n"
            "    random.shuffle(items)\n\n\nif __name__ == '__main__': main()\n",
            fixed="import random\nimport torch\nfrom torch import nn\n\n\ndef main():\n"
            "    model = nn.Linear(2, 2)\n    random.shuffle(items)\n\n\nif __name__ == '__main__':\n"
            "    torch.manual_seed(0)\n    random.seed(0)\n    main()\n",
            note="one finding for both generators; `import torch` is added",
        ),
        Invalid(
            "import torch\n\nif __name__ == '__main__':\n    torch.cuda.manual_seed_all(0)\n"
            "    model = torch.nn.Conv2d(3, 8, 3)\n",
            fixed="import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    torch.cuda.manual_seed_all(0)\n    model = torch.nn.Conv2d(3, 8, 3)\n",
            note="seeding CUDA leaves the CPU generator (weight init) unseeded",
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), 0.1)\n"
            "for x, y in batches:\n    loss = ((model(x) - y) ** 2).mean()\n    loss.backward()\n"
            "    opt.step()\n",
            fixed="import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 1)\n"
            "opt = torch.optim.SGD(model.parameters(), 0.1)\n"
            "for x, y in batches:\n    loss = ((model(x) - y) ** 2).mean()\n    loss.backward()\n"
            "    opt.step()\n",
            note="a top-level training script: seeds go after its imports",
        ),
        Invalid(
            "import argparse\nimport numpy as np\nimport torch\n\n\ndef set_seed(seed):\n"
            "    torch.manual_seed(seed)\n\n\nif __name__ == '__main__':\n"
            "    parser = argparse.ArgumentParser()\n    parser.add_argument('--seed', type=int, default=3)\n"
            "    args = parser.parse_args()\n    set_seed(args.seed)\n    noise = np.random.rand(4)\n",
            fixed="import argparse\nimport numpy as np\nimport torch\n\n\ndef set_seed(seed):\n"
            "    torch.manual_seed(seed)\n    np.random.seed(seed)\n\n\n"
            "if __name__ == '__main__':\n"
            "    parser = argparse.ArgumentParser()\n    parser.add_argument('--seed', type=int, default=3)\n"
            "    args = parser.parse_args()\n    set_seed(args.seed)\n    noise = np.random.rand(4)\n",
            note="seeds from the program: the missing seed joins the project's seeding helper",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank, world):\n"
            '    """Train on one device."""\n    model = torch.nn.Linear(2, 2)\n\n\n'
            "if __name__ == '__main__':\n    mp.spawn(worker, args=(2,), nprocs=2)\n",
            fixed="import torch\nimport torch.multiprocessing as mp\n\n\ndef worker(rank, world):\n"
            '    """Train on one device."""\n    torch.manual_seed(rank)\n'
            "    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    mp.spawn(worker, args=(2,), nprocs=2)\n",
            note="the work runs in spawned workers: the seeds go where it runs, with the "
            "process index (an int from mp.spawn) so workers differ",
        ),
        Invalid(
            "import torch\nfrom torch.utils.data import DataLoader\n\n\nclass Trainer:\n"
            "    def __init__(self, data):\n        self.loader = DataLoader(data, shuffle=True)\n\n\n"
            "if __name__ == '__main__':\n    Trainer(range(10))\n",
            note="a shuffling loader built by a constructor",
        ),
        Invalid(
            "import fire\nimport torch\n\n\ndef train(lr=0.1):\n    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    fire.Fire(train)\n",
            note="a command-line runner calls the function it is given",
        ),
        Invalid(
            "import numpy as np\nimport threading\n\n\ndef work():\n    np.random.shuffle(items)\n\n\n"
            "if __name__ == '__main__':\n    threading.Thread(target=work).start()\n",
            note="a thread's target is on the path",
        ),
        Invalid(
            "import argparse\nimport torch\nfrom torch.utils.data import DataLoader\n\n"
            "parser = argparse.ArgumentParser()\nparser.add_argument('--lr', type=float)\n"
            "args = parser.parse_args()\nloader = DataLoader(data, batch_size=8, shuffle=True)\n"
            "net = torch.nn.Linear(4, 2)\nopt = torch.optim.SGD(net.parameters(), lr=args.lr)\n\n\n"
            "def train(epoch):\n    for x, y in loader:\n        opt.zero_grad()\n"
            "        torch.nn.functional.mse_loss(net(x), y).backward()\n        opt.step()\n\n\n"
            "for epoch in range(10):\n    train(epoch)\n",
            note="a script that runs at module level: a loop calls the training function it "
            "defines",
        ),
        Invalid(
            "import numpy as np\nfrom sklearn.model_selection import train_test_split\n"
            "from torch import nn\n\n\ndef build(width):\n    return nn.Linear(width, 1)\n\n\n"
            "def fit(model, data):\n    return model\n\n\n"
            "train, test = train_test_split(np.arange(100), test_size=0.2)\n"
            "model = fit(build(4), train)\nprint(model)\n",
            note="module-level assignments call the file's own functions; scikit-learn "
            "without `random_state` draws from numpy's global generator",
        ),
        Invalid(
            "import numpy as np\nimport torch\n\nlabels = np.random.randint(0, 2, size=50)\n"
            "order = np.random.permutation(50)\nprint(labels[order], torch.randn(2))\n",
            note="a file that draws at module level is a script",
        ),
        Invalid(
            "from torch_geometric.nn import GCNConv\n\nif __name__ == '__main__':\n"
            "    conv = GCNConv(16, 2)\n",
            note="graph layers initialise their weights from torch's generator",
        ),
        Invalid(
            "import random\nimport fire\n\n\ndef sample(items):\n"
            "    return random.sample(items, 2)\n\n\ndef main(task, **kwargs):\n"
            "    globals()[task](**kwargs)\n\n\nif __name__ == '__main__':\n    fire.Fire(main)\n",
            note="`globals()[name](...)` may call any function of the module",
        ),
        Invalid(
            "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader\n\n\n"
            "def seed_worker(worker_id):\n    np.random.seed(torch.initial_seed() % 2**32)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    loader = DataLoader(data, num_workers=2, worker_init_fn=seed_worker)\n"
            "    noise = np.random.rand(3)\n",
            note="a worker_init_fn seeds the loader's workers, not the main process",
        ),
        Invalid(
            "import argparse\nimport torch\n\nif __name__ == '__main__':\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--seed', type=int, default=3)\n"
            "    args = parser.parse_args()\n    model = torch.nn.Linear(2, 2)\n",
            fixed="import argparse\nimport torch\n\nif __name__ == '__main__':\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--seed', type=int, default=3)\n"
            "    args = parser.parse_args()\n    torch.manual_seed(args.seed)\n"
            "    model = torch.nn.Linear(2, 2)\n",
            note="a seed option the program never uses: the seed is the user's, after parsing",
        ),
        Invalid(
            "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--manualSeed', type=int)\nopt = parser.parse_args()\n"
            "model = torch.nn.Linear(2, 2)\nopt_sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "model(torch.ones(1, 2)).sum().backward()\nopt_sgd.step()\n",
            fixed="import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--manualSeed', type=int)\nopt = parser.parse_args()\n"
            "torch.manual_seed(opt.manualSeed if opt.manualSeed is not None else 0)\n"
            "model = torch.nn.Linear(2, 2)\nopt_sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "model(torch.ones(1, 2)).sum().backward()\nopt_sgd.step()\n",
            note="an option without default: the configured seed is the fallback, a user's "
            "seed is never overridden",
        ),
        Invalid(
            "import argparse\nimport torch\nimport torch.multiprocessing as mp\n\n\n"
            "def worker(rank, args):\n    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--seed', type=int, default=3)\n"
            "    args = parser.parse_args()\n    mp.spawn(worker, args=(args,), nprocs=2)\n",
            fixed="import argparse\nimport torch\nimport torch.multiprocessing as mp\n\n\n"
            "def worker(rank, args):\n    torch.manual_seed(args.seed + rank)\n"
            "    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--seed', type=int, default=3)\n"
            "    args = parser.parse_args()\n    mp.spawn(worker, args=(args,), nprocs=2)\n",
            note="the spawned worker receives the options: it seeds with the user's seed, "
            "offset by its process index",
        ),
        Invalid(
            "import torch\n\nif __name__ == '__main__':\n    # one linear layer\n"
            "    model = torch.nn.Linear(2, 2)\n",
            fixed="import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    # one linear layer\n    model = torch.nn.Linear(2, 2)\n",
            note="the seed goes above the comment that describes the first statement",
        ),
        Invalid(
            "import numpy as np\nimport torch\n\n\ndef subprocess_fn(rank, num_gpus):\n"
            "    latents = np.random.randn(8, 512)\n"
            "    noise = torch.randn(8, 512, device=torch.device('cuda', rank))\n\n\n"
            "def calc_metrics(num_gpus):\n    if num_gpus == 1:\n"
            "        subprocess_fn(rank=0, num_gpus=num_gpus)\n    else:\n"
            "        torch.multiprocessing.spawn(fn=subprocess_fn, args=(num_gpus,), "
            "nprocs=num_gpus)\n\n\nif __name__ == '__main__':\n    calc_metrics(1)\n",
            fixed="import numpy as np\nimport torch\n\n\ndef subprocess_fn(rank, num_gpus):\n"
            "    torch.manual_seed(rank)\n    np.random.seed(rank)\n"
            "    latents = np.random.randn(8, 512)\n"
            "    noise = torch.randn(8, 512, device=torch.device('cuda', rank))\n\n\n"
            "def calc_metrics(num_gpus):\n    if num_gpus == 1:\n"
            "        subprocess_fn(rank=0, num_gpus=num_gpus)\n    else:\n"
            "        torch.multiprocessing.spawn(fn=subprocess_fn, args=(num_gpus,), "
            "nprocs=num_gpus)\n\n\nif __name__ == '__main__':\n    calc_metrics(1)\n",
            note="the worker also runs in the main process, called with rank 0: its seeds "
            "cover both, and every rank draws its own samples",
        ),
        Invalid(
            "import torch\nimport torch.multiprocessing as mp\n"
            "from torch.utils.data import DataLoader\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n\n"
            "def main(rank, world_size):\n"
            "    data = [(torch.rand(20), torch.rand(1)) for _ in range(64)]\n"
            "    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))\n\n\n"
            "if __name__ == '__main__':\n    mp.spawn(main, args=(2,), nprocs=2)\n",
            fixed="import torch\nimport torch.multiprocessing as mp\n"
            "from torch.utils.data import DataLoader\n"
            "from torch.utils.data.distributed import DistributedSampler\n\n\n"
            "def main(rank, world_size):\n    torch.manual_seed(0)\n"
            "    data = [(torch.rand(20), torch.rand(1)) for _ in range(64)]\n"
            "    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))\n\n\n"
            "if __name__ == '__main__':\n    mp.spawn(main, args=(2,), nprocs=2)\n",
            note="a DistributedSampler splits one dataset across the ranks: every rank must "
            "build the same one, so the ranks share a seed",
        ),
        Invalid(
            _ACCELERATE,
            fixed="import os\n\n"
            + _ACCELERATE.replace(
                "    train()", '    torch.manual_seed(int(os.environ.get("RANK", 0)))\n    train()'
            ),
            note="`accelerate launch` runs the script once per process: each seeds with its "
            "rank, so the processes draw different batches (the prepared model starts from "
            "rank 0's weights)",
        ),
        Invalid(
            "import torch\nfrom mpi4py import MPI\n\n\ndef main():\n"
            "    shard = MPI.COMM_WORLD.Get_rank()\n    noise = torch.randn(8)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            fixed="import torch\nfrom mpi4py import MPI\n\n\ndef main():\n"
            "    shard = MPI.COMM_WORLD.Get_rank()\n    noise = torch.randn(8)\n\n\n"
            "if __name__ == '__main__':\n    torch.manual_seed(MPI.COMM_WORLD.Get_rank())\n"
            "    main()\n",
            note="`mpiexec` runs the script once per process: each seeds with its MPI rank",
        ),
        Invalid(
            "import numpy as np\n\nSCORERS = dict()\n\n\ndef scorer(fn):\n"
            "    SCORERS[fn.__name__] = fn\n    return fn\n\n\n@scorer\ndef sample_score(data):\n"
            "    return np.random.choice(data, 2)\n\n\ndef evaluate(name, data):\n"
            "    return SCORERS[name](data)\n\n\n"
            "if __name__ == '__main__':\n    print(evaluate('sample_score', [1, 2, 3]))\n",
            fixed="import numpy as np\n\nSCORERS = dict()\n\n\ndef scorer(fn):\n"
            "    SCORERS[fn.__name__] = fn\n    return fn\n\n\n@scorer\ndef sample_score(data):\n"
            "    return np.random.choice(data, 2)\n\n\ndef evaluate(name, data):\n"
            "    return SCORERS[name](data)\n\n\n"
            "if __name__ == '__main__':\n    np.random.seed(0)\n"
            "    print(evaluate('sample_score', [1, 2, 3]))\n",
            note="a call through a registry a decorator fills runs one of its functions",
        ),
        Invalid(
            "import numpy as np\nimport torch\n\n\ndef main():\n    npr = np.random\n"
            "    torch.manual_seed(0)\n    return npr.rand(3)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            note="a function's alias of numpy.random resolves as written",
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 1)\n\n\n"
            "if __name__ == '__main__':\n    net = Net()\n"
            "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
            "    net(torch.randn(8, 4)).sum().backward()\n    opt.step()\n",
            note="a model file whose __main__ block trains",
        ),
        Invalid(
            "import torch\n\nif __name__ == '__main__':\n    model = torch.nn.Linear(4, 1)\n"
            "    if args.resume:\n        model.load_state_dict(torch.load(args.resume))\n"
            "    model(torch.ones(1, 4))\n",
            note="the checkpoint overwrites the weights only on one path",
        ),
    )
    VALID = (
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n"
            "    x = torch.rand(3)\n",
            note="seeded in the __main__ block",
        ),
        Valid(
            "import torch\n\n\ndef seed_all(seed):\n    torch.manual_seed(seed)\n\n\ndef main():\n"
            "    seed_all(1)\n    model = torch.nn.Linear(2, 2)\n\n\n"
            "if __name__ == '__main__':\n    main()\n",
            note="seeded in a helper, transitively",
        ),
        Valid(
            "import lightning as L\nimport torch\n\nif __name__ == '__main__':\n"
            "    L.seed_everything(42)\n    model = torch.nn.Linear(2, 2)\n",
            note="Lightning's helper seeds torch, numpy and random",
        ),
        Valid(
            "from pytorch_lightning import seed_everything\nimport numpy as np\n"
            "seed_everything(7)\nX = np.random.rand(10, 2)\nmodel.fit(X)\n",
        ),
        Valid(
            "from transformers import set_seed\nimport torch, random\n\n"
            "if __name__ == '__main__':\n    set_seed(0)\n    random.shuffle(rows)\n"
            "    model = torch.nn.Linear(2, 2)\n",
            note="Hugging Face's helper",
        ),
        Valid(
            "from accelerate.utils import set_seed\nimport torch\n\n"
            "if __name__ == '__main__':\n    set_seed(0)\n    torch.randn(3)\n",
        ),
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    if args.seed is not None:\n"
            "        torch.manual_seed(args.seed)\n    x = torch.rand(3)\n",
            note="opt-in seeding counts",
        ),
        Valid(
            "import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2)\n",
            note="a library module: no entry point",
        ),
        Valid(
            "import numpy as np\nimport pandas as pd\n\nif __name__ == '__main__':\n"
            "    rng = np.random.default_rng(0)\n    x = rng.random(10)\n"
            "    df = pd.DataFrame({'x': x}).sample(frac=1, random_state=0)\n",
            note="look-alikes: a seeded Generator's draws and pandas' sample",
        ),
        Valid(
            "import torchvision\n\nif __name__ == '__main__':\n"
            "    model = torchvision.models.resnet18(weights='DEFAULT').eval()\n",
            note="pretrained weights replace the random initial ones",
        ),
        Valid(
            "import torch\n\nif __name__ == '__main__':\n    g = torch.Generator().manual_seed(0)\n"
            "    x = torch.rand(3, generator=g)\n",
            note="an explicit generator is not the global one",
        ),
        Valid(
            "import torch\nfrom mylib.seeding import seed_all\n\nif __name__ == '__main__':\n"
            "    seed_all(3)\n    model = torch.nn.Linear(2, 2)\n",
            config={"seed-functions": ["mylib.seeding.seed_all"]},
            note="a configured seeding function",
        ),
        Valid(
            "import torch\nfrom transformers import Trainer\n\nif __name__ == '__main__':\n"
            "    trainer = Trainer(model=model, args=args)\n    trainer.train()\n"
            "    noise = torch.randn(3)\n",
            note="the Hugging Face Trainer seeds in its constructor",
        ),
        Valid(
            "import typer\nimport torch\n\n\ndef train(seed: int = 0):\n    torch.manual_seed(seed)\n"
            "    model = torch.nn.Linear(2, 2)\n\n\nif __name__ == '__main__':\n    typer.run(train)\n",
            note="seeded in the function a command-line runner calls",
        ),
        Valid(
            "import random\n\nif __name__ == '__main__':\n    random.seed()\n    random.random()\n",
            note="seeded from entropy: RPL103's business, not a missing seed",
        ),
        Valid(
            "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.fc = torch.nn.Linear(4, 1)\n\n\n"
            "if __name__ == '__main__':\n    model = Model()\n"
            "    model = torch.nn.DataParallel(model).to('cuda')\n"
            "    model.load_state_dict(torch.load('best.pth'))\n    with torch.no_grad():\n"
            "        print(model(torch.ones(1, 4)))\n",
            note="the checkpoint overwrites every initial weight before use",
        ),
        Valid(
            "import torch\nimport torchvision\n\nif __name__ == '__main__':\n"
            "    model = torchvision.models.resnet18()\n    model.fc = torch.nn.Linear(512, 10)\n"
            "    model.load_state_dict(torch.load('best.pth'))\n    with torch.no_grad():\n"
            "        print(model(torch.ones(1, 3, 224, 224)))\n",
            note="a new head, then the whole model's weights loaded",
        ),
        Valid(
            "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3)\n\n"
            "    def forward(self, x):\n        return self.conv(x)\n\n\n"
            "if __name__ == '__main__':\n    y = Block()(torch.randn(1, 3, 32, 32))\n"
            "    print(y.shape)\n",
            note="a model file's smoke test: random inputs through the model, no training",
        ),
        Valid(
            "import os\nimport random\n\nif __name__ == '__main__':\n"
            "    os.environ['MASTER_PORT'] = str(random.randint(20000, 30000))\n",
            note="a random free port for the process group is not data",
        ),
        Valid(
            "import argparse\nimport random\n\nif __name__ == '__main__':\n"
            "    args = argparse.ArgumentParser().parse_args()\n"
            "    args.dist_url = f'tcp://localhost:{random.randrange(49152, 65535)}'\n",
            note="nor is the address the process group meets at",
        ),
        Valid(
            "import random\nimport torch\n\nif __name__ == '__main__':\n"
            "    seed = random.randint(0, 10000)\n    torch.manual_seed(seed)\n"
            "    model = torch.nn.Linear(2, 2)\n",
            note="the draw derives the seed: an entropy seed is RPL103's finding",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader\n\nif __name__ == '__main__':\n"
            "    loader = DataLoader(data, batch_size=4, num_workers=4)\n"
            "    for batch in loader:\n        print(batch)\n",
            note="an unshuffled loader's worker seeds matter only to workers that draw",
        ),
        Valid(
            "from mypkg.registry import Registry\n\n\nclass Table:\n    pass\n\n\n"
            "MODELS = Registry('models')\nDEFAULTS = Table()\n",
            note="a library module's top-level code registers, it does not run a program",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        for entry in program.entries:
            if entry.smoke:
                continue
            used = entry.profile.used()
            seeded = entry.seeded
            if not seeded:
                # Workers in fresh interpreters that seed nothing either: seeding the parent
                # first lets RPL107 carry the seeds into them.
                for _, worker in entry.workers:
                    for family, chain in worker.unseeded().items():
                        used.setdefault(family, chain)
            missing = [family for family in FAMILIES if family in used and family not in seeded]
            if not missing:
                continue
            names = ", ".join(f"`{family}`" for family in missing)
            places = ", ".join(program.where(used[family][-1]) for family in missing)
            # numpy consumed only by scikit-learn calls that RPL105's fix gives
            # `random_state=`: seeding it would add nothing.
            seeding = [f for f in missing if not _only_estimators(program, entry, f)]
            edits = cls._fix(program, entry, seeding) if seeding else ()
            yield ProjectReport(
                entry.unit,
                entry.statement,
                f"This entry point never seeds {names} (consumed at {places})",
                edits=edits,
                fix_safety=FixSafety.SAFE if edits else None,
                fix_title=cls._title(program, entry) if edits else None,
            )

    @staticmethod
    def _title(program: Program, entry: EntryPoint) -> str | None:
        """Where the fix goes when it is not the start of the entry point."""
        seeded = program.program_seed(entry)
        if seeded is None:
            return None
        row = seeded.unit.statement(seeded.statement)[0]
        return (
            f"Seed them next to the program's own seed ({seeded.unit.filename}:{row}), "
            "with its value"
        )

    @staticmethod
    def _fix(program: Program, entry: EntryPoint, families: list[str]) -> tuple[Edit, ...]:
        seeded = program.program_seed(entry)
        if seeded is not None:
            # The program seeds some generators already: the others go right after, with
            # the same seed (its argument, option or config field), in one block.
            unit = seeded.unit
            placement = program.after(unit, seeded.statement)
            made = program.seed_lines(unit, families, placement.at.row, value=seeded.text)
            if made is None:
                return ()
            return program.insert(placement, *made, finding=entry.unit) or ()
        placements = program.placements(entry)
        option = program.option_seed(entry)
        if option is not None and [p.spawn for p in placements] == [None]:
            # The program has a seed option but never seeds: seed with it, right after
            # the options are parsed (plus the rank of a process its launcher starts).
            placement, value = option
            launched = program.launch_rank(entry, placement)
            made = program.seed_lines(
                placement.unit,
                families,
                placement.at.row,
                launched[0] if launched is not None else None,
                value=value,
            )
            if made is None:
                return ()
            made = _with_import(made, launched)
            return program.insert(placement, *made, finding=entry.unit) or ()
        edits: list[Edit] = []
        workers = [p for p in placements if p.spawn is not None]
        used = {spawn: worker.used() for spawn, worker in entry.workers}
        for placement in placements:
            # Each process seeds what it consumes itself.
            if placement.spawn is None:
                mine = program.main_families(entry, workers) if workers else set(families)
            else:
                mine = set(used.get(placement.spawn, families))
            wanted = [family for family in families if family in mine]
            if not wanted:
                continue
            offset = program.rank(placement)
            launched = None if offset is not None else program.launch_rank(entry, placement)
            if launched is not None:
                offset = launched[0]
            # A worker that receives the parsed options seeds with the user's seed.
            user = program.option_value(entry, placement.params) if placement.spawn else None
            made = program.seed_lines(placement.unit, wanted, placement.at.row, offset, value=user)
            if made is None:
                return ()
            made = _with_import(made, launched)
            found = program.insert(placement, *made, finding=entry.unit)
            if found is None:
                return ()
            edits.extend(found)
        return tuple(edits)


def _with_import(
    made: tuple[list[str], list[str]], launched: tuple[str, str | None] | None
) -> tuple[list[str], list[str]]:
    """Seed lines and their imports, with the import the launcher's rank needs."""
    if launched is None or launched[1] is None or launched[1] in made[1]:
        return made
    return made[0], [*made[1], launched[1]]


def _only_estimators(program: Program, entry: EntryPoint, family: str) -> bool:
    """Whether every use of ``family`` on the entry point's path that is known is a
    scikit-learn call without `random_state` in a file where RPL105 gives it one."""
    profile = entry.profile
    chains = [
        *(chain for chain in (profile.use.get(family), profile.later_use.get(family)) if chain),
        *(chain for _, chain in profile.exposed.get(family, ())),
        *(chain for _, worker in entry.workers if (chain := worker.used().get(family))),
    ]
    return bool(chains) and all(
        chain[-1][3] in (rng.SKLEARN, rng.ESTIMATOR)
        and _RANDOM_STATE in program.units[chain[-1][0]].codes
        for chain in chains
    )
