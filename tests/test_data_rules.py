"""The data-loading rules RPL301-RPL305: what fires, what stays quiet, what the fixes write."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from projects import write

from repro_lint.config import Config, load_config, parse_table
from repro_lint.diagnostics import FixSafety
from repro_lint.engine import fix_source, lint_paths, lint_text
from repro_lint.settings import Settings

DATA_CODES = ("RPL301", "RPL302", "RPL303", "RPL304", "RPL305")
SAFE = frozenset({FixSafety.SAFE})
GENERAL = "Multi-worker DataLoader without `worker_init_fn`: workers may repeat randomness"
SHUFFLING = "A shuffling DataLoader without `generator=` takes its order from the global RNG"
RANKS_ALIKE = (
    "Every rank seeds alike: DataLoader worker k draws the same random numbers on every rank"
)


def settings(codes: tuple[str, ...], options: Mapping[str, Any] | None = None) -> Settings:
    values = parse_table(dict(options or {}), None)
    values.setdefault("select", codes)
    return Settings.from_config(Config(**values))


def found(
    source: str, *codes: str, options: Mapping[str, Any] | None = None
) -> list[tuple[str, int, str]]:
    """(code, row, message) of every finding of ``codes`` in one file."""
    result = lint_text(textwrap.dedent(source), "example.py", settings(codes, options))
    return [(d.code, d.location.row, d.message) for d in result.diagnostics]


def rows(source: str, *codes: str, options: Mapping[str, Any] | None = None) -> list[int]:
    return [row for _, row, _ in found(source, *codes, options=options)]


def fixed(source: str, *codes: str, options: Mapping[str, Any] | None = None) -> str:
    """The safely fixed text; it must parse, and fixing it again must change nothing."""
    chosen = settings(codes, options)
    outcome = fix_source(textwrap.dedent(source), chosen, SAFE, "example.py")
    ast.parse(outcome.text)
    assert fix_source(outcome.text, chosen, SAFE, "example.py").text == outcome.text
    return outcome.text


def project_findings(root: Path, *names: str) -> set[tuple[str, str, int, str]]:
    paths = [root / name for name in names] if names else [root]
    results = lint_paths(paths, load_config(root))
    return {
        (Path(d.filename).name, d.code, d.location.row, d.message)
        for r in results
        for d in r.diagnostics
        if d.code in DATA_CODES
    }


LOADER = "from torch.utils.data import DataLoader\n"
# The generator a library function's loader gets where no seed of the program reaches it.
UNRANKED = "torch.initial_seed()"
INITIAL = f"torch.Generator().manual_seed({UNRANKED})"


def squeezed(text: str) -> str:
    """``text`` without its whitespace (a longer generator may wrap its call)."""
    return "".join(text.split())


# -- RPL301: which calls are multi-worker loaders ---------------------------------------------


@pytest.mark.parametrize(
    ("source", "row"),
    [
        pytest.param(
            LOADER
            + "def f(ds, workers):\n    return DataLoader(ds, 8, True, None, None, workers)\n",
            3,
            id="positional",
        ),
        pytest.param(
            LOADER
            + "def f(ds, cfg):\n    return DataLoader(ds, shuffle=True, num_workers=cfg.n)\n",
            3,
            id="config-value",
        ),
        pytest.param(
            "import os\n" + LOADER + "def f(ds):\n"
            "    return DataLoader(ds, shuffle=True, num_workers=os.cpu_count())\n",
            4,
            id="cpu-count",
        ),
        pytest.param(
            LOADER + "def f(ds):\n    kw = {'shuffle': True, 'num_workers': 4}\n"
            "    return DataLoader(ds, **kw)\n",
            4,
            id="kwargs-literal",
        ),
        pytest.param(
            LOADER + "def f(ds):\n    kw = dict(shuffle=True)\n    kw.update(num_workers=4)\n"
            "    return DataLoader(ds, **kw)\n",
            5,
            id="kwargs-update",
        ),
        pytest.param(
            LOADER + "def f(ds):\n    kw = {'shuffle': True}\n    kw['num_workers'] = 4\n"
            "    return DataLoader(ds, **kw)\n",
            5,
            id="kwargs-setitem",
        ),
        pytest.param(
            "import functools\n"
            + LOADER
            + "make = functools.partial(DataLoader, shuffle=True, num_workers=4)\n"
            "def f(ds):\n    return make(ds)\n",
            5,
            id="functools-partial",
        ),
        pytest.param(
            "from functools import partial\n" + LOADER + "def f(ds):\n"
            "    return partial(DataLoader, num_workers=4)(ds, shuffle=True)\n",
            4,
            id="partial-called-in-place",
        ),
        pytest.param(
            LOADER + "class Loader(DataLoader):\n    pass\n"
            "def f(ds):\n    return Loader(ds, 8, True, num_workers=4)\n",
            5,
            id="subclass",
        ),
        pytest.param(
            "import torch.utils.data as tud\n"
            "def f(ds):\n    return tud.DataLoader(ds, shuffle=True, num_workers=4)\n",
            3,
            id="module-alias",
        ),
        pytest.param(
            "from torch.utils.data import DataLoader as DL\n"
            "def f(ds):\n    return DL(ds, shuffle=True, num_workers=4)\n",
            3,
            id="name-alias",
        ),
        pytest.param(
            "from torchdata.stateful_dataloader import StatefulDataLoader\n"
            "def f(ds):\n    return StatefulDataLoader(ds, shuffle=True, num_workers=4)\n",
            3,
            id="stateful-wrapper",
        ),
        pytest.param(
            LOADER + "def f(ds):\n"
            "    return DataLoader(ds, shuffle=True, num_workers=4, worker_init_fn=None)\n",
            3,
            id="worker-init-fn-none",
        ),
        pytest.param(
            "import lightning as L\n" + LOADER + "def f(ds):\n    fabric = L.Fabric()\n"
            "    fabric.seed_everything(0, workers=False)\n"
            "    return DataLoader(ds, shuffle=True, num_workers=4)\n",
            6,
            id="fabric-workers-false",
        ),
    ],
)
def test_multi_worker_loaders_with_unresolved_datasets(source: str, row: int) -> None:
    assert found(source, "RPL301") == [("RPL301", row, GENERAL)]


def test_the_general_recommendation_offers_no_helper() -> None:
    # Since torch 1.9 every worker reseeds torch, numpy and random itself: the recipe's
    # `seed_worker` would do nothing for a dataset that cannot be resolved.
    source = (
        LOADER
        + "def f(ds, workers):\n    return DataLoader(ds, shuffle=True, num_workers=workers)\n"
    )
    assert rows(source, "RPL301") == [3]
    assert fixed(source, "RPL301") == source
    # Before torch 1.9 numpy's state is copied into every worker: the helper reseeds numpy.
    old = fixed(source, "RPL301", options={"target-torch": "1.8"})
    assert "np.random.seed(worker_seed)\n" in old
    assert "random.seed(" not in old.replace("np.random.seed(", "")


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            LOADER + "def f(ds):\n    return DataLoader(ds, shuffle=True, num_workers=0)\n",
            id="zero-workers",
        ),
        pytest.param(
            LOADER + "def f(ds):\n    n = 0\n    return DataLoader(ds, 8, True, num_workers=n)\n",
            id="name-bound-to-zero",
        ),
        pytest.param(LOADER + "def f(ds):\n    return DataLoader(ds, 8, True)\n", id="no-workers"),
        pytest.param(
            LOADER + "def f(ds):\n    kw = dict(shuffle=True, num_workers=0)\n"
            "    return DataLoader(ds, **kw)\n",
            id="kwargs-zero",
        ),
        pytest.param(
            LOADER
            + "def f(ds, fn):\n    kw = dict(shuffle=True, num_workers=4, worker_init_fn=fn)\n"
            "    return DataLoader(ds, **kw)\n",
            id="kwargs-worker-init-fn",
        ),
        pytest.param(
            LOADER + "def f(ds, cfg):\n    return DataLoader(ds, shuffle=True, **cfg.loader)\n",
            id="opaque-kwargs",
        ),
        pytest.param(
            LOADER + "def f(ds, fn):\n"
            "    return DataLoader(ds, shuffle=True, num_workers=4, worker_init_fn=fn)\n",
            id="worker-init-fn",
        ),
        pytest.param(
            LOADER + "def evaluate(ds):\n    return DataLoader(ds, batch_size=64, num_workers=4)\n",
            id="eval-loader",
        ),
        pytest.param(
            "import monai.data\n"
            "def f(ds):\n    return monai.data.DataLoader(ds, shuffle=True, num_workers=4)\n",
            id="monai-seeds-its-workers",
        ),
        pytest.param(
            "import lightning as L\n" + LOADER + "L.seed_everything(0, workers=True)\n"
            "def f(ds):\n    return DataLoader(ds, shuffle=True, num_workers=4)\n",
            id="lightning-workers-true",
        ),
        pytest.param(
            "import lightning as L\n" + LOADER + "def f(ds):\n    fabric = L.Fabric()\n"
            "    fabric.seed_everything(0)\n"
            "    return DataLoader(ds, shuffle=True, num_workers=4)\n",
            id="fabric-object-seeds-workers-by-default",
        ),
        pytest.param(
            "from lightning.fabric import Fabric\n" + LOADER + "Fabric.seed_everything(0)\n"
            "def f(ds):\n    return DataLoader(ds, shuffle=True, num_workers=4)\n",
            id="fabric-static-method",
        ),
        pytest.param(
            "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
            "ds = TensorDataset(torch.zeros(8, 3))\n"
            "loader = DataLoader(ds, 8, True, num_workers=4)\n",
            id="tensor-dataset",
        ),
        pytest.param(
            "import torch\nfrom torch.utils.data import DataLoader, TensorDataset, random_split\n"
            "train, val = random_split(TensorDataset(torch.zeros(8)), [6, 2])\n"
            "loader = DataLoader(train, shuffle=True, num_workers=4)\n",
            id="split-of-tensor-dataset",
        ),
        pytest.param(
            LOADER + "from torchvision import datasets, transforms\n"
            "ds = datasets.CIFAR10('data', transform=transforms.RandomCrop(32))\n"
            "loader = DataLoader(ds, shuffle=True, num_workers=4)\n",
            id="torchvision-dataset",
        ),
    ],
)
def test_quiet_loaders(source: str) -> None:
    assert found(source, "RPL301") == []


# -- RPL301: what the dataset does with random numbers --------------------------------------


def dataset(draw: str, init: str = "pass", header: str = "") -> str:
    """A module with a dataset ``D`` drawing ``draw`` and a two-worker loader (row 20)."""
    return (
        "import random\nimport numpy as np\nimport torch\n"
        "from torch.utils.data import DataLoader, Dataset\n"
        f"{header or '# no header'}\n\n\n"
        "class D(Dataset):\n"
        "    def __init__(self):\n"
        f"        {init}\n\n"
        "    def __len__(self):\n"
        "        return 8\n\n"
        "    def __getitem__(self, index):\n"
        f"        return {draw}\n\n\n"
        "if True:\n"
        "    loader = DataLoader(D(), batch_size=2, num_workers=2)\n"
    )


LOADER_ROW = 20


FLIPPING = (
    "from torch.utils.data import DataLoader, Dataset\n"
    "from torchvision import transforms as T\n\n\n"
    "class Images(Dataset):\n"
    "    def __init__(self, paths, augment=False, aug_transform=None):\n"
    "        self.paths = paths\n"
    "        flip = T.RandomHorizontalFlip() if augment else T.ToTensor()\n"
    "        self.transform = aug_transform or T.Compose([flip, T.ToTensor()])\n\n"
    "    def __len__(self):\n"
    "        return len(self.paths)\n\n"
    "    def __getitem__(self, index):\n"
    "        return self.transform(self.paths[index])\n\n\n"
    "def loader(paths, {param}):\n"
    "    return DataLoader(Images(paths, {argument}), shuffle=True, num_workers=4)\n"
)


@pytest.mark.parametrize(
    ("param", "argument", "reported"),
    [
        # A transform-like keyword whose value is a switch (its default says so).
        ("augment=True", "augment=augment", False),
        ("augment=0.5", "augment=augment", False),
        ("augment='flip'", "augment=augment", False),
        # It may be a transform object: only its callers could tell.
        ("aug_transform=None", "aug_transform=aug_transform", True),
        ("aug_transform", "aug_transform=aug_transform", True),
    ],
    ids=["bool", "float", "string", "none", "no-default"],
)
def test_a_transform_like_parameter_with_a_literal_default_is_a_switch(
    param: str, argument: str, reported: bool
) -> None:
    source = FLIPPING.format(param=param, argument=argument)
    loader = len(source.splitlines())  # the last line
    assert rows(source, "RPL301") == ([loader] if reported else [])


def test_a_dataset_class_named_like_the_import_it_subclasses_is_resolved() -> None:
    # ``class Dataset(Dataset):`` binds the name again: the method building the loader runs
    # after the module, so it builds the project's class (which draws only torch's RNG).
    source = (
        "from torch.utils.data import DataLoader, Dataset\n"
        "from torchvision import transforms as T\n\n\n"
        "class Dataset(Dataset):\n"
        "    def __init__(self, paths):\n"
        "        self.paths = paths\n"
        "        self.transform = T.Compose([T.RandomHorizontalFlip(), T.ToTensor()])\n\n"
        "    def __len__(self):\n"
        "        return len(self.paths)\n\n"
        "    def __getitem__(self, index):\n"
        "        return self.transform(self.paths[index])\n\n\n"
        "class Trainer:\n"
        "    def __init__(self, folder):\n"
        "        self.ds = Dataset(folder)\n"
        "        self.dl = DataLoader(self.ds, batch_size=4, shuffle=True, num_workers=4)\n"
    )
    assert found(source, "RPL301") == []
    renamed = source.replace("class Dataset(Dataset)", "class Images(Dataset)")
    assert found(renamed.replace("= Dataset(folder)", "= Images(folder)"), "RPL301") == []


def test_the_dataset_template_puts_the_loader_on_its_row() -> None:
    assert dataset("index").splitlines()[LOADER_ROW - 1].strip().startswith("loader = ")


@pytest.mark.parametrize(
    ("init", "draw", "name"),
    [
        ("self.rng = np.random.default_rng(0)", "self.rng.normal()", "rng"),
        ("self.state = np.random.RandomState(0)", "self.state.rand()", "state"),
        ("self.gen = np.random.Generator(np.random.PCG64(0))", "self.gen.random()", "gen"),
        ("self.py = random.Random(0)", "self.py.random()", "py"),
        ("self.g = torch.Generator().manual_seed(0)", "torch.rand(1, generator=self.g)", "g"),
    ],
)
def test_a_dataset_owning_a_generator_collides(init: str, draw: str, name: str) -> None:
    # Even an unshuffled loader: the collision is proven.
    assert found(dataset(draw, init), "RPL301") == [
        (
            "RPL301",
            LOADER_ROW,
            f"`D.{name}` is copied into every DataLoader worker: workers repeat its random numbers",
        )
    ]


@pytest.mark.parametrize(
    ("init", "draw"),
    [
        ("pass", "index"),
        ("pass", "np.random.rand() + random.random() + torch.rand(1)"),
        # Owned but never drawn from in the workers.
        ("self.rng = np.random.default_rng(0)", "index"),
    ],
    ids=["no-randomness", "global-generators", "owned-but-unused"],
)
def test_a_dataset_that_is_provably_safe_is_quiet(init: str, draw: str) -> None:
    source = dataset(draw, init).replace("batch_size=2,", "batch_size=2, shuffle=True,")
    assert found(source, "RPL301") == []


def test_a_transform_owning_a_generator_collides_without_a_fix() -> None:
    source = """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset


        class Jitter:
            def __init__(self):
                self.rng = np.random.default_rng(0)

            def __call__(self, x):
                return x + self.rng.normal()


        class D(Dataset):
            def __init__(self, transform):
                self.transform = transform

            def __getitem__(self, index):
                return self.transform(index)


        loader = DataLoader(D(transform=Jitter()), num_workers=2)
    """
    message = (
        "Transform `Jitter.rng` is copied into every DataLoader worker: workers repeat its "
        "random numbers"
    )
    assert found(source, "RPL301") == [("RPL301", 21, message)]
    # The helper cannot reach a transform's generator: no fix is offered.
    assert fixed(source, "RPL301") == textwrap.dedent(source)


def test_a_module_level_generator_collides() -> None:
    source = dataset("_RNG.normal()", header="_RNG = np.random.default_rng(0)")
    [(code, row, message)] = found(source, "RPL301")
    assert (code, row) == ("RPL301", LOADER_ROW)
    assert message.startswith("Module-level generator `")
    assert message.endswith(
        "._RNG` is copied into every DataLoader worker: workers repeat its random numbers"
    )


def test_another_rng_library_collides_and_the_fix_reseeds_it() -> None:
    source = dataset(
        "self.aug(image=index)",
        "self.aug = iaa.Fliplr(0.5)",
        header="import imgaug.augmenters as iaa",
    )
    message = "`imgaug` keeps its own random state, which every DataLoader worker copies unchanged"
    assert found(source, "RPL301") == [("RPL301", LOADER_ROW, message)]
    text = fixed(source, "RPL301")
    assert "import imgaug\n" in text
    assert "    imgaug.random.seed(worker_seed)\n" in text
    assert "num_workers=2, worker_init_fn=seed_worker)" in text


DISTRIBUTED = "import torch.distributed as dist\ndist.init_process_group('gloo')\n{seed}\n"


@pytest.mark.parametrize(
    ("seed", "extra", "expected"),
    [
        ("torch.manual_seed(0)", "", [RANKS_ALIKE]),
        ("torch.manual_seed(0 + dist.get_rank())", "", []),
        ("torch.manual_seed(int(os.environ['RANK']))", "", []),
        # The loader's generator seeds the workers' base seed: it must mix in the rank too.
        ("torch.manual_seed(dist.get_rank())", ", generator=torch.Generator().manual_seed(0)",
         [RANKS_ALIKE]),
        ("torch.manual_seed(0)",
         ", generator=torch.Generator().manual_seed(dist.get_rank())", []),
    ],
    ids=["one-seed", "rank-seeded", "rank-from-env", "generator-without-rank",
         "generator-with-rank"],
)  # fmt: skip
def test_distributed_ranks(seed: str, extra: str, expected: list[str]) -> None:
    source = (
        "import os\n"
        + dataset("torch.rand(1)").replace("# no header", DISTRIBUTED.format(seed=seed))
    ).replace("num_workers=2)", f"num_workers=2{extra})")
    row = LOADER_ROW + 4
    assert found(source, "RPL301") == [("RPL301", row, message) for message in expected]


TRANSFORM_SET_LATER = """\
import torch
import torch.distributed as dist
from torchvision import datasets, transforms

