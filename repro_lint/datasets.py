"""Data loading across files: loader calls bound to their parameters, and what a loader's
dataset does with random numbers in its worker processes.

The per-file facts come from ``loaders.LoaderFacts`` (the ``data`` part of each summary); this
module joins them through ``project.Program``: a call into project code becomes a loader when it
names a DataLoader subclass or a ``functools.partial`` of one defined in another module, and a
dataset class is followed to its methods, the functions they call and the objects (transforms)
it builds, in whatever file they live.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from repro_lint import randomness as rng
from repro_lint.diagnostics import Location
from repro_lint.loaders import (
    LOADERS,
    OTHER_RNG_LIBRARIES,
    SAMPLER_ORDER,
    SEEDS_WORKERS,
    TRANSPARENT_BASES,
)
from repro_lint.program import Program, Unit
from repro_lint.torch_versions import TorchVersion

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


# torchvision 0.8 (the release paired with torch 1.7) moved its random transforms from
# Python's `random` onto torch's generator (pytorch/vision#2520); the classic namespace's
# RandomChoice and RandomOrder still pick with `random`.
TRANSFORMS_ON_TORCH_SINCE = TorchVersion(1, 7)
_PICKED_WITH_RANDOM = frozenset({"RandomChoice", "RandomOrder"})


def transform_families(qualified: str, target: TorchVersion | None) -> set[str]:
    """The global generators a library transform draws from, for the targeted torch (None:
    the default target, which is past 1.7)."""
    if target is not None and target < TRANSFORMS_ON_TORCH_SINCE:
        return {"torch", "random"}
    if qualified.rsplit(".", 1)[-1] in _PICKED_WITH_RANDOM:
        return {"torch", "random"}
    return {"torch"}


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
        return bool(self.samplers() & {"random", "seeded", "distributed"})

    def samplers(self) -> set[str]:
        """The kinds of sampler the loader may get (``loaders.SAMPLER_ORDER``; ``none``:
        no sampler at all)."""
        kinds: set[str] = set()
        present = False
        for name in ("sampler", "batch_sampler"):
            desc = self.args.get(name)
            if desc is None or ("v" in desc and desc["v"] is None):
                continue
            present = True
            kinds.update(desc.get("ss", [desc["s"]] if "s" in desc else ["other"]))
        if not present:
            kinds.add("none")
        ddp = self.args.get("use_ddp")
        if ddp is not None and ddp.get("v", True) not in (False, None):
            # DGL's GraphDataLoader(use_ddp=True) samples through a DistributedSampler.
            if ddp.get("v") is True:
                kinds.discard("none")
            kinds.add("distributed")
        return kinds

    def sampler(self) -> str | None:
        """The most telling sampler kind the loader may get (None: no known sampler)."""
        for kind in SAMPLER_ORDER:
            if kind in self.samplers() and kind not in ("other", "none"):
                return kind
        return None

    @property
    def dataset(self) -> list[Json]:
        found: list[Json] = self.args.get("dataset", {}).get("d", ["unknown"])
        return found


def loaders(program: Program) -> Iterator[Loader]:
    """Every loader built in a linted file of the program, its arguments that are
    parameters of the function building it judged by what that function's callers pass."""
    calls = callers(program)
    for unit in list(program.units):
        if not unit.linted:
            continue
        for record in data(unit).get("loaders", ()):
            loader = _bind(program, unit, record, record["callee"], [], {}, 0)
            if loader is not None:
                yield _through_callers(calls, loader)


