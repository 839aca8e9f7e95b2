"""RPL301: a multi-worker DataLoader without ``worker_init_fn`` whose workers may repeat each
other's random numbers."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from repro_lint.datasets import Judge, Loader, Randomness, contexts, data, loaders, span
from repro_lint.diagnostics import Edit, FixSafety, Location
from repro_lint.loaders import GENERATOR_KINDS, GENERATORS_SINCE, HELPER
from repro_lint.program import Program, ProjectReport, ProjectRule, Unit, numpy_noqa
from repro_lint.randomness import FAMILIES
from repro_lint.rule import Invalid, Valid
from repro_lint.torch_versions import TorchVersion

# Workers seed random, numpy and torch themselves since this release (pytorch/pytorch#56488).
WORKERS_RESEED = TorchVersion(1, 9)
# Random number libraries the fix reseeds, with the call that does it.
LIBRARY_SEEDS = {
    "imgaug": "imgaug.random.seed",
    "cupy": "cupy.random.seed",
    "tensorflow": "tensorflow.random.set_seed",
}
# Generator kinds -> how the fix gives a dataset's generator the worker's seed.
_RESEED = {
    "numpy": "dataset.{name} = {default_rng}(worker_seed)",
    "numpy-legacy": "dataset.{name}.seed(worker_seed)",
    "random": "dataset.{name}.seed(worker_seed)",
    "torch": "dataset.{name}.manual_seed(worker_seed)",
}
# Rank r's workers get seeds 65536 * r apart: distinct for any realistic number of workers.
_RANK_STRIDE = 65536


@dataclass
class _Finding:
    loader: Loader
    message: str
    randomness: Randomness
    distributed: bool
    fixable: bool
    # How the workers' streams collide: "owned" (a generator object), "library", "ranks"
    # (one seed on every rank), "old" (numpy's state before torch 1.9) or "general".
    kind: str = "general"
    # Distributed, and every rank seeds alike: worker k's global generators are the same on
    # every rank, whatever else collides.
    shared: bool = False


class DataloaderWorkerRng(ProjectRule):
    """
    ## What it does
    Flags a DataLoader (`torch.utils.data.DataLoader` under any alias, a project subclass of
    it, a `functools.partial` of it, torchdata's `StatefulDataLoader`, PyG's `DataLoader`)
    whose `num_workers` may be above zero (a literal, a variable, a config value,
    `os.cpu_count()`, or a `**kwargs` dict built in the same scope) and that has no
    `worker_init_fn`, when the random numbers its workers draw may repeat.

    The dataset is followed to its class, across files: through what a project function
    returns (`dataset, n = build_dataset(args)` included), what `self.<attribute>` is
    set to in another method (a data module's `setup`), what every known caller passes
    for a parameter (a trainer given its dataset), `random_split`, `Subset`,
    `ConcatDataset` (also of a list built with `append`), `with Images(...) as dataset`
    (a project class whose `__enter__` returns `self`) and names from star imports;
    then to its `__getitem__` (or `__iter__`), the methods and functions they call, the
    transforms it builds or is given (a transform parameter through its callers, or one
    set on the dataset after it was built: `train_set.transform = Compose([...])`). Draws
    under `if self.<switch>:` (or `==`/`is None` tests) are skipped for an instance
    whose constructor argument, or its default, turns the switch off
    (`Clips(random_segments=False)`, `Images(mode="val")`). The message says how the
    workers' random streams collide:

    - the dataset or one of its transforms owns a generator object (a numpy `Generator` or
      `RandomState`, `random.Random`, `torch.Generator`), or uses a module-level one: every
      worker starts from a copy of the same state;
    - it uses a random number library PyTorch does not reseed (`imgaug`, `cupy.random`,
      `tensorflow.random`);
    - the run is distributed (`torch.distributed`, DDP, a `DistributedSampler`, Lightning's
      `Trainer(strategy="ddp")`, called in the loader's file or in code the program runs: a
      library module it imports whose distributed loader it never uses does not count) and
      every rank seeds torch with one seed: worker *k* of every rank gets the same base seed;
    - the target torch is older than 1.9, where workers share numpy's global state.

    When the dataset cannot be resolved (a library dataset other than torchvision's and
    torchaudio's, a parameter nobody is seen to pass), a shuffling loader is reported
    with the general message: the PyTorch notes recommend a `worker_init_fn` for every
    multi-worker loader.

    ## When it does not fire
    - `num_workers` absent, `0`, or a name bound to `0`: everything runs in the main process.
    - A `worker_init_fn` is passed (also through a `**kwargs` dict, or by the project
      subclass), or a `**mapping` the rule cannot see may hold one.
    - MONAI's `DataLoader` (it installs its own `worker_init_fn`), or the program calls
      Lightning's `seed_everything(..., workers=True)` (Lightning then gives every loader a
      worker seed that mixes in the rank), or a Fabric object's `seed_everything(...)`,
      whose `workers` defaults to True.
    - The dataset is a `TensorDataset`, a torchvision/torchaudio dataset, or a project class
      whose worker code draws no random numbers or draws only from the global `torch`,
      `numpy` and `random` generators: since torch 1.9 each worker reseeds those three from
      `base_seed + worker_id`, so their streams already differ (and repeat with the seed).
      A dataset owning a generator it never uses in its worker methods is quiet too.
    - The dataset cannot be resolved and the loader does not shuffle (an evaluation loader),
      or `dataloader-worker-rng = "when-proven"`; also in distributed code and for a target
      torch before 1.9, where only a dataset known to draw random numbers proves a collision.
    - Distributed code whose ranks seed differently (`torch.manual_seed(seed + rank)`,
      `seed = args.seed + utils.get_rank()` then `torch.manual_seed(seed)`, a project
      seeding helper given the rank, or a loader `generator=` that mixes in the rank), or
      that never seeds torch (each process then draws a fresh base seed); a seeding helper
      defined in a file the program imports but never called is no seed.

    ## Why is this bad?
    Each worker process starts as a copy of the main process. PyTorch reseeds the global
    `torch`, `numpy` and `random` generators in each worker (since 1.9), but nothing else: a
    generator object held by the dataset is copied as is, so all workers produce the same
    "random" augmentations, and (without persistent workers) every epoch repeats them. With
    one seed on every rank, the same happens across ranks. Results still repeat run to
    run, but the randomness the experiment relies on is not there.

    ## Fix safety
    Safe: `worker_init_fn=seed_worker` is added to the loader and `seed_worker` is defined
    once per module, as in the PyTorch recipe, with only what the workers need: it gives
    the dataset's own generator attributes a seed from `torch.initial_seed()` (distinct per
    worker, repeatable for a seeded run; through `torch.utils.data.get_worker_info().dataset`,
    looking inside `Subset`s) and reseeds `imgaug`/`cupy`/`tensorflow` when the dataset uses
    them. It reseeds numpy's and Python's global generators only where PyTorch's own
    reseeding falls short: numpy's before torch 1.9, and, in distributed code whose ranks
    seed alike, torch's and every global generator the dataset draws from (or may, when it
    cannot be resolved), with the rank mixed in (`torch.distributed.get_rank()`).
    torchvision's random transforms draw from torch alone from torchvision 0.8 (torch 1.7)
    on, but for `RandomChoice` and `RandomOrder`, which pick with `random`. When the
    ranks seed alike and a rank-named variable is in scope (torch 1.6 and later), the loader
    gets a generator that adds the rank to the program's seed instead
    (`generator=torch.Generator().manual_seed(args.seed + rank)`, the edit
    `dataloader-missing-generator` writes): the workers' base seeds, from which PyTorch
    reseeds every global generator, then differ per rank. It changes which random numbers
    the workers draw, which is the point, and nothing else. The helper goes after the
    module's imports and constants (also after imports that follow a call such as
    `warnings.simplefilter(...)`) with two blank lines on each side (PEP 8), never between
    the statements of a script. A module that already defines `seed_worker` keeps its own.
    No fix is offered for the general recommendation (a dataset that cannot be resolved,
    torch 1.9 or later, ranks not seeded alike): every worker already reseeds the global
    generators, so the recipe's helper would have nothing to do; nor when the colliding
    generator belongs to a transform object or a module (the helper cannot reach it), or
    when the loader is a project subclass whose `__init__` takes no `worker_init_fn` (nor
    `**kwargs`).

    ## Options
    `dataloader-worker-rng` (`"always"`, default, or `"when-proven"`): with `"when-proven"`
    only the collisions above are reported, not the general recommendation.

    ## Known limitations
    Callers are known only in the files of the run and those they import; a dataset
    parameter of a function no such file calls counts as unresolved. Switches are read
    from literal constructor arguments and defaults only. Library code other than the
    random number libraries above is assumed not to own generators. A project
    DataLoader subclass or `partial` is recognised when it is called in a file that mentions
    `Loader`, `loader` or `num_workers`, or that an entry point reaches.

    ## References
    - PyTorch: "Reproducibility", DataLoader section (`seed_worker`, `generator`)
    - PyTorch: `torch.utils.data` "Randomness in multi-process data loading"
    - pytorch/pytorch#5059 (numpy state shared by workers before 1.9);
      huggingface/transformers#37932 (identical worker seeds across ranks)
    """

    CODE = "RPL301"
    MESSAGE = "Multi-worker DataLoader without `worker_init_fn`: workers may repeat randomness"
    FIX_TITLE = "Pass `worker_init_fn=seed_worker` and define `seed_worker`"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("Loader", "loader", "num_workers")
    INVALID = (
        Invalid(
            "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Noisy(Dataset):\n    def __init__(self):\n        self.rng = np.random.default_rng(0)\n\n"
            "    def __len__(self):\n        return 8\n\n    def __getitem__(self, index):\n"
            "        return self.rng.normal()\n\n\n"
            "loader = DataLoader(Noisy(), batch_size=2, num_workers=2)\n",
            fixed="import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "def seed_worker(worker_id: int) -> None:\n"
            '    """Reseed what PyTorch does not reseed in each DataLoader worker."""\n'
            "    worker_seed = torch.initial_seed() % 2**32\n"
            "    dataset = torch.utils.data.get_worker_info().dataset\n"
            "    while isinstance(dataset, torch.utils.data.Subset):\n"
            "        dataset = dataset.dataset\n"
            "    dataset.rng = np.random.default_rng(worker_seed)\n\n\n"
            "class Noisy(Dataset):\n    def __init__(self):\n        self.rng = np.random.default_rng(0)\n\n"
            "    def __len__(self):\n        return 8\n\n    def __getitem__(self, index):\n"
            "        return self.rng.normal()\n\n\n"
            "loader = DataLoader(Noisy(), batch_size=2, num_workers=2, worker_init_fn=seed_worker)\n",
            note="the dataset owns a numpy Generator: every worker draws the same numbers",
        ),
        Invalid(
            "import torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Noisy(Dataset):\n    def __getitem__(self, index):\n        return torch.rand(1)\n\n\n"
            "dist.init_process_group('nccl')\ntorch.manual_seed(0)\n"
            "loader = DataLoader(Noisy(), batch_size=2, num_workers=2)\n",
            note="distributed, one seed on every rank: worker k of each rank draws alike",
        ),
        Invalid(
            "import numpy as np\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Noisy(Dataset):\n    def __getitem__(self, index):\n        return np.random.rand()\n\n\n"
            "loader = DataLoader(Noisy(), batch_size=2, num_workers=2)\n",
            config={"target-torch": "1.8"},
            note="before torch 1.9 workers share numpy's global state",
        ),
        Invalid(
            "from torch.utils.data import DataLoader\n\n\ndef train_loader(dataset, workers):\n"
            "    return DataLoader(dataset, batch_size=8, shuffle=True, num_workers=workers)\n",
            note="the dataset cannot be resolved: the general recommendation",
        ),
        Invalid(
            "import random\n\nfrom lightning.pytorch import Trainer, seed_everything\n"
            "from torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Clips(Dataset):\n    def __len__(self):\n        return 100\n\n"
            "    def __getitem__(self, index):\n        return random.uniform(0, 10)\n\n\n"
            "if __name__ == '__main__':\n"
            "    loader = DataLoader(Clips(), batch_size=4, shuffle=True, num_workers=8)\n"
            "    seed_everything(666)\n"
            "    Trainer(strategy='ddp').fit(model, train_dataloaders=loader)\n",
            note="Lightning DDP with one seed on every rank",
        ),
        Invalid(
            "import argparse\nimport random\n\nimport torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset\n\nBATCH = 16\n\n"
            "# Training settings\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--workers', type=int, default=4)\nargs = parser.parse_args()\n"
            "dist.init_process_group('nccl')\ntorch.manual_seed(1)\n\n\n"
            "class Crops(Dataset):\n    def __len__(self):\n        return 64\n\n"
            "    def __getitem__(self, index):\n        return random.randint(0, 9)\n\n\n"
            "loader = DataLoader(Crops(), BATCH, shuffle=True, num_workers=args.workers)\n",
            fixed="import argparse\nimport random\n\nimport torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset\n\nBATCH = 16\n\n\n"
            "def seed_worker(worker_id: int) -> None:\n"
            '    """Reseed what PyTorch does not reseed in each DataLoader worker."""\n'
            "    rank = dist.get_rank() if dist.is_initialized() else 0\n"
            "    worker_seed = (torch.initial_seed() + 65536 * rank) % 2**32\n"
            "    torch.manual_seed(worker_seed)\n    random.seed(worker_seed)\n\n\n"
            "# Training settings\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--workers', type=int, default=4)\nargs = parser.parse_args()\n"
            "dist.init_process_group('nccl')\ntorch.manual_seed(1)\n\n\n"
            "class Crops(Dataset):\n    def __len__(self):\n        return 64\n\n"
            "    def __getitem__(self, index):\n        return random.randint(0, 9)\n\n\n"
            "loader = DataLoader(Crops(), BATCH, shuffle=True, num_workers=args.workers,\n"
            "                    worker_init_fn=seed_worker)\n",
            note="a script: the helper goes after the imports and constants, not mid-script",
        ),
        Invalid(
            "import h5py\nimport numpy as np\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Frames(Dataset):\n    def __init__(self, path):\n        self.path = path\n"
            "        self.rng = np.random.default_rng(0)\n\n"
            "    def __enter__(self):\n        self.file = h5py.File(self.path, 'r')\n"
            "        return self\n\n"
            "    def __exit__(self, *exc):\n        self.file.close()\n\n"
            "    def __getitem__(self, index):\n"
            "        return self.file['images'][index] * self.rng.uniform(0.9, 1.1)\n\n\n"
            "with Frames('train.h5') as frames:\n"
            "    loader = DataLoader(frames, shuffle=True, num_workers=4)\n",
            note="`__enter__` returns the dataset, whose generator every worker copies",
        ),
        Invalid(
            "import numpy as np\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Blurred(Dataset):\n    def __len__(self):\n        return 8\n\n"
            "    def __getitem__(self, index):\n        return np.random.uniform(0.1, 2.0)\n\n\n"
            "loader = DataLoader(Blurred(), batch_size=2, shuffle=True, num_workers=2)\n",
            fixed="import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "def seed_worker(worker_id: int) -> None:\n"
            '    """Reseed what PyTorch does not reseed in each DataLoader worker."""\n'
            "    worker_seed = torch.initial_seed() % 2**32\n"
            "    np.random.seed(worker_seed)\n\n\n"
            "class Blurred(Dataset):\n    def __len__(self):\n        return 8\n\n"
            "    def __getitem__(self, index):\n        return np.random.uniform(0.1, 2.0)\n\n\n"
            "loader = DataLoader(Blurred(), batch_size=2, shuffle=True, num_workers=2,\n"
            "                    worker_init_fn=seed_worker)\n",
            config={"target-torch": "1.4"},
            note="torch 1.4 reseeds `random` and torch in workers, not numpy: numpy only",
        ),
        Invalid(
            "import torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset, DistributedSampler\n\n\n"
            "class Views(Dataset):\n    def __len__(self):\n        return 64\n\n"
            "    def __getitem__(self, index):\n        return torch.rand(3)\n\n\n"
            "def main(gpu, args):\n    rank = args.nr * args.gpus + gpu\n"
            "    dist.init_process_group('nccl', rank=rank, world_size=args.world_size)\n"
            "    torch.manual_seed(args.seed)\n    dataset = Views()\n"
            "    sampler = DistributedSampler(dataset, num_replicas=args.world_size, rank=rank)\n"
            "    return DataLoader(dataset, batch_size=64, num_workers=args.workers, sampler=sampler)\n",
            fixed="import torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset, DistributedSampler\n\n\n"
            "class Views(Dataset):\n    def __len__(self):\n        return 64\n\n"
            "    def __getitem__(self, index):\n        return torch.rand(3)\n\n\n"
            "def main(gpu, args):\n    rank = args.nr * args.gpus + gpu\n"
            "    dist.init_process_group('nccl', rank=rank, world_size=args.world_size)\n"
            "    torch.manual_seed(args.seed)\n    dataset = Views()\n"
            "    sampler = DistributedSampler(dataset, num_replicas=args.world_size, rank=rank)\n"
            "    return DataLoader(dataset, batch_size=64, num_workers=args.workers, sampler=sampler,\n"
            "                      generator=torch.Generator().manual_seed(args.seed + rank))\n",
            note="ranks seeded alike, the rank in scope: a generator per rank sets the workers apart",
        ),
        Invalid(
            "import warnings\nwarnings.simplefilter(action='ignore', category=FutureWarning)\n"
            "import random\n\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n"
            "torch.backends.cudnn.benchmark = True\n\n\n"
            "class Clips(Dataset):\n    def __init__(self, seed):\n"
            "        self.rng = random.Random(seed)\n\n"
            "    def __len__(self):\n        return 64\n\n"
            "    def __getitem__(self, index):\n        return self.rng.randint(0, 9)\n\n\n"
            "def train(h):\n"
            "    loader = DataLoader(Clips(h.seed), batch_size=16, num_workers=h.num_workers)\n",
            fixed="import warnings\nwarnings.simplefilter(action='ignore', category=FutureWarning)\n"
            "import random\n\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "def seed_worker(worker_id: int) -> None:\n"
            '    """Reseed what PyTorch does not reseed in each DataLoader worker."""\n'
            "    worker_seed = torch.initial_seed() % 2**32\n"
            "    dataset = torch.utils.data.get_worker_info().dataset\n"
            "    while isinstance(dataset, torch.utils.data.Subset):\n"
            "        dataset = dataset.dataset\n"
            "    dataset.rng.seed(worker_seed)\n\n\n"
            "torch.backends.cudnn.benchmark = True\n\n\n"
            "class Clips(Dataset):\n    def __init__(self, seed):\n"
            "        self.rng = random.Random(seed)\n\n"
            "    def __len__(self):\n        return 64\n\n"
            "    def __getitem__(self, index):\n        return self.rng.randint(0, 9)\n\n\n"
            "def train(h):\n"
            "    loader = DataLoader(Clips(h.seed), batch_size=16, num_workers=h.num_workers,\n"
            "                        worker_init_fn=seed_worker)\n",
            note="a warnings filter between the imports: the helper still goes after all of them",
        ),
    )
    VALID = (
        Valid(
            "import numpy as np\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Noisy(Dataset):\n    def __init__(self):\n        self.rng = np.random.default_rng(0)\n\n"
            "    def __getitem__(self, index):\n        return self.rng.normal()\n\n\n"
            "loader = DataLoader(Noisy(), batch_size=2)\n",
            note="no workers: everything runs in the main process",
        ),
        Valid(
            "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Noisy(Dataset):\n    def __getitem__(self, index):\n"
            "        return torch.rand(1) + np.random.rand()\n\n\n"
            "loader = DataLoader(Noisy(), batch_size=2, shuffle=True, num_workers=2)\n",
            note="only the global generators, which every worker reseeds (torch >= 1.9)",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
            "dataset = TensorDataset(torch.zeros(8, 3))\n"
            "loader = DataLoader(dataset, batch_size=2, shuffle=True, num_workers=2)\n",
            note="a TensorDataset draws no random numbers",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n\ndef evaluate(dataset):\n"
            "    return DataLoader(dataset, batch_size=64, num_workers=4)\n",
            note="an unresolved dataset in a loader that does not shuffle (evaluation)",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n\ndef train_loader(dataset, workers):\n"
            "    return DataLoader(dataset, batch_size=8, shuffle=True, num_workers=workers)\n",
            config={"dataloader-worker-rng": "when-proven"},
            note="an unresolved dataset proves no collision",
        ),
        Valid(
            "import torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Noisy(Dataset):\n    def __getitem__(self, index):\n        return torch.rand(1)\n\n\n"
            "dist.init_process_group('nccl')\ntorch.manual_seed(0 + dist.get_rank())\n"
            "loader = DataLoader(Noisy(), batch_size=2, num_workers=2)\n",
            note="distributed, each rank seeded differently",
        ),
        Valid(
            "from torch.utils.data import DataLoader\n\n\ndef train_loader(dataset, seed_worker):\n"
            "    return DataLoader(\n        dataset, shuffle=True, num_workers=4, worker_init_fn=seed_worker\n    )\n",
            note="a `worker_init_fn` is given",
        ),
        Valid(
            "import torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader\n"
            "from torchvision import datasets, transforms\n\n\n"
            "def build_dataset(args):\n"
            "    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])\n"
            "    return datasets.ImageFolder(args.data_path, transform=tf), 1000\n\n\n"
            "def main(args):\n    dist.init_process_group('nccl')\n"
            "    seed = args.seed + dist.get_rank()\n    torch.manual_seed(seed)\n"
            "    dataset_train, nb_classes = build_dataset(args)\n"
            "    sampler = torch.utils.data.DistributedSampler(dataset_train, shuffle=True)\n"
            "    return DataLoader(dataset_train, sampler=sampler, num_workers=10)\n",
            note="each rank seeded apart; the dataset a function returns draws only globals",
        ),
        Valid(
            "import torch\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Tokens(Dataset):\n    def __init__(self, rows):\n        self.rows = rows\n\n"
            "    def __getitem__(self, index):\n        return torch.tensor(self.rows[index])\n\n\n"
            "class DataModule:\n    def setup(self, rows):\n        self.train_set = Tokens(rows)\n\n"
            "    def train_dataloader(self):\n"
            "        return DataLoader(self.train_set, shuffle=True, num_workers=4)\n",
            note="the attribute holds a dataset that draws nothing",
        ),
        Valid(
            "import random\n\nimport torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Clips(Dataset):\n    def __init__(self, random_segments=False):\n"
            "        self.random_segments = random_segments\n\n"
            "    def __getitem__(self, index):\n        start = 0\n"
            "        if self.random_segments:\n            start = random.uniform(0, 5)\n"
            "        return start\n\n\n"
            "dist.init_process_group('nccl')\ntorch.manual_seed(42)\n"
            "valid = DataLoader(Clips(), batch_size=1, num_workers=4)\n",
            note="the validation instance keeps its random segments switched off",
        ),
        Valid(
            "import random\n\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Clips(Dataset):\n"
            "    def __getitem__(self, index):\n        return random.random()\n\n\n"
            "dist.init_process_group('nccl')\n"
            "loader = DataLoader(Clips(), shuffle=True, num_workers=4)\n",
            note="never seeded: each process draws its own base seed",
        ),
        Valid(
            "import torch\nfrom PIL import Image\nfrom torch.utils.data import DataLoader, Dataset\n\n\n"
            "class Folder(Dataset):\n    def __init__(self, paths):\n        self.paths = paths\n\n"
            "    def __getitem__(self, index):\n"
            "        return torch.as_tensor(Image.open(self.paths[index]).getdata())\n\n\n"
            "loader = DataLoader(Folder(['a.png']), shuffle=True, num_workers=8)\n",
            note="a dataset that draws nothing: no `seed_worker` to add",
        ),
        Valid(
            "import h5py\nimport torch\nimport torch.distributed as dist\n"
            "from torch.utils.data import DataLoader, Dataset, DistributedSampler, random_split\n\n\n"
            "class Frames(Dataset):\n    def __init__(self, path):\n        self.path = path\n\n"
            "    def __enter__(self):\n        self.file = h5py.File(self.path, 'r')\n"
            "        return self\n\n"
            "    def __exit__(self, *exc):\n        self.file.close()\n\n"
            "    def __getitem__(self, index):\n"
            "        return torch.tensor(self.file['images'][index])\n\n\n"
            "dist.init_process_group('nccl')\n"
            "with Frames('train.h5') as frames:\n"
            "    train, val = random_split(frames, [0.8, 0.2])\n"
            "    loader = DataLoader(train, sampler=DistributedSampler(train), num_workers=7)\n",
            note="`__enter__` returns the dataset, which draws nothing",
        ),
    )

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        judge = Judge(program)
        known = contexts(program)
        target = program.options.target_torch
        old = target is not None and target < WORKERS_RESEED
        proven_only = program.options.dataloader_worker_rng == "when-proven"
        findings: dict[int, list[_Finding]] = {}
        for loader in loaders(program):
            if loader.seeds_workers or loader.given("worker_init_fn"):
                continue
            if loader.opaque and "worker_init_fn" not in loader.args:
                continue
            if not loader.may_be_positive("num_workers"):
                continue
            context = known[loader.unit.index].flags
            if "seeds_workers" in context:
                continue
            finding = cls._judge(judge, loader, context, old, target, proven_only)
            if finding is not None:
                findings.setdefault(loader.unit.index, []).append(finding)
        for index, found in findings.items():
            unit = program.units[index]
            generators: dict[int, tuple[Edit, ...]] = {}
            for finding in found:
                ranked = cls._ranked_generator(program, finding) if finding.fixable else None
                if ranked is not None:
                    generators[id(finding)] = ranked
            helped = [f for f in found if f.fixable and id(f) not in generators]
            helper = cls._helper(program, unit, helped, old)
            for finding in found:
                record = finding.loader.record
                start, end = span(record)
                edits: tuple[Edit, ...] = ()
                if id(finding) in generators:
                    edits = generators[id(finding)]
                elif finding.fixable and helper is not None:
                    edits = (Edit(str(record["init"]), start, end), *helper)
                yield ProjectReport(
                    unit,
                    int(record["s"]),
                    finding.message,
                    edits=edits,
                    fix_safety=FixSafety.SAFE if edits else None,
                    span=(start, end),
                )

    @classmethod
    def _judge(
        cls,
        judge: Judge,
        loader: Loader,
        context: frozenset[str],
        old: bool,
        target: TorchVersion | None,
        proven_only: bool,
    ) -> _Finding | None:
        randomness = judge.dataset(loader.unit, loader.dataset)
        distributed = "distributed" in context or loader.sampler() == "distributed"
        generator = loader.args.get("generator")
        if generator is not None and generator.get("v", "?") is not None:
            shared = generator.get("g") == "set"
        else:
            # Ranks share the workers' base seeds only when the program seeds torch alike
            # on every rank (an unseeded run draws a fresh base seed in each process).
            seeded = "same_seed" in context or "seeded" in context
            shared = seeded and "rank_seed" not in context
        shared = distributed and shared

        def found(message: str, kind: str, fixable: bool = True) -> _Finding:
            # A project subclass whose ``__init__`` takes no ``worker_init_fn`` would raise.
            fixable = fixable and loader.takes("worker_init_fn")
            return _Finding(loader, message, randomness, distributed, fixable, kind, shared)

        for owned in randomness.owned:
            if owned.where == "dataset":
                return found(
                    f"`{owned.owner}.{owned.name}` is copied into every DataLoader worker: "
                    "workers repeat its random numbers",
                    "owned",
                    fixable=all(o.where == "dataset" for o in randomness.owned),
                )
        for owned in randomness.owned:
            what = "Transform" if owned.where == "transform" else "Module-level generator"
            return found(
                f"{what} `{owned.owner}.{owned.name}` is copied into every DataLoader worker: "
                "workers repeat its random numbers",
                "owned",
                fixable=False,
            )
        if randomness.libraries:
            return found(
                f"`{randomness.libraries[0]}` keeps its own random state, which every "
                "DataLoader worker copies unchanged",
                "library",
            )
        # An unresolved dataset proves nothing: like the general message, it is reported only
        # for a shuffling (training) loader, and never under "when-proven".
        unproven = not randomness.known and not proven_only and loader.may_shuffle()
        if shared and (randomness.draws or unproven):
            return found(
                "Every rank seeds alike: DataLoader worker k draws the same random numbers "
                "on every rank",
                "ranks",
            )
        if old and (randomness.numpy_global or unproven):
            return found(
                f"With torch {target}, every DataLoader worker copies numpy's global random state",
                "old",
            )
        if unproven:
            # Every worker already reseeds the global generators (torch >= 1.9): the
            # recipe's ``seed_worker`` would have nothing to do until the dataset is known.
            return found(cls.MESSAGE, "general", fixable=False)
        return None

    @staticmethod
    def _ranked_generator(program: Program, finding: _Finding) -> tuple[Edit, ...] | None:
        """For ranks that seed alike, a loader without a generator: one seeded with the
        program's seed plus the rank (``generator=torch.Generator().manual_seed(args.seed +
        rank)``, the edit ``dataloader-missing-generator`` writes). The workers' base seeds
        then differ per rank, and every global generator they reseed with them; None where
        no such seed is in scope."""
        loader = finding.loader
        record = loader.record
        target = program.options.target_torch
        if (
            finding.kind != "ranks"
            or (target is not None and target < GENERATORS_SINCE)
            or loader.given("generator")
            or not loader.takes("generator")
            or record.get("fallback")
            or not record.get("ranked")
            or "generator" not in record
        ):
            return None
        start, end = span(record)
        imports = program.import_edits(
            loader.unit, ["torch"] if record.get("import") else [], start
        )
        if imports is None:
            return None
        return (*imports, Edit(str(record["generator"]), start, end))

    @classmethod
    def _helper(
        cls, program: Program, unit: Unit, found: Sequence[_Finding], old: bool
    ) -> tuple[Edit, ...] | None:
        """The edits defining ``seed_worker`` in ``unit`` for its fixable findings (none when
        the module already binds the name); None when it cannot be written there."""
        if not found:
            return None
        if "helper" in data(unit).get("flags", ()):
            return ()
        earliest = min(int(f.loader.record["helper_row"]) for f in found)
        at = Location(earliest, 1)
        imports: list[str] = []

        def name(qualified: str) -> str | None:
            spelled = program.spell(unit, qualified, at.row)
            if spelled is None:
                return None
            text, module = spelled
            if module is not None and module not in imports:
                imports.append(module)
            return text

        lines = cls._lines(unit, found, name, old)
        if lines is None:
            return None
        # Imports in the order the seeding fixes use (torch, numpy, random), then others.
        order = {module: index for index, module in enumerate(FAMILIES)}
        imports.sort(key=lambda module: (order.get(module, len(order)), module))
        # After the module's imports and constants, with PEP 8's blank lines; before the
        # statement that uses it when the module opens with code.
        placed = program.definition(unit, lines, imports, at)
        if placed is not None:
            return placed
        newline = str(unit.summary.get("newline", "\n"))
        return program.insertion(
            unit,
            at,
            lines,
            imports,
            indent="",
            suffix=newline * 2,
        )

    @staticmethod
    def _lines(
        unit: Unit, found: Sequence[_Finding], name: Callable[[str], str | None], old: bool
    ) -> list[str] | None:
        """The lines of ``seed_worker`` (unindented; the body carries its own indent)."""
        attributes: dict[str, str] = {}
        for finding in found:
            for owned in finding.randomness.owned:
                if owned.where == "dataset":
                    attributes.setdefault(owned.name, owned.kind)
        imports_numpy = any(
            n.split(".", 1)[0] == "numpy" for _, n, _ in unit.summary.get("bindings", ())
        )
        # Reseed a global generator only where the workers may draw from it (a dataset
        # that draws nothing from `random` gets no `random.seed`, nor `import random`), and
        # only where PyTorch's own reseeding falls short: numpy's before torch 1.9, and all
        # of them where every rank seeds alike (their worker seeds are then the same).
        unknown = any(not f.randomness.known for f in found)
        ranks = any(f.shared for f in found)
        uses_numpy = any("numpy" in f.randomness.families for f in found) or (
            unknown and (imports_numpy or any(f.randomness.numpy for f in found))
        )
        uses_random = unknown or any("random" in f.randomness.families for f in found)
        # An "old" finding is about numpy's copied state: reseed it even where the dataset's
        # use of numpy cannot be seen.
        numpy = (uses_numpy and (ranks or old)) or any(f.kind == "old" for f in found)
        python_random = uses_random and ranks
        numpy_generator = any(GENERATOR_KINDS[kind] == "numpy" for kind in attributes.values())
        libraries = sorted({lib for f in found for lib in f.randomness.libraries})
        distributed = any(f.distributed for f in found)
        spelled: dict[str, str] = {}
        wanted = ["torch.initial_seed"]
        if python_random:
            wanted.append("random.seed")
        if numpy:
            wanted.append("numpy.random.seed")
        if numpy_generator:
            wanted.append("numpy.random.default_rng")
        if distributed:
            wanted += [
                "torch.distributed.get_rank",
                "torch.distributed.is_initialized",
                "torch.manual_seed",
            ]
        if attributes:
            wanted += ["torch.utils.data.get_worker_info", "torch.utils.data.Subset"]
        wanted += [LIBRARY_SEEDS[lib] for lib in libraries if lib in LIBRARY_SEEDS]
        for qualified in wanted:
            text = name(qualified)
            if text is None:
                return None
            spelled[qualified] = text
        lines = [
            f"def {HELPER}(worker_id: int) -> None:",
            '    """Reseed what PyTorch does not reseed in each DataLoader worker."""',
        ]
        if distributed:
            lines += [
                f"    rank = {spelled['torch.distributed.get_rank']}() "
                f"if {spelled['torch.distributed.is_initialized']}() else 0",
                f"    worker_seed = ({spelled['torch.initial_seed']}() + {_RANK_STRIDE} * rank)"
                " % 2**32",
                f"    {spelled['torch.manual_seed']}(worker_seed)",
            ]
        else:
            lines.append(f"    worker_seed = {spelled['torch.initial_seed']}() % 2**32")
        if numpy:
            lines.append(f"    {spelled['numpy.random.seed']}(worker_seed){numpy_noqa(unit.path)}")
        if python_random:
            lines.append(f"    {spelled['random.seed']}(worker_seed)")
        for lib in libraries:
            if lib in LIBRARY_SEEDS:
                lines.append(f"    {spelled[LIBRARY_SEEDS[lib]]}(worker_seed)")
        if attributes:
            lines += [
                f"    dataset = {spelled['torch.utils.data.get_worker_info']}().dataset",
                f"    while isinstance(dataset, {spelled['torch.utils.data.Subset']}):",
                "        dataset = dataset.dataset",
            ]
            # Datasets of several classes share the helper: reseed what each one has.
            guarded = len({tuple(sorted(o.name for o in f.randomness.owned)) for f in found}) > 1
            for attribute, kind in attributes.items():
                default_rng = spelled.get("numpy.random.default_rng", "")
                line = _RESEED[GENERATOR_KINDS[kind]].format(
                    name=attribute, default_rng=default_rng
                )
                if guarded:
                    lines += [f'    if hasattr(dataset, "{attribute}"):', f"        {line}"]
                else:
                    lines.append(f"    {line}")
        return lines