dist.init_process_group('gloo')
torch.manual_seed(31)
train_set = datasets.ImageFolder('train')
{between}
loader = torch.utils.data.DataLoader(train_set, batch_size=8, num_workers=4)
"""


@pytest.mark.parametrize(
    ("between", "expected"),
    [
        ("train_set.transform = transforms.Compose([transforms.RandomResizedCrop(224)])",
         [RANKS_ALIKE]),
        ("train_set.target_transform = transforms.RandomHorizontalFlip()", [RANKS_ALIKE]),
        ("train_set.transform = transforms.Compose([transforms.ToTensor()])", []),
        ("", []),
        # A write to another object, or to the name before it is bound again, tells nothing.
        ("other.transform = transforms.RandomResizedCrop(224)", []),
        ("train_set.transform = transforms.RandomResizedCrop(224)\n"
         "train_set = datasets.ImageFolder('val')", []),
    ],
    ids=["compose", "target-transform", "deterministic", "none", "other-object", "rebound"],
)  # fmt: skip
def test_a_transform_set_after_the_dataset_was_built(between: str, expected: list[str]) -> None:
    # ``train_set.transform = ...`` after ``ImageFolder(root)``: the workers draw from it.
    source = TRANSFORM_SET_LATER.format(between=between)
    row = source.splitlines().index(
        "loader = torch.utils.data.DataLoader(train_set, batch_size=8, num_workers=4)"
    )
    assert found(source, "RPL301") == [("RPL301", row + 1, m) for m in expected]


def test_a_seeding_helper_the_program_never_calls_seeds_no_rank(tmp_path: Path) -> None:
    # The program reaches the file that defines the helper, but never calls it: every rank
    # draws its workers' base seed from fresh entropy.
    unseeded = dataset("torch.rand(1)").replace(
        "# no header", "import helpers\n" + DISTRIBUTED.format(seed="")
    )
    helpers = "import torch\n\n\ndef fix_seeds(seed=31):\n    torch.manual_seed(seed)\n"
    write(tmp_path, {"train.py": unseeded, "helpers.py": helpers})
    assert {f for f in project_findings(tmp_path) if f[1] == "RPL301"} == set()
    seeded = unseeded.replace("import helpers\n", "import helpers\nhelpers.fix_seeds()\n")
    write(tmp_path, {"train.py": seeded})
    loader = LOADER_ROW + 5
    assert {f for f in project_findings(tmp_path) if f[1] == "RPL301"} == {
        ("train.py", "RPL301", loader, RANKS_ALIKE)
    }


def test_distributed_code_the_program_never_runs_makes_no_rank(tmp_path: Path) -> None:
    # The program imports a library module that holds a distributed loader: the run is
    # distributed only when it calls that code.
    seeded = dataset("torch.rand(1)").replace(
        "# no header", "import dist_tools\ntorch.manual_seed(0)\n"
    )
    tools = (
        "import torch.distributed as dist\n\n\ndef setup():\n    dist.init_process_group('gloo')\n"
    )
    write(tmp_path, {"train.py": seeded, "dist_tools.py": tools})
    assert {f for f in project_findings(tmp_path) if f[1] == "RPL301"} == set()
    write(
        tmp_path,
        {
            "train.py": seeded.replace(
                "torch.manual_seed(0)\n", "dist_tools.setup()\ntorch.manual_seed(0)\n"
            )
        },
    )
    loader = LOADER_ROW + 3
    assert {f for f in project_findings(tmp_path) if f[1] == "RPL301"} == {
        ("train.py", "RPL301", loader, RANKS_ALIKE)
    }


def test_distributed_with_a_dataset_that_draws_nothing_is_quiet() -> None:
    source = dataset("index").replace(
        "# no header", DISTRIBUTED.format(seed="torch.manual_seed(0)")
    )
    assert found(source, "RPL301") == []


def test_a_distributed_sampler_makes_the_run_distributed() -> None:
    # Seeded alike on every rank: worker k of each rank gets the same base seed.
    source = dataset("torch.rand(1)").replace(
        "DataLoader(D(), batch_size=2,",
        "DataLoader(D(), batch_size=2, sampler=torch.utils.data.DistributedSampler(D()),",
    )
    seeded = source.replace("if True:\n", "torch.manual_seed(0)\nif True:\n")
    assert found(seeded, "RPL301") == [("RPL301", LOADER_ROW + 1, RANKS_ALIKE)]
    # Unseeded, every process draws its base seed from fresh entropy: nothing repeats.
    assert found(source, "RPL301") == []


def test_the_distributed_fix_mixes_in_the_rank() -> None:
    source = dataset("torch.rand(1)").replace(
        "# no header", DISTRIBUTED.format(seed="torch.manual_seed(0)")
    )
    text = fixed(source, "RPL301")
    # The dataset draws only from torch: only torch is reseeded (issue 15: no
    # `random.seed`/numpy lines where the workers draw nothing from them).
    helper = (
        "def seed_worker(worker_id: int) -> None:\n"
        '    """Reseed what PyTorch does not reseed in each DataLoader worker."""\n'
        "    rank = dist.get_rank() if dist.is_initialized() else 0\n"
        "    worker_seed = (torch.initial_seed() + 65536 * rank) % 2**32\n"
        "    torch.manual_seed(worker_seed)\n\n\n"
    )
    assert helper in text
    assert text.count("def seed_worker") == 1
    # Drawing from numpy and `random` too: those are reseeded with the rank as well.
    both = source.replace(
        "return torch.rand(1)", "return torch.rand(1) + np.random.rand() + random.random()"
    )
    assert (
        "    torch.manual_seed(worker_seed)\n"
        "    np.random.seed(worker_seed)\n"
        "    random.seed(worker_seed)\n"
    ) in fixed(both, "RPL301")


TRANSFORMED = """\
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    augment = transforms.Compose([transforms.{transform}, transforms.ToTensor()])
    train = datasets.ImageFolder("train", augment)
    loader = DataLoader(train, batch_size=8, num_workers=4)
