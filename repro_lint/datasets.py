"""Data loading across files: loader calls bound to their parameters, and what a loader's
dataset does with random numbers in its worker processes.

The per-file facts come from ``loaders.LoaderFacts`` (the ``data`` part of each summary); this
module joins them through ``project.Program``: a call into project code becomes a loader when it
names a DataLoader subclass or a ``functools.partial`` of one defined in another module, and a
dataset class is followed to its methods, the functions they call and the objects (transforms)
it builds, in whatever file they live.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from repro_lint import randomness as rng
from repro_lint.diagnostics import Location
from repro_lint.loaders import LOADERS, OTHER_RNG_LIBRARIES, SEEDS_WORKERS, TRANSPARENT_BASES
from repro_lint.program import Program, Unit

Json = Any

# Methods a map-style or iterable dataset runs in the workers.
WORKER_METHODS = ("__getitem__", "__getitems__", "__iter__", "__next__")
_MAX_FUNCTIONS = 2000


def data(unit: Unit) -> Mapping[str, Json]:
    """The data-loading part of a unit's summary (empty when it has none)."""
    found: Mapping[str, Json] = unit.summary.get("data", {})
    return found


def flags(unit: Unit) -> frozenset[str]:
    return frozenset(data(unit).get("flags", ()))


def span(record: Mapping[str, Json]) -> tuple[Location, Location]:
    row, column, end_row, end_column = record["at"]
    return Location(int(row), int(column)), Location(int(end_row), int(end_column))


# -- loaders --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Loader:
    """A DataLoader construction with its arguments bound to parameter names."""

    unit: Unit
    record: Mapping[str, Json]
    args: Mapping[str, Mapping[str, Json]]
    # Some argument cannot be known (``*args``, a ``**mapping`` built elsewhere).
    opaque: bool
    # The loader class installs a worker_init_fn of its own when given none.
    seeds_workers: bool
    # Arguments the class passes to DataLoader itself whatever the caller says.
    forced: frozenset[str] = frozenset()
    # The keywords a project subclass's ``__init__`` takes (None: any).
    accepts: frozenset[str] | None = None

    def takes(self, name: str) -> bool:
        """Whether a fix may pass ``name=...`` to this loader's class."""
        return self.accepts is None or name in self.accepts

    def given(self, name: str) -> bool:
        """Whether an argument is passed with a value other than a literal None."""
        desc = self.args.get(name)
        return desc is not None and not ("v" in desc and desc["v"] is None)

    def may_be_positive(self, name: str) -> bool:
        """Whether a count may be above zero (absent means the default, zero)."""
        desc = self.args.get(name)
        if desc is None:
            return False
        value = desc.get("v", "?")
        return value == "?" or (
            isinstance(value, int) and not isinstance(value, bool) and value > 0
        )

    def may_shuffle(self) -> bool:
        """Whether the order of the samples is random (``shuffle`` true or not a literal,
        a random or distributed sampler)."""
        shuffle = self.args.get("shuffle")
        if shuffle is not None and shuffle.get("v", True) not in (False, None):
            return True
        return any(
            self.args.get(name, {}).get("s") in ("random", "seeded", "distributed")
            for name in ("sampler", "batch_sampler")
        )

    def sampler(self) -> str | None:
        for name in ("sampler", "batch_sampler"):
            kind = self.args.get(name, {}).get("s")
            if kind is not None:
                return str(kind)
        return None

    @property
    def dataset(self) -> list[Json]:
        found: list[Json] = self.args.get("dataset", {}).get("d", ["unknown"])
        return found


def loaders(program: Program) -> Iterator[Loader]:
    """Every loader built in a linted file of the program."""
    for unit in list(program.units):
        if not unit.linted:
            continue
        for record in data(unit).get("loaders", ()):
            loader = _bind(program, unit, record, record["callee"], [], {}, 0)
            if loader is not None:
                yield loader


