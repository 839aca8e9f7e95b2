"""RPL305: a directory listing whose filesystem order feeds data, without ``sorted()``."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from repro_lint.diagnostics import FixSafety
from repro_lint.loaders import block_indent, expression_code
from repro_lint.names import dotted_name
from repro_lint.rule import FileContext, Invalid, NodeEdit, Replace, Rule, Valid

# Functions that list a directory (qualified) -> how to sort what they return.
LISTINGS: dict[str, str] = {
    "os.listdir": "sorted({})",
    "os.scandir": "sorted({}, key=lambda entry: entry.name)",
    "glob.glob": "sorted({})",
    "glob.iglob": "sorted({})",
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
        "builtins.print", "collections.Counter",
    }
)  # fmt: skip
# Calls whose result keeps the order of the iterable they get.
_ORDER_KEEPING = frozenset(
    {"builtins.list", "builtins.tuple", "builtins.iter", "builtins.filter", "builtins.map",
     "builtins.reversed"}
)  # fmt: skip
# Calls whose result depends on the order of the iterable they get, in a way that decides
# which data is used where: pairing, numbering, shuffling, sampling, splitting, the first item.
_ORDER_SENSITIVE = frozenset(
    {
        "builtins.zip", "builtins.enumerate", "builtins.next", "random.shuffle",
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
FREE = "free"  # it does not (a count, a set, a membership test, a side effect per file)


@dataclass(frozen=True)
class _Listing:
    """A listing call and the statements around it (reported later than it is visited)."""

    call: cst.Call
    anchor: tuple[cst.CSTNode, ...]


@dataclass
class _Scope:
    values: dict[str, cst.BaseExpression] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    # Names and attributes holding unsorted listings, waiting for their first use.
    pending: dict[str, list[_Listing]] = field(default_factory=dict)


class UnsortedFileListing(Rule):
    """
    ## What it does
    Flags `os.listdir`, `os.scandir`, `glob.glob`, `glob.iglob`, and `glob`, `rglob` and
    `iterdir` on a `pathlib.Path` (built in the same scope, a parameter annotated `Path`, or
    an attribute set from one), when the order of what they return decides which data is
    used where, and it was not sorted: the list is kept by a class that serves samples
    (`self.files = ...` in a class with `__getitem__`, `__iter__` or `__len__`, or a
    `Dataset` base), returned, given to a class (`ImageDataset(files)`) or to torch's data
    utilities, zipped (`zip(images, masks)`), numbered (`enumerate`), shuffled, sampled or
    split (`random.shuffle`, `rng.choice`, `train_test_split`), indexed (`files[0]`) or
    taken from (`next(...)`); directly or through a variable, a list comprehension, or a
    loop that builds a list (`samples.append(...)`) which is then used that way.

    ## When it does not fire
    - The listing is sorted: `sorted(os.listdir(d))`, or `files.sort()` /
      `files = sorted(files)` before the list is used.
    - The order cannot matter: `len(...)`, `set(...)`, `any(...)`, `x in os.listdir(d)`,
      `if os.listdir(d):`, a loop that handles each file on its own (`os.remove`), a set or
      dict comprehension, a listing that is never used.
    - The order is not known to reach data: the list goes to a function (`pick_file(names)`,
      `", ".join(names)`, `upload(operations=batch)`), or is kept by an object that serves no
      samples (a logger's records). Reporting those would flag most file handling in a code
      base for a hazard that lives in data pipelines.
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
    files are used, in an order that is the same everywhere.

    ## Known limitations
    `os.walk` is not flagged, nor a listing opened in a `with` statement
    (`with os.scandir(d) as entries:`). Listings are followed through assignments in the same
    function; a list kept in an attribute is reported unless it is sorted in the same
    method. A variable used only in another function counts as unused, and a list given to
    a project function that builds a dataset from it (`make_samples(files)`) is not
    followed into that function.

    ## References
    - Python: `os.listdir` ("in arbitrary order"), `glob.glob`, `pathlib.Path.iterdir`
    """

    CODE = "RPL305"
    MESSAGE = "Files listed in filesystem order, which differs between machines"
    FIX_TITLE = "Wrap the listing in `sorted(...)`"
    FIX_SAFETY = FixSafety.SAFE
    TRIGGERS = ("listdir", "scandir", "glob", "iterdir")
    INVALID = (
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
            "from pathlib import Path\n\n\ndef images(store, root: Path):\n"
            "    return list(store.glob('*.png')) + [Path(root, 'a.png')]\n",
            note="`glob` on something not known to be a `Path`",
        ),
    )

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._scopes: list[_Scope] = [_Scope()]
        self._classes: list[set[str]] = []
        # Per enclosing class: whether it serves samples (a dataset, a reader).
        self._data_classes: list[bool] = []
        self._reported: set[int] = set()

    # -- scopes -----------------------------------------------------------------------------

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(set())
        methods = {
            statement.name.value
            for statement in node.body.body
            if isinstance(statement, cst.FunctionDef)
        }
        bases = [self._text(base.value) or "" for base in node.bases]
        self._data_classes.append(
            bool(methods & _DATA_METHODS) or any("Dataset" in base for base in bases)
        )

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()
        self._data_classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = _Scope()
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.annotation is not None and self._mentions_path(param.annotation.annotation):
                scope.paths.add(param.name.value)
        self._scopes.append(scope)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
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
            stack.extend(current.children)
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
            self._scan(node.value, ORDER)

    def visit_Expr(self, node: cst.Expr) -> None:
        self._scan(node.value, FREE)

    def visit_For(self, node: cst.For) -> None:
        # A loop that builds a list passes the listing's order on to that list, judged by
        # its later use (returned, kept by a dataset, zipped); a loop that yields, on to
        # its caller.
        self._scan(node.iter, self._collects(node.body))

    def visit_If(self, node: cst.If) -> None:
        self._scan(node.test, FREE)

    def visit_While(self, node: cst.While) -> None:
        self._scan(node.test, FREE)

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        text = self._text(target)
        scope = self._scopes[-1]
        if isinstance(target, cst.Name | cst.Attribute) and text is not None:
            held = scope.pending.get(text)
            self._scan(value, f"={text}")
            # What ``target`` held is replaced, unless the value carries listings on
            # (``self.files = files`` after ``files = [f for f in os.listdir(d) if ...]``).
            if not self._listing_value(value) and scope.pending.get(text) is held:
                scope.pending.pop(text, None)
            if isinstance(target, cst.Name):
                scope.values[target.value] = value
            if self._is_path(value):
                if isinstance(target, cst.Name):
                    scope.paths.add(target.value)
                elif text.startswith("self.") and self._classes:
                    self._classes[-1].add(text)
        else:
            self._scan(value, ORDER)

    def _collects(self, body: cst.BaseSuite) -> str:
        """How a loop uses the order of what it iterates: ORDER when it yields, ``+target``
        when it builds ``target`` (appending, ``+=``), FREE when it handles each item alone."""
        stack: list[cst.CSTNode] = [body]
        found = FREE
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Yield):
                return ORDER
            target: cst.BaseExpression | None = None
            if (
                isinstance(current, cst.Call)
                and isinstance(current.func, cst.Attribute)
                and current.func.attr.value in _COLLECTING
            ):
                target = current.func.value
            elif isinstance(current, cst.AugAssign) and isinstance(current.operator, cst.AddAssign):
                target = current.target
            if target is not None:
                text = self._text(target)
                if text is None:
                    return ORDER
                found = f"+{text}"
            stack.extend(current.children)
        return found

    # -- expressions ------------------------------------------------------------------------

    def _scan(self, node: cst.BaseExpression, context: str) -> None:
        """Judge the listings in ``node``, whose value is used as ``context`` says: ORDER,
        FREE, or ``=target`` / ``+target`` (kept in, or added to, a variable or attribute:
        judged by its later use)."""
        listing = self._listing(node)
        if listing is not None:
            self._found(node, context)
            return
        if isinstance(node, cst.Name | cst.Attribute):
            self._use(node, context)
            if isinstance(node, cst.Attribute):
                self._scan(node.value, ORDER)
            return
        if isinstance(node, cst.Call):
            self._call(node, context)
        elif isinstance(node, cst.ListComp | cst.GeneratorExp | cst.DictComp | cst.SetComp):
            # A set has no order; a dict built from a listing maps names to values (its
            # order is rarely used, and ``enumerate`` inside it is judged on its own).
            inner = FREE if isinstance(node, cst.SetComp | cst.DictComp) else context
            comp: cst.CompFor | None = node.for_in
            while comp is not None:
                self._scan(comp.iter, inner)
                comp = comp.inner_for_in
        elif isinstance(node, cst.List | cst.Tuple):
            for element in node.elements:
                self._scan(element.value, context)
        elif isinstance(node, cst.Set):
            for element in node.elements:
                self._scan(element.value, FREE)
        elif isinstance(node, cst.BinaryOperation | cst.BooleanOperation):
            self._scan(node.left, context)
            self._scan(node.right, context)
        elif isinstance(node, cst.IfExp):
            self._scan(node.test, FREE)
            self._scan(node.body, context)
            self._scan(node.orelse, context)
        elif isinstance(node, cst.UnaryOperation):
            self._scan(node.expression, FREE if isinstance(node.operator, cst.Not) else ORDER)
        elif isinstance(node, cst.Comparison):
            membership = all(isinstance(c.operator, cst.In | cst.NotIn) for c in node.comparisons)
            inner = FREE if membership else ORDER
            self._scan(node.left, inner)
            for comparison in node.comparisons:
                self._scan(comparison.comparator, inner)
        elif isinstance(node, cst.Subscript):
            self._scan(node.value, ORDER)
        elif isinstance(node, cst.StarredElement | cst.Await):
            self._scan(
                node.value if isinstance(node, cst.StarredElement) else node.expression, context
            )
        elif isinstance(node, cst.Lambda):
            return
        else:
            for child in node.children:
                if isinstance(child, cst.BaseExpression):
                    self._scan(child, ORDER)

    def _call(self, node: cst.Call, context: str) -> None:
        qualified = self.qualified_name(node.func)
        func = node.func
        if qualified in _ORDER_FREE:
            inner = FREE
        elif qualified in _ORDER_KEEPING:
            inner = context
        elif isinstance(func, cst.Attribute) and func.attr.value == "sort":
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
        if isinstance(func, cst.Attribute) and qualified is None:
            # A method of the listing's result (``files.index(x)``) depends on its order;
            # adding to it (``files.append(x)``) does not read it.
            self._scan(func.value, FREE if func.attr.value in _COLLECTING else ORDER)

    def _order_sensitive(self, func: cst.BaseExpression, qualified: str | None) -> bool:
        if qualified is not None:
            if qualified in _ORDER_SENSITIVE or qualified.startswith(_DATA_MODULES):
                return True
        elif isinstance(func, cst.Attribute) and func.attr.value in _RNG_METHODS:
            return True
        # A class built from the listing (``Images(files)``, ``SegmentationDataset(files)``).
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        return isinstance(name, str) and name[:1].isupper()

    def _use(self, node: cst.Name | cst.Attribute, context: str) -> None:
        text = self._text(node)
        if text is None:
            return
        for scope in (self._scopes[-1], self._scopes[0]):
            listings = scope.pending.get(text)
            if listings is None:
                continue
            if context == ORDER:
                del scope.pending[text]
                for listing in listings:
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

    def _found(self, node: cst.BaseExpression, context: str) -> None:
        assert isinstance(node, cst.Call)
        listing = _Listing(node, self.anchor())
        if context == ORDER:
            self._report(listing)
        elif context[:1] in "=+":
            self._keep(context, [listing])

    # -- what is a listing --------------------------------------------------------------------

    def _listing_value(self, node: cst.BaseExpression) -> bool:
        """Whether a value is a listing, possibly inside a comprehension or ``list()``."""
        if self._listing(node) is not None:
            return True
        if isinstance(node, cst.ListComp | cst.GeneratorExp):
            return self._listing_value(node.for_in.iter)
        if isinstance(node, cst.Call) and self.qualified_name(node.func) in _ORDER_KEEPING:
            return any(self._listing_value(arg.value) for arg in node.args)
        return False

    def _listing(self, node: cst.BaseExpression) -> str | None:
        """The sort template for a directory listing call, None for anything else."""
        if not isinstance(node, cst.Call):
            return None
        qualified = self.qualified_name(node.func)
        if qualified in LISTINGS:
            return LISTINGS[qualified]
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in PATH_LISTINGS
            and self._is_path(func.value)
        ):
            return "sorted({})"
        return None

    def _is_path(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > 8:
            return False
        if isinstance(node, cst.Call):
            if self.qualified_name(node.func) in PATH_CLASSES:
                return True
            func = node.func
            return (
                isinstance(func, cst.Attribute)
                and func.attr.value in _PATH_STEPS
                and (
                    self.qualified_name(func.value) in PATH_CLASSES
                    or self._is_path(func.value, depth + 1)
                )
            )
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            return self._is_path(node.left, depth + 1)
        if isinstance(node, cst.Attribute):
            text = self._text(node)
            if text is not None and self._classes and text in self._classes[-1]:
                return True
            return node.attr.value == "parent" and self._is_path(node.value, depth + 1)
        if isinstance(node, cst.Name):
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
        template = self._listing(call) or "sorted({})"
        fix: list[NodeEdit] = []
        if not self.context.names.is_bound("sorted"):
            module = self.context.module
            code = expression_code(module, call, block_indent(listing.anchor, module))
            fix = [Replace(call, cst.parse_expression(template.format(code)))]
        self.report(
            call,
            f"`{self._name(call)}` lists files in filesystem order, which differs between machines",
            fix=fix,
            anchor=listing.anchor,
        )

    def _name(self, call: cst.Call) -> str:
        qualified = self.qualified_name(call.func)
        if qualified in LISTINGS:
            return qualified
        func = call.func
        assert isinstance(func, cst.Attribute)
        return f"Path.{func.attr.value}"