"""


@pytest.mark.parametrize(
    ("transform", "target", "reseeds_random"),
    [
        # Since torchvision 0.8 (torch 1.7) its random transforms draw from torch alone.
        ("RandomResizedCrop(224)", None, False),
        ("RandomHorizontalFlip()", "1.7", False),
        # Before, they drew from `random`; RandomChoice and RandomOrder still do.
        ("RandomResizedCrop(224)", "1.6", True),
        ("RandomChoice([transforms.RandomGrayscale()])", None, True),
        ("RandomOrder([transforms.RandomGrayscale()])", None, True),
    ],
)
def test_the_distributed_fix_reseeds_random_only_for_transforms_that_draw_from_it(
    transform: str, target: str | None, reseeds_random: bool
) -> None:
    source = TRANSFORMED.format(transform=transform)
    options = {"target-torch": target} if target else None
    assert rows(source, "RPL301", options=options) == [10]
    text = fixed(source, "RPL301", options=options)
    assert "    torch.manual_seed(worker_seed)\n" in text
    assert ("    random.seed(worker_seed)\n" in text) is reseeds_random
    assert ("import random\n" in text) is reseeds_random


@pytest.mark.parametrize(
    ("draw", "target", "expected"),
    [
        ("np.random.rand()", "1.8", ["With torch 1.8, every DataLoader worker copies numpy's "
                                     "global random state"]),
        ("np.random.rand()", "1.9", []),
        ("np.random.rand()", None, []),
        # torch and random were reseeded per worker before 1.9 too.
        ("torch.rand(1) + random.random()", "1.8", []),
    ],
)  # fmt: skip
def test_old_torch_targets(draw: str, target: str | None, expected: list[str]) -> None:
    options = {"target-torch": target} if target else {}
    assert found(dataset(draw), "RPL301", options=options) == [
        ("RPL301", LOADER_ROW, message) for message in expected
    ]


def test_the_target_torch_comes_from_the_declared_dependencies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"job.py": dataset("np.random.rand()")}, 'dependencies = ["torch==1.8.1"]\n')
    assert project_findings(tmp_path) == {
        ("job.py", "RPL301", LOADER_ROW,
         "With torch 1.8, every DataLoader worker copies numpy's global random state"),
    }  # fmt: skip


def test_an_unresolved_dataset_on_old_torch_in_an_eval_loader_is_quiet() -> None:
    source = LOADER + "def evaluate(ds):\n    return DataLoader(ds, num_workers=4)\n"
    assert found(source, "RPL301", options={"target-torch": "1.8"}) == []
    shuffled = source.replace("num_workers=4", "shuffle=True, num_workers=4")
    assert rows(shuffled, "RPL301", options={"target-torch": "1.8"}) == [3]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            LOADER + "def f(ds):\n    return DataLoader(ds, shuffle=True, num_workers=4)\n",
            [],
            id="unresolved",
        ),
        pytest.param(
            dataset("self.rng.normal()", "self.rng = np.random.default_rng(0)"),
            [LOADER_ROW],
            id="owned-generator",
        ),
        pytest.param(
            dataset("np.random.rand()").replace(
                "# no header",
                "import torch.distributed\ntorch.distributed.init_process_group('gloo')\n"
                "torch.manual_seed(0)",
            ),
            [LOADER_ROW + 2],
            id="ranks-alike",
        ),
        pytest.param(
            LOADER + "import torch.distributed\ntorch.distributed.init_process_group('gloo')\n"
            "def f(ds):\n    return DataLoader(ds, shuffle=True, num_workers=4)\n",
            [],
            id="ranks-alike-but-unresolved",
        ),
    ],
)
def test_when_proven_reports_only_proven_collisions(source: str, expected: list[int]) -> None:
    options = {"dataloader-worker-rng": "when-proven"}
    assert rows(source, "RPL301", options=options) == expected


def test_a_subclass_that_takes_no_worker_init_fn_gets_no_fix() -> None:
    source = """\
        import numpy as np
        from torch.utils.data import DataLoader, Dataset


        class D(Dataset):
            def __init__(self):
                self.rng = np.random.default_rng(0)

            def __getitem__(self, index):
                return self.rng.normal()


        class Loader(DataLoader):
            def __init__(self, dataset, num_workers):
                super().__init__(dataset, num_workers=num_workers)


        loader = Loader(D(), 2)
    """
    assert rows(source, "RPL301") == [18]
    # ``Loader(D(), 2, worker_init_fn=seed_worker)`` would raise a TypeError.
    assert fixed(source, "RPL301") == textwrap.dedent(source)
    with_kwargs = source.replace("num_workers):", "num_workers, **kwargs):")
    assert "Loader(D(), 2, worker_init_fn=seed_worker)" in fixed(with_kwargs, "RPL301")


def test_a_subclass_that_passes_its_own_worker_init_fn_is_quiet() -> None:
    source = """\
        from torch.utils.data import DataLoader


        def init(worker_id):
            pass


        class Loader(DataLoader):
            def __init__(self, dataset, num_workers):
                super().__init__(dataset, num_workers=num_workers, worker_init_fn=init)


        def f(ds):
            return Loader(ds, 4)
    """
    assert found(source, "RPL301") == []


# -- RPL301 across files ------------------------------------------------------------------------

DATASETS = """\
    import numpy as np
    import torch
    from torch.utils.data import Dataset

    _RNG = np.random.default_rng(0)


    class Safe(Dataset):
        def __getitem__(self, index):
            return torch.rand(1) + np.random.rand()


    class Owning(Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)

        def __getitem__(self, index):
            return self.rng.normal()


    class ModuleLevel(Dataset):
        def __getitem__(self, index):
            return _RNG.normal()