def _bind(
    program: Program,
    unit: Unit,
    record: Mapping[str, Json],
    callee: Sequence[Json],
    pos: list[Json],
    kw: dict[str, Json],
    depth: int,
) -> Loader | None:
    """Bind a call's arguments to the parameters of what it calls, if that is a loader."""
    if depth > 8:
        return None
    pos = [*pos, *record.get("pos", ())] if depth == 0 else pos
    kw = {**kw, **record.get("kw", {})} if depth == 0 else kw
    opaque = bool(record.get("opaque"))
    if callee[0] == "lib":
        qualified = str(callee[1])
        return _loader(
            unit, record, LOADERS[qualified], pos, kw, opaque, qualified in SEEDS_WORKERS
        )
    found = program.referent(unit, callee)
    if found is not None and found[0] == "class":
        return _subclass(program, unit, record, found[1], found[2], pos, kw, opaque)
    partial = _partial(program, unit, str(callee[1]))
    if partial is None:
        return None
    home, described = partial
    merged_pos = [*described.get("pos", ()), *pos]
    merged_kw = {**described.get("kw", {}), **kw}
    inner = dict(record, opaque=opaque or bool(described.get("opaque")))
    if described["callee"][0] == "lib":
        return _bind(program, unit, inner, described["callee"], merged_pos, merged_kw, depth + 1)
    found = program.referent(home, described["callee"])
    if found is None or found[0] != "class":
        return None
    return _subclass(program, unit, inner, found[1], found[2], merged_pos, merged_kw, opaque)


def _partial(
    program: Program, unit: Unit, qualified: str
) -> tuple[Unit, Mapping[str, Json]] | None:
    """A module-level ``name = functools.partial(<loader>, ...)`` in a project module."""
    module, _, name = qualified.rpartition(".")
    if not module:
        return None
    home = program.module(module, unit)
    if home is None:
        return None
    described = data(home).get("partials", {}).get(name)
    return None if described is None else (home, described)


def _subclass(
    program: Program,
    unit: Unit,
    record: Mapping[str, Json],
    home: Unit,
    klass: str,
    pos: list[Json],
    kw: dict[str, Json],
    opaque: bool,
) -> Loader | None:
    """A call of a project class that extends a DataLoader."""
    bases = [base for base in program.external_bases(home, klass) if base in LOADERS]
    if not bases:
        return None
    params: Sequence[str] = LOADERS[bases[0]]
    forced: dict[str, Json] = {}
    accepts: frozenset[str] | None = None
    init = program.method(home, klass, "__init__")
    if init is not None:
        init_unit, key = init
        info = init_unit.summary.get("defs", {}).get(key)
        if info is not None:
            params = [str(p) for p in info[1]][1:]
        for fact in data(init_unit).get("facts", {}).get(key, ()):
            if fact[0] == "super":
                forced.update(fact[1])
            elif fact[0] == "accepts" and not fact[2]:
                accepts = frozenset(str(name) for name in fact[1])
    loader = _loader(unit, record, params, pos, kw, opaque, bases[0] in SEEDS_WORKERS)
    return Loader(
        unit,
        record,
        {**loader.args, **forced},
        opaque,
        loader.seeds_workers,
        frozenset(forced),
        accepts,
    )


def _loader(
    unit: Unit,
    record: Mapping[str, Json],
    params: Sequence[str],
    pos: Sequence[Json],
    kw: Mapping[str, Json],
    opaque: bool,
    seeds_workers: bool,
) -> Loader:
    args: dict[str, Mapping[str, Json]] = {}
    for index, desc in enumerate(pos):
        if index < len(params):
            args[params[index]] = desc
    args.update(kw)
    return Loader(unit, record, args, opaque, seeds_workers)