def _through_callers(calls: Callers, loader: Loader) -> Loader:
    """A loader built from its function's parameters (``shuffle=shuffle``,
    ``**loader_kwargs``), with what every known caller passes for them."""
    args = dict(loader.args)
    opaque = loader.opaque
    changed = False
    for name, desc in loader.args.items():
        if "p" not in desc:
            continue
        key, index, param = desc["p"]
        passed = calls.arguments(loader.unit, str(key), index, str(param))
        if passed is None:
            continue
        default: Mapping[str, Json] = {}
        if "pd" in desc and desc["pd"][0]:
            default = {"v": desc["pd"][1]}
        merged = merge_descriptions([default if d is None else d for _, d in passed])
        if "d" in desc:
            # Datasets are judged where each caller builds them (``Judge`` follows "param").
            merged["d"] = desc["d"]
        args[name] = merged
        changed = True
    forwarded = loader.record.get("kwp")
    if forwarded is not None:
        key, index, param = forwarded
        mapping = calls.mapping(loader.unit, str(key), index, str(param))
        if mapping is not None:
            items, still_opaque = mapping
            for name, desc in items.items():
                args.setdefault(name, desc)
            opaque = still_opaque
            changed = True
    if not changed:
        return loader
    return dataclasses.replace(loader, args=args, opaque=opaque)


def merge_descriptions(descs: Sequence[Mapping[str, Json]]) -> dict[str, Json]:
    """What an argument is when it may be any of ``descs`` (one per caller)."""
    merged: dict[str, Json] = {}
    values = [d.get("v", _NO_VALUE) for d in descs]
    if descs and all(v is not _NO_VALUE for v in values) and len({repr(v) for v in values}) == 1:
        merged["v"] = values[0]
    kinds = sorted(
        {k for d in descs for k in d.get("ss", [d["s"]] if "s" in d else [])},
        key=lambda kind: SAMPLER_ORDER.index(kind) if kind in SAMPLER_ORDER else 99,
    )
    if kinds:
        merged["s"] = kinds[0]
        if len(kinds) > 1:
            merged["ss"] = kinds
    generators = [d.get("g") for d in descs]
    if descs and all(g is not None for g in generators):
        merged["g"] = "rank" if all(g == "rank" for g in generators) else "set"
    return merged


_NO_VALUE = object()


class Callers:
    """The calls into each project function or class, with the arguments the callers'
    summaries describe (``["call", ref, positional, keyword]`` facts)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._index: dict[tuple[int, str], list[tuple[Unit, list[Json], dict[str, Json]]]] = {}
        self._built = 0

    def _build(self) -> None:
        program = self.program
        while self._built < len(program.units):
            unit = program.units[self._built]
            self._built += 1
            for facts in data(unit).get("facts", {}).values():
                for fact in facts:
                    if fact[0] != "call":
                        continue
                    target = self.target(unit, fact[1])
                    if target is not None:
                        home, callee, offset = target
                        pos = [{}] * offset + list(fact[2])
                        self._index.setdefault((home.index, callee), []).append(
                            (unit, pos, dict(fact[3]))
                        )

    def target(self, unit: Unit, ref: Sequence[Json]) -> tuple[Unit, str, int] | None:
        """The function a call runs (a class: its ``__init__``), and how many parameters
        come before the caller's arguments (``self``)."""
        found = self.program.referent(unit, ref)
        if found is None:
            return None
        kind, home, key = found
        if kind == "class":
            init = self.program.method(home, key, "__init__")
            return None if init is None else (init[0], init[1], 1)
        info = home.summary.get("defs", {}).get(key)
        method = bool(info[2]) if info else False
        return home, key, 1 if method else 0

    def calls(self, unit: Unit, key: str) -> list[tuple[Unit, list[Json], dict[str, Json]]]:
        self._build()
        return self._index.get((unit.index, key), [])

    def arguments(
        self, unit: Unit, key: str, index: Json, name: str
    ) -> list[tuple[Unit, dict[str, Json] | None]] | None:
        """What each known caller passes for a parameter (None where a caller leaves it
        out); None when no caller is known."""
        found: list[tuple[Unit, dict[str, Json] | None]] = []
        for caller, pos, kw in self.calls(unit, key):
            if name in kw:
                found.append((caller, kw[name]))
            elif isinstance(index, int) and 0 <= index < len(pos):
                found.append((caller, pos[index]))
            else:
                found.append((caller, None))
        return found or None

    def mapping(
        self, unit: Unit, key: str, index: Json, name: str
    ) -> tuple[dict[str, Json], bool] | None:
        """What a parameter unpacked as ``**name`` holds by every known caller: its keys
        and whether some caller's dict could not be followed; None when no caller is
        known."""
        calls = self.calls(unit, key)
        if not calls:
            return None
        items: dict[str, list[Json]] = {}
        opaque = False
        named = set(unit.summary.get("defs", {}).get(key, [None, []])[1])
        for _, pos, kw in calls:
            if index == "**":
                passed = {k: v for k, v in kw.items() if k not in named}
                for item, desc in passed.items():
                    items.setdefault(item, []).append(desc)
                continue
            arg = kw.get(name)
            if arg is None and isinstance(index, int) and 0 <= index < len(pos):
                arg = pos[index]
            if arg is None or "m" not in arg:
                opaque = True
                continue
            opaque = opaque or bool(arg.get("mo"))
            for item, desc in arg["m"].items():
                items.setdefault(item, []).append(desc)
        return {k: merge_descriptions(v) for k, v in items.items()}, opaque