"""
LOADING = """\
    from functools import partial

    from torch.utils.data import DataLoader


    class Loader(DataLoader):
        pass


    make_loader = partial(DataLoader, shuffle=True, num_workers=4)
"""
TRAIN = """\
    from torch.utils.data import DataLoader

    from pkg.data import ModuleLevel, Owning, Safe
    from pkg.loading import Loader, make_loader


    def main(workers):
        safe = DataLoader(Safe(), 8, True, num_workers=workers)
        owning = DataLoader(Owning(), 8, True, num_workers=workers)
        module = DataLoader(ModuleLevel(), 8, True, num_workers=workers)
        subclass = Loader(Owning(), 8, True, num_workers=workers)
        partial = make_loader(Owning())
        return safe, owning, module, subclass, partial


    if __name__ == "__main__":
        main(2)
"""
OWNING = "`Owning.rng` is copied into every DataLoader worker: workers repeat its random numbers"


@pytest.fixture
def data_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/data.py": DATASETS, "pkg/loading.py": LOADING,
         "train.py": TRAIN},
    )  # fmt: skip
    return tmp_path


def test_datasets_are_resolved_across_files(data_project: Path) -> None:
    expected = {
        ("train.py", "RPL301", 9, OWNING),
        ("train.py", "RPL301", 10,
         "Module-level generator `pkg.data._RNG` is copied into every DataLoader worker: "
         "workers repeat its random numbers"),
        ("train.py", "RPL301", 11, OWNING),
        ("train.py", "RPL301", 12, OWNING),
    }  # fmt: skip
    assert {f for f in project_findings(data_project) if f[1] == "RPL301"} == expected
    # Pre-commit passes the changed file alone: its imports are still read from the project.
    assert {f for f in project_findings(data_project, "train.py") if f[1] == "RPL301"} == expected


def test_a_dataset_module_alone_has_no_loader_findings(data_project: Path) -> None:
    assert project_findings(data_project, "pkg/data.py") == set()


def test_the_cli_fix_across_files_parses_and_converges(data_project: Path) -> None:
    from click.testing import CliRunner

    from repro_lint.cli import main

    args = ["train.py", "--fix", "--no-cache", "--select", "RPL301,RPL302"]
    first = CliRunner().invoke(main, args)
    # The module-level generator has no fix: exit 1.
    assert first.exit_code == 1, first.output
    text = (data_project / "train.py").read_text(encoding="utf-8")
    ast.parse(text)
    assert text.count("def seed_worker(") == 1
    # numpy as the community spells it, when the file leaves `np` free.
    assert "    dataset.rng = np.random.default_rng(worker_seed)\n" in text
    generator = "generator=torch.Generator().manual_seed(0)"
    # New keywords that do not fit in 88 columns go on a line of their own, aligned with the
    # arguments above.
    assert (
        f"    owning = DataLoader(Owning(), 8, True, num_workers=workers,\n"
        f"                        {generator},\n"
        "                        worker_init_fn=seed_worker)\n" in text
    )
    assert (
        f"    partial = make_loader(Owning(), {generator},\n"
        "                          worker_init_fn=seed_worker)\n" in text
    )
    assert (
        f"    safe = DataLoader(Safe(), 8, True, num_workers=workers,\n"
        f"                      {generator})\n" in text
    )
    assert max(len(line) for line in text.splitlines()) <= 88
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 1
    assert (data_project / "train.py").read_text(encoding="utf-8") == text
    assert {f[1:3] for f in project_findings(data_project)} == {("RPL301", 24)}


FRAMES = """\
    import h5py
    import torch
    from torch.utils.data import Dataset


    class Frames(Dataset):
        def __init__(self, path, transform=None):
            self.path = path
            self.transform = transform

        def __enter__(self):
            self.file = h5py.File(self.path, "r")
            return self

        def __exit__(self, *exc):
            self.file.close()

        def __len__(self):
            return len(self.file["labels"])

        def __getitem__(self, index):
            image = torch.tensor(self.file["images"][index])
            return self.transform(image) if self.transform else image
"""
FRAMES_TRAIN = """\
    import os
    import sys

    import torch.distributed as dist
    from torch.utils.data import DataLoader, DistributedSampler, random_split
    from torchvision import transforms

    sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
    from resources.frames import Frames

    if __name__ == "__main__":
        dist.init_process_group(backend="nccl")
        tf = transforms.Compose([transforms.CenterCrop(224), transforms.Normalize(0.5, 0.2)])
        with Frames("train.h5", transform=tf) as frames:
            train, val = random_split(frames, [0.8, 0.2])
            train_loader = DataLoader(train, sampler=DistributedSampler(train), num_workers=7)
            val_loader = DataLoader(val, sampler=DistributedSampler(val), num_workers=7)
"""


def test_a_dataset_entered_in_a_with_block_is_followed_to_its_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"resources/frames.py": FRAMES, "scripts/train.py": FRAMES_TRAIN})
    # ``__enter__`` returns the dataset itself, which (with its transforms) draws nothing.
    assert {f for f in project_findings(tmp_path, "scripts/train.py") if f[1] == "RPL301"} == set()
    # Entered, a dataset whose ``__enter__`` returns something else is not known.
    other = FRAMES.replace("            return self\n", "            return self.file\n")
    write(tmp_path, {"resources/frames.py": other, "scripts/train.py": FRAMES_TRAIN})
    assert {f for f in project_findings(tmp_path, "scripts/train.py") if f[1] == "RPL301"} == {
        ("train.py", "RPL301", 16, GENERAL),
        ("train.py", "RPL301", 17, GENERAL),
    }


# -- RPL302 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("DataLoader(ds, batch_size=8, shuffle=True)", SHUFFLING),
        ("DataLoader(ds, 8, True)", SHUFFLING),
        ("DataLoader(ds, 8, train)", SHUFFLING),
        ("DataLoader(ds, **{'shuffle': True})", SHUFFLING),
        ("DataLoader(ds, sampler=RandomSampler(ds))", "random"),
        ("DataLoader(ds, batch_sampler=BatchSampler(RandomSampler(ds), 8, False))", "random"),
        ("DataLoader(ds, shuffle=False)", None),
        ("DataLoader(ds, 8)", None),
        ("DataLoader(ds, shuffle=None)", None),
        ("DataLoader(ds, shuffle=True, generator=g)", None),
        ("DataLoader(ds, 8, True, None, None, 0, None, False, False, 0, None, None, g)", None),
        ("DataLoader(ds, shuffle=True, **options)", None),
        ("DataLoader(ds, sampler=SequentialSampler(ds))", None),
        ("DataLoader(ds, sampler=DistributedSampler(ds))", None),
        ("DataLoader(ds, sampler=RandomSampler(ds, generator=g))", None),
    ],
)
def test_loaders_without_a_generator(call: str, expected: str | None) -> None:
    source = (
        "from torch.utils.data import BatchSampler, DataLoader, DistributedSampler\n"
        "from torch.utils.data import RandomSampler, SequentialSampler\n\n\n"
        f"def f(ds, train, g, options):\n    return {call}\n"
    )
    loader = [m for code, row, m in found(source, "RPL302") if row == 6 and "Sampler`" not in m]
    if expected is None:
        assert found(source, "RPL302") == []
    elif expected == "random":
        assert loader == [
            "This DataLoader's random sampler has no `generator=`: its order comes from the "
            "global RNG"
        ]
    else:
        assert loader == [expected]


GUARDED = """\
import torch
from torch.utils.data import DataLoader, DistributedSampler


def main(args, ds):
{guard}
    if args.distributed:
        sampler = DistributedSampler(ds)
    else:
        sampler = None
    return DataLoader(ds, shuffle=(sampler is None), sampler=sampler)
