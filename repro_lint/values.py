"""The values local names may hold, as the data-loading analysis follows them through a file.

A name keeps every assignment it was given (with the branch it was made in and its order), so
that a read sees the values that may reach it: the last assignment on its own path and those
made since in branches (``if``/``else``, loops, ``except``). Code that can never run
(``if True: ... else: ...``) assigns nothing. Dicts built for ``**kwargs`` are followed through
literals, ``dict(...)``, ``{**a, **b}``, ``.update()``, item assignment and ``setdefault``; a
change made in a branch adds a possible value rather than replacing one. Lists built with
``.append()``/``.extend()`` keep their elements. ``Flow`` is fed by ``loaders.LoaderFacts``
during the summary traversal; nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from repro_lint.arguments import argument, evaluated, literal_int, literal_str
from repro_lint.names import dotted_name

# Dict methods that read a mapping without changing it.
_READS = frozenset({"get", "copy", "items", "keys", "values", "__getitem__", "__contains__"})
_MAX_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Item:
    """The ``index``-th element of what ``source`` evaluates to (``a, b = random_split(...)``,
    ``x, _ = [f(y) for y in ys]``)."""

    source: cst.BaseExpression
    index: int


@dataclass(frozen=True, slots=True)
class Entered:
    """What ``with source as name`` binds: what ``source.__enter__()`` returns (the object
    itself for a dataset that opens its files there)."""

    source: cst.BaseExpression


# What a name may be bound to: an expression, or a part of one that is not an expression.
Bound = cst.BaseExpression | Item | Entered


@dataclass(slots=True)
class Mapping:
    """A dict built for ``**kwargs``: every value each key may hold; ``opaque`` when some
    change to it could not be followed (any key may then be there)."""

    items: dict[str, list[Value]] = field(default_factory=dict)
    opaque: bool = False

    def copy(self) -> Mapping:
        return Mapping({key: list(values) for key, values in self.items.items()}, self.opaque)

    def merge(self, other: Mapping) -> None:
        """``{**self, **other}``: other's keys win."""
        self.opaque = self.opaque or other.opaque
        for key, values in other.items.items():
            self.items[key] = list(values)

    def union(self, other: Mapping) -> None:
        """One of the two: every key and value of either may be there."""
        self.opaque = self.opaque or other.opaque
        for key, values in other.items.items():
            known = self.items.setdefault(key, [])
            known.extend(v for v in values if v not in known)


@dataclass(eq=False, slots=True)
class Binding:
    """One assignment to a name: its value (None for a value not followed, such as a loop
    variable), the branch it was made in, and its order."""

    value: Bound | None
    path: tuple[int, ...]
    seq: int
    scope: Scope
    # A parameter: (where it binds, as ``parameters`` says; its name).
    param: tuple[int | str | None, str] | None = None
    # Its literal default, for a parameter.
    default: cst.BaseExpression | None = None
    mapping: Mapping | None = None
    elements: list[Value] | None = None


@dataclass(frozen=True, eq=False, slots=True)
class Value:
    """An expression together with where it was written (to follow the names inside it);
    ``node`` None: a value that is not followed; ``binding``: the assignment it came from."""

    node: Bound | None
    scope: Scope
    seq: int
    path: tuple[int, ...]
    binding: Binding | None = None

    @property
    def param(self) -> tuple[int | str | None, str] | None:
        if self.node is None and self.binding is not None:
            return self.binding.param
        return None


@dataclass(eq=False, slots=True)
class Scope:
    kind: str  # "module", "function" or "class"
    key: str = ""  # the summary's key of the function
    depth: int = 0  # how many branch blocks enclose the scope itself
    history: dict[str, list[Binding]] = field(default_factory=dict)
    method: str | None = None  # the function's name, when it is a method
    # An ``__init__``'s named parameters and whether it takes ``**kwargs``.
    accepts: tuple[list[str], bool] | None = None
    # Functions defined inside this one, by name -> their summary key.
    locals: dict[str, str] = field(default_factory=dict)


def _prefix(short: tuple[int, ...], long: tuple[int, ...]) -> bool:
    return long[: len(short)] == short


def _covers(written: str, chain: str) -> bool:
    """Whether writing ``written`` may change ``chain`` (the same chain, or one it starts)."""
    return chain == written or chain.startswith(written + ".")