def callers(program: Program) -> Callers:
    """The program's call index (built once, shared by the rules)."""
    return program.derived(Callers)


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
    """For every unit, the union of the data flags of the programs it takes part in (but
    ``same_seed``, a torch seed without the rank, only from its own file); and ``seeded``
    where such a program seeds torch, ``rank_seed`` where it seeds through a project helper
    given the rank (``set_seed(args.seed + rank)``)."""
    found: dict[int, set[str]] = {}
    # Each summarised unit's own flags, worked out once (a unit takes part in many
    # programs; a deferred one may be summarised meanwhile).
    own: dict[int, frozenset[str]] = {}

    def own_flags(unit: Unit) -> frozenset[str]:
        mine = own.get(unit.index)
        if mine is None:
            mine = flags(unit) | _rank_helpers(program, unit)
            if not unit.deferred:
                own[unit.index] = mine
        return mine

    for entry in program.entries:
        reached = program.reached_files(entry)
        units = [unit for unit in program.units if unit.filename in reached]
        together: set[str] = set()
        for unit in units:
            together |= own_flags(unit)
        # A seeding call in another file counts only where the program runs it (``seeded``
        # below): the file may define a seeding helper the program never calls. So does
        # distributed code: a library the program imports may hold a distributed loader or
        # launcher it never runs.
        together.discard("same_seed")
        # A function the program runs makes it distributed (a process group, DDP, a
        # ``DistributedSampler``, a distributed trainer strategy).
        if not program.runs_listed(entry, "distributed_in"):
            together.discard("distributed")
        if "torch" in entry.seeded:
            together.add("seeded")
        for unit in units:
            found.setdefault(unit.index, set()).update(together)
    return {
        unit.index: Context(frozenset(found.get(unit.index, set()) | own_flags(unit)))
        for unit in program.units
    }


def _rank_helpers(program: Program, unit: Unit) -> set[str]:
    """``rank_seed`` when the unit calls a project function that seeds torch with an
    argument that involves the rank."""
    for facts in data(unit).get("facts", {}).values():
        for fact in facts:
            if fact[0] != "rankcall":
                continue
            target = program.referent(unit, fact[1])
            if target is not None and target[0] == "function":
                if "torch" in program.profile(target[1], target[2]).seeded:
                    return {"rank_seed"}
    return set()


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
    # The global generators it draws from ("torch", "numpy", "random").
    families: set[str] = field(default_factory=set)
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
        self.families |= other.families
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


def _holds(operator: str, value: Json, expected: Json) -> bool:
    """Whether ``self.<switch> <operator> expected`` holds for a literal switch value."""
    if operator == "truthy":
        return bool(value)
    if operator == "falsy":
        return not value
    if operator == "eq":
        return bool(value == expected)
    return bool(value != expected)