"""
ONLY_DISTRIBUTED = (
    "    if args.distributed:\n        pass\n"
    "    elif args.gpu is not None:\n        torch.cuda.set_device(args.gpu)\n"
    "        raise NotImplementedError('only DDP')\n"
    "    else:\n        raise NotImplementedError('only DDP')"
)


@pytest.mark.parametrize(
    ("guard", "expected"),
    [
        ("    pass", [11]),
        # Every other arm raises: after the chain, args.distributed holds.
        (ONLY_DISTRIBUTED, []),
        ("    if not args.distributed:\n        raise SystemExit('needs DDP')", []),
        ("    if not args.distributed: return None", []),
        ("    if args.distributed:\n        pass\n    else:\n        raise ValueError", []),
        # What the guard proved holds no longer once the name may have changed.
        ("    if not args.distributed:\n        raise SystemExit\n    args.distributed = False",
         [11]),
        ("    if not args.distributed:\n        raise SystemExit\n    args = other()", [11]),
        ("    if not args.distributed:\n        raise SystemExit\n    configure(args)", [11]),
        ("    if args.distributed:\n        args.distributed = probe()\n"
         "    else:\n        raise ValueError", [11]),
        # Not a guard: an arm that falls through, or a test that is not a name.
        ("    if not args.distributed:\n        print('single process')", [11]),
        ("    if args.distributed and args.gpu:\n        pass\n    else:\n        raise ValueError",
         [11]),
        # A guard inside a branch proves nothing after that branch.
        ("    if args.strict:\n        if not args.distributed:\n            raise SystemExit",
         [11]),
        # Nor inside a ``try`` (the handler may swallow the raise), nor once the name is
        # changed in place.
        ("    try:\n        if not args.distributed:\n            raise ValueError\n"
         "    except ValueError:\n        pass", [11]),
        ("    if not args.distributed:\n        raise SystemExit\n    args.distributed -= 1",
         [11]),
    ],
    ids=["no-guard", "other-arms-raise", "if-not-raise", "one-line-return", "else-raises",
         "attribute-written", "name-rebound", "handed-to-a-call", "written-in-the-arm",
         "arm-falls-through", "compound-test", "nested", "inside-a-try", "augmented"],
)  # fmt: skip
def test_a_guard_that_leaves_settles_a_later_branch(guard: str, expected: list[int]) -> None:
    source = GUARDED.format(guard=guard)
    shift = guard.count("\n")
    assert rows(source, "RPL302") == [row + shift for row in expected]


@pytest.mark.parametrize(
    ("sampler", "expected"),
    [
        ("RandomSampler(ds)", "RandomSampler"),
        ("RandomSampler(ds, True, 10)", "RandomSampler"),
        ("SubsetRandomSampler(indices)", "SubsetRandomSampler"),
        ("WeightedRandomSampler(weights, 10)", "WeightedRandomSampler"),
        ("RandomSampler(ds, generator=g)", None),
        ("RandomSampler(ds, False, None, g)", None),
        ("SubsetRandomSampler(indices, g)", None),
        ("WeightedRandomSampler(weights, 10, True, g)", None),
        ("SequentialSampler(ds)", None),
        ("DistributedSampler(ds)", None),
    ],
)
def test_random_samplers_without_a_generator(sampler: str, expected: str | None) -> None:
    source = (
        "from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler\n"
        "from torch.utils.data import SubsetRandomSampler, WeightedRandomSampler\n\n\n"
        f"def f(ds, indices, weights, g):\n    return {sampler}\n"
    )
    messages = [] if expected is None else [
        ("RPL302", 6, f"`{expected}` without `generator=` takes its order from the global RNG")
    ]  # fmt: skip
    assert found(source, "RPL302") == messages


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "import functools\n"
            + LOADER
            + "make = functools.partial(DataLoader, batch_size=8, shuffle=True)\n"
            "def f(ds):\n    return make(ds)\n",
            id="partial",
        ),
        pytest.param(
            LOADER + "class Loader(DataLoader):\n    pass\n\n\n"
            "def f(ds):\n    return Loader(ds, 8, True)\n",
            id="subclass",
        ),
        pytest.param(
            "import torch.utils.data as tud\ndef f(ds):\n    return tud.DataLoader(ds, 8, True)\n",
            id="alias",
        ),
        pytest.param(
            LOADER + "def f(ds):\n    kw = dict(batch_size=8)\n    kw['shuffle'] = True\n"
            "    return DataLoader(ds, **kw)\n",
            id="kwargs",
        ),
    ],
)
def test_shuffling_loader_forms(source: str) -> None:
    [(code, _, message)] = found(source, "RPL302")
    assert (code, message) == ("RPL302", SHUFFLING)


def test_the_generator_fix() -> None:
    source = (
        LOADER + "def f(ds):\n    return DataLoader(\n        ds,\n        shuffle=True,\n    )\n"
    )
    # In a program's own file: the configured seed.
    main = "\n\nif __name__ == '__main__':\n    f([])\n"
    assert fixed(source + main, "RPL302", options={"seed": 7}) == (
        "import torch\n" + LOADER + "def f(ds):\n    return DataLoader(\n        ds,\n"
        "        shuffle=True,\n        generator=torch.Generator().manual_seed(7),\n    )\n" + main
    )
    # In a library function: the seed its caller gave torch, not one order for every caller.
    assert fixed(source, "RPL302", options={"seed": 7}) == (
        "import torch\n" + LOADER + "def f(ds):\n    return DataLoader(\n        ds,\n"
        "        shuffle=True,\n        generator=torch.Generator().manual_seed(torch.initial_seed()),\n"
        "    )\n"
    )
    # At the top level of a module that starts no program: the configured seed, as before.
    top = LOADER + "loader = DataLoader(ds, 8, True)\n"
    assert "generator=torch.Generator().manual_seed(7)" in fixed(top, "RPL302", options={"seed": 7})


def test_the_generator_fix_mixes_in_the_rank_in_distributed_code() -> None:
    source = (
        "import torch\nimport torch.distributed as dist\n"
        + LOADER
        + "def f(ds, local_rank):\n    dist.init_process_group('nccl')\n"
        "    return DataLoader(ds, 8, True)\n"
    )
    # The configured seed 0 plus the rank is the rank alone, never ``0 + local_rank``.
    assert (
        "    return DataLoader(ds, 8, True, generator=torch.Generator().manual_seed(local_rank))\n"
        in fixed(source, "RPL302")
    )
    # Not distributed: a rank-named variable alone does not change the seed (in this library
    # function, the seed its caller gave torch).
    plain = source.replace("    dist.init_process_group('nccl')\n", "")
    assert squeezed(f"DataLoader(ds, 8, True, generator={INITIAL})") in squeezed(
        fixed(plain, "RPL302")
    )


INSTANCE_SEED = """\
    import torch
    from torch.utils.data import DataLoader
    from transformers import set_seed


    class Trainer:
        def __init__(self, args, dataset):
            self.args = args
            self.dataset = dataset
            {seeding}

        {decorator}
        def loader(self):
            return DataLoader(self.dataset, shuffle=True)