def literal(node: Bound | None) -> tuple[bool, object]:
    """(True, value) for ``True``/``False``/``None``, integer and string literals."""
    if type(node) is cst.Name and node.value in ("True", "False", "None"):
        return True, None if node.value == "None" else node.value == "True"
    if isinstance(node, cst.BaseExpression):
        number = literal_int(node)
        if number is not None:
            return True, number
        text = literal_str(node)
        if text is not None:
            return True, text
    return False, None


def is_true(node: cst.BaseExpression) -> bool | None:
    """Whether a condition always holds when the code runs (True) or never does (False): a
    literal, or ``TYPE_CHECKING`` (``typing.TYPE_CHECKING``), true for type checkers only."""
    if type(node) is cst.Name and node.value in ("True", "False", "TYPE_CHECKING"):
        return node.value == "True"
    if type(node) is cst.Attribute and node.attr.value == "TYPE_CHECKING":
        return False
    if type(node) is cst.Integer:
        return int(evaluated(node)) != 0
    return None


def name_chain(node: cst.BaseExpression) -> str | None:
    """``a.b`` for a name or attribute chain (``names.dotted_name``), None for any other
    expression (a call, a subscript, or a chain built on one)."""
    if not isinstance(node, cst.Name | cst.Attribute):
        return None
    try:
        return dotted_name(node)
    except TypeError:
        return None


def condition(test: cst.BaseExpression) -> tuple[str, bool] | None:
    """``(a.b, True)`` for a test that is a name or attribute chain, ``(a.b, False)`` for
    ``not a.b`` (as many ``not`` as written); None for any other test."""
    holds = True
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test = test.expression
        holds = not holds
    chain = name_chain(test)
    return None if chain is None else (chain, holds)


def _leaves(block: cst.BaseSuite) -> bool:
    """Whether a block always ends in ``raise`` or ``return`` (its last statement)."""
    if type(block) is cst.SimpleStatementSuite:
        small = block.body
    else:
        last = block.body[-1] if block.body else None
        small = last.body if type(last) is cst.SimpleStatementLine else []
    return bool(small) and isinstance(small[-1], cst.Raise | cst.Return)


def _guard(node: cst.If) -> tuple[str, bool] | None:
    """What an ``if`` chain proves about its first test for the code after it: ``if not
    x: raise`` (or ``return``) proves ``x``; ``if x: ... elif y: raise ... else: raise``,
    whose every other arm leaves, proves ``x`` too."""
    arms: list[cst.BaseSuite] = []
    orelse: cst.If | cst.Else | None = node
    while type(orelse) is cst.If:
        arms.append(orelse.body)
        orelse = orelse.orelse
    found = condition(node.test)
    if found is None:
        return None
    text, holds = found
    if len(arms) == 1 and _leaves(node.body):
        return text, not holds
    if (
        type(orelse) is cst.Else
        and _leaves(orelse.body)
        and not _leaves(arms[0])
        and all(_leaves(arm) for arm in arms[1:])
    ):
        return text, holds
    return None