def _imports_numpy(unit: Unit) -> bool:
    return any(
        str(bound).split(".", 1)[0] == "numpy" for _, bound, _ in unit.summary.get("bindings", ())
    )


class Judge:
    """Judges datasets (memoized per class) for one program."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._classes: dict[tuple[int, str, str], Randomness] = {}
        self._callers = callers(program)
        self._active: set[tuple[int, str]] = set()

    def dataset(self, unit: Unit, ref: Sequence[Json], depth: int = 0) -> Randomness:
        """What the dataset a loader describes (``loaders.LoaderFacts._dataset``) does:
        followed to the class it is an instance of, through what functions return, what
        attributes are set to and what the callers of a function pass it."""
        kind = ref[0] if ref else "unknown"
        # ``["self"]``: what a method returns is its object, whichever that is.
        if depth > 8 or kind in ("unknown", "self"):
            return Randomness(known=False)
        if kind == "plain":
            return Randomness()
        if kind == "subset":
            found = self.dataset(unit, ref[1], depth + 1)
            found.subset = True
            return found
        if kind in ("concat", "any"):
            found = Randomness()
            for inner in ref[1]:
                found.merge(self.dataset(unit, inner, depth + 1))
            return found
        marker = (unit.index, repr(ref))
        if marker in self._active:
            # A cycle (``ds = wrap(ds)`` through a function): nothing more to learn.
            return Randomness(known=False)
        self._active.add(marker)
        try:
            return self._followed(unit, ref, depth)
        finally:
            self._active.discard(marker)

    def _followed(self, unit: Unit, ref: Sequence[Json], depth: int) -> Randomness:
        kind = ref[0]
        if kind == "param":
            passed = self._callers.arguments(unit, str(ref[1]), ref[2], str(ref[3]))
            return self._alternatives(
                [(caller, (d or {}).get("d", ["unknown"])) for caller, d in passed or ()], depth
            )
        if kind == "attr":
            return self._alternatives(list(self._attribute(unit, str(ref[1]), str(ref[2]))), depth)
        if kind == "ret":
            return self._returned(unit, ref[1], ref[2], [], depth)
        if kind == "enter":
            return self._entered(unit, ref[1], depth)
        found = Randomness()
        if kind == "class":
            target = self._referent(unit, ref[1])
            if target is None:
                found.known = False
            elif target[0] == "class":
                arguments = ref[3] if len(ref) > 3 else None
                found.merge(self._class(target[1], target[2], arguments))
            else:
                # A function that builds the dataset: what it returns.
                found.merge(self._returned(unit, ref[1], None, [], depth))
        for part in ref[2] if len(ref) > 2 else ():
            found.merge(self._part(unit, part))
        return found

    def _entered(self, unit: Unit, inner: Sequence[Json], depth: int) -> Randomness:
        """``with inner as dataset``: ``inner`` itself when it is an instance of a project
        class whose ``__enter__`` returns ``self`` (a dataset that opens its files there);
        unknown otherwise."""
        target = self._referent(unit, inner[1]) if inner and inner[0] == "class" else None
        if target is None or target[0] != "class":
            return Randomness(known=False)
        enter = self.program.method(target[1], target[2], "__enter__")
        if enter is None:
            return Randomness(known=False)
        home, key = enter
        returned = [f[1] for f in data(home).get("facts", {}).get(key, ()) if f[0] == "ret"]
        if not returned or any(described != ["self"] for described in returned):
            return Randomness(known=False)
        return self.dataset(unit, inner, depth + 1)

    def _alternatives(self, found: Sequence[tuple[Unit, Sequence[Json]]], depth: int) -> Randomness:
        """Any of several datasets (none known: unknown)."""
        if not found:
            return Randomness(known=False)
        result = Randomness()
        for home, described in found:
            result.merge(self.dataset(home, described, depth + 1))
        return result

    def _attribute(self, unit: Unit, klass: str, name: str) -> Iterator[tuple[Unit, Json]]:
        """What ``self.<name>`` is set to in the methods of a class and its project bases."""
        seen: set[tuple[int, str]] = {(unit.index, klass)}
        owners = [(unit, klass)]
        for method_unit, key in self.program.methods(unit, klass):
            owner = (method_unit.index, key.rpartition(".")[0])
            if owner not in seen:
                seen.add(owner)
                owners.append((method_unit, owner[1]))
        for home, owner_key in owners:
            for fact in data(home).get("facts", {}).get(owner_key, ()):
                if fact[0] == "set" and fact[1] == name:
                    yield home, fact[2]

    def _returned(
        self, unit: Unit, ref: Sequence[Json], index: Json, parts: Sequence[Json], depth: int
    ) -> Randomness:
        """What a call returns (its ``index``-th element when unpacked)."""
        target = self._referent(unit, ref)
        if target is None:
            return Randomness(known=False)
        if target[0] == "class":
            return Randomness(known=False) if index is not None else self._class(*target[1:])
        home, key = target[1], target[2]
        returned = [f[1] for f in data(home).get("facts", {}).get(key, ()) if f[0] == "ret"]
        if not returned:
            # Nothing it returns is a dataset we can follow; what it runs can still prove
            # a collision, never that the result is plain.
            found = self._reach(((home, key),), frozenset())
            found.known = False
            return found
        chosen: list[tuple[Unit, Json]] = []
        for described in returned:
            if described and described[0] == "tuple":
                elements = described[1]
                if isinstance(index, int) and 0 <= index < len(elements):
                    chosen.append((home, elements[index]))
                else:
                    chosen.append((home, ["unknown"]))
            elif index is None:
                chosen.append((home, described))
            else:
                chosen.append((home, ["unknown"]))
        return self._alternatives(chosen, depth)

    def _part(self, unit: Unit, part: Sequence[Json]) -> Randomness:
        """A class or function a dataset is built with (a transform, an augmenter)."""
        if part[0] == "unknown":
            return Randomness(known=False)
        if part[0] == "param":
            return self._passed_parts(unit, part)
        qualified = str(part[1])
        if part[0] == "x":
            found = Randomness()
            if qualified.startswith(OTHER_RNG_LIBRARIES) or qualified.split(".", 1)[0] == "imgaug":
                found.libraries.append(qualified.split(".", 1)[0])
                found.draws = True
            elif rng.torch_use(qualified) == rng.TRANSFORM:
                found.draws = True
                found.families |= transform_families(qualified, self.program.options.target_torch)
            return found
        target = self.program.referent(unit, ["q", qualified])
        if target is None:
            return Randomness()
        if target[0] == "class":
            starts = self.program.methods(target[1], target[2])
            return self._reach(starts, frozenset())
        return self._reach(((target[1], target[2]),), frozenset())

    def _referent(self, unit: Unit, ref: Sequence[Json]) -> tuple[str, Unit, str] | None:
        """``program.referent``, and a name from ``from module import *``."""
        if ref and ref[0] == "star":
            for module in ref[1]:
                found = self.program.referent(unit, ["q", f"{module}.{ref[2]}"])
                if found is not None:
                    return found
            return None
        return self.program.referent(unit, ref)

    def _passed_parts(self, unit: Unit, part: Sequence[Json]) -> Randomness:
        """A transform that is a parameter: what every known caller passes for it."""
        passed = self._callers.arguments(unit, str(part[1]), part[2], str(part[3]))
        if not passed:
            return Randomness(known=False)
        found = Randomness()
        for caller, described in passed:
            if described is None or "t" not in described:
                if described is None or described.get("v", "?") is not None:
                    found.known = False
                continue
            for inner in described["t"]:
                marker = (caller.index, repr(inner))
                if marker in self._active:
                    # A transform passed on through a cycle of calls.
                    found.known = False
                    continue
                self._active.add(marker)
                try:
                    found.merge(self._part(caller, inner))
                finally:
                    self._active.discard(marker)
        return found

    def _class(
        self, unit: Unit, klass: str, arguments: Mapping[str, Json] | None = None
    ) -> Randomness:
        memo = (unit.index, klass, repr(arguments))
        done = self._classes.get(memo)
        if done is None:
            done = self._classes[memo] = self._judge_class(unit, klass, arguments)
        result = Randomness()
        result.merge(done)
        return result

    def _switched_off(
        self, unit: Unit, klass: str, arguments: Mapping[str, Json] | None
    ) -> dict[tuple[int, str], list[tuple[int, int]]]:
        """Rows of the class's methods that this instance never runs: blocks under
        ``if self.<switch>:`` where the switch is a constructor argument this instance
        gets (or defaults) to a value that fails the test."""
        dead: dict[tuple[int, str], list[tuple[int, int]]] = {}
        if arguments is None:
            return dead
        init = self.program.method(unit, klass, "__init__")
        if init is None:
            return dead
        init_unit, init_key = init
        defaults: dict[str, Json] = {}
        for fact in data(init_unit).get("facts", {}).get(init_key, ()):
            if fact[0] == "defaults":
                defaults.update(fact[1])
        for method_unit, key in self.program.methods(unit, klass):
            for fact in data(method_unit).get("facts", {}).get(key, ()):
                if fact[0] != "guard":
                    continue
                _, attribute, operator, expected, start, end = fact
                value = self._switch(unit, klass, str(attribute), init_key, arguments, defaults)
                if value is None:
                    continue
                if not _holds(operator, value[0], expected):
                    dead.setdefault((method_unit.index, key), []).append((int(start), int(end)))
        return dead

    def _switch(
        self,
        unit: Unit,
        klass: str,
        attribute: str,
        init_key: str,
        arguments: Mapping[str, Json],
        defaults: Mapping[str, Json],
    ) -> tuple[Json] | None:
        """The literal value ``self.<attribute>`` has for this instance: set once, from a
        constructor parameter; None when not known."""
        sets = list(self._attribute(unit, klass, attribute))
        if len(sets) != 1:
            return None
        described = sets[0][1]
        if not (described and described[0] == "param" and described[1] == init_key):
            return None
        _, _, index, name = described
        passed = arguments.get("kw", {}).get(name)
        if passed is None and isinstance(index, int):
            positional = arguments.get("pos", [])
            if 0 <= index - 1 < len(positional):
                passed = positional[index - 1]
            elif arguments.get("*"):
                return None
        if passed is None:
            return (defaults[name],) if name in defaults else None
        return (passed[1],) if passed[0] else None

    def _judge_class(
        self, unit: Unit, klass: str, arguments: Mapping[str, Json] | None = None
    ) -> Randomness:
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
        dead = self._switched_off(unit, klass, arguments)
        result = self._reach(starts, own, dataset=(unit.index, klass), dead=dead)
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
        dead: Mapping[tuple[int, str], list[tuple[int, int]]] | None = None,
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
            skipped = (dead or {}).get(marker, ())
            for event in unit.functions().get(key, ()):
                row = event[-1]
                if any(start <= row <= end for start, end in skipped):
                    # Under a switch this instance turns off.
                    continue
                if event[0] == "u":
                    result.draws = True
                    result.families.add(str(event[1]))
                    if event[1] == "numpy":
                        result.numpy_global = True
                todo.extend(program.event_callees(unit, event))
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
    "Callers",
    "Context",
    "Judge",
    "Loader",
    "Owned",
    "Randomness",
    "callers",
    "contexts",
    "data",
    "flags",
    "loaders",
    "merge_descriptions",
    "span",
]