"""


@pytest.mark.parametrize(
    ("seeding", "decorator", "seed"),
    [
        # Another method seeds from the instance: the loader's method reads the same.
        ("set_seed(self.args.seed)", "", "self.args.seed"),
        ("torch.manual_seed(self.args.seed)", "", "self.args.seed"),
        # Two different instance seeds, a seed the loader's method cannot read, a static
        # method (no instance): in this library class, the seed its caller gave torch.
        (
            "set_seed(self.args.seed)\n        torch.manual_seed(self.seed)",
            "",
            "torch.initial_seed()",
        ),
        ("set_seed(args.seed)", "", "torch.initial_seed()"),
        ("set_seed(self.args.seed)", "@staticmethod", "torch.initial_seed()"),
    ],
)
def test_the_generator_fix_reads_the_seed_the_class_passes_from_the_instance(
    seeding: str, decorator: str, seed: str
) -> None:
    source = textwrap.dedent(INSTANCE_SEED).format(seeding=seeding, decorator=decorator)
    if decorator:
        source = source.replace("def loader(self)", "def loader(dataset)").replace(
            "DataLoader(self.dataset", "DataLoader(dataset"
        )
    out = fixed(source, "RPL302")
    assert f"generator=torch.Generator().manual_seed({seed}))\n" in out


def test_split_and_shuffle_fixes_read_the_seed_the_class_passes_from_the_instance() -> None:
    source = textwrap.dedent(INSTANCE_SEED).format(seeding="set_seed(self.args.seed)", decorator="")
    split = source.replace(
        "return DataLoader(self.dataset, shuffle=True)",
        "return torch.utils.data.random_split(self.dataset, [8, 2])",
    )
    assert "generator=torch.Generator().manual_seed(self.args.seed)" in fixed(split, "RPL303")
    shuffle = source.replace(
        "from transformers import set_seed\n",
        "from datasets import load_dataset\nfrom transformers import set_seed\n",
    ).replace(
        "return DataLoader(self.dataset, shuffle=True)",
        "return load_dataset('json', data_files='x').shuffle()",
    )
    assert ".shuffle(seed=self.args.seed)" in fixed(shuffle, "RPL306")
    # A seed that differs per rank is not one every rank may split with.
    ranked = split.replace("set_seed(self.args.seed)", "set_seed(self.args.seed + self.rank)")
    assert "generator=torch.Generator().manual_seed(0)" in fixed(ranked, "RPL303")


@pytest.mark.parametrize(
    ("bound", "seed"),
    [
        # Assigned in another arm only: unbound where the sampler is built (no rank: in this
        # library function, the seed its caller gave torch).
        ("    if kind == 'balanced':\n        rank = dist.get_rank()\n"
         "        return Balanced(ds, rank)\n    else:\n", UNRANKED),
        ("    for shard in ds.shards:\n        rank = shard.rank\n    if kind:\n", UNRANKED),
        ("    try:\n        pass\n    except OSError:\n        rank = 0\n    if kind:\n", UNRANKED),
        # In the ``try`` body that the handler building the sampler handles: it may have
        # failed before the assignment.
        ("    try:\n        rank = dist.get_rank()\n        return None\n"
         "    except RuntimeError:\n", UNRANKED),
        # In the ``try`` body of the ``finally`` block building it: it runs also when the
        # body failed before the assignment.
        ("    try:\n        rank = dist.get_rank()\n    finally:\n", UNRANKED),
        # Assigned before the branch, on every path to it: the seed reads it.
        ("    rank = dist.get_rank()\n    if kind:\n", "rank"),
        ("    if kind:\n        rank = dist.get_rank()\n", "rank"),
        ("    rank = dist.get_rank()\n    try:\n        pass\n    except RuntimeError:\n",
         "rank"),
        ("    try:\n        rank = dist.get_rank()\n    except RuntimeError:\n        raise\n"
         "    else:\n", "rank"),
        # Before the ``try`` of the ``finally`` block, or in a ``finally`` block (which always
        # runs) before the branch.
        ("    rank = dist.get_rank()\n    try:\n        pass\n    finally:\n", "rank"),
        ("    try:\n        pass\n    finally:\n        rank = dist.get_rank()\n    if kind:\n",
         "rank"),
    ],
    ids=["other-arm", "loop-body", "handler", "try-body", "finally", "before", "same-arm",
         "before-try", "try-else", "before-finally", "after-finally"],
)  # fmt: skip
def test_the_generator_fix_reads_only_a_rank_bound_where_the_sampler_is_built(
    bound: str, seed: str
) -> None:
    source = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.utils.data import RandomSampler\n\n\n"
        "def sampler(ds, kind):\n    dist.init_process_group('nccl')\n"
        + bound
        + "        return RandomSampler(ds)\n"
    )
    assert squeezed(
        f"        return RandomSampler(ds, generator=torch.Generator().manual_seed({seed}))\n"
    ) in squeezed(fixed(source, "RPL302"))


def test_the_generator_fix_uses_the_seed_the_program_passes() -> None:
    source = (
        "import torch\nimport torch.distributed as dist\n"
        + LOADER
        + "def f(ds, args, rank):\n    dist.init_process_group('nccl')\n"
        "    seed = args.seed + rank\n    torch.manual_seed(seed)\n"
        "    return DataLoader(ds, 8, True)\n"
    )
    # The program's seed, which already differs per rank: no second rank offset.
    assert "generator=torch.Generator().manual_seed(seed))" in fixed(source, "RPL302")
    # Without the rank in the program's seed, the rank is mixed in as before.
    plain = source.replace("    seed = args.seed + rank\n", "").replace("(seed)", "(args.seed)")
    assert "generator=torch.Generator().manual_seed(args.seed + rank))" in fixed(plain, "RPL302")
    # A seed variable assigned again after the seeding call no longer holds that seed.
    moved = (
        "import torch\n" + LOADER + "def f(ds, seed):\n    torch.manual_seed(seed)\n"
        "    seed = seed * 2\n    return DataLoader(ds, 8, True)\n"
    )
    assert f"generator={INITIAL})" in fixed(moved, "RPL302")
    # A seed passed in another function does not reach this one.
    other = (
        "import torch\n" + LOADER + "def seed_all(seed):\n    torch.manual_seed(seed)\n\n\n"
        "def f(ds):\n    return DataLoader(ds, 8, True)\n"
    )
    assert f"generator={INITIAL})" in fixed(other, "RPL302")


def test_the_sampler_fix_and_the_loader_fix_together() -> None:
    source = (
        "import torch\nfrom torch.utils.data import DataLoader, RandomSampler\n\n\n"
        "def f(ds):\n    sampler = RandomSampler(ds)\n    return DataLoader(ds, sampler=sampler)\n"
    )
    assert rows(source, "RPL302") == [6, 7]
    # The sampler decides the order: it gets the generator; one on the loader, which does
    # not shuffle by itself, would change nothing.
    assert squeezed(fixed(source, "RPL302")) == squeezed(
        source.replace("RandomSampler(ds)", f"RandomSampler(ds, generator={INITIAL})")
    )
    # With workers, the loader's generator still seeds their base seeds: it gets one too.
    workers = source.replace("sampler=sampler)", "sampler=sampler, num_workers=4)")
    assert fixed(workers, "RPL302").count(f"generator={INITIAL}") == 2
    # A loader that shuffles by itself when there is no sampler keeps its own fix.
    either = source.replace(
        "    sampler = RandomSampler(ds)\n", "    sampler = RandomSampler(ds) if ds else None\n"
    ).replace("sampler=sampler)", "sampler=sampler, shuffle=sampler is None)")
    assert fixed(either, "RPL302").count(f"generator={INITIAL}") == 2


def test_a_subclass_that_takes_no_generator_gets_no_fix() -> None:
    source = (
        LOADER + "\n\nclass Loader(DataLoader):\n"
        "    def __init__(self, dataset, shuffle):\n"
        "        super().__init__(dataset, shuffle=shuffle)\n\n\n"
        "loader = Loader(ds, True)\n"
    )
    assert rows(source, "RPL302") == [9]
    # ``Loader(ds, True, generator=...)`` would raise a TypeError.
    assert fixed(source, "RPL302") == source


def test_no_generator_fix_before_torch_1_6() -> None:
    # DataLoader, the random samplers and random_split took no `generator=` before 1.6: the
    # fix would raise a TypeError there. The findings stand, without a fix.
    source = (
        "import torch\nfrom torch.utils.data import DataLoader, RandomSampler, random_split\n\n"
        "train, val = random_split(ds, [80, 20])\n"
        "loader = DataLoader(train, batch_size=8, shuffle=True)\n"
        "other = DataLoader(val, sampler=RandomSampler(val), num_workers=2)\n"
    )
    old = {"target-torch": "1.5"}
    assert rows(source, "RPL302", "RPL303", options=old) == [4, 5, 6, 6]
    assert fixed(source, "RPL302", "RPL303", options=old) == source
    assert (
        fixed(source, "RPL302", "RPL303", options={"target-torch": "1.6"}).count(
            "generator=torch.Generator().manual_seed(0)"
        )
        == 4
    )


def test_a_seed_loop_after_the_sampler_gets_no_constant() -> None:
    # The program runs once per seed and reseeds torch for each run: the sampler's order
    # follows that seed now, and a generator seeded 0 here would pin every run to one order.
    source = (
        "import torch\nfrom torch.utils.data import SubsetRandomSampler\n\n\n"
        "def main(args, train_idx):\n    sampler = SubsetRandomSampler(train_idx)\n"
        "    for seed in args.seeds:\n        torch.manual_seed(seed)\n"
        "        run(sampler)\n"
    )
    assert rows(source, "RPL302") == [6]
    assert fixed(source, "RPL302") == source
    # A literal seed passed later in the same block is the program's seed: it is used.
    literal = source.replace("    for seed in args.seeds:\n        torch.manual_seed(seed)\n", "")
    literal = literal.replace(
        "        run(sampler)\n", "    torch.manual_seed(3)\n    run(sampler)\n"
    )
    assert "SubsetRandomSampler(train_idx, generator=torch.Generator().manual_seed(3))" in fixed(
        literal, "RPL302"
    )


REBUILT = """\
import torch
from torch.utils.data import BatchSampler, DataLoader, SubsetRandomSampler

torch.manual_seed(0)


class Storage:
    def minibatches(self, size, n):
        sampler = BatchSampler(SubsetRandomSampler(range(size)), n, drop_last=True)
        for indices in sampler:
            yield indices


def stream(dataset):
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    while True:
        yield from loader


def train(dataset, epochs):
    for epoch in range(epochs):
        loader = DataLoader(dataset, batch_size=8, shuffle=True)
        for batch in loader:
            pass
    once = DataLoader(dataset, batch_size=8, shuffle=True)
    return once
"""


def test_a_loader_built_on_every_pass_gets_no_constant_generator() -> None:
    # A minibatch generator called per update, and a loader built anew each epoch: one
    # generator seeded alike each time would give every pass the same order. The loaders
    # built once keep their fix.
    assert rows(REBUILT, "RPL302") == [9, 15, 22, 25]
    text = fixed(REBUILT, "RPL302")
    assert "SubsetRandomSampler(range(size))" in text
    assert "        loader = DataLoader(dataset, batch_size=8, shuffle=True)\n" in text
    # An endless stream (``while True: yield from loader``) is built once: it keeps its fix.
    assert (
        "    loader = DataLoader(dataset, batch_size=8, shuffle=True,\n"
        "                        generator=torch.Generator().manual_seed(0))\n    while True:"
    ) in text
    assert text.count("generator=torch.Generator()") == 2
    assert "generator=torch.Generator().manual_seed(0))\n    return once\n" in text


PER_RANK = (
    "import torch\nimport torch.multiprocessing as mp\nfrom torch.utils.data import DataLoader\n\n\n"
    "def build(dataset):\n    return DataLoader(dataset, batch_size=8, shuffle=True)\n\n\n"
    "def worker(rank, args, dataset):\n    torch.manual_seed(args.seed + rank)\n"
    "    for batch in build(dataset):\n        pass\n"
)


def test_ranks_seeded_apart_keep_their_own_orders() -> None:
    # Run by spawned workers that seed themselves first: the seed of each process.
    spawned = PER_RANK + (
        "\n\nif __name__ == '__main__':\n    mp.spawn(worker, args=(args, dataset), nprocs=2)\n"
    )
    assert (
        "DataLoader(dataset, batch_size=8, shuffle=True,\n"
        "                      generator=torch.Generator().manual_seed(torch.initial_seed()))"
        in fixed(spawned, "RPL302")
    )
    # Nothing shows which process builds the loader: a constant would give every process
    # the order of one, so there is no fix.
    assert rows(PER_RANK, "RPL302") == [7]
    assert fixed(PER_RANK, "RPL302") == PER_RANK


def test_a_seed_in_another_branch_does_not_reach_the_loader() -> None:
    source = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n\n"
        "def build(dataset):\n    return DataLoader(dataset, batch_size=8, shuffle=True)\n\n\n"
        "if __name__ == '__main__':\n    if resume:\n        torch.manual_seed(args.seed)\n"
        "    build(dataset)\n"
    )
    # Seeded on one path only: `torch.initial_seed()` would not be the program's seed on
    # the other path; the configured seed is written.
    assert "generator=torch.Generator().manual_seed(0))" in fixed(source, "RPL302")
    seeded = source.replace(
        "    if resume:\n        torch.manual_seed(args.seed)\n",
        "    torch.manual_seed(args.seed)\n",
    )
    assert "generator=torch.Generator().manual_seed(torch.initial_seed()))" in fixed(
        seeded, "RPL302"
    )


# -- RPL303 -------------------------------------------------------------------------------------

SPLIT = "from torch.utils.data import random_split\n"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("random_split(ds, [8, 2])", [2]),
        ("random_split(ds, lengths=[0.8, 0.2])", [2]),
        ("random_split(ds, [8, 2], g)", []),
        ("random_split(ds, [8, 2], generator=g)", []),
        ("random_split(ds, [8, 2], **options)", []),
    ],
)
def test_random_split(call: str, expected: list[int]) -> None:
    assert rows(SPLIT + f"parts = {call}\n", "RPL303") == expected


def test_random_split_aliases_and_look_alikes() -> None:
    assert rows("import torch.utils.data as tud\na, b = tud.random_split(ds, [8, 2])\n",
                "RPL303") == [2]  # fmt: skip
    assert rows("from mylib import random_split\na, b = random_split(ds, [8, 2])\n", "RPL303") == []


def test_random_split_fix_never_mixes_in_the_rank() -> None:
    source = (
        "import torch.distributed as dist\n" + SPLIT + "\n\n"
        "def split(ds, rank):\n    dist.init_process_group('nccl')\n"
        "    return random_split(ds, [8, 2])\n"
    )
    assert fixed(source, "RPL303", options={"seed": 3}) == (
        "import torch\n"
        + source.replace(
            "random_split(ds, [8, 2])",
            "random_split(ds, [8, 2], generator=torch.Generator().manual_seed(3))",
        )
    )


# -- RPL304 -------------------------------------------------------------------------------------

SAMPLER = """\
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler


    def train(dataset, epochs):
        sampler = {sampler}
        loader = DataLoader(dataset, sampler=sampler)
        for epoch in range(epochs):
            {epoch}
            for batch in loader:
                print(batch)