class Flow:
    """Scopes, branches and the bindings made in them, in traversal order."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = [Scope("module")]
        self._entered: list[Scope] = []
        self._path: list[int] = []
        self._seq = 0
        # Blocks that are branches (id -> runs at all), registered by their compound statement.
        self._blocks: dict[int, bool] = {}
        self._dead = 0
        self._open: list[tuple[int, bool]] = []
        # An ``except`` handler's block -> the order number when its ``try`` began: an
        # assignment in the ``try`` body (made after that, outside the handler) may not have
        # run when the handler runs.
        self._handlers: dict[int, int] = {}
        # A ``finally`` block -> the order number when its ``try`` began; while inside, the
        # order numbers of that ``try`` (``_finally``: begun, entered): an assignment made in
        # between (in the ``try`` body, a handler or the ``else``) may not have run. The block
        # is not a branch (it always runs: what it binds is bound after the statement).
        self._finals: dict[int, int] = {}
        self._finally: list[tuple[int, int]] = []
        # Tests known to hold (or fail) after an ``if`` whose other arms all leave the
        # function (``if not args.distributed: raise ...``): (scope, the block path where
        # it was proved, the test's name chain, its truth). A write to the chain or to a
        # name it starts with (or passing that name to a call) forgets it.
        self._known: list[tuple[Scope, tuple[int, ...], str, bool]] = []
        # An ``if`` chain being visited -> the order number when it began; the writes
        # (order number, name chain) since the oldest of them.
        self._began: dict[int, int] = {}
        self._writes: list[tuple[int, str]] = []
        # ``try`` statements being visited: a guard inside one proves nothing (its
        # ``raise`` may land in a handler, and the code after the statement runs anyway).
        self._tries = 0

    # -- where we are ---------------------------------------------------------------------------

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    @property
    def module(self) -> Scope:
        return self.scopes[0]

    @property
    def dead(self) -> bool:
        """Whether the code being visited can never run."""
        return self._dead > 0

    def path(self, scope: Scope | None = None) -> tuple[int, ...]:
        scope = scope or self.scope
        return tuple(self._path[scope.depth :])

    def here(self, node: Bound | None) -> Value:
        """A value written at the current point."""
        self._seq += 1
        return Value(node, self.scope, self._seq, self.path())

    def enter_scope(self, scope: Scope) -> None:
        scope.depth = len(self._path)
        self.scopes.append(scope)
        self._entered.append(scope)

    def release(self) -> None:
        """Forget every binding (each refers to its scope, which lists it), once the file's
        pass is over: reference counting then frees what they hold."""
        for scope in (*self.scopes, *self._entered):
            scope.history.clear()

    def leave_scope(self) -> None:
        self.scopes.pop()

    # -- branches -------------------------------------------------------------------------------

    def branches(self, node: cst.CSTNode) -> None:
        """Register the blocks of a compound statement that may or may not run."""
        if type(node) is cst.If:
            self._began[id(node)] = self._seq
            always = self._truth(node.test)
            self._blocks[id(node.body)] = always is not False
            self._orelse(node.orelse, always is not True)
        elif isinstance(node, cst.For | cst.While):
            never = type(node) is cst.While and is_true(node.test) is False
            self._blocks[id(node.body)] = not never
            self._orelse(node.orelse, True)
        elif isinstance(node, cst.Try | cst.TryStar):
            self._tries += 1
            for handler in node.handlers:
                self._blocks[id(handler.body)] = True
                self._handlers[id(handler.body)] = self._seq
            self._orelse(node.orelse, True)
            if node.finalbody is not None:
                self._finals[id(node.finalbody.body)] = self._seq
        elif type(node) is cst.Match:
            for case in node.cases:
                self._blocks[id(case.body)] = True

    def _orelse(self, orelse: cst.CSTNode | None, runs: bool) -> None:
        if type(orelse) is cst.Else:
            self._blocks[id(orelse.body)] = runs
        elif type(orelse) is cst.If:
            # ``elif``: its blocks are branches of their own, dead if the chain is.
            always = self._truth(orelse.test)
            self._blocks[id(orelse.body)] = runs and always is not False
            self._orelse(orelse.orelse, runs and always is not True)

    def _truth(self, test: cst.BaseExpression) -> bool | None:
        """``is_true``, or what an earlier guard proved about the test here."""
        always = is_true(test)
        if always is not None or not self._known:
            return always
        found = condition(test)
        if found is None:
            return None
        text, holds = found
        path = tuple(self._path)
        for scope, where, known, truth in reversed(self._known):
            if scope is self.scope and known == text and _prefix(where, path):
                return truth == holds
        return None

    def settle(self, node: cst.If) -> None:
        """After an ``if`` chain: remember what it proves for the code that follows."""
        began = self._began.pop(id(node), None)
        if began is None:
            return
        if not self._began:
            # No other chain is open: the writes before this point matter to none.
            writes, self._writes = self._writes, []
        else:
            writes = self._writes
        if self.dead or self._tries:
            return
        proved = _guard(node)
        if proved is None:
            return
        text, holds = proved
        if any(seq > began and _covers(name, text) for seq, name in writes):
            # Changed inside the chain (or handed to a call there).
            return
        self._known.append((self.scope, tuple(self._path), text, holds))

    def left_try(self) -> None:
        """After a ``try`` statement (``branches`` registered it)."""
        self._tries -= 1

    def written(self, name: str) -> None:
        """A name chain (``x``, ``args.seed``) is assigned or handed to a call: what was
        proved about it, or about a chain it starts, holds no longer."""
        self._seq += 1
        if self._began:
            self._writes.append((self._seq, name))
        if self._known:
            self._known = [fact for fact in self._known if not _covers(name, fact[2])]

    def escapes(self, call: cst.Call) -> None:
        """A call may change what it is handed (``f(args)``) or its own receiver
        (``args.update(...)``): ``written`` for each."""
        if not self._known and not self._began:
            return
        for arg in call.args:
            if type(arg.value) is cst.Name:
                self.written(arg.value.value)
        if type(call.func) is cst.Attribute:
            receiver = name_chain(call.func.value)
            if receiver is not None:
                self.written(receiver)

    def enter_block(self, node: cst.CSTNode) -> None:
        began = self._finals.get(id(node))
        if began is not None:
            self._finally.append((began, self._seq))
        runs = self._blocks.pop(id(node), None)
        if runs is None:
            return
        self._open.append((id(node), runs))
        self._path.append(id(node))
        if not runs:
            self._dead += 1

    def leave_block(self, node: cst.CSTNode) -> None:
        if self._finals.pop(id(node), None) is not None:
            self._finally.pop()
        if self._open and self._open[-1][0] == id(node):
            _, runs = self._open.pop()
            self._path.pop()
            if not runs:
                self._dead -= 1

    # -- bindings -------------------------------------------------------------------------------

    def bind(
        self,
        name: str,
        value: Bound | None,
        *,
        param: tuple[int | str | None, str] | None = None,
        default: cst.BaseExpression | None = None,
    ) -> Binding | None:
        """``name = value`` at the current point (ignored in code that never runs)."""
        if self.dead:
            return None
        self.written(name)
        scope = self.scope
        binding = Binding(value, self.path(), self._seq, scope, param, default)
        if isinstance(value, cst.BaseExpression):
            here = Value(value, scope, self._seq, binding.path)
            binding.mapping = self.mapping(here)
            if type(value) is cst.List and not value.elements:
                binding.elements = []
        scope.history.setdefault(name, []).append(binding)
        return binding

    def bound(self, name: str) -> bool:
        """Whether ``name`` is bound in the current scope on every path to the current point:
        one of its assignments so far sits in a block that encloses this point (a parameter,
        or an assignment before it in the same or an outer block; not one in another arm of
        an ``if``, in a loop's body, in an ``except`` handler, nor, in a handler, one in the
        ``try`` body it handles, nor, in a ``finally`` block, one in its ``try`` statement
        before it)."""
        path = self.path()
        fences = [
            (depth, self._handlers[block])
            for depth, block in enumerate(path)
            if block in self._handlers
        ]
        return any(
            _prefix(binding.path, path)
            and not any(binding.seq > start and len(binding.path) <= d for d, start in fences)
            and not any(began < binding.seq <= entered for began, entered in self._finally)
            for binding in self.scope.history.get(name, ())
        )

    def alive(self, name: str, at: Value | None = None) -> list[Binding] | None:
        """The assignments to ``name`` that may reach a read at ``at`` (now, by default);
        None when the name is not bound in that scope or the module."""
        scope = at.scope if at is not None else self.scope
        seq = at.seq if at is not None else self._seq + 1
        path = at.path if at is not None else self.path()
        history = scope.history.get(name)
        if history is None and scope is not self.module:
            if scope.kind == "class":
                return None
            # A module-level name, as it is when the function runs (here: as far as seen).
            scope = self.module
            history = scope.history.get(name)
            seq = self._seq + 1
            path = ()
        if history is None:
            return None
        before = [b for b in history if b.seq < seq]
        start = 0
        for index, binding in enumerate(before):
            if _prefix(binding.path, path):
                start = index
        candidates = before[start:]
        return [
            binding
            for index, binding in enumerate(candidates)
            if not any(_prefix(later.path, binding.path) for later in candidates[index + 1 :])
        ]

    def values(self, node: Bound | None, at: Value | None = None) -> list[Value]:
        """The values an expression may evaluate to: names followed to their assignments,
        both arms of ``a if c else b`` and ``a or b``."""
        start = at if at is not None else self.here_read()
        found: list[Value] = []
        self._expand(Value(node, start.scope, start.seq, start.path), found, 0)
        return found

    def here_read(self) -> Value:
        return Value(None, self.scope, self._seq + 1, self.path())

    def _expand(self, value: Value, found: list[Value], depth: int) -> None:
        node = value.node
        if depth > _MAX_DEPTH:
            found.append(Value(None, value.scope, value.seq, value.path))
            return
        if type(node) is cst.Name and node.value not in ("True", "False", "None"):
            alive = self.alive(node.value, value)
            if not alive:
                found.append(value)
                return
            for binding in alive:
                inner = Value(binding.value, binding.scope, binding.seq, binding.path, binding)
                if binding.value is None:
                    found.append(inner)
                else:
                    self._expand(inner, found, depth + 1)
            return
        if type(node) is cst.IfExp:
            for arm in (node.body, node.orelse):
                self._expand(Value(arm, value.scope, value.seq, value.path), found, depth + 1)
            return
        if type(node) is cst.BooleanOperation and type(node.operator) is cst.Or:
            for arm in (node.left, node.right):
                self._expand(Value(arm, value.scope, value.seq, value.path), found, depth + 1)
            return
        found.append(value)

    # -- dicts and lists --------------------------------------------------------------------------

    def mapping(self, value: Value, depth: int = 0) -> Mapping | None:
        """The keys and values of a dict-building expression (None: not one)."""
        node = value.node
        if depth > _MAX_DEPTH or not isinstance(node, cst.BaseExpression):
            return None
        if type(node) is cst.Name:
            return self.mapping_of(node, value, depth + 1)
        if isinstance(node, cst.IfExp | cst.BooleanOperation):
            arms = (
                (node.body, node.orelse) if isinstance(node, cst.IfExp) else (node.left, node.right)
            )
            result: Mapping | None = None
            for arm in arms:
                found = self.mapping(self._at(arm, value), depth + 1)
                if found is None:
                    return None
                if result is None:
                    result = found
                else:
                    result.union(found)
            return result
        if type(node) is cst.Dict:
            built = Mapping()
            for element in node.elements:
                if type(element) is cst.StarredDictElement:
                    inner = self.mapping_of(element.value, value, depth + 1)
                    if inner is None:
                        built.opaque = True
                    else:
                        built.merge(inner)
                    continue
                assert type(element) is cst.DictElement
                key = literal_str(element.key)
                if key is None:
                    built.opaque = True
                else:
                    built.items[key] = [self._at(element.value, value)]
            return built
        if type(node) is cst.Call and type(node.func) is cst.Name:
            if node.func.value != "dict":
                return None
            built = Mapping()
            for arg in node.args:
                if arg.keyword is not None:
                    built.items[arg.keyword.value] = [self._at(arg.value, value)]
                    continue
                inner = self.mapping_of(arg.value, value, depth + 1)
                if inner is None:
                    built.opaque = True
                else:
                    built.merge(inner)
            return built
        if (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value == "copy"
            and not node.args
        ):
            return self.mapping_of(node.func.value, value, depth + 1)
        return None

    def mapping_of(self, node: cst.BaseExpression, at: Value, depth: int = 0) -> Mapping | None:
        """The mapping ``**node`` unpacks: a dict literal, or a name (every dict it may be
        bound to, with the changes made to it since); None when it cannot be followed."""
        if depth > _MAX_DEPTH:
            return None
        result: Mapping | None = None
        for value in self.values(node, at):
            if (
                value.binding is not None
                and value.binding.mapping is not None
                and (value.node is value.binding.value)
            ):
                found: Mapping | None = value.binding.mapping.copy()
            else:
                found = self.mapping(value, depth + 1)
            if found is None:
                return None
            if result is None:
                result = found
            else:
                result.union(found)
        return result

    def _at(self, node: cst.BaseExpression, where: Value) -> Value:
        return Value(node, where.scope, where.seq, where.path)

    def _mappings(self, name: str) -> Iterator[tuple[Binding, bool]]:
        """The dicts ``name`` may be bound to now, each with whether a change made here
        certainly applies to it (made in the same block it was built in)."""
        path = self.path()
        for binding in self.alive(name) or ():
            if binding.mapping is not None:
                yield binding, binding.path == path and binding.scope is self.scope

    def change(self, name: str, method: str, call: cst.Call) -> None:
        """``kwargs.update(...)``, ``kwargs.setdefault(...)``, ``kwargs.pop(...)``; and
        ``files.append(x)`` on a list built here."""
        if self.dead or method in _READS:
            return
        here = self.here(None)
        if method in ("append", "extend", "insert"):
            for binding in self.alive(name) or ():
                if binding.elements is not None:
                    self._add_elements(binding, method, call, here)
            return
        for binding, certain in list(self._mappings(name)):
            mapping = binding.mapping
            assert mapping is not None
            if method == "update":
                update = Mapping()
                for arg in call.args:
                    if arg.keyword is not None:
                        update.items[arg.keyword.value] = [self._at(arg.value, here)]
                        continue
                    inner = self.mapping_of(arg.value, here)
                    if inner is None:
                        update.opaque = True
                    else:
                        update.merge(inner)
                self._apply(mapping, update, certain)
            elif method == "setdefault":
                key = argument(call, None, 0)
                default = argument(call, None, 1)
                text = literal_str(key.value) if key is not None else None
                if text is None or default is None:
                    mapping.opaque = True
                elif text not in mapping.items:
                    mapping.items[text] = [self._at(default.value, here)]
            elif method == "pop":
                key = argument(call, None, 0)
                text = literal_str(key.value) if key is not None else None
                if text is not None and certain:
                    mapping.items.pop(text, None)
            else:
                mapping.opaque = True

    def set_item(
        self, name: str, key: cst.BaseExpression | None, value: cst.BaseExpression
    ) -> None:
        """``kwargs["num_workers"] = 4``."""
        if self.dead:
            return
        here = self.here(None)
        text = literal_str(key) if key is not None else None
        for binding, certain in list(self._mappings(name)):
            mapping = binding.mapping
            assert mapping is not None
            if text is None:
                mapping.opaque = True
            else:
                update = Mapping({text: [self._at(value, here)]})
                self._apply(mapping, update, certain)

    @staticmethod
    def _apply(mapping: Mapping, update: Mapping, certain: bool) -> None:
        if certain:
            mapping.merge(update)
        else:
            mapping.union(update)

    def _add_elements(self, binding: Binding, method: str, call: cst.Call, here: Value) -> None:
        assert binding.elements is not None
        arg = argument(call, None, 1 if method == "insert" else 0)
        if arg is None or arg.star:
            binding.elements = None
            return
        if method == "extend":
            if isinstance(arg.value, cst.List | cst.Tuple):
                binding.elements.extend(
                    self._at(element.value, here) for element in arg.value.elements
                )
            else:
                binding.elements = None
            return
        binding.elements.append(self._at(arg.value, here))

    def elements(self, node: cst.BaseExpression, at: Value | None = None) -> list[Value] | None:
        """The elements of a list: a literal, or a name bound to lists built in place
        (``parts = []`` then ``parts.append(x)``); None when not known."""
        found: list[Value] = []
        for value in self.values(node, at):
            current = value.node
            binding = value.binding
            if binding is not None and binding.elements is not None and current is binding.value:
                found.extend(binding.elements)
            elif isinstance(current, cst.List | cst.Tuple):
                found.extend(self._at(e.value, value) for e in current.elements)
            else:
                return None
        return found


def parameters(
    node: cst.FunctionDef | cst.Lambda,
) -> Iterator[tuple[str, int | str | None, cst.BaseExpression | None]]:
    """(name, where it binds, default) of each parameter: its position among the positional
    parameters, None for a keyword-only one, ``"*"``/``"**"`` for ``*args``/``**kwargs``."""
    params = node.params
    for index, param in enumerate((*params.posonly_params, *params.params)):
        yield param.name.value, index, param.default
    for param in params.kwonly_params:
        yield param.name.value, None, param.default
    if type(node.params.star_arg) is cst.Param:
        yield node.params.star_arg.name.value, "*", None
    if type(params.star_kwarg) is cst.Param:
        yield params.star_kwarg.name.value, "**", None


def target_names(target: cst.BaseExpression) -> Sequence[str]:
    """The names an assignment or loop target binds."""
    if type(target) is cst.Name:
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        found: list[str] = []
        for element in target.elements:
            found.extend(target_names(element.value))
        return found
    if type(target) is cst.StarredElement:
        return target_names(target.value)
    return []


__all__ = [
    "Binding",
    "Bound",
    "Entered",
    "Flow",
    "Item",
    "Mapping",
    "Scope",
    "Value",
    "is_true",
    "literal",
    "parameters",
    "target_names",
]
