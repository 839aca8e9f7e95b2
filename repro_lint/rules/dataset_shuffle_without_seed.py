"""RPL306: a Hugging Face ``datasets`` shuffle or split without ``seed=``."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from repro_lint import program_seed as ps
from repro_lint.arguments import argument, expression_code, literal_bool, with_keyword
from repro_lint.diagnostics import FixSafety
from repro_lint.loaders import block_indent, mentions_rank
from repro_lint.rule import FileContext, Invalid, NodeEdit, Replace, Rule, Valid
from repro_lint.values import target_names
from repro_lint.walker import NESTED_SCOPES, code_children

# Functions of the ``datasets`` library that give a dataset (or a dict of splits).
_SOURCES = frozenset(
    {
        "datasets.load_dataset", "datasets.load.load_dataset", "datasets.load_from_disk",
        "datasets.load.load_from_disk", "datasets.concatenate_datasets",
        "datasets.interleave_datasets", "datasets.combine.concatenate_datasets",
        "datasets.combine.interleave_datasets",
    }
)  # fmt: skip
# Its dataset classes: constructing one, or ``from_dict``/``from_pandas``/... on one.
_CLASSES = frozenset({"Dataset", "IterableDataset", "DatasetDict", "IterableDatasetDict"})
_CLASS_MODULES = (
    "datasets",
    "datasets.arrow_dataset",
    "datasets.iterable_dataset",
    "datasets.dataset_dict",
)
# Methods of a dataset that give a dataset again (so a chain stays one).
_DATASET_METHODS = frozenset(
    {
        "map", "filter", "select", "shuffle", "sort", "flatten", "flatten_indices",
        "remove_columns", "rename_column", "rename_columns", "select_columns", "cast",
        "cast_column", "class_encode_column", "with_format", "with_transform",
        "train_test_split", "skip", "take", "batch", "add_column", "add_item", "shard",
        "repeat", "to_iterable_dataset", "pop", "align_labels_with_mapping",
    }
)  # fmt: skip
# Dataset.shuffle(seed, generator, ...); train_test_split(test_size, train_size, shuffle,
# stratify_by_column, seed, generator, ...).
_SHUFFLE_SEED = 0
_SPLIT_SHUFFLE = 2
_SPLIT_SEED = 4
_SPLIT_GENERATOR = 5


@dataclass
class _Scope:
    # Names bound to a dataset of the library (any assignment in the scope).
    datasets: set[str] = field(default_factory=set)


class DatasetShuffleWithoutSeed(Rule):
    """
    ## What it does
    Flags `shuffle()` and `train_test_split()` on a Hugging Face `datasets` dataset
    (`Dataset`, `IterableDataset`, `DatasetDict`) called without `seed=` (or with
    `seed=None`) and without `generator=`. The dataset is recognised by where it comes
    from: `load_dataset`, `load_from_disk`, `Dataset.from_dict`/`from_pandas`/...,
    `concatenate_datasets`, a split of one (`data["train"]`), or another dataset method
    (`.map()`, `.filter()`, `.train_test_split()`), directly or through a variable or an
    attribute of the same object.

    ## When it does not fire
    - `seed=` (or `seeds=` for a `DatasetDict`) or `generator=` is given, also by
      position, or a `**mapping` may hold it.
    - `train_test_split(..., shuffle=False)`: the split takes the rows in order.
    - `shuffle()` on anything not known to be such a dataset: a PyTorch Geometric
      dataset's `shuffle()` draws from torch's global generator (a missing seed there is
      the program's), a list, a pandas frame.

    ## Why is this bad?
    Without a seed, `Dataset.shuffle()` and `train_test_split()` derive one from numpy's
    global random state (and advance it). The training order, or which rows end up in the
    validation split, then depends on everything else that used numpy's global generator
    before, as with a DataLoader without `generator=`, and differs from run to run when
    numpy is not seeded first (a `Trainer` that seeds only later does not help).
    `IterableDataset.shuffle()` without a seed is worse: it builds
    `np.random.default_rng(None)`, fresh entropy from the operating system, so the shard
    and buffer order differ on every run even when numpy is seeded.

    ## Fix safety
    Safe: `seed=<seed>` is passed (`seed=None` is replaced), with the program's own seed
    where the call can reach it: the seed a seeding call passes earlier in the same function
    on every path, the function's seed parameter, the one integer the function passes as a
    seed (`train_test_split(..., seed=42)` just above), in a method the one seed the other
    methods of its class pass from the instance (`set_seed(self.args.seed)`), or the one
    integer the module's top-level code passes as a seed; otherwise the configured `seed`. A
    seed that differs per rank is passed over: every rank must shuffle and split the dataset
    alike before it takes its shard. The order is still shuffled, now repeatably and on its
    own.

    ## Options
    `seed` (default 0) is the value inserted where the program passes no seed of its own.

    ## References
    - Hugging Face `datasets`: `Dataset.shuffle`, `Dataset.train_test_split` (a missing
      seed is taken from `np.random.get_state()`), `IterableDataset.shuffle` ("If None,
      then fresh, unpredictable entropy will be pulled from the OS")
    """

    CODE = "RPL306"
    MESSAGE = "`datasets` shuffle or split without `seed=` has no repeatable order of its own"
    FIX_TITLE = "Pass `seed=<seed>`"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("datasets",)
    INVALID = (
        Invalid(
            "from datasets import load_dataset\n\ndata = load_dataset('json', data_files='d.json')\n"
            "train_data = data['train'].shuffle().map(tokenize)\n",
            fixed="from datasets import load_dataset\n\n"
            "data = load_dataset('json', data_files='d.json')\n"
            "train_data = data['train'].shuffle(seed=0).map(tokenize)\n",
        ),
        Invalid(
            "from datasets import load_dataset\n\n\ndef splits(path, val_size):\n"
            "    data = load_dataset(path)\n"
            "    train_val = data['train'].train_test_split(test_size=val_size)\n"
            "    return train_val['train'], train_val['test']\n",
            fixed="from datasets import load_dataset\n\n\ndef splits(path, val_size):\n"
            "    data = load_dataset(path)\n"
            "    train_val = data['train'].train_test_split(test_size=val_size, seed=0)\n"
            "    return train_val['train'], train_val['test']\n",
            note="the validation rows change from run to run",
        ),
        Invalid(
            "import datasets\n\n\nclass Corpus:\n    def setup(self):\n"
            "        self.stream = datasets.load_dataset('c4', 'en', streaming=True)['train']\n\n"
            "    def train_stream(self):\n"
            "        return self.stream.shuffle(seed=None, buffer_size=10_000)\n",
            fixed="import datasets\n\n\nclass Corpus:\n    def setup(self):\n"
            "        self.stream = datasets.load_dataset('c4', 'en', streaming=True)['train']\n\n"
            "    def train_stream(self):\n"
            "        return self.stream.shuffle(seed=0, buffer_size=10_000)\n",
            note="an `IterableDataset` kept in an attribute, with `seed=None`",
        ),
        Invalid(
            "from datasets import load_dataset\n\n\ndef train(data_path, val_set_size):\n"
            "    data = load_dataset('json', data_files=data_path)\n"
            "    train_val = data['train'].train_test_split(\n"
            "        test_size=val_set_size, shuffle=True, seed=42\n    )\n"
            "    return train_val['train'].shuffle().map(tokenize)\n",
            fixed="from datasets import load_dataset\n\n\ndef train(data_path, val_set_size):\n"
            "    data = load_dataset('json', data_files=data_path)\n"
            "    train_val = data['train'].train_test_split(\n"
            "        test_size=val_set_size, shuffle=True, seed=42\n    )\n"
            "    return train_val['train'].shuffle(seed=42).map(tokenize)\n",
            note="the seed the same function already gives the split",
        ),
    )
    VALID = (
        Valid(
            "from datasets import load_dataset\n\ndata = load_dataset('openwebtext')\n"
            "split = data['train'].train_test_split(test_size=0.0005, seed=2357, shuffle=True)\n",
        ),
        Valid(
            "from datasets import Dataset\n\nds = Dataset.from_dict({'x': [1, 2, 3]})\n"
            "ordered = ds.train_test_split(test_size=0.5, shuffle=False)\n",
            note="a split that takes the rows in order",
        ),
        Valid(
            "from torch_geometric.datasets import TUDataset\n\n"
            "dataset = TUDataset('data', name='MUTAG').shuffle()\n",
            note="PyG's `shuffle()` is not a `datasets` shuffle",
        ),
        Valid(
            "import random\nfrom datasets import load_dataset\n\n"
            "rows = list(load_dataset('imdb')['train'])\nrandom.shuffle(rows)\n",
            note="not a dataset method",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._scopes: list[_Scope] = [_Scope()]
        # Attributes of ``self`` bound to a dataset, per enclosing class.
        self._attributes: list[set[str]] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._attributes.append(set())
        # An attribute set in any method counts in every method of the class.
        for statement in node.body.body:
            if type(statement) is cst.FunctionDef:
                for child in _assignments(statement):
                    if self._is_dataset(child.value, outside=True):
                        for target in child.targets:
                            if _self_attribute(target.target) is not None:
                                self._attributes[-1].add(str(_self_attribute(target.target)))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._attributes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(_Scope())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._is_dataset(node.value):
            return
        for target in node.targets:
            for name in target_names(target.target):
                self._scopes[-1].datasets.add(name)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value not in (
            "shuffle",
            "train_test_split",
        ):
            return
        if not self._is_dataset(func.value):
            return
        if any(arg.star == "**" for arg in node.args):
            return
        split = func.attr.value == "train_test_split"
        if split:
            shuffle = argument(node, "shuffle", _SPLIT_SHUFFLE)
            if shuffle is not None and literal_bool(shuffle.value) is False:
                return
            if argument(node, "generator", _SPLIT_GENERATOR) is not None:
                return
            seed = argument(node, "seed", _SPLIT_SEED)
        else:
            if any(argument(node, k) is not None for k in ("generator", "seeds", "generators")):
                return
            seed = argument(node, "seed", _SHUFFLE_SEED)
        if seed is not None and not (type(seed.value) is cst.Name and seed.value.value == "None"):
            return
        # A split exists on map-style datasets only (seeded from numpy's global state); an
        # IterableDataset's shuffle without a seed takes fresh entropy from the OS.
        source = "numpy's global RNG" if split else "numpy's global RNG or OS entropy"
        what = "train_test_split()" if split else "shuffle()"
        self.report(
            node,
            f"`{what}` of a `datasets` dataset without `seed=` draws from {source}",
            fix=self._fix(node, seed),
        )

    def _fix(self, node: cst.Call, seed: cst.Arg | None) -> list[NodeEdit]:
        # The program's seed, the same on every rank: each rank must shuffle and split the
        # dataset alike before it takes its shard. ``seed=None`` is no seed, as before.
        names = self.context.names
        found = ps.file_seed(
            self.context.statement_stack,
            self.context.module,
            self.qualified_name,
            self.context.config.seed_functions,
            ranked=lambda node: mentions_rank(node, names),
        )
        value = found.keyword() if found is not None else str(self.context.config.seed)
        if seed is not None:
            return [Replace(seed.value, cst.parse_expression(value))]
        module = self.context.module
        indent = block_indent(self.context.statement_stack, module)
        new = with_keyword(node, "seed", value)
        return [Replace(node, cst.parse_expression(expression_code(module, new, indent)))]

    # -- what is a dataset ----------------------------------------------------------------------

    def _is_dataset(self, node: cst.BaseExpression, outside: bool = False, depth: int = 0) -> bool:
        """Whether an expression evaluates to a dataset of the ``datasets`` library.
        ``outside``: judged before the traversal reaches it (names are not followed)."""
        if depth > 16:
            return False
        if type(node) is cst.Call:
            qualified = self.qualified_name(node.func)
            if qualified is not None:
                return self._source(qualified)
            func = node.func
            if type(func) is cst.Attribute and func.attr.value in _DATASET_METHODS:
                return self._is_dataset(func.value, outside, depth + 1)
            return False
        if type(node) is cst.Subscript:
            # ``data["train"]``: a split of a dict of splits.
            return self._is_dataset(node.value, outside, depth + 1)
        if type(node) is cst.Name and not outside:
            return any(
                node.value in scope.datasets for scope in (self._scopes[-1], self._scopes[0])
            )
        attribute = _self_attribute(node)
        return (
            attribute is not None and bool(self._attributes) and (attribute in self._attributes[-1])
        )

    @staticmethod
    def _source(qualified: str) -> bool:
        if qualified in _SOURCES:
            return True
        module, _, last = qualified.rpartition(".")
        if module in _CLASS_MODULES and last in _CLASSES:
            return True
        owner, _, klass = module.rpartition(".")
        return (
            owner in _CLASS_MODULES
            and klass in _CLASSES
            and (last.startswith("from_") or last == "load_from_disk")
        )


def _self_attribute(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
        return node.attr.value
    return None


def _assignments(function: cst.FunctionDef) -> list[cst.Assign]:
    found: list[cst.Assign] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        current = stack.pop()
        if type(current) is cst.Assign:
            found.append(current)
        if type(current) in NESTED_SCOPES:
            continue
        stack.extend(code_children(current))
    return found
