"""The program model: a run's module summaries joined into entry points, profiles and reach.

``Program`` joins the summaries of a run: it resolves calls across modules (loading imported
project modules that were not passed, for their summaries only), computes for every function a
``Profile`` of what its path seeds and consumes, and hands the entry points to the project
rules (``ProjectRule``), whose findings it turns into diagnostics with fixes as text edits.
Per-file rules whose verdict depends on the whole program (``SettledRule``) revise their
findings here too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from repro_lint import randomness as rng
from repro_lint.config import find_project_root
from repro_lint.diagnostics import Diagnostic, Edit, Fix, FixSafety, Location
from repro_lint.files import real_path
from repro_lint.fixes import INDENT, reindent, touches
from repro_lint.rule import Rule
from repro_lint.summary import DEFERRED_KEY, MAIN, MODULE, SUMMARY_VERSION
from repro_lint.suppressions import Directive, Suppressions
from repro_lint.torch_versions import TorchVersion

_SEED_CALL = {"torch": "torch.manual_seed", "numpy": "numpy.random.seed", "random": "random.seed"}

Json = Any

# (unit index, statement index, row, what): one step of a path through the program.
Site = tuple[int, int, int, str]
Chain = tuple[Site, ...]


@dataclass(frozen=True)
class Spawn:
    """A worker started in a fresh interpreter: ``chain`` leads to the call that starts it."""

    chain: Chain
    unit: int
    key: str
    # torch.multiprocessing.spawn passes the process index as the first argument.
    indexed: bool = False


@dataclass
class Profile:
    """What running a function (and everything it calls) does to the global generators.

    ``first`` says, per family, whether the path first seeds or first consumes it; ``seed`` and
    ``use`` hold the first such site. ``later_*`` hold seeds and uses whose time is unknown
    (methods of constructed objects, loaders that draw when iterated): they count for whether
    a family is seeded or used at all, never for order.
    """

    first: dict[str, str] = field(default_factory=dict)
    seed: dict[str, Chain] = field(default_factory=dict)
    use: dict[str, Chain] = field(default_factory=dict)
    first_seed: Chain | None = None
    later_seed: dict[str, Chain] = field(default_factory=dict)
    later_use: dict[str, Chain] = field(default_factory=dict)
    conv: Chain | None = None
    settings: dict[str, Chain] = field(default_factory=dict)
    # Settings switched off again (``use_deterministic_algorithms(False)``): the first site.
    switched_off: dict[str, Chain] = field(default_factory=dict)
    spawns: list[Spawn] = field(default_factory=list)

    def absorb(self, other: Profile, prefix: Chain, *, later: bool = False) -> None:
        if later:
            for family, chain in (*other.seed.items(), *other.later_seed.items()):
                self.later_seed.setdefault(family, prefix + chain)
            for family, chain in (*other.use.items(), *other.later_use.items()):
                self.later_use.setdefault(family, prefix + chain)
        else:
            for family, kind in other.first.items():
                self.first.setdefault(family, kind)
            for family, chain in other.seed.items():
                self.seed.setdefault(family, prefix + chain)
            for family, chain in other.use.items():
                self.use.setdefault(family, prefix + chain)
            if self.first_seed is None and other.first_seed is not None:
                self.first_seed = prefix + other.first_seed
            for family, chain in other.later_seed.items():
                self.later_seed.setdefault(family, prefix + chain)
            for family, chain in other.later_use.items():
                self.later_use.setdefault(family, prefix + chain)
        if self.conv is None and other.conv is not None:
            self.conv = prefix + other.conv
        for kind, chain in other.settings.items():
            self.settings.setdefault(kind, prefix + chain)
        for kind, chain in other.switched_off.items():
            self.switched_off.setdefault(kind, prefix + chain)
        known = {(s.unit, s.key) for s in self.spawns}
        for spawn in other.spawns:
            if (spawn.unit, spawn.key) not in known:
                self.spawns.append(
                    Spawn(prefix + spawn.chain, spawn.unit, spawn.key, spawn.indexed)
                )

    @property
    def seeded(self) -> set[str]:
        return set(self.seed) | set(self.later_seed)

    def used(self) -> dict[str, Chain]:
        """Every family consumed, with one place it is consumed (ordered uses first)."""
        found = dict(self.use)
        for family, chain in self.later_use.items():
            found.setdefault(family, chain)
        return found

    def unseeded(self) -> dict[str, Chain]:
        seeded = self.seeded
        return {f: c for f, c in self.used().items() if f not in seeded}


_EMPTY = Profile()
# Calls followed deeper than this are cut short (keeps Python's recursion limit far away).
_MAX_DEPTH = 150


@dataclass
class Unit:
    """One file of the run: linted (findings are reported on it) or loaded for its summary."""

    filename: str
    path: Path | None
    summary: Mapping[str, Json]
    linted: bool
    # Project rule codes enabled for this file (selection and per-file-ignores).
    codes: frozenset[str] = frozenset()
    index: int = 0
    # Deferred, and its text was read: nothing in it mentions seeding.
    seedless: bool = False

    @property
    def module(self) -> str:
        return str(self.summary.get("module", ""))

    @property
    def deferred(self) -> bool:
        return bool(self.summary.get(DEFERRED_KEY))

    def functions(self) -> Mapping[str, list[list[Json]]]:
        funcs: Mapping[str, list[list[Json]]] = self.summary.get("funcs", {})
        return funcs

    def defines(self, key: str) -> bool:
        return key in self.summary.get("defs", {}) or key in self.functions()

    def classes(self) -> Mapping[str, Mapping[str, Json]]:
        classes: Mapping[str, Mapping[str, Json]] = self.summary.get("classes", {})
        return classes

    def statement(self, index: int) -> list[Json]:
        statement: list[Json] = self.summary["stmts"][index]
        return statement


@dataclass(frozen=True)
class _Function:
    unit: Unit
    key: str


@dataclass(frozen=True)
class _Class:
    unit: Unit
    key: str


@dataclass(frozen=True)
class _Module:
    unit: Unit


@dataclass(frozen=True)
class _External:
    qualified: str


_Target = _Function | _Class | _Module | _External


@dataclass
class EntryPoint:
    """A program start: a module with a ``__main__`` block, a script, or a configured one."""

    unit: Unit
    kind: str  # "main" or "script"
    statement: int
    profile: Profile
    # Workers started in fresh interpreters, with what each one's path does.
    workers: list[tuple[Spawn, Profile]] = field(default_factory=list)

    @property
    def seeded(self) -> set[str]:
        return self.profile.seeded

    def disables_deterministic_algorithms(self) -> Chain | None:
        """Where the program switches ``use_deterministic_algorithms`` off (with ``False``, or
        the debug mode's "default"), if it does: the first such site."""
        return self.profile.switched_off.get("algorithms")

    def enables_deterministic_algorithms(self) -> bool:
        """Whether the program turns ``torch.use_deterministic_algorithms(True)`` on (in the
        main process or in a spawned worker; a non-literal flag counts as on)."""
        return "algorithms" in self.profile.settings or any(
            "algorithms" in worker.settings for _, worker in self.workers
        )


@dataclass(frozen=True)
class ProjectOptions:
    """The settings the project phase needs."""

    seed: int = 0
    seed_functions: frozenset[str] = frozenset()
    # Files (relative to ``root``) that are entry points whatever their shape.
    entry_points: Callable[[Path], bool] | None = None
    # Every rule code and name, to tell our noqa comments from other tools'.
    known_codes: frozenset[str] = frozenset()
    # The torch release the project targets (None: the default target).
    target_torch: TorchVersion | None = None
    # RPL301: "always", or "when-proven" (only worker random streams that provably collide).
    dataloader_worker_rng: str = "always"


@dataclass(frozen=True)
class ProjectReport:
    """A project rule's finding before it becomes a diagnostic."""

    unit: Unit
    statement: int
    message: str
    edits: tuple[Edit, ...] = ()
    fix_title: str | None = None
    fix_safety: FixSafety | None = None
    # Where exactly (a call inside the statement); the statement's first line otherwise.
    span: tuple[Location, Location] | None = None


# Loads the summary of a file on disk (None when it cannot be read or parsed). With the flag
# set (wanted only for its import-time code), a file whose text never mentions seeding may
# be answered with DEFERRED instead, unparsed.
Loader = Callable[[Path, bool], tuple[str, Mapping[str, Json]] | None]


class ProjectRule(Rule):
    """A rule judged on whole programs (entry points and what they reach), not single files."""

    PROJECT: ClassVar[bool] = True

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        raise NotImplementedError


class SettledRule(Rule):
    """A per-file rule whose verdict depends on the whole program: its findings are revised
    by ``settle`` once the project pass knows which entry points reach the file."""

    @classmethod
    def settle(
        cls, program: Program, filename: str, diagnostics: list[Diagnostic]
    ) -> list[Diagnostic]:
        """Revise this file's findings of this rule. Runs on every run with the project
        pass, also on cached results."""
        return diagnostics


class Program:
    """The summaries of one run joined: modules, resolved calls, profiles and entry points."""

    def __init__(
        self, units: Sequence[Unit], options: ProjectOptions, load: Loader | None = None
    ) -> None:
        self.options = options
        self._load = load
        self.units: list[Unit] = []
        self._by_path: dict[Path, Unit] = {}
        self._by_name: dict[str, list[Unit]] = {}
        # Symlinks resolved once per path: module lookups repeat the same few thousand paths.
        self._real: dict[Path, Path] = {}
        for unit in units:
            self._add(unit)
        self._paths: dict[tuple[str, tuple[str, ...]], Path | None] = {}
        self._project_roots: dict[Path, Path] = {}
        self._modules: dict[tuple[str, int], Unit | None] = {}
        self._tops: dict[tuple[Path, str], bool] = {}
        self._roots: dict[int, tuple[list[Path], tuple[str, ...]]] = {}
        self._profiles: dict[tuple[int, str], Profile] = {}
        self._constructed: dict[tuple[int, str], Profile] = {}
        self._active: set[tuple[str, int, str]] = set()
        self._entries: list[EntryPoint] | None = None
        self._reached: dict[int, frozenset[str]] = {}
        # The directories module lookups listed (what a later run must find unchanged to
        # reuse this analysis).
        self.probed: set[str] = set()

    def _add(self, unit: Unit) -> Unit:
        unit.index = len(self.units)
        self.units.append(unit)
        if unit.path is not None:
            self._by_path[self._real_path(unit.path)] = unit
        if not unit.deferred:
            self._by_name.setdefault(unit.module, []).append(unit)
        return unit

    # -- modules ------------------------------------------------------------------------------

    def _real_path(self, path: Path) -> Path:
        found = self._real.get(path)
        if found is None:
            found = self._real[path] = real_path(path)
        return found

    def _search_roots(self, unit: Unit) -> list[Path]:
        """Where ``import x`` from this file looks: the directory its top-level package lives
        in (what ``python file.py`` puts on sys.path), the project root and its src/."""
        found = self._roots.get(unit.index)
        if found is not None:
            return found[0]
        roots: list[Path] = []
        if unit.path is not None:
            directory = self._real_path(unit.path).parent
            base = directory
            ups = unit.module.count(".") + (1 if unit.summary.get("package") else 0)
            for _ in range(ups):
                base = base.parent
            project = self._project_roots.get(directory)
            if project is None:
                project = self._project_roots[directory] = find_project_root(directory)
            for root in (base, project, project / "src"):
                if root not in roots:
                    roots.append(root)
        # The roots as strings key the shared module lookups (cheaper to compare than paths).
        self._roots[unit.index] = (roots, tuple(map(str, roots)))
        return roots

    def module(self, name: str, importer: Unit, *, imported: bool = False) -> Unit | None:
        """The project module ``name`` as ``importer`` would import it, if it is one.

        ``imported``: wanted only for the top-level code that importing it runs, which
        matters only where it seeds; a module not summarised yet whose text never mentions
        seeding is then not parsed (its calls are summarised if an entry point makes them).
        """
        if name == importer.module:
            return importer
        memo = (name, importer.index)
        if memo in self._modules:
            return self._modules[memo]
        roots = self._search_roots(importer)
        if not roots:
            named = self._by_name.get(name)
            return named[0] if named else None
        # Files under the same roots import the same modules: share the lookups.
        key = (name, self._roots[importer.index][1])
        if key not in self._paths:
            self._paths[key] = _find_module(name, roots, self._tops, self.probed)
        path = self._paths[key]
        if path is None:
            self._modules[memo] = None
            return None
        found = self._unit_at(path, imported)
        if found is not None and not found.deferred:
            # Settled: a summarised module stays what it is for the rest of the run.
            self._modules[memo] = found
        return found

    def _unit_at(self, path: Path, imported: bool = False) -> Unit | None:
        unit = self._by_path.get(self._real_path(path))
        if unit is not None and (not unit.deferred or (imported and unit.seedless)):
            return unit
        if self._load is None:
            return unit
        loaded = self._load(path, imported)
        if loaded is None:
            return unit
        filename, summary = loaded
        if summary.get(DEFERRED_KEY):
            # Read, not parsed: it never mentions seeding.
            if unit is None:
                unit = self._add(Unit(filename, path, summary, linted=False))
            unit.seedless = True
            return unit
        if summary.get("v") != SUMMARY_VERSION:
            return unit
        if unit is not None:
            # A file summarised only now that an entry point reaches it.
            unit.summary = summary
            self._by_name.setdefault(unit.module, []).append(unit)
            return unit
        return self._add(Unit(filename, path, summary, linted=False))

    def resolve(self, qualified: str, importer: Unit, depth: int = 0) -> _Target | None:
        """What a qualified name refers to: a project function, class or module, a known
        external seeding helper (reached through a re-export), or None."""
        parts = qualified.split(".")
        for cut in range(len(parts), 0, -1):
            unit = self.module(".".join(parts[:cut]), importer)
            if unit is None:
                continue
            rest = parts[cut:]
            if not rest:
                return _Module(unit)
            key = ".".join(rest)
            if key in unit.classes():
                return _Class(unit, key)
            if unit.defines(key):
                return _Function(unit, key)
            if len(rest) > 1 and ".".join(rest[:-1]) in unit.classes():
                return self._method(unit, ".".join(rest[:-1]), rest[-1])
            exported = unit.summary.get("exports", {}).get(rest[0])
            if exported is not None and depth < 8 and exported != qualified:
                return self.resolve(".".join([exported, *rest[1:]]), unit, depth + 1)
            return None
        if self._seeds_all(qualified) or qualified in rng.SEEDS:
            return _External(qualified)
        return None

    def _seeds_all(self, qualified: str) -> bool:
        return (
            qualified in rng.HELPERS
            or qualified in rng.SEEDING_CONSTRUCTORS
            or qualified in self.options.seed_functions
        )

    def _method(
        self, unit: Unit, klass: str, name: str, *, skip_own: bool = False, depth: int = 0
    ) -> _Function | None:
        """Find ``name`` on a project class or its project base classes."""
        info = unit.classes().get(klass)
        if info is None or depth > 16:
            return None
        if not skip_own and name in info.get("methods", ()):
            return _Function(unit, f"{klass}.{name}")
        for base in info.get("bases", ()):
            target = self.resolve(base, unit)
            if isinstance(target, _Class):
                found = self._method(target.unit, target.key, name, depth=depth + 1)
                if found is not None:
                    return found
        return None

    def _resolve_ref(self, unit: Unit, ref: list[Json]) -> _Target | None:
        kind = ref[0]
        if kind == "q":
            return self.resolve(str(ref[1]), unit)
        if kind == "l":
            key = str(ref[1])
            if key in unit.classes():
                return _Class(unit, key)
            return _Function(unit, key) if unit.defines(key) else None
        if kind == "m":
            return self._method(unit, str(ref[1]), str(ref[2]), skip_own=bool(ref[3]))
        return None

    # -- classes and functions, for rules that follow them (the data-loading rules) --------------

    def referent(self, unit: Unit, ref: Sequence[Json]) -> tuple[str, Unit, str] | None:
        """What a summary reference (``["q", qualified]``, ``["l", key]``, ``["m", class,
        name, skip]``) names in the project: ``("class" | "function", its unit, its key)``;
        None for library names and what cannot be resolved."""
        target = self._resolve_ref(unit, list(ref))
        if isinstance(target, _Class):
            return "class", target.unit, target.key
        if isinstance(target, _Function):
            return "function", target.unit, target.key
        return None

    def methods(self, unit: Unit, klass: str) -> list[tuple[Unit, str]]:
        """The methods of a project class and of its project base classes (own ones first)."""
        return list(self._methods(unit, klass))

    def method(self, unit: Unit, klass: str, name: str) -> tuple[Unit, str] | None:
        """Method ``name`` of a project class, found on it or on its project base classes."""
        found = self._method(unit, klass, name)
        return None if found is None else (found.unit, found.key)

    def external_bases(self, unit: Unit, klass: str) -> list[str]:
        """The qualified names of the library classes a project class extends (through its
        project base classes)."""
        return [base for _, _, base in self._external_bases(unit, klass)]

    def callees(self, unit: Unit, key: str) -> Iterator[tuple[Unit, str]]:
        """The project functions a function calls (for a constructed class, its methods)."""
        for event in unit.functions().get(key, ()):
            yield from self._callees(unit, event)

    def import_edits(
        self, unit: Unit, modules: Sequence[str], before: Location
    ) -> tuple[Edit, ...] | None:
        """Edits adding ``import module`` lines where ``insertion`` puts them, for code at
        ``before``; None when a name is taken or the imports would land after ``before``."""
        if not modules:
            return ()
        if any(module in unit.summary.get("taken", ()) for module in modules):
            return None
        newline = str(unit.summary.get("newline", "\n"))
        row, column, lead = unit.summary["anchor"]
        where = Location(int(row), int(column))
        if where > before:
            return None
        text = str(lead) + "".join(f"import {module}{newline}" for module in modules)
        return (Edit(text, where, where),)

    # -- profiles -----------------------------------------------------------------------------

    def profile(self, unit: Unit, key: str) -> Profile:
        """What calling function ``key`` of ``unit`` does (memoized; recursion cut short)."""
        memo = (unit.index, key)
        done = self._profiles.get(memo)
        if done is not None:
            return done
        marker = ("f", unit.index, key)
        if marker in self._active or len(self._active) > _MAX_DEPTH:
            return _EMPTY
        self._active.add(marker)
        result = Profile()
        for event in unit.functions().get(key, ()):
            self._apply(result, unit, event)
        self._active.discard(marker)
        self._profiles[memo] = result
        return result

    def _apply(self, profile: Profile, unit: Unit, event: list[Json]) -> None:
        tag = event[0]
        statement, row = int(event[-2]), int(event[-1])
        if tag == "s":
            family = str(event[1])
            site: Chain = ((unit.index, statement, row, "seed"),)
            profile.first.setdefault(family, "seed")
            profile.seed.setdefault(family, site)
            if profile.first_seed is None:
                profile.first_seed = site
        elif tag == "u":
            family, what = str(event[1]), str(event[2])
            site = ((unit.index, statement, row, what),)
            if what in rng.DEFERRED:
                profile.later_use.setdefault(family, site)
            else:
                profile.first.setdefault(family, "use")
                profile.use.setdefault(family, site)
        elif tag == "d":
            profile.settings.setdefault(str(event[1]), ((unit.index, statement, row, ""),))
        elif tag == "o":
            profile.switched_off.setdefault(str(event[1]), ((unit.index, statement, row, ""),))
        elif tag == "v":
            if profile.conv is None:
                profile.conv = ((unit.index, statement, row, "convolution"),)
        elif tag == "c":
            target = self._resolve_ref(unit, event[1])
            if target is not None:
                self._enter(profile, target, ((unit.index, statement, row, ""),))
        elif tag == "i":
            for name in event[1]:
                module = self.module(str(name), unit, imported=True)
                if module is not None and module is not unit:
                    prefix: Chain = ((unit.index, statement, row, ""),)
                    profile.absorb(self.profile(module, MODULE), prefix)
        elif tag == "p":
            target = self._resolve_ref(unit, event[1])
            prefix = ((unit.index, statement, row, ""),)
            kind = event[2]
            fresh = kind in ("spawn", "context") or bool(unit.summary.get("fresh_start"))
            if isinstance(target, _Function) and fresh:
                known = {(s.unit, s.key) for s in profile.spawns}
                if (target.unit.index, target.key) not in known:
                    spawn = Spawn(prefix, target.unit.index, target.key, kind == "spawn")
                    profile.spawns.append(spawn)
            elif target is not None:
                # A forked process starts from the parent's (seeded) state: an ordinary call.
                self._enter(profile, target, prefix)

    def _enter(self, profile: Profile, target: _Target, prefix: Chain) -> None:
        if isinstance(target, _Function):
            profile.absorb(self.profile(target.unit, target.key), prefix)
        elif isinstance(target, _Class):
            profile.absorb(self.construct(target.unit, target.key), prefix)
        elif isinstance(target, _Module):
            profile.absorb(self.profile(target.unit, MODULE), prefix)
        else:
            qualified = target.qualified
            families = rng.FAMILIES if self._seeds_all(qualified) else (rng.SEEDS[qualified],)
            last = prefix[-1]
            here: Chain = (*prefix[:-1], (last[0], last[1], last[2], "seed"))
            for family in families:
                profile.first.setdefault(family, "seed")
                profile.seed.setdefault(family, here)
            if profile.first_seed is None:
                profile.first_seed = here

    def construct(self, unit: Unit, klass: str) -> Profile:
        """Constructing a project class: ``__init__`` runs now (in order); its other methods
        run at some later time (their seeds and uses count, but not for order)."""
        memo = (unit.index, klass)
        done = self._constructed.get(memo)
        if done is not None:
            return done
        marker = ("c", unit.index, klass)
        if marker in self._active or len(self._active) > _MAX_DEPTH:
            return _EMPTY
        self._active.add(marker)
        result = Profile()
        init = self._method(unit, klass, "__init__")
        if init is not None:
            result.absorb(self.profile(init.unit, init.key), ())
        for base_unit, info, base in self._external_bases(unit, klass):
            row = int(info.get("row", 1))
            site: Chain = ((base_unit.index, -1, row, rng.MODEL),)
            if rng.torch_use(base) == rng.MODEL:
                result.first.setdefault("torch", "use")
                result.use.setdefault("torch", site)
            if rng.builds_conv(base) and result.conv is None:
                result.conv = site
            if base in rng.SEEDING_CONSTRUCTORS:
                for family in rng.FAMILIES:
                    result.seed.setdefault(family, site)
        for method_unit, key in self._methods(unit, klass):
            if key.rsplit(".", 1)[-1] != "__init__":
                result.absorb(self.profile(method_unit, key), (), later=True)
        self._active.discard(marker)
        self._constructed[memo] = result
        return result

    def _external_bases(
        self, unit: Unit, klass: str, depth: int = 0
    ) -> Iterator[tuple[Unit, Mapping[str, Json], str]]:
        info = unit.classes().get(klass)
        if info is None or depth > 16:
            return
        for base in info.get("bases", ()):
            target = self.resolve(base, unit)
            if isinstance(target, _Class):
                yield from self._external_bases(target.unit, target.key, depth + 1)
            elif target is None:
                yield unit, info, str(base)

    def _methods(self, unit: Unit, klass: str, depth: int = 0) -> Iterator[tuple[Unit, str]]:
        info = unit.classes().get(klass)
        if info is None or depth > 16:
            return
        for name in info.get("methods", ()):
            yield unit, f"{klass}.{name}"
        for base in info.get("bases", ()):
            target = self.resolve(base, unit)
            if isinstance(target, _Class):
                yield from self._methods(target.unit, target.key, depth + 1)

    # -- entry points -------------------------------------------------------------------------

    @property
    def entries(self) -> list[EntryPoint]:
        """Entry points among the linted files (library modules have none)."""
        if self._entries is None:
            self._entries = []
            for unit in list(self.units):
                if unit.linted:
                    entry = self._entry(unit)
                    if entry is not None:
                        self._entries.append(entry)
        return self._entries

    def _entry(self, unit: Unit) -> EntryPoint | None:
        summary = unit.summary
        if summary.get("v") != SUMMARY_VERSION:
            return None
        main = summary.get("main")
        forced = (
            unit.path is not None
            and self.options.entry_points is not None
            and self.options.entry_points(unit.path)
        )
        profile = Profile()
        profile.absorb(self.profile(unit, MODULE), ())
        if main is not None:
            kind, statement = "main", int(main["stmt"])
            profile.absorb(self.profile(unit, MAIN), ())
        else:
            start = self._script_statement(unit, forced)
            if start is None:
                return None
            kind, statement = "script", start
        entry = EntryPoint(unit, kind, statement, profile)
        for spawn in profile.spawns:
            worker_unit = self.units[spawn.unit]
            worker = Profile()
            # A fresh interpreter re-imports the main module (not its __main__ block) and the
            # module defining the worker before calling it.
            worker.absorb(self.profile(unit, MODULE), ())
            if worker_unit is not unit:
                worker.absorb(self.profile(worker_unit, MODULE), ())
            worker.absorb(self.profile(worker_unit, spawn.key), ())
            entry.workers.append((spawn, worker))
        return entry

    def _script_statement(self, unit: Unit, forced: bool) -> int | None:
        """Where a top-level script starts its work (None when the module is a library)."""
        summary = unit.summary
        work = summary.get("work")
        if work is None:
            for ref, statement in summary.get("bare", ()):
                target = self._resolve_ref(unit, ref)
                if isinstance(target, _Function | _Class):
                    work = statement
                    break
        if work is None and not forced:
            return None
        first = summary.get("first")
        if first is not None and (
            work is None or unit.statement(first)[0] <= unit.statement(work)[0]
        ):
            return int(first)
        return None if work is None else int(work)

    # -- from findings to diagnostics ---------------------------------------------------------

    def reached_files(self, entry: EntryPoint) -> frozenset[str]:
        """The files whose code the entry point's program may run (its own included): the
        functions its path calls, constructed classes' methods, imported modules' top-level
        code and spawned workers. For rules that judge a call by the programs reaching it."""
        done = self._reached.get(entry.unit.index)
        if done is not None:
            return done
        seen: set[tuple[int, str]] = set()
        todo = [(entry.unit, MODULE), (entry.unit, MAIN)]
        while todo:
            unit, key = todo.pop()
            if (unit.index, key) in seen:
                continue
            seen.add((unit.index, key))
            for event in unit.functions().get(key, ()):
                # Imported modules are summarised in full here: a module read but not parsed
                # (it never seeds) still runs its own imports, and the files reached must
                # not depend on which files the text prefilter let through.
                todo.extend(self._callees(unit, event, whole=True))
        found = frozenset(self.units[index].filename for index, _ in seen)
        self._reached[entry.unit.index] = found
        return found

    def _callees(
        self, unit: Unit, event: list[Json], *, whole: bool = False
    ) -> Iterator[tuple[Unit, str]]:
        targets: list[_Target | None] = []
        if event[0] in ("c", "p"):
            targets.append(self._resolve_ref(unit, event[1]))
        elif event[0] == "i":
            for name in event[1]:
                module = self.module(str(name), unit, imported=not whole)
                if module is not None:
                    targets.append(_Module(module))
        for target in targets:
            if isinstance(target, _Function):
                yield target.unit, target.key
            elif isinstance(target, _Module):
                yield target.unit, MODULE
            elif isinstance(target, _Class):
                yield from self._methods(target.unit, target.key)

    def anchor(self, entry: EntryPoint, chain: Chain) -> Site:
        """The deepest step of ``chain`` in the entry point's own file: where its user looks."""
        for site in reversed(chain):
            if site[0] == entry.unit.index and site[1] >= 0:
                return site
        return chain[0]

    def where(self, site: Site) -> str:
        """``file.py:row`` of a site, for messages."""
        return f"{self.units[site[0]].filename}:{site[2]}"

    def diagnostics(self, rules: Sequence[type[ProjectRule]]) -> dict[str, list[Diagnostic]]:
        """Run the project rules; findings on linted files, suppressions applied."""
        out: dict[str, list[Diagnostic]] = {}
        suppressions: dict[int, Suppressions] = {}
        for rule in rules:
            seen: set[tuple[str, int, int, str]] = set()
            for report in rule.check(self):
                unit = report.unit
                if not unit.linted or rule.CODE not in unit.codes or report.statement < 0:
                    continue
                if unit.index not in suppressions:
                    suppressions[unit.index] = _suppressions(unit)
                found = suppressions[unit.index]
                start_row, _, indent, end_column = unit.statement(report.statement)
                start = Location(start_row, len(indent) + 1)
                end = Location(start_row, max(end_column, len(indent) + 1))
                if report.span is not None:
                    start, end = report.span
                rows = sorted({start_row, start.row})
                if found.suppressing(rule.CODE, rule.name, rows) is not None:
                    continue
                key = (unit.filename, start.row, start.column, report.message)
                if key in seen:
                    continue
                seen.add(key)
                fix = None
                safety = report.fix_safety
                if safety is not None and (report.edits or safety is FixSafety.DISPLAY_ONLY):
                    protected = found.protected_rows(self.options.known_codes)
                    if not touches(report.edits, protected):
                        fix = Fix(safety, report.fix_title or rule.FIX_TITLE or "", report.edits)
                out.setdefault(unit.filename, []).append(
                    Diagnostic(
                        code=rule.CODE,
                        name=rule.name,
                        message=report.message,
                        filename=unit.filename,
                        location=start,
                        end_location=end,
                        fix=fix,
                        noqa_row=start.row,
                        url=rule.url(),
                    )
                )
        return out

    def linted_unit(self, filename: str) -> Unit | None:
        """The unit of a file linted in this run."""
        return next((u for u in self.units if u.linted and u.filename == filename), None)

    def protected_rows(self, unit: Unit) -> frozenset[int]:
        """Rows of ``unit`` a fix must not change (they carry a repro-lint noqa)."""
        return _suppressions(unit).protected_rows(self.options.known_codes)

    # -- fix text -----------------------------------------------------------------------------

    def spell(self, unit: Unit, qualified: str, before_row: int) -> tuple[str, str | None] | None:
        """How ``qualified`` is written at ``before_row`` of ``unit`` through its imports, and
        the module to import when nothing suitable is (None when that name is taken)."""
        best: str | None = None
        for local, bound, row in unit.summary.get("bindings", ()):
            if row >= before_row:
                continue
            if qualified == bound or qualified.startswith(bound + "."):
                text = local + qualified[len(bound) :]
                if best is None or (len(text), text) < (len(best), best):
                    best = text
        if best is not None:
            return best, None
        top = qualified.split(".", 1)[0]
        if top in unit.summary.get("taken", ()):
            return None
        return qualified, top

    def seed_lines(
        self, unit: Unit, families: Iterable[str], before_row: int, offset: str | None = None
    ) -> tuple[list[str], list[str]] | None:
        """Seed calls for ``families`` (configured seed, plus ``offset``) and the imports they
        need; numpy's carries ``# noqa: NPY002`` so ruff's legacy-numpy rule stays quiet."""
        value = str(self.options.seed) if offset is None else f"{self.options.seed} + {offset}"
        lines: list[str] = []
        imports: list[str] = []
        for family in rng.FAMILIES:
            if family not in families:
                continue
            spelled = self.spell(unit, _SEED_CALL[family], before_row)
            if spelled is None:
                return None
            text, module = spelled
            lines.append(f"{text}({value})" + ("  # noqa: NPY002" if family == "numpy" else ""))
            if module is not None and module not in imports:
                imports.append(module)
        return lines, imports

    def insertion(
        self,
        unit: Unit,
        at: Location,
        lines: Sequence[str],
        imports: Sequence[str],
        *,
        indent: str,
        prefix: str = "",
        suffix: str = "",
        end: Location | None = None,
    ) -> tuple[Edit, ...] | None:
        """Edits inserting statement ``lines`` at ``at`` (replacing up to ``end``) and the
        ``imports`` at the top of the module, after its docstring and future imports."""
        newline = str(unit.summary.get("newline", "\n"))
        # Nested lines follow the file's own indentation unit (a tab-indented file stays so).
        unit_indent = str(unit.summary.get("indent", INDENT))
        body = (
            prefix
            + "".join(indent + reindent(line, unit_indent) + newline for line in lines)
            + suffix
        )
        edits: list[Edit] = []
        if imports:
            row, column, lead = unit.summary["anchor"]
            where = Location(int(row), int(column))
            if where > at:
                return None
            text = str(lead) + "".join(f"import {module}{newline}" for module in imports)
            if where == at and end is None:
                return (Edit(text + body, at, at),)
            edits.append(Edit(text, where, where))
        edits.append(Edit(body, at, end or at))
        return tuple(edits)

    def function_start(self, unit: Unit, key: str) -> tuple[Location, str, list[str]] | None:
        """Where a function's body starts (after its docstring), its indentation and its
        positional parameters (without ``self``/``cls``)."""
        info = unit.summary.get("defs", {}).get(key)
        if info is None or info[0] is None:
            return None
        (row, indent), params, method = info
        names = [str(p) for p in params]
        return Location(int(row), 1), str(indent), names[1:] if method else names

    def entry_start(self, entry: EntryPoint) -> tuple[Location, str, Location | None, str, str]:
        """Where seeding belongs in an entry point: the top of its ``__main__`` block, or after
        the imports of a script (also for a ``__main__`` module whose top-level code already
        consumes RNG). Returns (location, indent, end of replaced text, prefix, suffix)."""
        unit = entry.unit
        main = unit.summary.get("main")
        module_level = self.profile(unit, MODULE)
        if main is not None and not module_level.use:
            body = main.get("body")
            if body is not None:
                return Location(int(body[0]), 1), str(body[1]), None, "", ""
            suite = main.get("suite")
            if suite is not None:
                row, colon, start = (int(x) for x in suite)
                if_indent = str(unit.statement(int(main["stmt"]))[2])
                indent = if_indent + str(unit.summary.get("indent", "    "))
                newline = str(unit.summary.get("newline", "\n"))
                return Location(row, colon), indent, Location(row, start), newline, indent
        first = unit.summary.get("first")
        first_row = unit.statement(int(first))[0] if first is not None else None
        if first_row is None:
            first_row = unit.statement(entry.statement)[0]
        ends = [end for start, end in unit.summary.get("imports", ()) if start < first_row]
        row = max(ends) + 1 if ends else first_row
        return Location(row, 1), "", None, "", ""


def _find_module(
    name: str,
    roots: Sequence[Path],
    tops: dict[tuple[Path, str], bool] | None = None,
    probed: set[str] | None = None,
) -> Path | None:
    """The file ``import name`` loads from one of ``roots``. ``tops`` remembers whether a
    root holds the name's top-level package or module at all: most imports name libraries,
    and one check of their first part spares probing every dotted path. ``probed`` collects
    the directories whose listing the answer depends on (the whole-run cache checks them)."""
    parts = name.split(".")
    for root in roots:
        if tops is not None:
            top = (root, parts[0])
            present = tops.get(top)
            if present is None:
                if probed is not None:
                    probed.add(str(root))
                first = os.path.join(root, parts[0])
                present = tops[top] = os.path.isdir(first) or os.path.isfile(first + ".py")
            if not present:
                continue
        base = os.path.join(root, *parts)
        if probed is not None:
            probed.update((os.path.dirname(base), base))
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return Path(candidate)
    return None


def _suppressions(unit: Unit) -> Suppressions:
    directives = [
        Directive(
            int(row),
            int(column),
            int(end),
            frozenset(codes) if codes is not None else None,
            bool(file_level),
        )
        for row, column, end, codes, file_level in unit.summary.get("noqa", ())
    ]
    return Suppressions.from_directives(directives)


def analyse(
    units: Sequence[Unit],
    rules: Sequence[type[ProjectRule]],
    options: ProjectOptions,
    load: Loader | None = None,
    findings: Mapping[str, Sequence[Diagnostic]] | None = None,
    settling: Sequence[type[SettledRule]] = (),
    probed: set[str] | None = None,
) -> tuple[dict[str, list[Diagnostic]], dict[str, list[Diagnostic]]]:
    """Project-level diagnostics of a run, by file name; and the per-file ``findings`` of the
    ``settling`` rules revised by ``SettledRule.settle`` now that the programs are known.
    ``probed`` receives the directories the module lookups listed."""
    if not rules and not settling:
        return {}, {}
    program = Program(units, options, load)
    settled: dict[str, list[Diagnostic]] = {}
    for filename, diagnostics in (findings or {}).items():
        for rule in settling:
            mine = [d for d in diagnostics if d.code == rule.CODE]
            if mine:
                settled.setdefault(filename, []).extend(rule.settle(program, filename, mine))
    found = program.diagnostics(rules)
    if probed is not None:
        probed.update(program.probed)
    return found, settled


__all__ = [
    "Chain",
    "EntryPoint",
    "Loader",
    "Profile",
    "Program",
    "ProjectOptions",
    "ProjectReport",
    "ProjectRule",
    "SettledRule",
    "Site",
    "Spawn",
    "Unit",
    "analyse",
]