"""
SET_EPOCH_MESSAGE = "`DistributedSampler` without `set_epoch` calls: every epoch has the same order"


@pytest.mark.parametrize(
    ("sampler", "epoch", "expected"),
    [
        ("DistributedSampler(dataset)", "pass", [6]),
        ("DistributedSampler(dataset, shuffle=True)", "pass", [6]),
        ("DistributedSampler(dataset, None, None, flag)", "pass", [6]),
        ("DistributedSampler(dataset, shuffle=False)", "pass", []),
        ("DistributedSampler(dataset, 2, 0, False)", "pass", []),
        ("DistributedSampler(dataset)", "sampler.set_epoch(epoch)", []),
        ("DistributedSampler(dataset)", "loader.sampler.set_epoch(epoch)", []),
    ],
)
def test_distributed_sampler_set_epoch(sampler: str, epoch: str, expected: list[int]) -> None:
    source = SAMPLER.format(sampler=sampler, epoch=epoch).replace("flag)", "epochs > 1)")
    assert found(source, "RPL304") == [("RPL304", row, SET_EPOCH_MESSAGE) for row in expected]


def test_set_epoch_fix_is_display_only() -> None:
    source = SAMPLER.format(sampler="DistributedSampler(dataset)", epoch="pass")
    result = lint_text(textwrap.dedent(source), "example.py", settings(("RPL304",)))
    [diagnostic] = result.diagnostics
    assert diagnostic.fix is not None
    assert diagnostic.fix.applicability is FixSafety.DISPLAY_ONLY
    assert diagnostic.fix.message == "Call `sampler.set_epoch(epoch)` at the start of every epoch"
    assert diagnostic.fix.edits == ()
    assert fixed(source, "RPL304") == textwrap.dedent(source)


def test_set_epoch_in_another_file_of_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    train = SAMPLER.format(sampler="DistributedSampler(dataset)", epoch="advance(loader, epoch)")
    write(
        tmp_path,
        {
            "loop.py": "def advance(loader, epoch):\n    loader.sampler.set_epoch(epoch)\n",
            "train.py": "from loop import advance\n" + textwrap.dedent(train),
        },
    )
    assert project_findings(tmp_path) == set()
    # The changed file alone: the module it imports is read from the project.
    assert project_findings(tmp_path, "train.py") == set()
    # Without the call anywhere, the sampler is reported.
    write(tmp_path, {"loop.py": "def advance(loader, epoch):\n    pass\n"})
    assert project_findings(tmp_path) == {("train.py", "RPL304", 7, SET_EPOCH_MESSAGE)}


def test_a_lightning_trainer_sets_the_epoch() -> None:
    source = (
        "import lightning as L\n"
        + textwrap.dedent(SAMPLER.format(sampler="DistributedSampler(dataset)", epoch="pass"))
        + "trainer = L.Trainer()\n"
    )
    assert found(source, "RPL304") == []


EVALUATION = """\
    import torch
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    from tqdm import tqdm


    {helper}


    def main(dataset, epochs):
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, sampler=sampler, batch_size=8)
        for epoch in range(epochs):
            {use}
"""


NO_GRAD_LOOP = "with torch.no_grad():\n    for batch in loader:\n        print(batch)"
EVALUATE = "def evaluate(model, data):\n    with torch.no_grad():\n        for b in data:\n            model(b)"


@pytest.mark.parametrize(
    ("helper", "use", "reported"),
    [
        # Iterated only under no_grad (directly, through enumerate or tqdm): evaluation.
        ("pass", NO_GRAD_LOOP, False),
        (
            "pass",
            "with torch.inference_mode():\n    for i, b in enumerate(loader):\n"
            "        print(i, b, len(loader))",
            False,
        ),
        ("pass", NO_GRAD_LOOP.replace("in loader", "in tqdm(loader)"), False),
        # Passed to a function of the file that iterates it under no_grad, or is decorated.
        (EVALUATE, "evaluate(print, loader)", False),
        (
            "@torch.no_grad()\ndef evaluate(model, data):\n    for b in data:\n        model(b)",
            "evaluate(print, data=loader)",
            False,
        ),
        # Iterated where grad is recorded, or used otherwise: the order may reach training.
        ("pass", "for batch in loader:\n    print(batch)", True),
        ("pass", NO_GRAD_LOOP.replace("no_grad", "enable_grad"), True),
        ("pass", "with torch.no_grad():\n    batch = next(iter(loader))", True),
        (
            "def train(model, data):\n    for b in data:\n        model(b).backward()",
            "train(print, loader)",
            True,
        ),
        # Passed on again, to a function defined elsewhere, or to a nested function.
        ("def evaluate(model, data):\n    run(model, data)", "evaluate(print, loader)", True),
        ("pass", "run(print, loader)", True),
        (
            "def evaluate(model, data):\n    def inner():\n        for b in data:\n"
            "            model(b)\n\n    with torch.no_grad():\n        inner()",
            "evaluate(print, loader)",
            True,
        ),
    ],
)
def test_a_sampler_that_feeds_evaluation_only_needs_no_epoch(
    helper: str, use: str, reported: bool
) -> None:
    # Its order changes what an evaluation reads, never what training learns.
    assert rows(_evaluation(helper, use), "RPL304") == (
        [_sampler_row(_evaluation(helper, use))] if reported else []
    )


def _evaluation(helper: str, use: str) -> str:
    """``EVALUATION`` with ``use`` (its lines indented as the loop's body) in the loop."""
    body = use.replace("\n", "\n" + " " * 8)
    return textwrap.dedent(EVALUATION).format(helper=helper, use=body)


def _sampler_row(source: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if "= Distributed" in line)


def test_a_sampler_whose_loader_is_rebound_or_also_trained_on_is_reported() -> None:
    source = _evaluation(
        "pass",
        NO_GRAD_LOOP + "\nloader = DataLoader(dataset, sampler=sampler)\n"
        "for b in loader:\n    print(b)",
    )
    assert rows(source, "RPL304") == [_sampler_row(source)]
    # The same name, bound again by a function of its own, is another variable.
    shadow = _evaluation(
        "def other(loader):\n    for b in loader:\n        b.backward()",
        NO_GRAD_LOOP,
    )
    assert rows(shadow, "RPL304") == []


# -- RPL305 -------------------------------------------------------------------------------------

LISTING_HEADER = "import glob\nimport os\nfrom pathlib import Path\n\n\n"
LISTINGS = [
    ("os.listdir(root)", "os.listdir", "sorted(os.listdir(root))"),
    ("os.scandir(root)", "os.scandir", "sorted(os.scandir(root), key=lambda entry: entry.name)"),
    ("glob.glob(root + '/*.png')", "glob.glob", "sorted(glob.glob(root + '/*.png'))"),
    ("glob.iglob(root + '/*.png')", "glob.iglob", "sorted(glob.iglob(root + '/*.png'))"),
    ("Path(root).glob('*.png')", "Path.glob", "sorted(Path(root).glob('*.png'))"),
    ("Path(root).rglob('*.png')", "Path.rglob", "sorted(Path(root).rglob('*.png'))"),
    ("Path(root).iterdir()", "Path.iterdir", "sorted(Path(root).iterdir())"),
]


@pytest.mark.parametrize(
    ("listing", "name", "sorted_listing"), LISTINGS, ids=[x[1] for x in LISTINGS]
)
def test_each_listing_api_feeding_a_dataset(listing: str, name: str, sorted_listing: str) -> None:
    source = (
        LISTING_HEADER
        + f"def build(root):\n    files = list({listing})\n    return Images(files)\n"
    )
    assert found(source, "RPL305") == [
        ("RPL305", 7, f"`{name}` lists files in filesystem order, which differs between machines")
    ]
    assert fixed(source, "RPL305") == source.replace(listing, sorted_listing)
    assert found(source.replace(listing, sorted_listing), "RPL305") == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # A list of samples built in listing order.
        ("samples = []\n    for name in os.listdir(root):\n        samples.append(name)\n"
         "    return samples\n", [8]),
        # Two listings zipped into pairs.
        ("return list(zip(glob.glob(root + '/*.png'), glob.glob(root + '/*.txt')))\n", [7, 7]),
        ("self_files = os.listdir(root)\n    return dict(enumerate(self_files))\n", [7]),
        ("names = os.listdir(root)\n    names.sort()\n    return Images(names)\n", []),
        ("names = sorted(os.listdir(root))\n    return Images(names)\n", []),
        ("return len(os.listdir(root))\n", []),
        ("return set(os.listdir(root))\n", []),
        ("return 'a.png' in os.listdir(root)\n", []),
        ("for name in os.listdir(root):\n        os.remove(name)\n", []),
        ("unused = os.listdir(root)\n", []),
    ],
    ids=["samples-loop", "zip", "enumerate", "sort-method", "sorted-variable", "len", "set",
         "membership", "per-file-loop", "unused"],
)  # fmt: skip
def test_listing_order_matters(body: str, expected: list[int]) -> None:
    assert rows(LISTING_HEADER + f"def build(root):\n    {body}", "RPL305") == expected


