"""The seed a fix writes: the program's own seed where the code being fixed can reach it.

A fix that gives a loader a generator, a split a generator or a dataset shuffle a seed should
repeat the program's choice, not a constant of ours: with `--seed 3` the run must still
depend on 3 alone. What counts as the program's seed, most telling first:

1. the value a seeding call passes earlier in the same function on every path to the fix
   (``torch.manual_seed(args.seed + rank)``, ``set_seed(config["seed"])``); under
   ``if x is not None:`` it is *optional*, and the fix keeps the program's choice of no seed;
2. the parsed seed option read through its namespace where that is in scope (``args.seed``;
   optional when ``--seed`` defaults to None);
3. a seed-named parameter of the enclosing function (``seed``, optional when it defaults to
   None); for a loader also a seed the function passes later from variables that already
   hold it (``seed = int(config["seed"])``, the loader, ``set_seed(seed)``);
4. the one integer the same function, or the module's top-level code, passes as a seed
   anywhere (``seed_everything(666)`` after the loader, ``train_test_split(..., seed=42)``).

Whole-program sources (``torch.initial_seed()`` where torch is seeded on every path before
the fix) are judged in ``seed_paths``. ``Seed.value`` writes the choice with a rank added,
never ``0 + rank``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from repro_lint import randomness as rng
from repro_lint.arguments import argument
from repro_lint.walker import children

# How deep a seed expression may nest (``cfg["train"]["seed"] + rank``).
_MAX_DEPTH = 8


@dataclass(frozen=True)
class Seed:
    """A seed as a fix writes it: ``text`` (an expression valid where the fix goes),
    ``ranked`` when it already differs per process rank, ``optional`` when it may be None
    at run time (the program then chose to run unseeded)."""

    text: str
    ranked: bool = False
    optional: bool = False

    def value(self, rank: str | None = None) -> str:
        """The seed with ``rank`` added (``rank`` alone for a seed of 0)."""
        if rank is None or self.ranked:
            return self.text
        if self.text.strip() == "0":
            return rank
        return f"{self.text} + {rank}"

    def call(self, seeded: str, rank: str | None = None) -> str:
        """``seeded`` (a call text ending in ``(``, such as ``torch.Generator().manual_seed(``)
        given this seed; for an optional seed ``... if seed is not None else None``, which
        leaves a run without a seed as the program had it."""
        text = f"{seeded}{self.value(rank)})"
        if self.optional:
            text += f" if {self.text} is not None else None"
        return text

    def keyword(self) -> str:
        """The seed as a ``seed=`` keyword's value (None already means no seed there)."""
        return self.text


def is_plain(node: cst.BaseExpression, depth: int = 0) -> bool:
    """A value a fix may repeat elsewhere: names, attributes, subscripts with literal keys,
    integers, and sums and differences of those (no calls, nothing drawn)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, cst.Name | cst.Integer):
        return True
    if type(node) is cst.Attribute:
        return is_plain(node.value, depth + 1)
    if type(node) is cst.Subscript:
        index = node.slice[0].slice if len(node.slice) == 1 else None
        return (
            type(index) is cst.Index
            and isinstance(index.value, cst.SimpleString | cst.Integer)
            and is_plain(node.value, depth + 1)
        )
    if type(node) is cst.BinaryOperation and isinstance(node.operator, cst.Add | cst.Subtract):
        return is_plain(node.left, depth + 1) and is_plain(node.right, depth + 1)
    return False


def root_name(node: cst.BaseExpression) -> str | None:
    """The variable a plain value starts from (``args`` in ``args.seed``); None for a sum."""
    while isinstance(node, cst.Attribute | cst.Subscript):
        node = node.value
    return node.value if type(node) is cst.Name else None


def names_in(node: cst.BaseExpression) -> Iterator[str]:
    """The variables a plain value reads (``args`` and ``rank`` in ``args.seed + rank``)."""
    if type(node) is cst.Name:
        yield node.value
    elif isinstance(node, cst.Attribute | cst.Subscript):
        yield from names_in(node.value)
    elif type(node) is cst.BinaryOperation:
        yield from names_in(node.left)
        yield from names_in(node.right)


def callee_name(func: cst.BaseExpression) -> str | None:
    """The name a call's function ends in (``parse_args`` of ``parser.parse_args``)."""
    if type(func) is cst.Name:  # (``type``: abc's isinstance is slow)
        return func.value
    if type(func) is cst.Attribute:
        return func.attr.value
    return None


def seeding_argument(
    call: cst.Call, qualified: str | None, seed_functions: Iterable[str] = ()
) -> cst.BaseExpression | None:
    """The seed a seeding call passes: the first argument (or ``seed=``) of a known seeding
    function, a configured one, or a function named for seeding (``set_random_seed(seed)``,
    ``g.manual_seed(seed)``); None for other calls."""
    if qualified is not None and "default_setup" in qualified:
        return None  # detectron2's first argument is the config
    known = qualified is not None and (
        qualified in rng.SEEDS or qualified in rng.HELPERS or qualified in seed_functions
    )
    name = callee_name(call.func)
    if not known and (name is None or not rng.is_seed_name(name)):
        return None
    found = argument(call, "seed", 0) or argument(call, "a", 0)
    return None if found is None else found.value


def literal_seed(
    call: cst.Call, qualified: str | None, seed_functions: Iterable[str] = ()
) -> str | None:
    """An integer a call passes as a seed: a seeding call's seed, or the value of a
    seed-named keyword of any call (``train_test_split(..., seed=42)``)."""
    value = seeding_argument(call, qualified, seed_functions)
    if type(value) is cst.Integer:
        return value.value
    for arg in call.args:
        if (
            arg.keyword is not None
            and rng.is_seed_name(arg.keyword.value)
            and type(arg.value) is cst.Integer
        ):
            return arg.value.value
    return None


def none_guard(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x`` in a test ``x is not None`` (``x`` a plain value); None for other tests."""
    if (
        type(test) is cst.Comparison
        and len(test.comparisons) == 1
        and type(test.comparisons[0].operator) is cst.IsNot
        and type(test.comparisons[0].comparator) is cst.Name
        and test.comparisons[0].comparator.value == "None"
        and is_plain(test.left)
    ):
        return test.left
    return None


def seed_parameter(function: cst.FunctionDef) -> Seed | None:
    """A seed-named parameter of a function (``seed``, ``random_seed``), optional when it
    defaults to None."""
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        name = param.name.value
        if rng.is_seed_name(name):
            default = param.default
            optional = type(default) is cst.Name and default.value == "None"
            return Seed(name, optional=optional)
    return None


def only(values: Iterable[str]) -> Seed | None:
    """The seed when the values passed as seeds all agree (``666``); None otherwise."""
    found = {int(value, 0) for value in values}
    if len(found) != 1:
        return None
    return Seed(str(found.pop()))


# -- a per-file rule's view: the statements around the fix ---------------------------------------


Qualify = Callable[[cst.BaseExpression], "str | None"]


def _blocks(node: cst.CSTNode) -> Iterator[Sequence[cst.CSTNode]]:
    """The statement lists of a compound statement's blocks (body, else, handlers...)."""
    for child in children(node):
        if isinstance(child, cst.IndentedBlock | cst.SimpleStatementSuite):
            yield child.body
        elif isinstance(
            child,
            cst.Else
            | cst.Finally
            | cst.ExceptHandler
            | cst.ExceptStarHandler
            | cst.If
            | cst.MatchCase,
        ):
            # ``If`` here is an ``elif``.
            yield from _blocks(child)


def _siblings_before(parent: cst.CSTNode, child: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """The statements that come before ``child`` in the block of ``parent`` holding it."""
    statements: Sequence[cst.CSTNode] = (
        parent.body
        if type(parent) is cst.Module
        else next((block for block in _blocks(parent) if child in block), ())
    )
    for index, statement in enumerate(statements):
        if statement is child:
            return statements[:index]
    return ()


def _calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    """The calls in a statement, not those of functions or classes it defines."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Call:
            yield current
        if isinstance(current, cst.FunctionDef | cst.ClassDef | cst.Lambda):
            continue
        stack.extend(reversed(children(current)))


def _assigned(statement: cst.CSTNode) -> set[str]:
    """The names a simple statement binds."""
    found: set[str] = set()
    if type(statement) is not cst.SimpleStatementLine:
        return found
    for small in statement.body:
        targets: list[cst.BaseExpression] = []
        if type(small) is cst.Assign:
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.AnnAssign | cst.AugAssign):
            targets = [small.target]
        for target in targets:
            stack: list[cst.CSTNode] = [target]
            while stack:
                current = stack.pop()
                if type(current) is cst.Name:
                    found.add(current.value)
                elif isinstance(current, cst.Tuple | cst.List | cst.StarredElement):
                    stack.extend(children(current))
                elif type(current) is cst.Element:
                    stack.append(current.value)
    return found


def _seed_in(
    statement: cst.CSTNode, qualify: Qualify, seed_functions: Iterable[str]
) -> tuple[cst.BaseExpression, bool] | None:
    """The seed a statement passes on every path through it (a seeding call at its top),
    or under ``if x is not None:`` (optional); None for anything else."""
    if type(statement) is cst.SimpleStatementLine:
        for small in statement.body:
            if type(small) is cst.Expr and type(small.value) is cst.Call:
                call = small.value
                value = seeding_argument(call, qualify(call.func), seed_functions)
                if value is not None and is_plain(value):
                    return value, False
        return None
    if type(statement) is cst.If and statement.orelse is None:
        guarded = none_guard(statement.test)
        if guarded is None:
            return None
        for inner in statement.body.body:
            found = _seed_in(inner, qualify, seed_functions)
            if found is not None and found[0].deep_equals(guarded):
                return found[0], True
    return None


def earlier_seed(
    stack: Sequence[cst.CSTNode],
    module: cst.Module,
    qualify: Qualify,
    seed_functions: Iterable[str] = (),
) -> tuple[cst.BaseExpression, bool] | None:
    """The seed passed by a statement that runs before the innermost statement of ``stack``
    (outermost first) on every path, within its function: an earlier statement of each
    enclosing block, up to the function's own. Its names must not be bound again between
    that statement and the fix. Returns the seed and whether it is optional."""
    rebound: set[str] = set()
    for depth in range(len(stack) - 1, -1, -1):
        child = stack[depth]
        parent: cst.CSTNode = stack[depth - 1] if depth > 0 else module
        for statement in reversed(_siblings_before(parent, child)):
            found = _seed_in(statement, qualify, seed_functions)
            if found is not None and not (set(names_in(found[0])) & rebound):
                return found
            rebound |= _assigned(statement)
        if isinstance(parent, cst.FunctionDef | cst.ClassDef):
            break
    return None


def literal_seeds(
    statements: Iterable[cst.CSTNode], qualify: Qualify, seed_functions: Iterable[str] = ()
) -> Iterator[str]:
    """The integers ``statements`` pass as seeds anywhere (not inside functions or classes
    they define)."""
    for statement in statements:
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            continue
        for call in _calls(statement):
            found = literal_seed(call, qualify(call.func), seed_functions)
            if found is not None:
                yield found


def enclosing_function(stack: Sequence[cst.CSTNode]) -> cst.FunctionDef | None:
    for node in reversed(stack):
        if type(node) is cst.FunctionDef:
            return node
    return None


def first_parameter(function: cst.FunctionDef) -> str | None:
    """The name of a method's first parameter (``self``); None for a static method."""
    if any(
        type(d.decorator) is cst.Name and d.decorator.value == "staticmethod"
        for d in function.decorators
    ):
        return None
    params = function.params
    first = [*params.posonly_params, *params.params][:1]
    return first[0].name.value if first else None


def instance_seed(
    stack: Sequence[cst.CSTNode], qualify: Qualify, seed_functions: Iterable[str] = ()
) -> cst.BaseExpression | None:
    """In a method (the innermost function of ``stack``, directly in a class): the seed the
    methods of its class pass from the instance (``set_seed(self.args.seed)`` in
    ``__init__``), when they all pass the same one, read through the same first parameter
    as the method's."""
    index = next(
        (i for i in range(len(stack) - 1, -1, -1) if type(stack[i]) is cst.FunctionDef),
        None,
    )
    if index is None or index == 0:
        return None
    method, klass = stack[index], stack[index - 1]
    assert type(method) is cst.FunctionDef
    first = first_parameter(method)
    if first is None or type(klass) is not cst.ClassDef:
        return None
    found: dict[str, cst.BaseExpression] = {}
    for member in klass.body.body:
        if type(member) is not cst.FunctionDef or first_parameter(member) != first:
            continue
        for call in _calls(member.body):
            value = seeding_argument(call, qualify(call.func), seed_functions)
            if value is not None and is_plain(value) and set(names_in(value)) == {first}:
                found.setdefault(cst.Module([]).code_for_node(value), value)
    return next(iter(found.values())) if len(found) == 1 else None


def file_seed(
    stack: Sequence[cst.CSTNode],
    module: cst.Module,
    qualify: Qualify,
    seed_functions: Iterable[str] = (),
    ranked: Callable[[cst.BaseExpression], bool] | None = None,
) -> Seed | None:
    """The program's seed where a per-file rule fixes the innermost statement of ``stack``:
    an earlier seed of the function, its seed parameter, the one literal seed of the
    function, in a method the seed its class passes from the instance (``instance_seed``),
    else the one literal seed of the module's top-level code. ``ranked`` tells seeds that
    differ per rank, which a fix that must agree across ranks (a split) leaves out. The
    option source (``args.seed``) needs the whole file and is the data-loading facts' own."""
    earlier = earlier_seed(stack, module, qualify, seed_functions)
    if earlier is not None and (ranked is None or not ranked(earlier[0])):
        value, optional = earlier
        return Seed(module.code_for_node(value), optional=optional)
    function = enclosing_function(stack)
    if function is not None:
        parameter = seed_parameter(function)
        if parameter is not None:
            return parameter
        found = list(literal_seeds(function.body.body, qualify, seed_functions))
        if found:
            return only(found)
        instance = instance_seed(stack, qualify, seed_functions)
        if instance is not None and (ranked is None or not ranked(instance)):
            return Seed(module.code_for_node(instance))
    return only(literal_seeds(module.body, qualify, seed_functions))


__all__ = [
    "Seed",
    "earlier_seed",
    "enclosing_function",
    "file_seed",
    "first_parameter",
    "instance_seed",
    "is_plain",
    "literal_seed",
    "literal_seeds",
    "names_in",
    "none_guard",
    "only",
    "root_name",
    "seed_parameter",
    "seeding_argument",
]