# -- programs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What the programs that may run a file say about it: flags of the file itself and of
    every file an entry point reaching it also reaches."""

    flags: frozenset[str]


def contexts(program: Program) -> dict[int, Context]:
    """For every unit, the union of the data flags of the programs it takes part in."""
    found: dict[int, set[str]] = {}
    for entry in program.entries:
        reached = program.reached_files(entry)
        units = [unit for unit in program.units if unit.filename in reached]
        together: set[str] = set()
        for unit in units:
            together |= flags(unit)
        for unit in units:
            found.setdefault(unit.index, set()).update(together)
    return {
        unit.index: Context(frozenset(found.get(unit.index, set()) | flags(unit)))
        for unit in program.units
    }


# -- datasets -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Owned:
    """A generator object kept where every worker gets a copy of it."""

    where: str  # "dataset", "transform" or "module"
    owner: str  # the class (or module) that keeps it
    name: str  # the attribute (or module-level name)
    kind: str  # the constructor's qualified name


@dataclass
class Randomness:
    """What a dataset does with random numbers when its items are loaded in workers."""

    # Everything it runs was found (project code, or library code known to be plain).
    known: bool = True
    # It draws random numbers at all (global generators, owned ones, other libraries).
    draws: bool = False
    # It draws from numpy's global generator (duplicated across workers before torch 1.9).
    numpy_global: bool = False
    owned: list[Owned] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)
    # The loader gets the dataset inside a Subset (``random_split``, ``Subset``).
    subset: bool = False
    # Names of the project dataset classes involved.
    classes: list[str] = field(default_factory=list)
    # Modules whose code it runs that import numpy (a fix may then use numpy).
    numpy: bool = False

    def merge(self, other: Randomness) -> None:
        self.known = self.known and other.known
        self.draws = self.draws or other.draws
        self.numpy_global = self.numpy_global or other.numpy_global
        self.subset = self.subset or other.subset
        self.numpy = self.numpy or other.numpy
        for owned in other.owned:
            if owned not in self.owned:
                self.owned.append(owned)
        for library in other.libraries:
            if library not in self.libraries:
                self.libraries.append(library)
        for klass in other.classes:
            if klass not in self.classes:
                self.classes.append(klass)


def _imports_numpy(unit: Unit) -> bool:
    return any(
        str(bound).split(".", 1)[0] == "numpy" for _, bound, _ in unit.summary.get("bindings", ())
    )


class Judge:
    """Judges datasets (memoized per class) for one program."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._classes: dict[tuple[int, str], Randomness] = {}

    def dataset(self, unit: Unit, ref: Sequence[Json], depth: int = 0) -> Randomness:
        """What the dataset a loader describes (``loaders.LoaderFacts._dataset``) does."""
        kind = ref[0] if ref else "unknown"
        if depth > 8 or kind == "unknown":
            return Randomness(known=False)
        if kind == "plain":
            return Randomness()
        if kind == "subset":
            found = self.dataset(unit, ref[1], depth + 1)
            found.subset = True
            return found
        if kind == "concat":
            found = Randomness()
            for inner in ref[1]:
                found.merge(self.dataset(unit, inner, depth + 1))
            return found
        found = Randomness()
        if kind == "class":
            target = self.program.referent(unit, ref[1])
            if target is None:
                found.known = False
            elif target[0] == "class":
                found.merge(self._class(target[1], target[2]))
            else:
                # A function that builds the dataset: what it runs can prove a collision,
                # never that its result is plain.
                found.merge(self._reach(((target[1], target[2]),), frozenset()))
                found.known = False
        for part in ref[2] if len(ref) > 2 else ():
            found.merge(self._part(unit, part))
        return found

    def _part(self, unit: Unit, part: Sequence[Json]) -> Randomness:
        """A class or function a dataset is built with (a transform, an augmenter)."""
        if part[0] == "unknown":
            return Randomness(known=False)
        qualified = str(part[1])
        if part[0] == "x":
            found = Randomness()
            if qualified.startswith(OTHER_RNG_LIBRARIES) or qualified.split(".", 1)[0] == "imgaug":
                found.libraries.append(qualified.split(".", 1)[0])
                found.draws = True
            elif rng.torch_use(qualified) == rng.TRANSFORM:
                found.draws = True
            return found
        target = self.program.referent(unit, ["q", qualified])
        if target is None:
            return Randomness()
        if target[0] == "class":
            starts = self.program.methods(target[1], target[2])
            return self._reach(starts, frozenset())
        return self._reach(((target[1], target[2]),), frozenset())

    def _class(self, unit: Unit, klass: str) -> Randomness:
        memo = (unit.index, klass)
        done = self._classes.get(memo)
        if done is None:
            done = self._classes[memo] = self._judge_class(unit, klass)
        result = Randomness()
        result.merge(done)
        return result

    def _judge_class(self, unit: Unit, klass: str) -> Randomness:
        program = self.program
        methods = program.methods(unit, klass)
        own = frozenset((u.index, key) for u, key in methods)
        starts: list[tuple[Unit, str]] = []
        for name in WORKER_METHODS:
            found = program.method(unit, klass, name)
            if found is not None:
                starts.append(found)
        if not starts:
            starts = methods
        # Objects the dataset builds in any method (its transforms) run in workers too.
        for method_unit, key in methods:
            for event in method_unit.functions().get(key, ()):
                if event[0] != "c":
                    continue
                target = program.referent(method_unit, event[1])
                if target is not None and target[0] == "class":
                    starts.extend(
                        m
                        for m in program.methods(target[1], target[2])
                        if (m[0].index, m[1]) not in own
                    )
        result = self._reach(starts, own, dataset=(unit.index, klass))
        # An augmenter of another random number library built in ``__init__``
        # (``self.aug = iaa.Fliplr(0.5)``) draws from that library's state in the workers.
        for method_unit, key in methods:
            for fact in data(method_unit).get("facts", {}).get(key, ()):
                if fact[0] == "lib" and fact[1] not in result.libraries:
                    result.draws = True
                    result.libraries.append(str(fact[1]))
        result.classes.append(klass.rsplit(".", 1)[-1])
        bases = program.external_bases(unit, klass)
        if any(
            not base.startswith(TRANSPARENT_BASES) and base != "builtins.object" for base in bases
        ):
            result.known = False
        return result

    def _reach(
        self,
        starts: Iterable[tuple[Unit, str]],
        own: frozenset[tuple[int, str]],
        dataset: tuple[int, str] | None = None,
    ) -> Randomness:
        """What the functions reached from ``starts`` do; ``own`` are the dataset's methods
        (their ``self`` is the dataset)."""
        program = self.program
        result = Randomness()
        seen: set[tuple[int, str]] = set()
        todo = list(starts)
        used: dict[tuple[int, str], set[str]] = {}
        while todo and len(seen) < _MAX_FUNCTIONS:
            unit, key = todo.pop()
            marker = (unit.index, key)
            if marker in seen:
                continue
            seen.add(marker)
            if _imports_numpy(unit):
                result.numpy = True
            owner = self._owner(unit, key, own, dataset)
            for fact in data(unit).get("facts", {}).get(key, ()):
                if fact[0] == "self" and owner is not None:
                    used.setdefault(owner, set()).add(str(fact[1]))
                elif fact[0] == "lib":
                    result.draws = True
                    if fact[1] not in result.libraries:
                        result.libraries.append(str(fact[1]))
                elif fact[0] == "object":
                    result.draws = True
                    result.owned.append(Owned("module", unit.module, str(fact[1]), str(fact[2])))
            for event in unit.functions().get(key, ()):
                if event[0] == "u":
                    result.draws = True
                    if event[1] == "numpy":
                        result.numpy_global = True
            todo.extend(program.callees(unit, key))
        for (index, klass), attributes in used.items():
            owner_unit = program.units[index]
            where = "dataset" if (index, klass) == dataset else "transform"
            for name, kind in self._owned(owner_unit, klass).items():
                if name in attributes:
                    result.draws = True
                    result.owned.append(Owned(where, klass.rsplit(".", 1)[-1], name, kind))
        return result

    @staticmethod
    def _owner(
        unit: Unit,
        key: str,
        own: frozenset[tuple[int, str]],
        dataset: tuple[int, str] | None,
    ) -> tuple[int, str] | None:
        """The class whose instance ``self`` is in method ``key`` (the dataset for its own
        methods, inherited ones included)."""
        if dataset is not None and (unit.index, key) in own:
            return dataset
        klass = key.rpartition(".")[0]
        if klass and klass in unit.classes():
            return unit.index, klass
        return None

    def _owned(self, unit: Unit, klass: str) -> dict[str, str]:
        """Attributes of a class (its project bases included) holding generator objects."""
        found: dict[str, str] = {}
        facts = []
        for method_unit, key in self.program.methods(unit, klass):
            table = data(method_unit).get("facts", {})
            facts.extend(table.get(key, ()))
            facts.extend(table.get(key.rpartition(".")[0], ()))
        facts.extend(data(unit).get("facts", {}).get(klass, ()))
        for fact in facts:
            if fact[0] == "attr":
                found.setdefault(str(fact[1]), str(fact[2]))
        return found


__all__ = [
    "Context",
    "Judge",
    "Loader",
    "Owned",
    "Randomness",
    "contexts",
    "data",
    "flags",
    "loaders",
    "span",
]