def test_a_listing_kept_in_a_dataset_attribute() -> None:
    source = LISTING_HEADER + (
        "class Images:\n    def __init__(self, root: Path):\n"
        "        self.files = list(root.glob('*.png'))\n\n"
        "    def __getitem__(self, index):\n        return self.files[index]\n"
    )
    assert rows(source, "RPL305") == [8]
    assert "self.files = list(sorted(root.glob('*.png')))" in fixed(source, "RPL305")
    assert rows(source.replace("list(root", "sorted(root"), "RPL305") == []


def test_a_glob_on_something_not_known_to_be_a_path_is_quiet() -> None:
    assert rows("def build(store):\n    return list(store.glob('*.png'))\n", "RPL305") == []


def test_a_filtered_listing_stored_in_an_attribute_through_a_variable() -> None:
    source = LISTING_HEADER + (
        "class Images:\n    def __init__(self, root):\n"
        "        files = [f for f in os.listdir(root) if f.endswith('.png')]\n"
        "        self.files = files\n\n"
        "    def __getitem__(self, index):\n        return self.files[index]\n"
    )
    assert rows(source, "RPL305") == [8]
    assert "[f for f in sorted(os.listdir(root)) if f.endswith('.png')]" in fixed(source, "RPL305")
    # Replaced by something else before it is kept: nothing to report.
    assert rows(source.replace("self.files = files", "files = []\n        self.files = files"),
                "RPL305") == []  # fmt: skip


def test_a_module_level_path_listed_in_a_function() -> None:
    source = LISTING_HEADER + (
        "ROOT = Path(__file__).parent / 'data'\n\n\n"
        "def images():\n    return list(ROOT.glob('*.png'))\n"
    )
    assert found(source, "RPL305") == [
        (
            "RPL305",
            10,
            "`Path.glob` lists files in filesystem order, which differs between machines",
        )
    ]
    assert "return list(sorted(ROOT.glob('*.png')))" in fixed(source, "RPL305")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # Which data file is used depends on the listing's order.
        ("return next(Path(root).glob('*.png'))\n", [7]),
        ("names = [n for n in os.listdir(root) if n.endswith('.png')]\n"
         "    return names[0]\n", [7]),
        # The one model or config file of a directory (issue 12, part 2, item 7).
        ("return next(Path(root).glob('*.xml'))\n", []),
        ("names = [n for n in os.listdir(root) if n.endswith('.ckpt')]\n"
         "    return names[0]\n", []),
        ("return [n for n in os.listdir(root) if 'clean' in n][0]\n", []),
        ("matches = list(Path(root).glob(key + '.*'))\n"
         "    assert len(matches) == 1\n    return matches[0]\n", []),
        ("names = os.listdir(root)\n    random.shuffle(names)\n    return names[:10]\n", [7]),
        ("names = os.listdir(root)\n    rng.shuffle(names)\n", [7]),
        ("return ImageDataset(glob.glob(root + '/*.png'))\n", [7]),
        # The order does not reach data: a lookup, a mapping, a helper that picks by name.
        ("names = os.listdir(root)\n    return 'tokenizer.json' in '\\n'.join(names)\n", []),
        ("return {name: os.path.getmtime(name) for name in os.listdir(root)}\n", []),
        ("return pick_tokenizer_file(os.listdir(root))\n", []),
        # A list built in listing order, then sorted or handed to an upload helper.
        ("found = []\n    for name in os.listdir(root):\n        found.append(name)\n"
         "    return sorted(found)\n", []),
        ("batch = []\n    for name in os.listdir(root):\n        batch.append(name)\n"
         "    upload(operations=batch)\n", []),
        ("found = []\n    for name in os.listdir(root):\n        found.append(name)\n"
         "    return found\n", [8]),
    ],
    ids=["next", "first-item", "next-config", "first-checkpoint", "named-pick",
         "asserted-one", "shuffle", "rng-shuffle", "dataset-class", "joined-membership",
         "dict-comprehension", "helper-function", "collected-then-sorted", "collected-upload",
         "collected-returned"],
)  # fmt: skip
def test_listing_order_reaching_data_or_not(body: str, expected: list[int]) -> None:
    header = LISTING_HEADER.replace("import glob\n", "import glob\nimport random\n")
    assert rows(header + f"def build(root, rng):\n    {body}", "RPL305") == [
        row + 1 for row in expected
    ]


def test_records_kept_by_an_object_that_serves_no_samples_are_quiet() -> None:
    source = LISTING_HEADER + (
        "class Recorder:\n    def __init__(self, root):\n        self.records = []\n"
        "        for name in glob.glob(root + '/*.json'):\n"
        "            self.records.append(name)\n"
    )
    assert rows(source, "RPL305") == []
    served = source + "\n    def __len__(self):\n        return len(self.records)\n"
    assert rows(served, "RPL305") == [9]


# -- values as people pass them, across functions and files (issue 12, part 2, item 3) ------


def test_a_dataset_returned_by_a_project_function_in_another_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "data.py": """\
                import numpy as np
                from torch.utils.data import Dataset
                from torchvision import datasets, transforms


                class Noisy(Dataset):
                    def __init__(self):
                        self.rng = np.random.default_rng(0)

                    def __getitem__(self, index):
                        return self.rng.normal()


                def build_dataset(args, noisy=False):
                    if noisy:
                        return Noisy(), 1
                    tf = transforms.Compose([transforms.RandomCrop(32), transforms.ToTensor()])
                    dataset = datasets.CIFAR10(args.root, transform=tf)
                    return dataset, 10
            """,
            "train.py": """\
                from torch.utils.data import DataLoader

                from data import build_dataset


                def main(args):
                    train_set, classes = build_dataset(args)
                    return DataLoader(train_set, shuffle=True, num_workers=4)


                if __name__ == "__main__":
                    main(None)
            """,
        },
    )
    # One of the datasets the function may return owns a generator.
    assert {(f[1], f[2]) for f in project_findings(tmp_path, "train.py")} == {
        ("RPL301", 8),
        ("RPL302", 8),
    }
    data = tmp_path / "data.py"
    data.write_text(
        data.read_text().replace("        return Noisy(), 1\n", "        raise ValueError\n")
    )
    assert {(f[1], f[2]) for f in project_findings(tmp_path, "train.py")} == {("RPL302", 8)}


def test_a_dataset_passed_to_a_trainer_is_judged_by_its_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    trainer = """\
        import torch
        from torch.utils.data import DataLoader


        class Trainer:
            def __init__(self, config, model, train_dataset):
                self.train_dataset = train_dataset
                self.config = config

            def run(self):
                sampler = torch.utils.data.RandomSampler(
                    self.train_dataset, generator=torch.Generator().manual_seed(0)
                )
                return DataLoader(
                    self.train_dataset, sampler=sampler, num_workers=self.config.workers
                )
    """
    chars = """\
        import torch
        from torch.utils.data import Dataset

        from trainer import Trainer


        class Chars(Dataset):
            def __getitem__(self, index):
                return torch.tensor([index])


        if __name__ == "__main__":
            Trainer(None, None, Chars()).run()
    """
    write(tmp_path, {"trainer.py": trainer, "chars.py": chars})
    assert project_findings(tmp_path, "trainer.py", "chars.py") == set()
    noisy = chars.replace(
        "            def __getitem__(self, index):\n                return torch.tensor([index])",
        "            def __init__(self):\n                self.g = torch.Generator()\n\n"
        "            def __getitem__(self, index):\n"
        "                return torch.rand(1, generator=self.g)",
    )
    write(tmp_path, {"trainer.py": trainer, "chars.py": noisy})
    assert {(f[0], f[1], f[2]) for f in project_findings(tmp_path, "trainer.py", "chars.py")} == {
        ("trainer.py", "RPL301", 14)
    }


def test_loader_kwargs_handed_to_worker_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        {
            "train.py": """\
                import torch


                def train(rank, args, dataset, dataloader_kwargs):
                    torch.manual_seed(args.seed + rank)
                    loader = torch.utils.data.DataLoader(dataset, **dataloader_kwargs)
                    return loader
            """,
            "main.py": """\
                import torch.multiprocessing as mp
                from torchvision import datasets

                from train import train

                if __name__ == "__main__":
                    dataset = datasets.MNIST("data")
                    kwargs = {"batch_size": 64, "shuffle": True}
                    processes = []
                    for rank in range(4):
                        p = mp.Process(target=train, args=(rank, None, dataset, kwargs))
                        p.start()
                        processes.append(p)
            """,
        },
    )
    assert {(f[0], f[1], f[2]) for f in project_findings(tmp_path, "train.py", "main.py")} == {
        ("train.py", "RPL302", 6)
    }


def test_a_listing_helper_is_judged_where_other_modules_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    helpers = """\
        import os


        def scandir(dir_path, suffix=None):
            def _scandir(path):
                for entry in os.scandir(path):
                    if suffix is None or entry.name.endswith(suffix):
                        yield entry.path

            return _scandir(dir_path)
    """
    data = """\
        from helpers import scandir


        def paired_paths(gt_folder, lq_folder):
            lq_paths = sorted(scandir(lq_folder))
            gt_paths = list(scandir(gt_folder))
            return [(gt, lq) for gt, lq in zip(gt_paths, lq_paths)]
    """
    write(tmp_path, {"helpers.py": helpers, "data.py": data})
    message = "`scandir` lists files in filesystem order, which differs between machines"
    assert project_findings(tmp_path, "helpers.py", "data.py") == {
        ("data.py", "RPL305", 6, message)
    }
    # Used only in its own module: reported at its listing.
    used_here = textwrap.dedent(helpers) + "\n\nFIRST = list(scandir('data'))[0]\n"
    write(tmp_path, {"helpers.py": used_here})
    assert {(f[0], f[2]) for f in project_findings(tmp_path, "helpers.py")} == {("helpers.py", 6)}
