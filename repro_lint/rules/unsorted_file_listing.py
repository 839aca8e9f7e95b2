"""RPL305: a directory listing whose filesystem order feeds data, without ``sorted()``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from repro_lint import randomness as rng
from repro_lint.arguments import expression_code, literal_int, literal_str, number_is_float
from repro_lint.datasets import data
from repro_lint.diagnostics import Diagnostic, FixSafety
from repro_lint.loaders import KEEPS_ORDER, block_indent
from repro_lint.names import dotted_name
from repro_lint.program import Program, SettledRule, Unit
from repro_lint.rule import FileContext, Invalid, NodeEdit, Replace, Valid
from repro_lint.walker import children

# Functions that list a directory (qualified) -> how to sort what they return.
LISTINGS: dict[str, str] = {
    "os.listdir": "sorted({})",
    "os.scandir": "sorted({}, key=lambda entry: entry.name)",
    "glob.glob": "sorted({})",
    "glob.iglob": "sorted({})",
    # ``sorted(os.walk(d))`` orders the directories, not the file names in each: no fix.
    "os.walk": "",
}
PATH_LISTINGS = frozenset({"glob", "rglob", "iterdir"})
PATH_CLASSES = frozenset(
    {
        "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.WindowsPath",
        "pathlib.PurePosixPath", "pathlib.PureWindowsPath",
    }
)  # fmt: skip
# Path methods and properties that give a Path again.
_PATH_STEPS = frozenset(
    {"parent", "resolve", "absolute", "expanduser", "with_name", "with_suffix", "with_stem",
     "joinpath", "cwd", "home"}
)  # fmt: skip
# Calls whose result does not depend on the order of the iterable they get.
_ORDER_FREE = frozenset(
    {
        "builtins.sorted", "builtins.len", "builtins.set", "builtins.frozenset", "builtins.any",
        "builtins.all", "builtins.sum", "builtins.max", "builtins.min", "builtins.bool",
        "builtins.print", "collections.Counter", "natsort.natsorted", "natsort.humansorted",
        "natsort.realsorted", "natsort.os_sorted",
    }
)  # fmt: skip
# Calls whose result keeps the order of the iterable they get.
_ORDER_KEEPING = KEEPS_ORDER
# Calls whose result depends on the order of the iterable they get, in a way that decides
# which data is used where: pairing, numbering, shuffling, sampling, splitting, the first item.
_ORDER_SENSITIVE = frozenset(
    {
        "builtins.zip", "builtins.enumerate", "random.shuffle",
        "random.sample", "random.choice", "random.choices", "numpy.random.choice",
        "numpy.random.permutation", "numpy.random.shuffle", "torch.utils.data.random_split",
        "torch.utils.data.Subset", "sklearn.model_selection.train_test_split",
    }
)  # fmt: skip
# Methods of generator objects (``rng.shuffle(files)``) that depend on the order they get.
_RNG_METHODS = frozenset({"shuffle", "choice", "choices", "sample", "permutation"})
# Data pipelines: a class constructed from the listing keeps its order (``Images(files)``,
# ``ImageDataset(files)``); so do the data utilities of torch and its domain libraries.
_DATA_MODULES = ("torch.utils.data.", "torchvision.datasets.", "torchaudio.datasets.")
# In a loop body, these mean the loop builds a sequence in iteration order.
_COLLECTING = frozenset({"append", "extend", "insert", "appendleft"})
# Methods that make a class serve samples: its attributes are read by index or in order.
_DATA_METHODS = frozenset({"__getitem__", "__iter__", "__len__"})

ORDER = "order"  # the order of the listing matters
RETURN = "return"  # it matters to whoever calls the function that returns or yields it
PICK = "pick"  # one entry is taken (``next(...)``, ``[0]``): matters unless only one can match
FREE = "free"  # it does not (a count, a set, a membership test, a side effect per file)
_ORDERED = (ORDER, RETURN)
# Extensions of the one model, checkpoint or config file a directory holds: taking "the"
# match of ``*.xml`` picks that file, not a sample.
_SINGLE_FILE_EXTENSIONS = frozenset(
    {
        ".xml", ".json", ".yaml", ".yml", ".cfg", ".ini", ".toml", ".conf", ".pt", ".pth",
        ".ckpt", ".bin", ".onnx", ".safetensors", ".h5", ".hdf5", ".pb", ".tflite", ".engine",
        ".prototxt", ".caffemodel",
    }
)  # fmt: skip
# Calls that only report what a loop is doing (an entry's number shown in a progress line).
_LOGGING = frozenset(
    {"print", "info", "debug", "warning", "warn", "error", "write", "set_description",
     "set_postfix", "set_postfix_str", "log"}
)  # fmt: skip
# The listings a function's own name says it makes (``os.scandir``) against a project
# function that passes one on (reported by the name it is called by).
DIRECT = frozenset({*LISTINGS, "Path.glob", "Path.rglob", "Path.iterdir"})


@dataclass(frozen=True)
class _Listing:
    """A listing call and the statements around it (reported later than it is visited);
    ``selective`` when it is meant to match one file (a name test, a specific pattern);
    ``callee``: the name a project function that passes a listing on is called by."""

    call: cst.Call
    anchor: tuple[cst.CSTNode, ...]
    selective: bool = False
    callee: str | None = None
    # How to sort it (``LISTINGS``; "" for no simple way).
    template: str = ""


@dataclass
class _Scope:
    values: dict[str, cst.BaseExpression] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    # Names and attributes holding unsorted listings, waiting for their first use.
    pending: dict[str, list[_Listing]] = field(default_factory=dict)


class UnsortedFileListing(SettledRule):
    """
    ## What it does
    Flags `os.listdir`, `os.scandir`, `os.walk`, `glob.glob`, `glob.iglob`, and `glob`,
    `rglob` and `iterdir` on a `pathlib.Path` (built in the same scope, a parameter
    annotated `Path`, or an attribute set from one), when the order of what they return
    decides which data is used where, and it was not sorted: the list is kept by a class
    that serves samples (`self.files = ...` in a class with `__getitem__`, `__iter__` or
    `__len__`, or a `Dataset` base), returned, given to a class (`ImageDataset(files)`) or
    to torch's data utilities, zipped (`zip(images, masks)`), numbered (`enumerate`),
    shuffled, sampled or split (`random.shuffle`, `rng.choice`, `train_test_split`),
    indexed (`files[i]`, `[files[i] for i in perm]`) or one data file taken from it
    (`files[0]`, `next(...)`); directly or through a variable, a list comprehension, a
    progress bar (`tqdm(...)`), or a loop that builds a list (`samples.append(...)`,
    `paths = paths + [...]`, `for root, _, _ in os.walk(d): datasets.append(...)`) which
    is then used that way.

    A project function that returns or yields a listing (a `scandir` helper) is judged
    where it is used: when other modules call it, each call whose result is used in
    filesystem order is reported by the function's name, and the listing inside is not;
    a function used only in its own module is reported at its listing.

    ## When it does not fire
    - The listing is sorted: `sorted(os.listdir(d))`, `natsort.natsorted(...)`,
      `files.sort()` / `files = sorted(files)` before the list is used, `sorted(os.walk(d))`.
    - The order cannot matter: `len(...)`, `set(...)`, `any(...)`, `x in os.listdir(d)`,
      `if os.listdir(d):`, a loop that counts (`n += 1`, or `+=` to a name that starts as
      a number: `total = 0`), a loop that handles each file on its own (`os.remove`; also
      `for i, name in enumerate(files)` where `i` only shows progress), a set or dict
      comprehension, a listing that is never used.
    - One file is taken that only one can match: the listing is filtered by a name
      (`[f for f in os.listdir(d) if "clean" in f][0]`), its pattern names the file
      (`glob(sample_id + ".*")`) or the one model or config file of a directory
      (`next(Path(d).glob("*.xml"))`, `*.ckpt`, `*.yaml`), or `assert len(files) == 1`
      holds before it is used.
    - The order is not known to reach data: the list goes to a function (`pick_file(names)`,
      `", ".join(names)`, `upload(operations=batch)`), is stored in a container
      (`index[key] = names`) outside a class that serves samples, or is kept by an object
      that serves no samples (a logger's records). Reporting those would flag most file
      handling in a code base for a hazard that lives in data pipelines.
    - `.glob(...)` on something not known to be a `Path` (a `Dataset` method, a string
      pattern helper): it is not a directory listing the rule can recognise.

    ## Why is this bad?
    Directory listings come in the order the filesystem stores entries, which differs
    between filesystems, machines and even copies of the same data. A dataset built from
    such a list numbers its samples differently on another machine, so a seeded shuffle or
    split selects different files, class indices from `enumerate` change, and pairs zipped
    from two listings (images and masks) can be mismatched.

    ## Fix safety
    Safe: the listing is wrapped in `sorted(...)` (`os.scandir` entries by name). The same
    files are used, in an order that is the same everywhere. No fix for `os.walk` (sorting
    the walk orders the directories, not the file names in each) nor for a project
    function that passes a listing on (what it yields may not be sortable): sort inside it.

    ## Known limitations
    A listing opened in a `with` statement (`with os.scandir(d) as entries:`) is not
    flagged. Listings are followed through assignments in the same function; a list kept
    in an attribute is reported unless it is sorted in the same method. A variable used
    only in another function counts as unused, and a list given to a project function
    that builds a dataset from it (`make_samples(files)`) is not followed into that
    function. Whether a pick can match one file only is read from the pattern or filter,
    not from the directory.

    ## References
    - Python: `os.listdir` ("in arbitrary order"), `glob.glob`, `pathlib.Path.iterdir`
    """

    CODE = "RPL305"
    MESSAGE = "Files listed in filesystem order, which differs between machines"
    FIX_TITLE = "Wrap the listing in `sorted(...)`"
    FIX_SAFETY = FixSafety.SAFE
    # Whole words: ``glob`` must not run the rule on every file that says ``global``.
    TRIGGERS = ("listdir", "scandir", "glob", "iglob", "rglob", "iterdir", "walk")
    TRIGGER_WORDS = True
    INVALID = (
        Invalid(
            "import os\n\n\ndef names(root):\n    first, *rest = 0, 1\n"
            "    for name in os.listdir(root):\n        rest += [name]\n    return rest\n",
            note="a starred name starts as a list, not a number: the loop builds it",
        ),
        Invalid(
            "import os\n\n\ndef samples(root):\n"
            "    return [os.path.join(root, name) for name in os.listdir(root)]\n",
            fixed="import os\n\n\ndef samples(root):\n"
            "    return [os.path.join(root, name) for name in sorted(os.listdir(root))]\n",
        ),
        Invalid(
            "import glob\n\n\ndef pairs(root):\n"
            "    return list(zip(glob.glob(root + '/img/*'), glob.glob(root + '/mask/*')))\n",
            fixed="import glob\n\n\ndef pairs(root):\n"
            "    return list(zip(sorted(glob.glob(root + '/img/*')), sorted(glob.glob(root + '/mask/*'))))\n",
            note="two listings zipped into pairs: images and masks can be mismatched",
        ),
        Invalid(
            "import os\n\nimport numpy as np\n\n\ndef split(data_dir):\n"
            "    file_names = [os.path.join(data_dir, f) for f in os.listdir(data_dir)]\n"
            "    perm = np.random.default_rng(0).permutation(len(file_names))\n"
            "    return [file_names[i] for i in perm[:100]]\n",
            fixed="import os\n\nimport numpy as np\n\n\ndef split(data_dir):\n"
            "    file_names = [os.path.join(data_dir, f) for f in sorted(os.listdir(data_dir))]\n"
            "    perm = np.random.default_rng(0).permutation(len(file_names))\n"
            "    return [file_names[i] for i in perm[:100]]\n",
            note="a seeded permutation indexes the listing: the split differs between machines",
        ),
        Invalid(
            "from pathlib import Path\n\nimport tqdm\nfrom torch.utils.data import Dataset\n\n\n"
            "class Tracks(Dataset):\n    def __init__(self, root):\n"
            "        self.root = Path(root)\n        self.tracks = list(self.find_tracks())\n\n"
            "    def __getitem__(self, index):\n        return self.tracks[index]\n\n"
            "    def find_tracks(self):\n        for path in tqdm.tqdm(self.root.iterdir()):\n"
            "            if path.is_dir():\n                yield path\n",
            note="yielded through a progress bar into the dataset's track list",
        ),
        Invalid(
            "import glob\n\n\nclass Images:\n    def __init__(self, files):\n"
            "        self.files = files\n\n    def __getitem__(self, i):\n"
            "        return self.files[i]\n\n\n"
            "test_files = glob.glob('test/*.jpg')\ntest_data = Images(test_files)\n",
            fixed="import glob\n\n\nclass Images:\n    def __init__(self, files):\n"
            "        self.files = files\n\n    def __getitem__(self, i):\n"
            "        return self.files[i]\n\n\n"
            "test_files = sorted(glob.glob('test/*.jpg'))\ntest_data = Images(test_files)\n",
            note="given to a class of the same file, whose instance is kept",
        ),
        Invalid(
            "import os\n\nfrom torch.utils.data import ConcatDataset\n\n\n"
            "def all_sources(root):\n    parts = []\n"
            "    for folder, subfolders, _ in os.walk(root):\n"
            "        if not subfolders:\n            parts.append(Shard(folder))\n"
            "    return ConcatDataset(parts)\n",
            note="`os.walk` order decides the global sample indices of the concatenation",
        ),
        Invalid(
            "import os\n\n\ndef splits(root):\n"
            "    speakers = [os.path.join(root, s) for s in os.listdir(root)]\n"
            "    tracks = []\n    for speaker in speakers:\n"
            "        tracks = tracks + [os.path.join(speaker, t) for t in sorted(os.listdir(speaker))]\n"
            "    cut = int(0.8 * len(tracks))\n    return tracks[:cut], tracks[cut:]\n",
            note="a list built with `x = x + [...]` keeps the outer listing's order",
        ),
        Invalid(
            "import glob\n\n\nclass Faces:\n    def __init__(self, root):\n"
            "        self.label_file = glob.glob(root + '/*.txt')[0]\n\n"
            "    def __len__(self):\n        return 0\n",
            fixed="import glob\n\n\nclass Faces:\n    def __init__(self, root):\n"
            "        self.label_file = sorted(glob.glob(root + '/*.txt'))[0]\n\n"
            "    def __len__(self):\n        return 0\n",
            note="the first of several text files: which one is read depends on the machine",
        ),
        Invalid(
            "import os\n\n\ndef splits(speech_dataset):\n"
            "    speakers = [os.path.join(speech_dataset, x) for x in os.listdir(speech_dataset) if\n"
            "                os.path.isdir(os.path.join(speech_dataset, x))]\n"
            "    print(f'{len(speakers)} speakers found in {speech_dataset}: eighty percent are for training')\n"
            "    cut = int(0.8 * len(speakers))\n    return speakers[:cut], speakers[cut:]\n",
            fixed="import os\n\n\ndef splits(speech_dataset):\n"
            "    speakers = [os.path.join(speech_dataset, x) for x in sorted(os.listdir(speech_dataset)) if\n"
            "                os.path.isdir(os.path.join(speech_dataset, x))]\n"
            "    print(f'{len(speakers)} speakers found in {speech_dataset}: eighty percent are for training')\n"
            "    cut = int(0.8 * len(speakers))\n    return speakers[:cut], speakers[cut:]\n",
            note="code follows on the line, in a file past its line length: `sorted(...)` stays inline",
        ),
    )
    VALID = (
        Valid(
            "import os\n\n\ndef samples(root):\n"
            "    return [os.path.join(root, name) for name in sorted(os.listdir(root))]\n",
        ),
        Valid(
            "import os\n\n\ndef samples(root):\n    names = os.listdir(root)\n    names.sort()\n"
            "    return names\n",
            note="sorted in place before it is used",
        ),
        Valid(
            "import os\n\n\ndef count(root):\n    return len(os.listdir(root))\n",
            note="the order cannot matter",
        ),
        Valid(
            "import os\n\n\ndef clean(root):\n    for name in os.listdir(root):\n"
            "        os.remove(os.path.join(root, name))\n",
            note="each file handled on its own",
        ),
        Valid(
            "import json\nimport os\n\n\ndef tally(root):\n    images, others = 0, 0\n"
            "    for name in os.listdir(root):\n"
            "        n = len(json.load(open(os.path.join(root, name))))\n"
            "        if name.endswith('.png'):\n            images += 1\n"
            "        else:\n            others += n\n    return images, others\n",
            note="counts summed over the files: a sum has no order",
        ),
        Valid(
            "from pathlib import Path\n\n\ndef images(store, root: Path):\n"
            "    return list(store.glob('*.png')) + [Path(root, 'a.png')]\n",
            note="`glob` on something not known to be a `Path`",
        ),
        Valid(
            "import os\n\n\nclass Mixtures:\n    def __init__(self, csv_dir):\n"
            "        name = [f for f in os.listdir(csv_dir) if 'clean' in f][0]\n"
            "        self.csv_path = os.path.join(csv_dir, name)\n",
            note="the one file whose name says what it is",
        ),
        Valid(
            "from pathlib import Path\n\n\ndef model_file(weights_dir):\n"
            "    return next(Path(weights_dir).glob('*.xml'))\n",
            note="the single model file of a directory",
        ),
        Valid(
            "from pathlib import Path\n\n\nclass Pairs:\n"
            "    def __init__(self, mask_dir: Path):\n        self.mask_dir = mask_dir\n\n"
            "    def mask(self, name):\n"
            "        found = list(self.mask_dir.glob(name + '.*'))\n"
            "        assert len(found) == 1, found\n        return found[0]\n",
            note="asserted to hold one match",
        ),
        Valid(
            "import os\n\n\ndef resize_all(src, dst):\n    images = os.listdir(src)\n"
            "    for i, image in enumerate(images):\n"
            "        convert(os.path.join(src, image), os.path.join(dst, image))\n"
            "        if (i + 1) % 100 == 0:\n            print(f'{i + 1}/{len(images)} done')\n",
            note="each file processed on its own; the number only shows progress",
        ),
        Valid(
            "import os\n\n\ndef checkpoints(root):\n    found = {}\n"
            "    for run in sorted(os.listdir(root)):\n"
            "        found[run] = [f for f in os.listdir(os.path.join(root, run)) if f.endswith('.pt')]\n"
            "    return max(found)\n",
            note="kept in a lookup table, not in anything that serves samples",
        ),
        Valid(
            "import os\n\nfrom natsort import natsorted\n\n\ndef images(root):\n"
            "    paths = []\n    for folder, _, files in os.walk(root):\n"
            "        paths.extend(os.path.join(folder, f) for f in files)\n"
            "    return natsorted(paths)\n",
            note="naturally sorted before use",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._scopes: list[_Scope] = [_Scope()]
        self._classes: list[set[str]] = []
        # Per enclosing class: whether it serves samples (a dataset, a reader).
        self._data_classes: list[bool] = []
        self._reported: set[int] = set()
        # Filtered comprehensions being scanned: their listings are meant to match one file.
        self._selective = 0
        # Names of functions defined in the enclosing functions (callable by name there).
        self._locals: list[set[str]] = []

    # -- scopes -----------------------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(set())
        methods = {
            statement.name.value
            for statement in node.body.body
            if type(statement) is cst.FunctionDef
        }
        bases = [self._text(base.value) or "" for base in node.bases]
        self._data_classes.append(
            bool(methods & _DATA_METHODS) or any("Dataset" in base for base in bases)
        )

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()
        self._data_classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._locals:
            self._locals[-1].add(node.name.value)
        scope = _Scope()
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.annotation is not None and self._mentions_path(param.annotation.annotation):
                scope.paths.add(param.name.value)
        self._scopes.append(scope)
        self._locals.append(set())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._locals.pop()
        self._finish(self._scopes.pop())

    def leave_Module(self, original_node: cst.Module) -> None:
        self._finish(self._scopes[0])

    def _finish(self, scope: _Scope) -> None:
        # A list kept in an attribute is read later (``self.files[index]``); a local
        # variable never used in an order-sensitive way is harmless.
        for target, listings in scope.pending.items():
            if "." in target:
                for listing in listings:
                    self._report(listing)

    def _mentions_path(self, node: cst.BaseExpression) -> bool:
        stack: list[cst.CSTNode] = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Name | cst.Attribute):
                if self.qualified_name(current) in PATH_CLASSES:
                    return True
            stack.extend(children(current))
        return False

    # -- statements -------------------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._assign(node.targets[0].target, node.value)
        else:
            self._scan(node.value, ORDER)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assign(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        target = self._text(node.target)
        scope = self._scopes[-1]
        if target is not None and target in scope.pending:
            self._scan(node.value, f"+{target}")
        else:
            self._scan(node.value, ORDER)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._scan(node.value, RETURN if len(self._scopes) > 1 else ORDER)

    def visit_Expr(self, node: cst.Expr) -> None:
        self._scan(node.value, FREE)

    def visit_For(self, node: cst.For) -> None:
        # A loop that builds a list passes the listing's order on to that list, judged by
        # its later use (returned, kept by a dataset, zipped); a loop that yields, on to
        # its caller.
        iterated = node.iter
        if (
            type(iterated) is cst.Call
            and self.qualified_name(iterated.func) == "builtins.enumerate"
            and iterated.args
            and self._numbers_only_logged(node.target, node.body)
        ):
            # ``for i, name in enumerate(files)`` where ``i`` only shows progress: each
            # entry is handled on its own, as without ``enumerate``.
            iterated = iterated.args[0].value
        for context in self._collects(node.body):
            self._scan(iterated, context)

    def visit_If(self, node: cst.If) -> None:
        self._scan(node.test, FREE)
        self._one_match(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._scan(node.test, FREE)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._scan(node.test, FREE)
        self._one_match(node.test)

    def _one_match(self, test: cst.BaseExpression) -> None:
        """``assert len(files) == 1`` (or an ``if`` on it): a listing that holds one file
        has no order."""
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return
        left, right = test.left, test.comparisons[0].comparator
        if literal_int(left) is not None:
            left, right = right, left
        if literal_int(right) not in (0, 1) or type(left) is not cst.Call:
            return
        if self.qualified_name(left.func) != "builtins.len" or len(left.args) != 1:
            return
        text = self._text(left.args[0].value)
        if text is not None:
            self._resolve_pending(text)

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        text = self._text(target)
        scope = self._scopes[-1]
        if (
            type(target) is cst.Tuple
            and type(value) is cst.Tuple
            and len(target.elements) == len(value.elements)
            and not any(type(e) is cst.StarredElement for e in (*target.elements, *value.elements))
        ):
            # ``train, evals = 0, 0``: what each name starts as.
            for element, given in zip(target.elements, value.elements, strict=True):
                if type(element.value) is cst.Name:
                    scope.values[element.value.value] = given.value
        if isinstance(target, cst.Name | cst.Attribute) and text is not None:
            held = scope.pending.get(text)
            self._scan(value, f"={text}")
            # What ``target`` held is replaced, unless the value carries listings on
            # (``self.files = files`` after ``files = [f for f in os.listdir(d) if ...]``).
            if not self._listing_value(value) and scope.pending.get(text) is held:
                scope.pending.pop(text, None)
            if type(target) is cst.Name:
                scope.values[target.value] = value
            if self._is_path(value):
                if type(target) is cst.Name:
                    scope.paths.add(target.value)
                elif text.startswith("self.") and self._classes:
                    self._classes[-1].add(text)
        elif type(target) is cst.Subscript:
            # ``index[key] = files``: kept in a container. Its order matters to a class that
            # serves samples; elsewhere it is a lookup table, not known to reach data.
            serves = bool(self._data_classes and self._data_classes[-1])
            self._scan(value, ORDER if serves else FREE)
        else:
            self._scan(value, ORDER)

    def _collects(self, body: cst.BaseSuite) -> list[str]:
        """How a loop uses the order of what it iterates: ORDER (RETURN in a function) when
        it yields, ``+target`` for each ``target`` it builds (appending, ``+=``,
        ``target = target + ...``), FREE when it handles each item alone."""
        stack: list[cst.CSTNode] = [body]
        found: list[str] = []
        while stack:
            current = stack.pop()
            if type(current) is cst.Yield:
                return [RETURN if len(self._scopes) > 1 else ORDER]
            target: cst.BaseExpression | None = None
            if (
                type(current) is cst.Call
                and type(current.func) is cst.Attribute
                and current.func.attr.value in _COLLECTING
            ):
                target = current.func.value
            elif (
                type(current) is cst.AugAssign
                and type(current.operator) is cst.AddAssign
                and not self._counts(current)
            ):
                target = current.target
            elif (
                type(current) is cst.Assign
                and len(current.targets) == 1
                and type(current.value) is cst.BinaryOperation
                and type(current.value.operator) is cst.Add
                and self._text(current.value.left) is not None
                and self._text(current.value.left) == self._text(current.targets[0].target)
            ):
                target = current.targets[0].target
            if target is not None:
                text = self._text(target)
                if text is None:
                    return [ORDER]
                if f"+{text}" not in found:
                    found.append(f"+{text}")
            stack.extend(children(current))
        return found or [FREE]

    def _counts(self, node: cst.AugAssign) -> bool:
        """``count += 1``, or ``+=`` to a name the scope set to a number (``total = 0``): a
        sum, which has no order."""
        if number_is_float(node.value) is not None:
            return True
        target = node.target
        if type(target) is not cst.Name:
            return False
        start = self._scopes[-1].values.get(target.value)
        return start is not None and number_is_float(start) is not None

    def _numbers_only_logged(
        self, target: cst.BaseAssignTargetExpression, body: cst.CSTNode
    ) -> bool:
        """``for i, x in enumerate(...)`` whose ``i`` is only shown (printed, logged) or
        tested for progress (``if (i + 1) % 100 == 0``), never kept or used as a label."""
        if type(target) is not cst.Tuple or len(target.elements) != 2:
            return False
        number = target.elements[0].value
        if type(number) is not cst.Name:
            return False
        return self._only_logged(number.value, body, False)

    def _only_logged(self, name: str, node: cst.CSTNode, allowed: bool) -> bool:
        if type(node) is cst.Name:
            return allowed or node.value != name
        if type(node) is cst.Call:
            func = node.func
            called = func.attr.value if type(func) is cst.Attribute else None
            if type(func) is cst.Name:
                called = func.value
            if called in _LOGGING:
                allowed = True
        if isinstance(node, cst.If | cst.While):
            if not self._only_logged(name, node.test, True):
                return False
            rest = [c for c in children(node) if c is not node.test]
            return all(self._only_logged(name, child, allowed) for child in rest)
        return all(self._only_logged(name, child, allowed) for child in children(node))

    # -- expressions ------------------------------------------------------------------------

    def _scan(self, node: cst.BaseExpression, context: str) -> None:
        """Judge the listings in ``node``, whose value is used as ``context`` says: ORDER,
        RETURN, PICK, FREE, or ``=target`` / ``+target`` (kept in, or added to, a variable
        or attribute: judged by its later use)."""
        listing = self._listing(node)
        if listing is not None:
            self._found(node, context)
            return
        callee = self._candidate(node)
        if callee is not None and context != FREE:
            assert type(node) is cst.Call
            self._found(node, context, callee)
            # A project class built from a listing keeps its order (``Images(files)``), as
            # ``_call`` judges it when the result is not kept.
            sensitive = self._order_sensitive(node.func, self.qualified_name(node.func))
            for arg in node.args:
                self._scan(arg.value, ORDER if sensitive else FREE)
            return
        # ``type(...) is``: concrete node classes have no subclasses; isinstance goes through abc.
        if type(node) is cst.Name or type(node) is cst.Attribute:
            self._use(node, context)
            if type(node) is cst.Attribute:
                self._scan(node.value, ORDER)
            return
        if type(node) is cst.Call:
            self._call(node, context)
        elif (
            type(node) is cst.ListComp
            or type(node) is cst.GeneratorExp
            or type(node) is cst.DictComp
            or type(node) is cst.SetComp
        ):
            self._comprehension(node, context)
        elif type(node) is cst.List or type(node) is cst.Tuple:
            for element in node.elements:
                self._scan(element.value, context)
        elif type(node) is cst.Set:
            for element in node.elements:
                self._scan(element.value, FREE)
        elif type(node) is cst.BinaryOperation:
            self._scan(node.left, context)
            # ``files + more``: what is kept is both, in that order.
            added = f"+{context[1:]}" if context[:1] == "=" else context
            self._scan(node.right, added)
        elif type(node) is cst.BooleanOperation:
            self._scan(node.left, context)
            self._scan(node.right, context)
        elif type(node) is cst.IfExp:
            self._scan(node.test, FREE)
            self._scan(node.body, context)
            self._scan(node.orelse, context)
        elif type(node) is cst.UnaryOperation:
            self._scan(node.expression, FREE if type(node.operator) is cst.Not else ORDER)
        elif type(node) is cst.Comparison:
            membership = all(isinstance(c.operator, cst.In | cst.NotIn) for c in node.comparisons)
            inner = FREE if membership else ORDER
            self._scan(node.left, inner)
            for comparison in node.comparisons:
                self._scan(comparison.comparator, inner)
        elif type(node) is cst.Subscript:
            self._scan(node.value, PICK if self._single_index(node) else ORDER)
        elif type(node) is cst.StarredElement or type(node) is cst.Await:
            self._scan(
                node.value if isinstance(node, cst.StarredElement) else node.expression, context
            )
        elif type(node) is cst.Lambda:
            return
        else:
            for child in children(node):
                if isinstance(child, cst.BaseExpression):
                    self._scan(child, ORDER)

    def _comprehension(
        self, node: cst.ListComp | cst.GeneratorExp | cst.DictComp | cst.SetComp, context: str
    ) -> None:
        # A set has no order; a dict built from a listing maps names to values (its
        # order is rarely used, and ``enumerate`` inside it is judged on its own).
        inner = FREE if isinstance(node, cst.SetComp | cst.DictComp) else context
        comp: cst.CompFor | None = node.for_in
        selective = False
        while comp is not None:
            selective = selective or any(self._names_one_file(c.test) for c in comp.ifs)
            comp = comp.inner_for_in
        comp = node.for_in
        while comp is not None:
            self._selective += selective
            self._scan(comp.iter, inner)
            self._selective -= selective
            for condition in comp.ifs:
                self._scan(condition.test, FREE)
            comp = comp.inner_for_in
        # What each element is made of: ``[files[i] for i in split]`` indexes a listing.
        if isinstance(node, cst.DictComp):
            self._scan(node.key, FREE)
            self._scan(node.value, FREE)
        else:
            self._scan(node.elt, FREE if type(node) is cst.SetComp else inner)

    def _names_one_file(self, test: cst.BaseExpression) -> bool:
        """A comprehension filter that selects by a specific name (``"clean" in name``,
        ``name.startswith("model_")``, ``name == x``) or by a model/config extension."""
        if type(test) is cst.BooleanOperation:
            return self._names_one_file(test.left) or self._names_one_file(test.right)
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            operator = test.comparisons[0].operator
            return isinstance(operator, cst.In | cst.Equal)
        if type(test) is cst.Call and type(test.func) is cst.Attribute:
            method = test.func.attr.value
            first = test.args[0].value if test.args else None
            text = literal_str(first) if first is not None else None
            if method == "startswith":
                return text is None or bool(text)
            if method == "endswith":
                return text is not None and _single_file_suffix(text)
        return False

    def _single_index(self, node: cst.Subscript) -> bool:
        """``files[0]``, ``files[-1]``: one entry taken."""
        if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
            return False
        return literal_int(node.slice[0].slice.value) is not None

    def _call(self, node: cst.Call, context: str) -> None:
        qualified = self.qualified_name(node.func)
        func = node.func
        if qualified in _ORDER_FREE:
            inner = FREE
        elif qualified in _ORDER_KEEPING:
            inner = context
        elif qualified == "builtins.next":
            inner = PICK
        elif type(func) is cst.Attribute and func.attr.value == "sort":
            text = self._text(func.value)
            if text is not None:
                self._resolve_pending(text)
            return
        elif self._order_sensitive(func, qualified):
            inner = ORDER
        else:
            # Any other function gets the listing without a known use of its order (a
            # tokenizer file picker, an upload batch): not reported.
            inner = FREE
        for arg in node.args:
            self._scan(arg.value, inner)
        if type(func) is cst.Attribute and qualified is None:
            # A method of the listing's result (``files.index(x)``) depends on its order;
            # adding to it (``files.append(x)``) does not read it.
            self._scan(func.value, FREE if func.attr.value in _COLLECTING else ORDER)

    def _order_sensitive(self, func: cst.BaseExpression, qualified: str | None) -> bool:
        if qualified is not None:
            if qualified in _ORDER_SENSITIVE or qualified.startswith(_DATA_MODULES):
                return True
        elif type(func) is cst.Attribute and func.attr.value in _RNG_METHODS:
            return True
        # A class built from the listing (``Images(files)``, ``SegmentationDataset(files)``).
        name = func.attr.value if type(func) is cst.Attribute else getattr(func, "value", "")
        return isinstance(name, str) and name[:1].isupper()

    def _use(self, node: cst.Name | cst.Attribute, context: str) -> None:
        text = self._text(node)
        if text is None:
            return
        for scope in (self._scopes[-1], self._scopes[0]):
            listings = scope.pending.get(text)
            if listings is None:
                continue
            if context in _ORDERED or context == PICK:
                del scope.pending[text]
                for listing in listings:
                    if context != PICK or not listing.selective:
                        self._report(listing)
            elif context[:1] in "=+":
                self._keep(context, listings)
            return

    def _keep(self, context: str, listings: list[_Listing]) -> None:
        """``target = <listing>`` replaces what ``target`` held; ``target += ...`` adds. An
        attribute keeps the order only for a class that serves samples (``self.files`` of a
        dataset); other objects' lists (records, logs, upload batches) are not judged."""
        pending = self._scopes[-1].pending
        target = context[1:]
        if "." in target and not (self._data_classes and self._data_classes[-1]):
            pending.pop(target, None)
            return
        if context[0] == "=":
            pending[target] = list(listings)
        else:
            pending.setdefault(target, []).extend(listings)

    def _resolve_pending(self, text: str) -> None:
        for scope in (self._scopes[-1], self._scopes[0]):
            scope.pending.pop(text, None)

    def _found(self, node: cst.BaseExpression, context: str, callee: str | None = None) -> None:
        assert type(node) is cst.Call
        selective = callee is None and (self._selective > 0 or self._pattern_names_one(node))
        template = "" if callee is not None else self._listing(node) or ""
        listing = _Listing(node, self.anchor(), selective, callee, template)
        if context in _ORDERED or (context == PICK and not selective):
            self._report(listing)
        elif context[:1] in "=+":
            self._keep(context, [listing])

    def _pattern_names_one(self, call: cst.Call) -> bool:
        """A glob pattern for one file: a name part besides the wildcards
        (``idx + ".*"``, ``"*_clean.csv"``), or a model/config extension (``"*.xml"``)."""
        qualified = self.qualified_name(call.func)
        if qualified in ("glob.glob", "glob.iglob") or (
            type(call.func) is cst.Attribute and call.func.attr.value in ("glob", "rglob")
        ):
            if not call.args:
                return False
            pattern = call.args[0].value
            if type(pattern) is cst.Call and pattern.args:
                # ``os.path.join(root, "*.xml")``: the last part names the file.
                pattern = pattern.args[-1].value
            last = pattern
            if type(last) is cst.BinaryOperation and type(last.operator) is cst.Add:
                # ``root + "/" + name + ".*"``: a name from a variable.
                return any(
                    type(part) is not cst.SimpleString for part in _added(last)[1:]
                ) or _single_pattern(_joined_text(last))
            if type(last) is cst.BinaryOperation and type(last.operator) is cst.Modulo:
                last = last.left
            text = literal_str(last)
            if type(last) is cst.FormattedString:
                text = "".join(
                    p.value if type(p) is cst.FormattedStringText else "{}" for p in last.parts
                )
                if "{}" in text.rsplit("/", 1)[-1]:
                    return True
            return text is not None and _single_pattern(text)
        return False

    # -- what is a listing --------------------------------------------------------------------

    def _listing_value(self, node: cst.BaseExpression) -> bool:
        """Whether a value is a listing, possibly inside a comprehension or ``list()``."""
        if self._listing(node) is not None or self._candidate(node) is not None:
            return True
        if isinstance(node, cst.ListComp | cst.GeneratorExp):
            return self._listing_value(node.for_in.iter)
        if type(node) is cst.Call and self.qualified_name(node.func) in _ORDER_KEEPING:
            return any(self._listing_value(arg.value) for arg in node.args)
        return False

    def _listing(self, node: cst.BaseExpression) -> str | None:
        """The sort template for a directory listing call ("" when there is no simple
        one), None for anything else."""
        if type(node) is not cst.Call:  # (concrete node classes have no subclasses)
            return None
        qualified = self.qualified_name(node.func)
        if qualified in LISTINGS:
            return LISTINGS[qualified]
        func = node.func
        if (
            type(func) is cst.Attribute
            and func.attr.value in PATH_LISTINGS
            and self._is_path(func.value)
        ):
            return "sorted({})"
        return None

    def _candidate(self, node: cst.BaseExpression) -> str | None:
        """A call into a project function, which may pass a listing on (whether it does is
        known once the project is analysed): the name it is called by."""
        if type(node) is not cst.Call:
            return None
        func = node.func
        qualified = self.qualified_name(func)
        if qualified is not None:
            own = (self.context.module_name or "").split(".", 1)[0] or None
            if rng.is_library(qualified, own) or qualified.startswith("builtins."):
                return None
            return self._text(func)
        if type(func) is cst.Name and any(func.value in names for names in self._locals):
            return func.value
        if (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and self._classes
        ):
            return f"self.{func.attr.value}"
        return None

    def _is_path(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > 8:
            return False
        if type(node) is cst.Call:
            if self.qualified_name(node.func) in PATH_CLASSES:
                return True
            func = node.func
            return (
                type(func) is cst.Attribute
                and func.attr.value in _PATH_STEPS
                and (
                    self.qualified_name(func.value) in PATH_CLASSES
                    or self._is_path(func.value, depth + 1)
                )
            )
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.Divide:
            return self._is_path(node.left, depth + 1)
        if type(node) is cst.Attribute:
            text = self._text(node)
            if text is not None and self._classes and text in self._classes[-1]:
                return True
            return node.attr.value == "parent" and self._is_path(node.value, depth + 1)
        if type(node) is cst.Name:
            # A local name, else a module-level one (``ROOT = Path(__file__).parent``).
            for scope in (self._scopes[-1], self._scopes[0]):
                if node.value in scope.paths:
                    return True
                value = scope.values.get(node.value)
                if value is not None:
                    return self._is_path(value, depth + 1)
        return False

    @staticmethod
    def _text(node: cst.BaseExpression) -> str | None:
        try:
            return dotted_name(node)
        except TypeError:
            return None

    # -- reports ------------------------------------------------------------------------------

    def _report(self, listing: _Listing) -> None:
        call = listing.call
        if id(call) in self._reported:
            return
        self._reported.add(id(call))
        template = listing.template
        fix: list[NodeEdit] = []
        if template and not self.context.names.is_bound("sorted"):
            module = self.context.module
            code = expression_code(module, call, block_indent(listing.anchor, module))
            fix = [Replace(call, cst.parse_expression(template.format(code)))]
        name = listing.callee or self._name(call)
        self.report(
            call,
            f"`{name}` lists files in filesystem order, which differs between machines",
            fix=fix,
            anchor=listing.anchor,
        )

    def _name(self, call: cst.Call) -> str:
        qualified = self.qualified_name(call.func)
        if qualified in LISTINGS:
            return qualified
        func = call.func
        assert type(func) is cst.Attribute
        return f"Path.{func.attr.value}"

    # -- the whole program --------------------------------------------------------------------

    @classmethod
    def settle(
        cls, program: Program, filename: str, diagnostics: list[Diagnostic]
    ) -> list[Diagnostic]:
        """Judge listings that functions pass on where those functions are used: a
        function used from other modules (a ``scandir`` helper) is reported where a
        caller uses its result in filesystem order, not inside; a function used only in
        its own module is reported at its listing, and calls of it are not."""
        unit = program.linted_unit(filename)
        if unit is None:
            return [d for d in diagnostics if _direct(d)]
        graph = _Listers.of(program)
        kept = []
        for diagnostic in diagnostics:
            row = diagnostic.location.row
            if _direct(diagnostic):
                function = graph.listing_at(unit, row)
                if function is None or not graph.exported(unit, function):
                    kept.append(diagnostic)
                continue
            if graph.relay_at(unit, row):
                # ``return helper(...)`` in a function that passes the listing on.
                continue
            name = diagnostic.message.split("`")[1]
            if any(
                graph.lists(home, key) and graph.exported(home, key)
                for home, key in graph.targets(unit, name, row)
            ):
                kept.append(diagnostic)
        return kept


def _direct(diagnostic: Diagnostic) -> bool:
    """Whether a finding is at a listing call itself (not at a call of a project function)."""
    parts = diagnostic.message.split("`")
    return len(parts) > 1 and parts[1] in DIRECT


def _added(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of ``a + b + c``."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Add:
        return [*_added(node.left), *_added(node.right)]
    return [node]


def _joined_text(node: cst.BaseExpression) -> str:
    return "".join(literal_str(part) or "{}" for part in _added(node))


def _single_file_suffix(text: str) -> bool:
    return any(text.lower().endswith(extension) for extension in _SINGLE_FILE_EXTENSIONS)


def _single_pattern(pattern: str) -> bool:
    """A glob pattern meant to match one file of a directory: a model/config extension, or
    something besides wildcards in the name (``model_best*``, ``{}.*`` for a name taken
    from a variable)."""
    name = pattern.rsplit("/", 1)[-1]
    if _single_file_suffix(name):
        return True
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return bool(stem.replace("*", "").replace("?", ""))


@dataclass
class _Listers:
    """Which project functions pass a directory listing on (``lists``/``relays`` facts of
    the summaries) and who calls them (the summaries' call events)."""

    program: Program
    callers: dict[tuple[int, str], set[tuple[int, str]]] = field(default_factory=dict)
    built: int = 0

    @classmethod
    def of(cls, program: Program) -> _Listers:
        return program.derived(cls)

    def _facts(self, unit: Unit, key: str) -> list[list[Any]]:
        facts: list[list[Any]] = data(unit).get("facts", {}).get(key, [])
        return facts

    def listing_at(self, unit: Unit, row: int) -> str | None:
        """The function whose result is the listing on ``row``."""
        for key, facts in data(unit).get("facts", {}).items():
            if any(f[0] == "lists" and f[1] == row for f in facts):
                return str(key)
        return None

    def relay_at(self, unit: Unit, row: int) -> bool:
        return any(
            f[0] == "relays" and f[2] == row
            for facts in data(unit).get("facts", {}).values()
            for f in facts
        )

    def targets(self, unit: Unit, name: str, row: int) -> list[tuple[Unit, str]]:
        """What a call written ``name`` on ``row`` may run."""
        found: list[tuple[Unit, str]] = []
        if name.startswith("self."):
            method = name[5:]
            for klass in unit.classes():
                target = self.program.method(unit, klass, method)
                if target is not None:
                    found.append(target)
            return found
        first, _, rest = name.partition(".")
        qualified = unit.summary.get("exports", {}).get(first)
        if qualified is not None:
            ref = ["q", f"{qualified}.{rest}" if rest else qualified]
            resolved = self.program.referent(unit, ref)
            if resolved is not None and resolved[0] == "function":
                found.append((resolved[1], resolved[2]))
        for key in unit.summary.get("defs", {}):
            if key == name or key.endswith(f".{name}"):
                found.append((unit, str(key)))
        return found

    def lists(self, unit: Unit, key: str, depth: int = 0) -> bool:
        """Whether a function's result is a listing in filesystem order (also through
        the functions it returns the result of)."""
        if depth > 8:
            return False
        for fact in self._facts(unit, key):
            if fact[0] == "lists":
                return True
            if fact[0] == "relays":
                target = self.program.referent(unit, fact[1])
                if target is not None and target[0] == "function":
                    if (target[1], target[2]) != (unit, key) and self.lists(
                        target[1], target[2], depth + 1
                    ):
                        return True
        return False

    def _build(self) -> None:
        program = self.program
        while self.built < len(program.units):
            unit = program.units[self.built]
            self.built += 1
            for key, events in unit.functions().items():
                for event in events:
                    if event[0] != "c":
                        continue
                    # A call of the function itself (constructing a class runs its
                    # methods, but does not use what they return).
                    target = program.referent(unit, event[1])
                    if target is not None and target[0] == "function":
                        callee = (target[1].index, target[2])
                        self.callers.setdefault(callee, set()).add((unit.index, key))

    def exported(self, unit: Unit, key: str, depth: int = 0) -> bool:
        """Whether a function is used from another module, directly or through functions
        of its own module that return its result."""
        if depth > 8:
            return False
        self._build()
        for index, caller in self.callers.get((unit.index, key), set()):
            if index != unit.index:
                return True
            relays = any(
                fact[0] == "relays"
                and self.program.referent(unit, fact[1]) == ("function", unit, key)
                for fact in self._facts(unit, caller)
            )
            if caller != key and relays and self.exported(unit, caller, depth + 1):
                return True
        return False
