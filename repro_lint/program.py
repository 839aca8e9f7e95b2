"""The program model: a run's module summaries joined into entry points, profiles and reach.

``Program`` joins the summaries of a run: it resolves calls across modules (loading imported
project modules that were not passed, for their summaries only), computes for every function a
``Profile`` of what its path seeds and consumes, and hands the entry points to the project
rules (``ProjectRule``), whose findings it turns into diagnostics with fixes as text edits.
Per-file rules whose verdict depends on the whole program (``SettledRule``) revise their
findings here too.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from repro_lint import determinism as det
from repro_lint import layout
from repro_lint import randomness as rng
from repro_lint.config import ROOT_MARKERS, find_project_root
from repro_lint.diagnostics import Diagnostic, Edit, Fix, FixSafety, Location
from repro_lint.files import real_path
from repro_lint.fixes import INDENT, reindent, touches
from repro_lint.rule import ProjectRule, SettledRule
from repro_lint.rules import FIX_PARTNERS
from repro_lint.source import Stamp
from repro_lint.summary_format import DEFERRED_KEY, MAIN, MODULE, SUMMARY_VERSION
from repro_lint.suppressions import Directive, Suppressions
from repro_lint.text_questions import (
    TextAnswers,
    TextQuestion,
    Tree,
    mentioning,
    naming_files,
    read_tree,
    unreferenced,
)
from repro_lint.torch_versions import TorchVersion

_SEED_CALL = {"torch": "torch.manual_seed", "numpy": "numpy.random.seed", "random": "random.seed"}

Json = Any

# (unit index, statement index, row, what): one step of a path through the program.
Site = tuple[int, int, int, str]
Chain = tuple[Site, ...]
# The branches a step runs in, outermost first: (unit index, branch id, arm). A step whose
# context is a prefix of another's runs whenever that one does (it dominates it).
Ctx = tuple[tuple[int, int, int], ...]
# At most this many ordered seeds and uses per family are kept per profile (linear time).
_ORDERED = 8


def _dominates(outer: Ctx, inner: Ctx) -> bool:
    """Whether code in context ``outer`` runs whenever code in ``inner`` (later) does."""
    return inner[: len(outer)] == outer


def compatible(first: Ctx, second: Ctx) -> bool:
    """Whether code in the two contexts can run in one pass (no branch taken both ways)."""
    arms = {(unit, branch): arm for unit, branch, arm in first}
    return all(arms.get((unit, branch), arm) == arm for unit, branch, arm in second)


def _leaf_kind(chain: Chain) -> str:
    return chain[-1][3] if chain else ""


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
    # Control flow, for late seeds: per family, the uses no earlier seed dominates
    # (``exposed``) and the seeds no earlier seed dominates (``firsts``), each with its
    # context, in order; and the (family, seed, use) pairs where such a use dominates a
    # later seed: the seed comes too late on every path through both.
    exposed: dict[str, list[tuple[Ctx, Chain]]] = field(default_factory=dict)
    firsts: dict[str, list[tuple[Ctx, Chain]]] = field(default_factory=dict)
    late: list[tuple[str, Chain, Chain]] = field(default_factory=list)
    # Where the path trains (backward, an optimizer step, ``fit``), and where it saves a
    # checkpoint, if anywhere.
    trains: Chain | None = None
    saves: Chain | None = None
    # Loaders without ``generator=`` that draw their workers' base seed from a family.
    worker_seeds: dict[str, Chain] = field(default_factory=dict)
    # RPL202's evidence, in any order: attention kernels that dispatch to SDPA, a CUDA device
    # selected, a gradient-free region (inference); ``trains`` above is its backward pass.
    attention: Chain | None = None
    cuda: Chain | None = None
    inference: Chain | None = None
    # Where the path freezes a model but its head (linear probing): its kernels then run
    # forward only.
    frozen: Chain | None = None
    # Where the path hands work to a cluster job (a submitit executor's ``submit``): the job
    # runs in another process, which what this one sets never reaches.
    jobs: Chain | None = None
    # Kernels that run only behind options defaulting off (see ``gates``): (the options,
    # ``conv`` or ``attention``, the site); a program judges them by the options it sets.
    gated: tuple[tuple[frozenset[str], str, Chain], ...] = ()

    def kernel(self, family: str, enabled: Callable[[str], bool]) -> Chain | None:
        """The first kernel of ``family`` (``conv`` or ``attention``) the path runs when
        exactly the options ``enabled`` says are on."""
        found: Chain | None = getattr(self, family)
        if found is not None:
            return found
        return next(
            (
                site
                for gates, kind, site in self.gated
                if kind == family and all(map(enabled, gates))
            ),
            None,
        )

    def gate(
        self, gates: frozenset[str], conv: Chain | None, attention: Chain | None, count: int
    ) -> None:
        """Put the kernels this profile took since it had these ``conv`` and ``attention``
        and ``count`` gated kernels behind ``gates``."""
        added: list[tuple[frozenset[str], str, Chain]] = []
        for family, had in (("conv", conv), ("attention", attention)):
            if had is None and getattr(self, family) is not None:
                added.append((gates, family, getattr(self, family)))
                setattr(self, family, None)
        fresh = self.gated[count:]
        kept = self.gated[:count]
        self.gated = kept + tuple(
            (gates | options, kind, site) for options, kind, site in (*fresh, *added)
        )

    def add_gated(self, gates: frozenset[str], family: str, site: Chain) -> None:
        if len(self.gated) < _ORDERED and all((g, k) != (gates, family) for g, k, _ in self.gated):
            self.gated = (*self.gated, (gates, family, site))

    def covered(self, family: str, context: Ctx) -> bool:
        """Whether a seed so far runs before anything in ``context``."""
        return any(_dominates(seed, context) for seed, _ in self.firsts.get(family, ()))

    def add_seed(self, family: str, context: Ctx, chain: Chain) -> None:
        """A seed (in order): late after a use that dominates it, unless an earlier seed
        runs before it (that one came late, or the use did not precede it; this one seeds
        again); kept if it is first."""
        if self.covered(family, context):
            return
        for use_context, use in self.exposed.get(family, ()):
            if _dominates(use_context, context):
                if len(self.late) < _ORDERED:
                    self.late.append((family, chain, use))
                break
        firsts = self.firsts.setdefault(family, [])
        if len(firsts) < _ORDERED:
            firsts.append((context, chain))

    def add_use(self, family: str, context: Ctx, chain: Chain) -> None:
        """A use (in order) that draws now: exposed unless a seed already dominates it."""
        if not self.covered(family, context):
            exposed = self.exposed.setdefault(family, [])
            if len(exposed) < _ORDERED:
                exposed.append((context, chain))

    def without_weights(self) -> Profile:
        """This profile where a checkpoint replaces the model it builds: its initial
        weights (torch uses of kinds ``randomness.WEIGHTS``) are drawn for nothing."""
        # Every other field is shared as it is (a new field cannot be forgotten here).
        copy = dataclasses.replace(
            self,
            first=dict(self.first),
            use=dict(self.use),
            later_use=dict(self.later_use),
            exposed=dict(self.exposed),
            late=[item for item in self.late if _leaf_kind(item[2]) not in rng.WEIGHTS],
        )
        if _leaf_kind(copy.use.get("torch", ())) in rng.WEIGHTS:
            del copy.use["torch"]
            if copy.first.get("torch") == "use":
                if "torch" in copy.seed:
                    copy.first["torch"] = "seed"
                else:
                    del copy.first["torch"]
        if _leaf_kind(copy.later_use.get("torch", ())) in rng.WEIGHTS:
            del copy.later_use["torch"]
        if "torch" in copy.exposed:
            copy.exposed["torch"] = [
                item for item in copy.exposed["torch"] if _leaf_kind(item[1]) not in rng.WEIGHTS
            ]
        return copy

    def absorb(
        self, other: Profile, prefix: Chain, *, later: bool = False, context: Ctx = ()
    ) -> None:
        """Add what ``other`` (a callee, run at ``prefix`` in ``context``) does; ``later``:
        at an unknown time (methods of a constructed object, callbacks)."""
        if self.trains is None and other.trains is not None:
            self.trains = prefix + other.trains
        if self.saves is None and other.saves is not None:
            self.saves = prefix + other.saves
        for family, chain in other.worker_seeds.items():
            self.worker_seeds.setdefault(family, prefix + chain)
        if not later:
            self._absorb_ordered(other, prefix, context)
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
        self.absorb_evidence(other, prefix)
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

    def _absorb_ordered(self, other: Profile, prefix: Chain, context: Ctx) -> None:
        for family, seed, use in other.late:
            if len(self.late) < _ORDERED and not self.covered(family, context):
                self.late.append((family, prefix + seed, prefix + use))
        for family, seeds in other.firsts.items():
            for seed_context, seed in seeds:
                where = context + seed_context
                if self.covered(family, where):
                    continue
                for use_context, use in self.exposed.get(family, ()):
                    if _dominates(use_context, where):
                        if len(self.late) < _ORDERED:
                            self.late.append((family, prefix + seed, use))
                        break
        for family, uses in other.exposed.items():
            for use_context, use in uses:
                self.add_use(family, context + use_context, prefix + use)
        for family, seeds in other.firsts.items():
            for seed_context, seed in seeds:
                where = context + seed_context
                if not self.covered(family, where):
                    firsts = self.firsts.setdefault(family, [])
                    if len(firsts) < _ORDERED:
                        firsts.append((where, prefix + seed))

    def absorb_evidence(self, other: Profile, prefix: Chain) -> None:
        """Take ``other``'s kernel, device and training evidence (not its seeds, uses or
        settings): for callables a program may pick at run time."""
        if self.conv is None and other.conv is not None:
            self.conv = prefix + other.conv
        if self.attention is None and other.attention is not None:
            self.attention = prefix + other.attention
        if self.cuda is None and other.cuda is not None:
            self.cuda = prefix + other.cuda
        if self.trains is None and other.trains is not None:
            self.trains = prefix + other.trains
        if self.inference is None and other.inference is not None:
            self.inference = prefix + other.inference
        if self.frozen is None and other.frozen is not None:
            self.frozen = prefix + other.frozen
        if self.jobs is None and other.jobs is not None:
            self.jobs = prefix + other.jobs
        for gates, family, site in other.gated:
            self.add_gated(gates, family, prefix + site)

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


def _launches_jobs(entry: EntryPoint) -> bool:
    """Whether an entry point hands its work to a cluster job: its module submits one, or a
    function its path calls does (a project's ``submit_jobs`` helper)."""
    return bool(entry.unit.summary.get("jobs")) or entry.profile.jobs is not None


_EMPTY = Profile()
# Methods of a constructed object that run its kernels (called by ``module(x)``).
_RUNS_KERNELS = frozenset({"forward", "__call__"})
# Summary event tags -> the Profile attribute holding their first site.
_EVIDENCE = {
    "a": "attention", "g": "cuda", "t": "trains", "n": "inference", "h": "frozen", "j": "jobs"
}  # fmt: skip
# Calls followed deeper than this are cut short (keeps Python's recursion limit far away).
_MAX_DEPTH = 150


@dataclass
class Unit:
    """One file of the run: linted (findings are reported on it) or loaded for its summary."""

    filename: str
    path: Path | None
    summary: Mapping[str, Json]
    linted: bool
    # Project rule codes enabled for this file (selection and per-file-ignores), and those
    # of FIX_PARTNERS.
    codes: frozenset[str] = frozenset()
    index: int = 0
    # Deferred, and its text was read: nothing in it mentions seeding.
    seedless: bool = False
    _contexts: dict[str, Mapping[int, Ctx]] = field(default_factory=dict, repr=False, compare=False)
    _gates: dict[str, Mapping[int, frozenset[str]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    # Read from the summary once (the analysis asks about a million times on a large project).
    module: str = field(init=False, repr=False, compare=False)
    deferred: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._read_summary()

    def _read_summary(self) -> None:
        self.module = str(self.summary.get("module", ""))
        self.deferred = bool(self.summary.get(DEFERRED_KEY))

    def summarised(self, summary: Mapping[str, Json]) -> None:
        """Take the whole summary of a file first loaded deferred."""
        self.summary = summary
        self._read_summary()

    def functions(self) -> Mapping[str, list[list[Json]]]:
        funcs: Mapping[str, list[list[Json]]] = self.summary.get("funcs", {})
        return funcs

    def defines(self, key: str) -> bool:
        return key in self.summary.get("defs", {}) or key in self.functions()

    def classes(self) -> Mapping[str, Mapping[str, Json]]:
        classes: Mapping[str, Mapping[str, Json]] = self.summary.get("classes", {})
        return classes

    def statement(self, index: int) -> list[Json]:
        """A statement's first row, last row, indentation and end column."""
        statement: list[Json] = self.summary["stmts"][index][:4]
        return statement

    def above(self, index: int) -> int:
        """Where code inserted before a statement goes: above the comment lines right
        before it (they describe the statement, not the inserted code)."""
        statement = self.summary["stmts"][index]
        return int(statement[4]) if len(statement) > 4 else int(statement[0])

    def loop(self, index: int) -> tuple[int, str] | None:
        """The row above the outermost loop around a statement in its function (where code
        inserted before that loop goes) and the loop's indentation; None outside loops."""
        statement = self.summary["stmts"][index]
        found = statement[5] if len(statement) > 5 else None
        return None if found is None else (int(found[0]), str(found[1]))

    def contexts(self, key: str) -> Mapping[int, Ctx]:
        """The branches each event of function ``key`` runs in (events not listed run
        whenever the function does)."""
        found = self._contexts.get(key)
        if found is None:
            raw = self.summary.get("ctx", {}).get(key, ())
            found = self._contexts[key] = {
                int(index): tuple((self.index, int(b), int(arm)) for b, arm in branches)
                for index, branches in raw
            }
        return found

    def gates(self, key: str) -> Mapping[int, frozenset[str]]:
        """The options defaulting off that gate each event of function ``key`` (events not
        listed run whatever the options)."""
        found = self._gates.get(key)
        if found is None:
            raw = self.summary.get("gates", {}).get(key, ())
            found = self._gates[key] = {int(i): frozenset(map(str, names)) for i, names in raw}
        return found

    def overwritten(self, key: str) -> frozenset[int]:
        """Events of ``key`` whose random initial weights a checkpoint load replaces."""
        return frozenset(int(i) for i in self.summary.get("over", {}).get(key, ()))


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
    # A model file's ``__main__`` block that never trains (a smoke test pushing random
    # inputs through a model): an entry point in form only.
    smoke: bool = False

    @property
    def trains(self) -> bool:
        """Whether the program trains (backward, an optimizer step, ``fit``), in the main
        process or in a spawned worker."""
        return self.profile.trains is not None or any(
            worker.trains is not None for _, worker in self.workers
        )

    @property
    def seeded(self) -> set[str]:
        return self.profile.seeded

    def disables_deterministic_algorithms(self) -> Chain | None:
        """Where the program switches ``use_deterministic_algorithms`` off (with ``False``, or
        the debug mode's "default"), if it does: the first such site."""
        return self.profile.switched_off.get("algorithms")

    def selects_cuda(self) -> bool:
        """Whether the program selects a CUDA device (``.cuda()``, ``"cuda"``, a framework
        that uses the GPU whenever there is one), in the main process or in a spawned
        worker: a program that never does runs its kernels on the CPU."""
        return self.profile.cuda is not None or any(
            worker.cuda is not None for _, worker in self.workers
        )

    def enables_deterministic_algorithms(self) -> bool:
        """Whether the program turns ``torch.use_deterministic_algorithms(True)`` on (in the
        main process or in a spawned worker; a non-literal flag counts as on)."""
        return "algorithms" in self.profile.settings or any(
            "algorithms" in worker.settings for _, worker in self.workers
        )


@dataclass(frozen=True)
class Placement:
    """A place for code that must run before a program's work: seeds, deterministic
    settings. ``Program.placements`` finds them (the start of an entry point, the start of
    each spawned worker function that works), ``Program.after`` places code right after a
    statement; ``Program.insert`` writes lines there.

    ``at`` is where the lines go (``end``: the end of the text they replace, for a
    one-line ``if __name__ == "__main__": main()``, with ``prefix``/``suffix`` around
    them); ``indent`` is the indentation of the block. For a worker's start, ``spawn`` is
    the spawn that starts it and ``params`` its positional parameters (``self`` left out).

    A project rule that inserts settings uses it like this (``spell`` reuses the file's
    aliases and says which import is missing)::

        for placement in program.placements(entry):
            spelled = program.spell(placement.unit, name, placement.at.row)
            if spelled is None:
                return ()
            text, module = spelled
            lines, imports = [f"{text} = True"], [module] if module else []
            edits += program.insert(placement, lines, imports, finding=entry.unit) or ()

    Placements are deterministic (entry start first, then workers in spawn order) and
    never repeat a position, so what several rules insert at one placement ends up together.
    """

    unit: Unit
    at: Location
    indent: str
    end: Location | None = None
    prefix: str = ""
    suffix: str = ""
    spawn: Spawn | None = None
    params: tuple[str, ...] = ()


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


_Built = TypeVar("_Built")


# A call of a function (``Program._edges``): the index of its event in the function's events,
# the functions it may run, and the options defaulting off that gate it.
_Edge = tuple[int, tuple[tuple["Unit", str], ...], frozenset[str] | None]


class Program:
    """The summaries of one run joined: modules, resolved calls, profiles and entry points."""

    def __init__(
        self,
        units: Sequence[Unit],
        options: ProjectOptions,
        load: Loader | None = None,
        known: TextAnswers | None = None,
    ) -> None:
        self.options = options
        self._load = load
        self.units: list[Unit] = []
        self._by_path: dict[Path, Unit] = {}
        self._by_name: dict[str, list[Unit]] = {}
        # The first linted unit of each file name (``linted_unit``).
        self._linted: dict[str, Unit] = {}
        # Symlinks resolved once per path: module lookups repeat the same few thousand paths.
        self._real: dict[Path, Path] = {}
        for unit in units:
            self._add(unit)
        self._paths: dict[tuple[str, tuple[str, ...]], Path | None] = {}
        self._project_roots: dict[Path, Path] = {}
        self._modules: dict[tuple[str, int], Unit | None] = {}
        # What ``resolve`` answered for good, per name and importer: names that no prefix of
        # makes a project module, and those naming a summarised module or its class or
        # function directly.
        self._resolved: dict[tuple[str, int], _Target | None] = {}
        # The same answers per name and importer's search roots: files that look modules up
        # in the same places get the same answers (``_shared_key`` says when that holds).
        self._resolved_shared: dict[tuple[str, tuple[str, ...]], _Target | None] = {}
        # What ``resolve`` answered for good through re-exports, per name, importer (or its
        # search roots, as above) and depth: how many more hops the depth limit lets a chain
        # follow depends on where it was asked from.
        self._chained: dict[tuple[str, int | tuple[str, ...], int], _Target | None] = {}
        # What ``_method`` answered for good, per unit, class, name and ``skip_own``.
        self._methods_found: dict[tuple[int, str, str, bool], _Function | None] = {}
        self._tops: dict[tuple[str, str], bool] = {}
        self._listings = Listings()
        self._roots: dict[int, tuple[list[Path], tuple[str, ...]]] = {}
        self._profiles: dict[tuple[int, str], Profile] = {}
        self._constructed: dict[tuple[int, str], Profile] = {}
        self._active: set[tuple[str, int, str]] = set()
        self._entries: list[EntryPoint] | None = None
        self._reached: dict[int, frozenset[str]] = {}
        self._reached_functions: dict[int, frozenset[tuple[int, str]]] = {}
        self._gated_functions: dict[int, frozenset[tuple[int, str]]] = {}
        # What each function's calls lead to (``_edges``), by (unit index, key).
        self._edges_found: dict[tuple[int, str], tuple[_Edge, ...]] = {}
        self._options_on: dict[int, Callable[[str], bool]] = {}
        self._reloads: dict[int, bool] = {}
        # What the units import (see ``_scan_imports``): the units imported by another one,
        # how many of ``units`` were scanned, and those left for when they are summarised.
        self._imported_units: set[int] = set()
        self._scanned = 0
        self._unscanned: list[Unit] = []
        # The directories module lookups listed (what a later run must find unchanged to
        # reuse this analysis).
        self.probed: set[str] = set()
        # The files read as text to find where a name is used, with their stamps (ditto).
        self.read: dict[str, Stamp] = {}
        self._trees: dict[Path, Tree | None] = {}
        # What was asked of those files' text, with the answers: a later run whose files
        # changed only where the answers stay the same may reuse this analysis.
        self.asked: list[TextQuestion] = []
        # An earlier pass's answers, as the text is now: taken for the trees whose files
        # are the ones they were worked out for (``_known_answer``), not read again.
        self._known = known
        self._known_roots: dict[Path, bool] = {}
        # Indexes built from the program on first use and shared by the rules (``derived``).
        self._derived: dict[Callable[[Program], object], object] = {}

    def derived(self, build: Callable[[Program], _Built]) -> _Built:
        """What ``build`` makes of this program (a call index, the seeded paths): built on
        the first request, then shared by every rule that asks."""
        if build not in self._derived:
            self._derived[build] = build(self)
        return cast(_Built, self._derived[build])

    def _add(self, unit: Unit) -> Unit:
        unit.index = len(self.units)
        self.units.append(unit)
        if unit.linted:
            self._linted.setdefault(unit.filename, unit)
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
            project = self._project_root(directory)
            for root in (base, project, project / "src"):
                if root not in roots:
                    roots.append(root)
        # The roots as strings key the shared module lookups (cheaper to compare than paths).
        self._roots[unit.index] = (roots, tuple(map(str, roots)))
        return roots

    def _project_root(self, directory: Path) -> Path:
        """``find_project_root(directory)``, the walk up shared with the directories already
        asked about: a run loading thousands of modules asks for hundreds of directories
        under the same few ancestors."""
        if not directory.is_dir():
            return find_project_root(directory)
        walked: list[Path] = []
        current = directory
        while current not in self._project_roots:
            walked.append(current)
            if any((current / marker).exists() for marker in ROOT_MARKERS):
                found = current
                break
            if current.parent == current:
                found = Path.cwd()
                break
            current = current.parent
        else:
            found = self._project_roots[current]
        for seen in walked:
            self._project_roots[seen] = found
        return found

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
            self._paths[key] = _find_module(name, key[1], self._tops, self.probed, self._listings)
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
            unit.summarised(summary)
            self._by_name.setdefault(unit.module, []).append(unit)
            return unit
        return self._add(Unit(filename, path, summary, linted=False))

    def resolve(self, qualified: str, importer: Unit, depth: int = 0) -> _Target | None:
        """What a qualified name refers to: a project function, class or module, a known
        external seeding helper (reached through a re-export), or None."""
        return self._resolve(qualified, importer, depth)[0]

    def _resolve(self, qualified: str, importer: Unit, depth: int) -> tuple[_Target | None, bool]:
        """``resolve``'s answer, and whether it holds for good (then it is kept): every module
        it looked up is settled (``module``), and so is every answer it was built from."""
        memo = (qualified, importer.index)
        if memo in self._resolved:
            return self._resolved[memo], True
        shared = self._shared_key(qualified, importer)
        if shared is not None and shared in self._resolved_shared:
            answer = self._resolved[memo] = self._resolved_shared[shared]
            return answer, True
        chained = (qualified, importer.index if shared is None else shared[1], depth)
        if chained in self._chained:
            return self._chained[chained], True
        parts = qualified.split(".")
        # Whether each prefix is known for good to be no project module (``module`` keeps
        # that answer): most names resolved are libraries' (``torch.nn.functional.conv2d``).
        settled = True
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            unit = self.module(prefix, importer)
            if unit is None:
                settled = settled and (prefix, importer.index) in self._modules
                continue
            rest = parts[cut:]
            key = ".".join(rest)
            direct: _Target | None = None
            if not rest:
                direct = _Module(unit)
            elif key in unit.classes():
                direct = _Class(unit, key)
            elif unit.defines(key):
                direct = _Function(unit, key)
            # A summarised module's classes and functions (and its classes' methods, found
            # for good) stay what they are: the answer holds for good when this lookup did.
            final = settled and (
                (prefix, importer.index) in self._modules
                or (unit is importer and not importer.deferred)
            )
            if direct is not None:
                if final:
                    self._settle(memo, shared, direct)
                return direct, final
            klass = ".".join(rest[:-1])
            if len(rest) > 1 and klass in unit.classes():
                method = self._method(unit, klass, rest[-1])
                final = final and (unit.index, klass, rest[-1], False) in self._methods_found
                if final:
                    self._settle(memo, shared, method)
                return method, final
            # Answers found through re-exports are kept per depth (``_chained``).
            through: _Target | None = None
            exported = unit.summary.get("exports", {}).get(rest[0])
            if exported is not None and depth < 8 and exported != qualified:
                through, sure = self._resolve(".".join([exported, *rest[1:]]), unit, depth + 1)
                final = final and sure
            elif depth < 8 and not rest[0].startswith("_"):
                # A package that re-exports its modules with ``from .x import *``, which
                # binds no name that starts with an underscore (``__version__``, ``_impl``)
                # unless the module's ``__all__`` lists it, which summaries do not record.
                for base in self._star_bases(unit):
                    through, sure = self._resolve(".".join([base, *rest]), unit, depth + 1)
                    final = final and sure
                    if through is not None:
                        break
            if final:
                self._chained[chained] = through
            return through, final
        outside = (
            _External(qualified) if self._seeds_all(qualified) or qualified in rng.SEEDS else None
        )
        if settled:
            self._settle(memo, shared, outside)
        return outside, settled

    def _star_bases(self, unit: Unit) -> Iterator[str]:
        """The modules ``unit`` star-imports that can bind names, each looked up only when
        the one before did not answer. ``from .x import *`` of a module the project lacks
        (compiled, generated, not in the tree linted) binds nothing that can be followed,
        and a name looked up through it must not fall back to the package above it:
        ``pkg.x.Y`` is not ``pkg``'s attribute ``x.Y``. That fallback went through the
        package's other star imports again, and on again to the depth limit: a package
        star-importing six missing modules made millions of names."""
        for base in map(str, unit.summary.get("stars", ())):
            if self.module(base, unit) is None:
                parts = base.split(".")
                if any(
                    self.module(".".join(parts[:cut]), unit) is not None
                    for cut in range(len(parts) - 1, 0, -1)
                ):
                    continue
            yield base

    def _shared_key(self, qualified: str, importer: Unit) -> tuple[str, tuple[str, ...]] | None:
        """The key under which ``resolve``'s settled answer for ``importer`` holds for every
        importer with the same search roots: its module lookups are shared by roots (see
        ``module``). None where the importer's own module is a prefix of the name (it is
        its own answer there, whatever the roots find), or where it has no roots."""
        own = importer.module
        if qualified == own or qualified.startswith(f"{own}."):
            return None
        roots = self._search_roots(importer)
        if not roots:
            return None
        return (qualified, self._roots[importer.index][1])

    def _settle(
        self,
        memo: tuple[str, int],
        shared: tuple[str, tuple[str, ...]] | None,
        answer: _Target | None,
    ) -> None:
        self._resolved[memo] = answer
        if shared is not None:
            self._resolved_shared[shared] = answer

    def _seeds_all(self, qualified: str) -> bool:
        return (
            qualified in rng.HELPERS
            or qualified in rng.SEEDING_CONSTRUCTORS
            or qualified in self.options.seed_functions
        )

    def _method(
        self, unit: Unit, klass: str, name: str, *, skip_own: bool = False
    ) -> _Function | None:
        """Find ``name`` on a project class or its project base classes."""
        memo = (unit.index, klass, name, skip_own)
        if memo in self._methods_found:
            return self._methods_found[memo]
        found, final = self._find_method(unit, klass, name, skip_own, 0)
        if final:
            self._methods_found[memo] = found
        return found

    def _find_method(
        self, unit: Unit, klass: str, name: str, skip_own: bool, depth: int
    ) -> tuple[_Function | None, bool]:
        """``_method``'s answer, and whether it holds for good: every class it looked at is
        a summarised module's, every base was resolved for good, and it never stopped at the
        depth limit."""
        info = unit.classes().get(klass)
        if depth > 16:
            return None, False
        final = not unit.deferred
        if info is None:
            return None, final
        if not skip_own and name in info.get("methods", ()):
            return _Function(unit, f"{klass}.{name}"), final
        for base in info.get("bases", ()):
            target, sure = self._resolve(base, unit, 0)
            final = final and sure
            if isinstance(target, _Class):
                found, sure = self._find_method(target.unit, target.key, name, False, depth + 1)
                final = final and sure
                if found is not None:
                    return found, final
        return None, final

    def _resolve_ref(self, unit: Unit, ref: list[Json]) -> _Target | None:
        kind = ref[0]
        if kind == "q":
            return self.resolve(str(ref[1]), unit)
        if kind == "*":
            # A name bound by ``from module import *`` of a project module.
            for base in self._star_bases(unit):
                found = self.resolve(f"{base}.{ref[1]}", unit)
                if found is not None:
                    return found
            return None
        if kind == "l":
            key = str(ref[1])
            if key in unit.classes():
                return _Class(unit, key)
            return _Function(unit, key) if unit.defines(key) else None
        if kind == "m":
            klass, name = str(ref[1]), str(ref[2])
            method = self._method(unit, klass, name, skip_own=bool(ref[3]))
            if method is None and name == "__init__":
                # ``super().__init__(...)`` reaching a library class that seeds when built
                # (``transformers.Trainer``): the seed runs here, in order.
                return self._seeding_base(unit, klass)
            return method
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

    def event_callees(self, unit: Unit, event: list[Json]) -> Iterator[tuple[Unit, str]]:
        """The project functions one summary event calls (for a class, its methods)."""
        yield from self._callees(unit, event)

    def import_edits(
        self, unit: Unit, modules: Sequence[str], before: Location
    ) -> tuple[Edit, ...] | None:
        """Edits adding ``import module`` lines where ``insertion`` puts them, for code at
        ``before``; None when a name is taken or the imports would land after ``before``."""
        if not modules:
            return ()
        taken = unit.summary.get("taken", ())
        names = [layout.parse_import(module) for module in modules]
        if any(layout.bound_name(n) in taken for n in names):
            return None
        edits = tuple(
            Edit(p.text, Location(p.row, p.column), Location(p.row, p.column))
            for p in self._import_placements(unit, names, before.row)
        )
        if any(edit.location > before for edit in edits):
            return None
        return edits

    def _import_placements(
        self, unit: Unit, names: Sequence[layout.ImportName], at: int
    ) -> list[layout.Placement]:
        """Where ``import`` lines for ``names``, used from row ``at`` on, go in ``unit``:
        sorted into its import block (in a notebook, that of the cell holding ``at``)."""
        newline = str(unit.summary.get("newline", "\n"))
        header, cell = header_at(unit, at)
        if cell is None:
            row, column, lead = unit.summary["anchor"]
        else:
            row, column, lead = cell.header_end, 1, ""
        root = find_project_root(unit.path) if unit.path is not None else None
        first_party = layout.first_party_finder(unit.path, root)
        return layout.import_edits(
            header, names, newline, first_party, (int(row), int(column), str(lead))
        )

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
        contexts = unit.contexts(key)
        overwritten = unit.overwritten(key)
        gates = unit.gates(key)
        for index, event in enumerate(unit.functions().get(key, ())):
            context = contexts.get(index, ())
            self._gated(result, unit, event, context, index in overwritten, gates.get(index))
        self._active.discard(marker)
        self._profiles[memo] = result
        return result

    def _apply(
        self,
        profile: Profile,
        unit: Unit,
        event: list[Json],
        context: Ctx = (),
        overwritten: bool = False,
    ) -> None:
        tag = event[0]
        statement, row = int(event[-2]), int(event[-1])
        if tag == "s":
            family = str(event[1])
            site: Chain = ((unit.index, statement, row, "seed"),)
            profile.first.setdefault(family, "seed")
            profile.seed.setdefault(family, site)
            if profile.first_seed is None:
                profile.first_seed = site
            profile.add_seed(family, context, site)
        elif tag == "u":
            if overwritten:
                return
            family, what = str(event[1]), str(event[2])
            site = ((unit.index, statement, row, what),)
            if what == rng.WORKERS:
                # An unshuffled loader's base seed for its workers: it changes results only
                # through randomness in the workers, which shows as uses of its own.
                profile.worker_seeds.setdefault(family, site)
            elif what in rng.DEFERRED:
                profile.later_use.setdefault(family, site)
            else:
                profile.first.setdefault(family, "use")
                profile.use.setdefault(family, site)
                profile.add_use(family, context, site)
        elif tag == "t":
            if profile.trains is None:
                profile.trains = ((unit.index, statement, row, "training"),)
        elif tag == "k":
            if profile.saves is None:
                profile.saves = ((unit.index, statement, row, "checkpoint"),)
        elif tag == "d":
            profile.settings.setdefault(str(event[1]), ((unit.index, statement, row, ""),))
        elif tag == "o":
            profile.switched_off.setdefault(str(event[1]), ((unit.index, statement, row, ""),))
        elif tag == "v":
            if profile.conv is None:
                what = str(event[1]) if len(event) > 3 else "convolution"
                profile.conv = ((unit.index, statement, row, what),)
        elif tag in _EVIDENCE:
            attribute = _EVIDENCE[tag]
            if getattr(profile, attribute) is None:
                what = str(event[1]) if len(event) > 3 else ""
                setattr(profile, attribute, ((unit.index, statement, row, what),))
        elif tag == "x":
            target = self._resolve_ref(unit, event[1])
            if isinstance(target, _Module):
                self._lookup(profile, target.unit, ((unit.index, statement, row, ""),))
        elif tag == "c":
            prefix: Chain = ((unit.index, statement, row, ""),)
            dispatched = self._dispatched(unit, event[1])
            if dispatched is not None:
                # ``globals()[name](...)``, ``TABLE[name](...)``: one of these functions of
                # the module, at that time.
                for function in dispatched:
                    profile.absorb(self.profile(function.unit, function.key), prefix, later=True)
                return
            target = self._resolve_ref(unit, event[1])
            if target is not None:
                self._enter(profile, target, prefix, context, overwritten)
        elif tag == "f":
            target = self._resolve_ref(unit, event[1])
            if isinstance(target, _Function):
                prefix = ((unit.index, statement, row, ""),)
                profile.absorb(self.profile(target.unit, target.key), prefix, later=True)
        elif tag == "i":
            for name in event[1]:
                module = self.module(str(name), unit, imported=True)
                if module is not None and module is not unit:
                    prefix = ((unit.index, statement, row, ""),)
                    profile.absorb(self.profile(module, MODULE), prefix, context=context)
        elif tag == "p":
            target = self._resolve_ref(unit, event[1])
            prefix = ((unit.index, statement, row, ""),)
            kind = event[2]
            if isinstance(target, _Function) and self._fresh(unit, event):
                known = {(s.unit, s.key) for s in profile.spawns}
                if (target.unit.index, target.key) not in known:
                    spawn = Spawn(prefix, target.unit.index, target.key, kind == "spawn")
                    profile.spawns.append(spawn)
            elif target is not None:
                # A forked process starts from the parent's (seeded) state: an ordinary call.
                self._enter(profile, target, prefix, context)

    @staticmethod
    def _fresh(unit: Unit, event: list[Json]) -> bool:
        """Whether a process event starts its target in a fresh interpreter."""
        kind = event[2]
        return kind in ("spawn", "context", "launch") or bool(unit.summary.get("fresh_start"))

    def step(self, profile: Profile, unit: Unit, key: str, index: int) -> None:
        """Add event ``index`` of function ``key`` to ``profile`` (in its branches), as
        ``profile`` does for each event in turn: for analyses that stop part-way through a
        function or act between its events (``seed_paths``)."""
        event = unit.functions()[key][index]
        context = unit.contexts(key).get(index, ())
        gates = unit.gates(key).get(index)
        self._gated(profile, unit, event, context, index in unit.overwritten(key), gates)

    def _gated(
        self,
        profile: Profile,
        unit: Unit,
        event: list[Json],
        context: Ctx,
        overwritten: bool,
        gates: frozenset[str] | None,
    ) -> None:
        """``_apply``, with the kernels an event behind options defaulting off adds kept
        behind them."""
        if gates is None:
            self._apply(profile, unit, event, context, overwritten)
            return
        conv, attention, count = profile.conv, profile.attention, len(profile.gated)
        self._apply(profile, unit, event, context, overwritten)
        profile.gate(gates, conv, attention, count)

    def starts_fresh(self, unit: Unit, event: list[Json]) -> bool:
        """Whether an event starts a project function in a fresh interpreter
        (``torch.multiprocessing.spawn``, a spawn context): it runs from the defaults, not
        after what its caller seeded."""
        return (
            event[0] == "p"
            and isinstance(self._resolve_ref(unit, event[1]), _Function)
            and self._fresh(unit, event)
        )

    def _dispatched(self, unit: Unit, ref: Json) -> list[_Function] | None:
        """The functions a call through a table may run (``globals()[name]``: any module
        function; ``TABLE[name]``: those registered in that dict, of this module or of the
        project module it was imported from), None for other calls."""
        if ref == ["g"]:
            return [_Function(unit, key) for key in self._module_functions(unit)]
        if not (isinstance(ref, list) and len(ref) == 2):
            return None
        if ref[0] == "r":
            return self._registered(unit, str(ref[1]))
        if ref[0] == "t":
            return self._table(str(ref[1]), unit, 0)
        return None

    @staticmethod
    def _registered(unit: Unit, table: str) -> list[_Function]:
        """The functions registered in a module-level dict of ``unit`` (see ``registries``)."""
        members = unit.summary.get("registries", {}).get(table, ())
        return [_Function(unit, str(key)) for key in members if unit.defines(str(key))]

    def _table(self, qualified: str, importer: Unit, depth: int) -> list[_Function]:
        """The functions registered in the table of a project module that ``qualified``
        names (``models.MODELS``), followed through re-exports as ``resolve`` follows them;
        none when it names no such table."""
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            unit = self.module(".".join(parts[:cut]), importer)
            if unit is None:
                continue
            if cut != len(parts) - 1:
                return []
            name = parts[-1]
            if name in unit.summary.get("registries", {}):
                return self._registered(unit, name)
            exported = unit.summary.get("exports", {}).get(name)
            if exported is not None and depth < 8 and exported != qualified:
                return self._table(str(exported), unit, depth + 1)
            return []
        return []

    def _module_functions(self, unit: Unit) -> list[str]:
        """The module-level functions of a unit (``globals()[name]`` may call any)."""
        return [
            key
            for key, info in unit.summary.get("defs", {}).items()
            if "." not in key and not info[2]
        ]

    def _lookup(self, profile: Profile, module: Unit, prefix: Chain) -> None:
        """``module.__dict__[name](...)``: any top-level function or class of the module may
        be called; their kernels count (the architecture is then inferred)."""
        for key in (*module.functions(), *module.classes()):
            if "." in key or key in (MODULE, MAIN):
                continue
            picked = (
                self.construct(module, key)
                if key in module.classes()
                else self.profile(module, key)
            )
            if picked.conv is not None and profile.conv is None:
                last = picked.conv[-1]
                what = last[3] if last[3].endswith(det.INFERRED) else last[3] + det.INFERRED
                profile.conv = (*prefix, *picked.conv[:-1], (*last[:3], what))
            profile.absorb_evidence(picked, prefix)

    def _enter(
        self,
        profile: Profile,
        target: _Target,
        prefix: Chain,
        context: Ctx = (),
        overwritten: bool = False,
    ) -> None:
        if isinstance(target, _Function):
            called = self.profile(target.unit, target.key)
            if overwritten:
                called = called.without_weights()
            profile.absorb(called, prefix, context=context)
        elif isinstance(target, _Class):
            built = self.construct(target.unit, target.key)
            if overwritten:
                built = built.without_weights()
            profile.absorb(built, prefix, context=context)
        elif isinstance(target, _Module):
            profile.absorb(self.profile(target.unit, MODULE), prefix, context=context)
        else:
            qualified = target.qualified
            families = rng.FAMILIES if self._seeds_all(qualified) else (rng.SEEDS[qualified],)
            last = prefix[-1]
            here: Chain = (*prefix[:-1], (last[0], last[1], last[2], "seed"))
            for family in families:
                profile.first.setdefault(family, "seed")
                profile.seed.setdefault(family, here)
                profile.add_seed(family, context, here)
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
                result.add_use("torch", (), site)
            for kernel in det.base_kernels(base):
                found: Chain = ((base_unit.index, -1, row, kernel.what),)
                if kernel.family == det.CONV and result.conv is None:
                    result.conv = found
                elif kernel.family == det.ATTENTION and result.attention is None:
                    result.attention = found
            if base in rng.SEEDING_CONSTRUCTORS and init is None:
                # Built without an ``__init__`` of the project's, the library class's own
                # runs and seeds; a project ``__init__`` seeds where it calls ``super()``'s.
                for family in rng.FAMILIES:
                    result.seed.setdefault(family, site)
                    result.add_seed(family, (), site)
        for method_unit, key in self._methods(unit, klass):
            name = key.rsplit(".", 1)[-1]
            if name != "__init__":
                method = self.profile(method_unit, key)
                if name not in _RUNS_KERNELS and (method.conv or method.attention or method.gated):
                    # Kernels count where the object builds them (__init__) or runs them
                    # (forward): a helper such as a weight-loading classmethod may never run.
                    method = dataclasses.replace(method, conv=None, attention=None, gated=())
                result.absorb(method, (), later=True)
        self._active.discard(marker)
        self._constructed[memo] = result
        return result

    def _seeding_base(self, unit: Unit, klass: str) -> _External | None:
        """The library base class of a project class whose constructor seeds, if any."""
        for _, _, base in self._external_bases(unit, klass):
            if base in rng.SEEDING_CONSTRUCTORS:
                return _External(base)
        return None

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
            elif isinstance(target, _External):
                # A class that seeds when constructed (``transformers.Trainer``) resolves,
                # as a seeding call does, to what it is outside the project.
                yield unit, info, target.qualified

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
        # A notebook is run, never imported: its cells are a program whenever they do
        # anything, as are the files the ``entry-points`` option names.
        forced = unit.path is not None and (
            unit.path.suffix == ".ipynb"
            or (self.options.entry_points is not None and self.options.entry_points(unit.path))
        )
        if main is None and not forced and self._plainly_library(unit):
            # Known without the module's profile, which would summarise everything it imports.
            return None
        if main is not None:
            kind, statement = "main", int(main["stmt"])
        else:
            # Known before the module's profile, which follows what its imports run.
            start = self._script_statement(unit, forced)
            if start is None:
                return None
            kind, statement = "script", start
        profile = Profile()
        profile.absorb(self.profile(unit, MODULE), ())
        if main is not None:
            profile.absorb(self.profile(unit, MAIN), ())
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
        entry.smoke = kind == "main" and not entry.trains and self._defines_module(unit)
        return entry

    def _defines_module(self, unit: Unit) -> bool:
        """Whether a file defines a torch module (a model file)."""
        return any(
            base.startswith("torch.nn.") or base.startswith(("lightning.", "pytorch_lightning."))
            for klass in unit.classes()
            for _, _, base in self._external_bases(unit, klass)
        )

    def _script_statement(self, unit: Unit, forced: bool) -> int | None:
        """Where a top-level script starts its work (None when the module is a library)."""
        summary = unit.summary
        work = summary.get("work")
        if work is None:
            for ref, statement in summary.get("bare", ()):
                # A call of project code standing alone at top level (``main()``) starts a
                # script, unless another file of the run imports the module and what it calls
                # neither draws nor trains: a library's own set-up call (filling a table of
                # configurations) runs as part of the programs that import it.
                if self._works(unit, ref, bare=True) or (
                    isinstance(self._resolve_ref(unit, ref), _Function | _Class)
                    and not self._imported(unit)
                ):
                    work = statement
                    break
        if work is None:
            work = self._module_work(unit)
        if work is None and not forced:
            return None
        first = summary.get("first")
        if first is not None and (
            work is None or unit.statement(first)[0] <= unit.statement(work)[0]
        ):
            return int(first)
        return None if work is None else int(work)

    def _plainly_library(self, unit: Unit) -> bool:
        """Whether the summary alone shows that ``_script_statement`` finds no start: no work
        statement, no top-level call of a function or class, and no random draw outside a
        branch at top level."""
        summary = unit.summary
        if summary.get("work") is not None or summary.get("bare") or summary.get("calls"):
            return False
        contexts = unit.contexts(MODULE)
        return not any(
            event[0] == "u" and index not in contexts and event[2] not in rng.DEFERRED
            for index, event in enumerate(unit.functions().get(MODULE, ()))
        )

    def _module_work(self, unit: Unit) -> int | None:
        """The first statement of a module's top-level code that does a program's work: it
        calls a function or class of its own file that draws random numbers or trains (or
        a project function that trains), or, in a file no other file of the run imports,
        draws random numbers itself on every path. A library module's top-level code
        defines and registers; it does neither."""
        for ref, statement in unit.summary.get("calls", ()):
            if self._works(unit, ref, bare=False):
                return int(statement)
        contexts = unit.contexts(MODULE)
        for index, event in enumerate(unit.functions().get(MODULE, ())):
            if event[0] == "u" and index not in contexts and event[2] not in rng.DEFERRED:
                # Asked only of a module that draws: the scan loads what every unit imports.
                return None if self._imported(unit) else int(event[-2])
        return None

    def _works(self, unit: Unit, ref: list[Json], *, bare: bool) -> bool:
        """Whether a top-level call of ``unit`` does a program's work: what it calls trains,
        or draws random numbers and is ``unit``'s own or, for a call standing alone
        (``bare``), any project code's. A class's other methods draw only when something
        calls them (later uses): its construction alone (a tokenizer the module's functions
        share) does not."""
        target = self._resolve_ref(unit, ref)
        if isinstance(target, _Function):
            profile = self.profile(target.unit, target.key)
            drawn = bool(profile.use or profile.later_use)
        elif isinstance(target, _Class):
            profile = self.construct(target.unit, target.key)
            drawn = bool(profile.use)
        else:
            return False
        return profile.trains is not None or (drawn and (bare or target.unit is unit))

    def _imported(self, unit: Unit) -> bool:
        """Whether another file of the run imports ``unit`` (its top-level code then runs
        as part of that program, not as a program of its own)."""
        self._scan_imports()
        return unit.index in self._imported_units

    def _scan_imports(self) -> None:
        """Note what the summarised units import, once per unit: asked for every script of
        the run, a scan of every unit per question made large projects quadratic. A unit
        that is deferred now is scanned once an entry point has it summarised; the units
        that loading adds are scanned too (as a scan of ``self.units`` now would)."""
        progress = True
        while progress:
            progress = False
            waiting, self._unscanned = self._unscanned, []
            for other in waiting:
                if other.deferred:
                    self._unscanned.append(other)
                else:
                    self._note_imports(other)
                    progress = True
            while self._scanned < len(self.units):
                other = self.units[self._scanned]
                self._scanned += 1
                if other.deferred:
                    self._unscanned.append(other)
                else:
                    self._note_imports(other)
                    progress = True

    def _note_imports(self, other: Unit) -> None:
        for events in other.functions().values():
            for event in events:
                if event[0] != "i":
                    continue
                for name in event[1]:
                    target = self.module(str(name), other, imported=True)
                    if target is not None and target is not other:
                        self._imported_units.add(target.index)

    def reloads_to_train(self, unit: Unit) -> bool:
        """Whether a function of ``unit`` loads saved weights into a model
        (``model.load_state_dict(torch.load(path))``), then trains and saves checkpoints
        again on the same path: a run that continues from its checkpoints, not a final
        evaluation of the best weights nor a model loaded only to be exported."""
        done = self._reloads.get(unit.index)
        if done is not None:
            return done
        found = False
        for key, events in unit.functions().items():
            contexts = unit.contexts(key)
            for start, event in enumerate(events):
                if event[0] == "l" and self._continues(unit, events, contexts, start):
                    found = True
                    break
            if found:
                break
        self._reloads[unit.index] = found
        return found

    def _continues(
        self, unit: Unit, events: list[list[Json]], contexts: Mapping[int, Ctx], start: int
    ) -> bool:
        load = contexts.get(start, ())
        trained = False
        for index in range(start + 1, len(events)):
            event = events[index]
            if not compatible(load, contexts.get(index, ())):
                continue
            if not trained:
                trained = event[0] == "t" or self._does(unit, event, "trains")
            elif event[0] == "k" or self._does(unit, event, "saves"):
                return True
        return False

    def _does(self, unit: Unit, event: list[Json], what: str) -> bool:
        """Whether a call event's callee trains (``what="trains"``) or saves."""
        if event[0] not in ("c", "f") or self._dispatched(unit, event[1]) is not None:
            return False
        target = self._resolve_ref(unit, event[1])
        if isinstance(target, _Function):
            return getattr(self.profile(target.unit, target.key), what) is not None
        if isinstance(target, _Class):
            return getattr(self.construct(target.unit, target.key), what) is not None
        return False

    # -- from findings to diagnostics ---------------------------------------------------------

    def reaching(self, filename: str) -> list[EntryPoint]:
        """The entry points of the run whose programs reach the file."""
        return [entry for entry in self.entries if filename in self.reached_files(entry)]

    def on_cpu(self, filename: str) -> bool:
        """Whether the file is a notebook whose program never selects a CUDA device: its
        kernels run on the CPU. A notebook picks its device in its own cells; a script may
        take it from its command line (``--gpu 0``, ``--device cuda``), and a module that
        programs import may be called in ways the model does not follow, so neither is
        judged so."""
        unit = self.linted_unit(filename)
        if unit is None or unit.path is None or unit.path.suffix != ".ipynb":
            return False
        entries = [entry for entry in self.entries if entry.unit is unit]
        return bool(entries) and not any(entry.selects_cuda() for entry in entries)

    def reached_files(self, entry: EntryPoint) -> frozenset[str]:
        """The files whose code the entry point's program may run (its own included): the
        functions its path calls, constructed classes' methods, imported modules' top-level
        code and spawned workers. For rules that judge a call by the programs reaching it."""
        done = self._reached.get(entry.unit.index)
        if done is not None:
            return done
        seen, behind = self._walk(entry, None)
        found = frozenset(self.units[index].filename for index, _ in seen)
        self._reached[entry.unit.index] = found
        self._reached_functions[entry.unit.index] = seen
        if not behind:
            # No call behind an option on its path: the options leave out nothing.
            self._gated_functions[entry.unit.index] = seen
        return found

    def runs_listed(self, entry: EntryPoint, listed: str) -> bool:
        """Whether the entry point's program may run (as ``reached_files`` finds the functions
        it runs) a function that its module's data summary lists under ``listed``
        (``distributed_in``, ``launched_in``, ``mpi_in``)."""
        self.reached_files(entry)
        return any(
            key in self.units[index].summary.get("data", {}).get(listed, ())
            for index, key in self._reached_functions[entry.unit.index]
        )

    def _walk(
        self, entry: EntryPoint, on: Callable[[str], bool] | None
    ) -> tuple[frozenset[tuple[int, str]], bool]:
        """The functions (unit index, key) the entry point's program may run; with ``on``,
        not through calls behind options defaulting off that the program leaves off. And
        whether it went through any call behind such an option."""
        seen: set[tuple[int, str]] = set()
        todo = [(entry.unit, MODULE), (entry.unit, MAIN)]
        behind = False
        while todo:
            unit, key = todo.pop()
            node = (unit.index, key)
            if node in seen:
                continue
            seen.add(node)
            for _, callees, gated in self._edges(unit, key):
                if gated is not None:
                    if on is not None and not all(map(on, gated)):
                        continue
                    behind = True
                todo.extend(callees)
        return frozenset(seen), behind

    def _edges(self, unit: Unit, key: str) -> tuple[_Edge, ...]:
        """The calls of function ``key`` of ``unit`` that lead somewhere, each as the index of
        its event, the functions it may run (``_callees``) and the options defaulting off
        that gate it (``Unit.gates``; None if none), for ``_walk``: worked out once per
        function (every entry point of a library's examples walks the library), once the
        unit is summarised whole. Imported modules are summarised in full here: a module
        read but not parsed (it never seeds) still runs its own imports, and the files
        reached must not depend on which files the text prefilter let through."""
        node = (unit.index, key)
        found = self._edges_found.get(node)
        if found is not None:
            return found
        gates = unit.gates(key)
        found = tuple(
            (index, callees, gates.get(index))
            for index, event in enumerate(unit.functions().get(key, ()))
            if (callees := tuple(self._callees(unit, event, whole=True)))
        )
        if not unit.deferred:
            self._edges_found[node] = found
        return found

    def left_off(self, entry: EntryPoint, unit: Unit, key: str) -> bool:
        """Whether function ``key`` of ``unit`` runs in the entry point's program only behind
        options defaulting off that the program leaves off (see ``options_on``): its path
        reaches the function, but not once those calls are left out."""
        self.reached_files(entry)
        if (unit.index, key) not in self._reached_functions[entry.unit.index]:
            return False
        gated = self._gated_functions.get(entry.unit.index)
        if gated is None:
            gated = self._gated_functions[entry.unit.index] = self._walk(
                entry, self.options_on(entry)
            )[0]
        return (unit.index, key) not in gated

    def options_on(self, entry: EntryPoint) -> Callable[[str], bool]:
        """Whether the entry point's program turns on an option defaulting off (see
        ``gates``): a file it reaches gives the option's name a value (as a keyword, a dict or
        subscript key, an attribute), or that name behind a prefix string the program's code
        holds (``attn_`` + ``flash``: keywords routed by prefix), or passes on to the option
        a name it turns on."""
        done = self._options_on.get(entry.unit.index)
        if done is not None:
            return done
        self.reached_files(entry)
        enables: set[str] = set()
        prefixes: set[str] = set()
        passes: dict[str, set[str]] = {}
        for index in {index for index, _ in self._reached_functions[entry.unit.index]}:
            summary = self.units[index].summary
            enables.update(summary.get("enables", ()))
            prefixes.update(summary.get("prefixes", ()))
            for name, source in summary.get("passes", ()):
                passes.setdefault(str(name), set()).add(str(source))

        known: dict[str, bool] = {}

        def on(option: str) -> bool:
            found = known.get(option)
            if found is not None:
                return found
            seen, todo, found = {option}, [option], False
            while todo and not found:
                current = todo.pop()
                for name in (current, *(prefix + current for prefix in prefixes)):
                    if name in enables:
                        found = True
                        break
                    fresh = passes.get(name, set()) - seen
                    seen.update(fresh)
                    todo.extend(fresh)
            known[option] = found
            return found

        self._options_on[entry.unit.index] = on
        return on

    def _callees(
        self, unit: Unit, event: list[Json], *, whole: bool = False
    ) -> Iterator[tuple[Unit, str]]:
        targets: list[_Target | None] = []
        dispatched = self._dispatched(unit, event[1]) if event[0] == "c" else None
        if dispatched is not None:
            targets.extend(dispatched)
        elif event[0] in ("c", "p", "f"):
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

    # -- the project's text, for names used across files --------------------------------------

    def mentioning(self, unit: Unit, word: str) -> list[Path] | None:
        """The project files (under ``unit``'s project root) whose code names ``word``
        (``unit``'s own included when it does): those summarised already first, then the
        smaller ones; None when the tree is too large to read or too many files name it."""
        root = self._root_of(unit)
        tree = self._tree(root) if root is not None else None
        known = self._known_answer("mentioning", root, tree, word)
        found: list[tuple[Path, int]] | None
        if known is not None and tree is not None:
            question, named = known, set(known[3] or ())
            found = [(path, self.read[str(path)][1]) for path in tree.paths if str(path) in named]
        else:
            found = naming_files(tree, word) if tree is not None else None
            question = mentioning(str(root or ""), word, found)
        self.asked.append(question)
        if found is None or question[3] is None:
            return None

        def cost(item: tuple[Path, int]) -> tuple[bool, int]:
            known = self._by_path.get(self._real_path(item[0]))
            return (known is None or known.deferred, item[1])

        return [path for path, _ in sorted(found, key=cost)]

    def summarised(self, path: Path) -> Unit | None:
        """The summarised unit of a project file (parsed now if need be); None when it
        cannot be read or parsed."""
        found = self._unit_at(path)
        if found is None or found.deferred or found.summary.get("v") != SUMMARY_VERSION:
            return None
        return found

    def unreferenced(self, unit: Unit, name: str) -> bool:
        """Whether the project's code names ``name`` only where it defines it (``def name``):
        a function nothing calls, nor passes on."""
        root = self._root_of(unit)
        tree = self._tree(root) if root is not None and name else None
        known = self._known_answer("unreferenced", root, tree, name)
        question = known if known is not None else unreferenced(str(root or ""), name, tree)
        self.asked.append(question)
        return bool(question[3])

    def _root_of(self, unit: Unit) -> Path | None:
        """The project root above ``unit``'s file (None for a text without a path)."""
        if unit.path is None:
            return None
        directory = self._real_path(unit.path).parent
        root = self._project_roots.get(directory)
        if root is None:
            root = self._project_roots[directory] = find_project_root(directory)
        return root

    def _known_answer(
        self, kind: str, root: Path | None, tree: Tree | None, word: str
    ) -> TextQuestion | None:
        """An earlier pass's answer to a question about ``tree``, as its text is now: kept
        only while the tree has the same files with the same stamps as those the answer was
        worked out for (a file added, removed or changed since makes it be read)."""
        if self._known is None or root is None or tree is None:
            return None
        question = self._known.answers.get((kind, str(root), word))
        if question is None:
            return None
        if root not in self._known_roots:
            stamps = self._known.stamps
            inside = os.path.join(str(root), "")
            listed = [str(path) for path in tree.paths]
            self._known_roots[root] = all(
                stamps.get(path) == self.read.get(path) for path in listed
            ) and len(listed) == sum(1 for path in stamps if path.startswith(inside))
        return question if self._known_roots[root] else None

    def _tree(self, root: Path) -> Tree | None:
        """The Python files under ``root`` and their bytes (read once), or None when the
        tree is larger than this is worth."""
        if root not in self._trees:
            self._trees[root] = read_tree(root, self.probed, self.read)
        return self._trees[root]

    def linted_unit(self, filename: str) -> Unit | None:
        """The unit of a file linted in this run."""
        return self._linted.get(filename)

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
        top, _, rest = qualified.partition(".")
        taken = unit.summary.get("taken", ())
        for module in layout.FROM_IMPORTED:
            if qualified.startswith(module + "."):
                package, _, name = module.rpartition(".")
                if name in taken:
                    return None
                return name + qualified[len(module) :], f"from {package} import {name}"
        if top in taken:
            return None
        alias = layout.CONVENTIONAL_ALIASES.get(top)
        if alias is not None and alias not in taken:
            # ``import numpy as np``, as the community (and ruff's ICN001) spells it.
            return alias + ("." + rest if rest else ""), f"{top} as {alias}"
        return qualified, top

    def seed_lines(
        self,
        unit: Unit,
        families: Iterable[str],
        before_row: int,
        offset: str | None = None,
        *,
        value: str | None = None,
    ) -> tuple[list[str], list[str]] | None:
        """Seed calls for ``families`` (``value``, by default the configured seed, plus
        ``offset``) and the imports they need; numpy's carries ``# noqa: NPY002`` where
        ruff checks its legacy-numpy rule (``numpy_noqa``)."""
        value = seed_value(str(self.options.seed) if value is None else value, offset)
        lines: list[str] = []
        imports: list[str] = []
        for family in rng.FAMILIES:
            if family not in families:
                continue
            spelled = self.spell(unit, _SEED_CALL[family], before_row)
            if spelled is None:
                return None
            text, module = spelled
            lines.append(f"{text}({value})" + (numpy_noqa(unit.path) if family == "numpy" else ""))
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
        header, _ = header_at(unit, at.row)
        if not indent and not prefix and lines and layout.after_imports(header, at.row):
            # Code right after the import block: a blank line keeps the block what isort
            # (ruff I001) wants.
            body = newline + body
        edits: list[Edit] = []
        placements = self._import_placements(
            unit, [layout.parse_import(module) for module in imports], at.row
        )
        for placed in placements:
            where = Location(placed.row, placed.column)
            if where > at:
                return None
            if where == at and end is None:
                body = placed.text + body
                continue
            edits.append(Edit(placed.text, where, where))
        edits.append(Edit(body, at, end or at))
        return tuple(edits)

    def definition(
        self, unit: Unit, lines: Sequence[str], imports: Sequence[str], before: Location
    ) -> tuple[Edit, ...] | None:
        """Edits adding a top-level function (``lines``, unindented) after the imports and
        constants that open ``unit``, with PEP 8's blank lines, and the ``imports`` it needs;
        None when that place is not before ``before`` (where the function is first used)."""
        newline = str(unit.summary.get("newline", "\n"))
        header, _ = header_at(unit, before.row)
        # Nested lines follow the file's own indentation unit (a tab-indented file stays so).
        unit_indent = str(unit.summary.get("indent", INDENT))
        lines = [reindent(line, unit_indent) for line in lines]
        placed = layout.place_definition(header, lines, newline)
        at = Location(placed.row, placed.column)
        if at > before:
            return None
        edits: list[Edit] = []
        body = placed.text
        for found in self._import_placements(
            unit, [layout.parse_import(module) for module in imports], before.row
        ):
            where = Location(found.row, found.column)
            if where > at:
                return None
            if where == at:
                body = found.text + body
                continue
            edits.append(Edit(found.text, where, where))
        edits.append(Edit(body, at, at))
        return tuple(edits)

    # -- where code that must run before the work goes -----------------------------------------

    def placements(self, entry: EntryPoint) -> list[Placement]:
        """Where seeds and settings take effect for an entry point's work. A process started
        fresh (``torch.multiprocessing.spawn``, a spawn context) runs its function from the
        defaults: what the parent set never reaches it, so each spawned worker function
        that works (draws random numbers, trains, runs convolutions) gets a placement at
        its start (after its docstring and ``global``/``nonlocal`` declarations). The entry
        point's own start comes first when its main process works too, or when no worker
        placement can be made. A model file's smoke test gets none, nor a launcher that
        hands the work to a cluster job (the job runs elsewhere: its own code is the place)."""
        if entry.smoke or _launches_jobs(entry):
            return []
        found: list[Placement] = []
        working = False
        for spawn, worker in entry.workers:
            if not (worker.used() or worker.trains is not None or worker.conv is not None):
                continue
            working = True
            placement = self.worker_start(spawn)
            if placement is not None and all(
                (p.unit.index, p.at) != (placement.unit.index, placement.at) for p in found
            ):
                found.append(placement)
        profile = entry.profile
        trains = profile.trains is not None and self.worker_running(profile.trains, found) is None
        main_works = (
            bool(self.main_families(entry, found))
            or trains
            or (profile.conv is not None and not working)
        )
        if main_works or not found:
            found.insert(0, self.entry_placement(entry))
        return found

    def main_families(self, entry: EntryPoint, workers: Sequence[Placement]) -> set[str]:
        """The families the main process consumes itself: work it does by calling a worker
        function directly (``train(0, ...)`` when there is one device) runs after that
        worker's own placement."""
        profile = entry.profile
        found: set[str] = set()
        for family, chain in (*profile.use.items(), *profile.later_use.items()):
            if self.worker_running(chain, workers) is None:
                found.add(family)
        for family, uses in profile.exposed.items():
            if any(self.worker_running(chain, workers) is None for _, chain in uses):
                found.add(family)
        return found

    def settles(self, entry: EntryPoint) -> bool:
        """Whether deterministic settings may be inserted into an entry point's program:
        not into a model file's smoke test (it never trains), a launcher that hands the
        work to a cluster job (the job runs in another process), or a program that measures
        speed (a profiler run or a benchmark timer: deterministic kernels change what it
        times)."""
        return not (entry.smoke or _launches_jobs(entry) or entry.unit.summary.get("times"))

    def settings_placements(
        self, entry: EntryPoint, spawn: Spawn | None = None, chains: Sequence[Chain] = ()
    ) -> list[Placement]:
        """Where deterministic settings take effect for the work of an entry point, none
        where they must not go (``settles``):

        - a spawned worker's work (``spawn``): the start of that worker function;
        - work of the main process (``chains``, the paths to its kernels) that runs by
          calling a spawned worker function directly: the start of that function, which
          covers both;
        - a main process that trains nowhere while its spawned workers do (it builds the
          model and hands it over): the start of each worker that trains;
        - otherwise just before the main process's first seed in the entry's own file
          (above the comment lines that describe that statement; before the loop when the
          seeding is repeated in one); none when there is no such seed."""
        if not self.settles(entry):
            return []
        if spawn is not None:
            start = self.worker_start(spawn)
            return [start] if start is not None else []
        workers = [p for p in (self.worker_start(s) for s, _ in entry.workers) if p is not None]
        if chains:
            running = [self.worker_running(chain, workers) for chain in chains]
            first = running[0]
            if first is not None and all(p is first for p in running):
                return [first]
        if entry.profile.trains is None:
            training: list[Placement] = []
            for worker_spawn, worker in entry.workers:
                start = self.worker_start(worker_spawn)
                if (
                    worker.trains is not None
                    and start is not None
                    and all((p.unit.index, p.at) != (start.unit.index, start.at) for p in training)
                ):
                    training.append(start)
            if training:
                return training
        seeded = self.seed_placement(entry)
        return [seeded] if seeded is not None else []

    def seed_chain(self, entry: EntryPoint) -> Chain | None:
        """The path from the entry point to the main process's first seed."""
        profile = entry.profile
        chain: Chain | None = profile.first_seed
        if chain is None:
            chain = next(iter((*profile.seed.values(), *profile.later_seed.values())), None)
        return chain

    def seed_site(self, entry: EntryPoint) -> Site | None:
        """The statement of the entry point's own file that leads to its first seed."""
        chain = self.seed_chain(entry)
        if chain is None:
            return None
        site = self.anchor(entry, chain)
        if site[0] != entry.unit.index or site[1] < 0:
            return None
        return site

    def seed_placement(self, entry: EntryPoint) -> Placement | None:
        """Just before the main process's first seed, in the entry point's own file (the
        statement there that leads to it), above the comment lines right before it."""
        site = self.seed_site(entry)
        if site is None:
            return None
        unit = entry.unit
        loop = unit.loop(site[1])
        if loop is not None:
            # A seed the program repeats (one run per seed): the settings, made once, go
            # before the loop.
            return Placement(unit, Location(loop[0], 1), loop[1])
        _, _, indent, _ = unit.statement(site[1])
        return Placement(unit, Location(unit.above(site[1]), 1), str(indent))

    def worker_running(self, chain: Chain, workers: Sequence[Placement]) -> Placement | None:
        """The placement of the worker function that ``chain`` (a path of the main process)
        runs through, if it calls one of ``workers``' functions directly."""
        for placement in workers:
            spawn = placement.spawn
            if spawn is None:
                continue
            inside = self.statements_of(self.units[spawn.unit], spawn.key)
            if any(site[0] == spawn.unit and site[1] in inside for site in chain):
                return placement
        return None

    def statements_of(self, unit: Unit, key: str) -> frozenset[int]:
        """The statements of function ``key`` of ``unit`` that its events happen in."""
        return frozenset(int(event[-2]) for event in unit.functions().get(key, ()))

    def entry_placement(self, entry: EntryPoint) -> Placement:
        """The start of an entry point (see ``entry_start``)."""
        at, indent, end, prefix, suffix = self.entry_start(entry)
        return Placement(entry.unit, at, indent, end, prefix, suffix)

    def worker_start(self, spawn: Spawn) -> Placement | None:
        """The start of a spawned worker function, after its docstring and declarations."""
        unit = self.units[spawn.unit]
        start = self.function_start(unit, spawn.key)
        if start is None:
            return None
        at, indent, params = start
        return Placement(unit, at, indent, spawn=spawn, params=tuple(params))

    def after(self, unit: Unit, statement: int) -> Placement:
        """Right after a (simple) statement, in its block."""
        _, end_row, indent, _ = unit.statement(statement)
        return Placement(unit, Location(int(end_row) + 1, 1), str(indent))

    def insert(
        self,
        placement: Placement,
        lines: Sequence[str],
        imports: Sequence[str],
        *,
        finding: Unit | None = None,
    ) -> tuple[Edit, ...] | None:
        """Edits writing statement ``lines`` at ``placement`` with the ``imports`` they
        need at the top of its module; edits in another file than the ``finding``'s name
        their file."""
        edits = self.insertion(
            placement.unit,
            placement.at,
            lines,
            imports,
            indent=placement.indent,
            prefix=placement.prefix,
            suffix=placement.suffix,
            end=placement.end,
        )
        if edits is None or finding is None or finding is placement.unit:
            return edits
        return tuple(dataclasses.replace(e, filename=placement.unit.filename) for e in edits)

    def rank(self, placement: Placement) -> str | None:
        """The parameter of a spawned worker that holds its process index, when it is an
        int on every path: ``torch.multiprocessing.spawn`` passes it first (or the first
        parameter is named like a rank), and every direct call of the function in the run
        passes an int literal for it (``train(0, a, h)``, ``fn(rank=0, ...)``); another
        argument could be anything (``main_worker(args.gpu, ...)`` with ``--gpu``
        defaulting to None)."""
        spawn = placement.spawn
        if spawn is None or not placement.params:
            return None
        first = placement.params[0]
        if not (spawn.indexed or "rank" in first.lower()):
            return None
        target = (spawn.unit, spawn.key)
        if self._shards_data(self.units[spawn.unit], spawn.key):
            # Every rank must build the same dataset for a DistributedSampler to split it:
            # the ranks share one seed.
            return None
        for unit, ref, positional, keywords in self._direct_calls():
            if positional is True or (positional is None and first in keywords):
                continue
            found = self._resolve_ref(unit, ref)
            if isinstance(found, _Function) and (found.unit.index, found.key) == target:
                return None
        return first

    def launch_rank(self, entry: EntryPoint, placement: Placement) -> tuple[str, str | None] | None:
        """At the start of an entry point whose program a launcher runs once per process, the
        process's rank as a fix writes it (0 when run alone), and the import it needs:
        ``int(os.environ.get("RANK", 0))`` where the program builds an accelerate
        ``Accelerator`` (``accelerate launch`` starts every process through torchrun),
        ``MPI.COMM_WORLD.Get_rank()`` where it calls into MPI (``mpiexec`` starts them). None
        elsewhere, and where the ranks must share a seed: a ``DistributedSampler`` splits one
        dataset that every rank builds."""
        if placement.spawn is not None or entry.workers or placement.unit is not entry.unit:
            return None
        if self.runs_listed(entry, "launched_in"):
            qualified, written = "os.environ.get", 'int({}("RANK", 0))'
        elif self.runs_listed(entry, "mpi_in"):
            qualified, written = "mpi4py.MPI.COMM_WORLD.Get_rank", "{}()"
        else:
            return None
        if any(self._shards_data(entry.unit, key) for key in (MODULE, MAIN)):
            return None
        spelled = self.spell(placement.unit, qualified, placement.at.row)
        if spelled is None:
            return None
        text, module = spelled
        return written.format(text), module

    def _shards_data(self, unit: Unit, key: str) -> bool:
        """Whether the path of function ``key`` reaches a file that splits a dataset across
        ranks with a ``DistributedSampler``."""
        seen: set[tuple[int, str]] = set()
        todo = [(unit, key)]
        while todo:
            current, name = todo.pop()
            if (current.index, name) in seen:
                continue
            seen.add((current.index, name))
            if current.summary.get("data", {}).get("distributed"):
                return True
            for event in current.functions().get(name, ()):
                todo.extend(self._callees(current, event))
        return False

    def _direct_calls(self) -> Iterator[tuple[Unit, Json, bool | None, list[str]]]:
        """Every call of project code in the run: the unit, the callee's reference, whether
        the first positional argument is an int literal, the keywords given int literals."""
        for unit in self.units:
            for ref, positional, keywords in unit.summary.get("arguments", ()):
                if ref != ["g"]:
                    yield unit, ref, positional, list(keywords)

    def program_seed(self, entry: EntryPoint) -> ProgramSeed | None:
        """The seed the program already passes, where it first seeds a generator itself
        (``torch.manual_seed(args.seed)``), when that argument is a plain value a fix may
        repeat right after the call (see ``ProgramSeed``)."""
        chain = entry.profile.first_seed
        if chain is None:
            return None
        index, statement, row, _ = chain[-1]
        unit = self.units[index]
        for key, events in unit.functions().items():
            texts = {int(found[0]): found for found in unit.summary.get("sargs", {}).get(key, ())}
            for position, event in enumerate(events):
                if (
                    event[0] == "s"
                    and int(event[-2]) == statement
                    and int(event[-1]) == row
                    and position in texts
                ):
                    found = texts[position]
                    return ProgramSeed(
                        unit,
                        statement,
                        str(found[1]),
                        guarded=position in unit.contexts(key),
                        checked=len(found) > 2 and bool(found[2]),
                        key=key,
                        position=position,
                    )
        return None

    def option_seed(self, entry: EntryPoint) -> tuple[Placement, str] | None:
        """The seed option the entry point parses itself (``args = parser.parse_args()`` in
        its ``__main__`` block or at its top level, with a ``--seed`` option): the place
        right after that statement and the seed to use there (``args.seed``; with the
        configured seed as the fallback when the option defaults to None). None when
        something is drawn before that statement."""
        found = entry.unit.summary.get("seed_option")
        value = self.option_value(entry)
        if not found or value is None:
            return None
        statement = int(found[0])
        _, end_row, _, _ = entry.unit.statement(statement)
        profile = entry.profile
        for chain in (*profile.use.values(), *profile.later_use.values()):
            first = chain[0]
            if first[0] != entry.unit.index or int(first[2]) <= int(end_row):
                return None
        return self.after(entry.unit, statement), value

    def option_value(self, entry: EntryPoint, params: Sequence[str] | None = None) -> str | None:
        """The entry point's parsed seed option as a fix writes it (``args.seed``, or
        ``args.seed if args.seed is not None else <seed>`` when it defaults to None); with
        ``params``, only when the namespace reaches a function under its name (a spawned
        worker that takes ``args``)."""
        found = entry.unit.summary.get("seed_option")
        if not found:
            return None
        text, none_default = str(found[1]), bool(found[2])
        if params is not None and text.split(".", 1)[0] not in params:
            return None
        if none_default:
            return f"{text} if {text} is not None else {self.options.seed}"
        return text

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


def numpy_noqa(path: Path | None) -> str:
    """The comment a line seeding numpy's legacy global generator ends with: ``# noqa:
    NPY002`` where ruff checks that rule for the file, else none."""
    return "  # noqa: NPY002" if layout.ruff_checks(path, "NPY002") else ""


@dataclass(frozen=True)
class ProgramSeed:
    """Where a program first seeds a generator itself: its unit, statement and argument as
    written (``text``); ``guarded`` when that seed runs only on some paths, ``checked`` when
    the one branch around it is ``if <text> is not None:`` (the program seeds only when
    given a seed)."""

    unit: Unit
    statement: int
    text: str
    guarded: bool
    checked: bool
    # The function holding the seeding call and the index of its event there.
    key: str = ""
    position: int = -1

    def beside(self) -> set[str]:
        """The deterministic settings (``Profile.settings`` kinds) the same function makes
        in exactly the seed's branches (``cudnn.deterministic = True`` next to it under
        ``if args.seed is not None:``)."""
        contexts = self.unit.contexts(self.key)
        mine = contexts.get(self.position)
        events = self.unit.functions().get(self.key, ())
        return {
            str(event[1])
            for index, event in enumerate(events)
            if event[0] == "d" and contexts.get(index) == mine
        }


def seed_value(base: str, offset: str | None = None) -> str:
    """``base + offset`` as a fix writes it: ``rank`` alone for a base of 0."""
    if offset is None:
        return base
    if base.strip() == "0":
        return offset
    if " if " in base:
        base = f"({base})"
    return f"{base} + {offset}"


class Listings:
    """What directories hold, each listed once: module lookups ask whether ``x.py`` or
    ``x/__init__.py`` is a file under a few roots for tens of thousands of names, most of
    them absent (libraries). One listing answers for every name in a directory, with what
    ``os.path.isfile`` and ``os.path.isdir`` say (symlinks followed); a directory that
    cannot be listed is asked entry by entry."""

    def __init__(self) -> None:
        self._kinds: dict[str, dict[str, int] | None] = {}

    def _kind(self, directory: str, name: str) -> int | None:
        kinds = self._kinds.get(directory, _UNLISTED)
        if kinds is _UNLISTED:
            kinds = self._kinds[directory] = _listed(directory)
        return None if kinds is None else kinds.get(name, 0)

    def is_file(self, directory: str, name: str) -> bool:
        kind = self._kind(directory, name)
        return os.path.isfile(os.path.join(directory, name)) if kind is None else kind == _FILE

    def is_dir(self, directory: str, name: str) -> bool:
        kind = self._kind(directory, name)
        return os.path.isdir(os.path.join(directory, name)) if kind is None else kind == _DIR


class _OnDisk(Listings):
    """Entries asked of the file system one by one (for names with an empty part, whose
    paths ``os.path.join`` spells its own way)."""

    def _kind(self, directory: str, name: str) -> int | None:
        return None


_UNLISTED: Any = object()
_FILE, _DIR = 1, 2
# A directory with more entries is asked entry by entry (a data directory next to the code
# can hold millions of files; a lookup needs only a few of its names).
_MAX_LISTED = 4096


def _listed(directory: str) -> dict[str, int] | None:
    """Each entry of ``directory``: a file, a directory or neither (0); empty when there is
    no such directory, None when it cannot be read or holds more than ``_MAX_LISTED``."""
    kinds: dict[str, int] = {}
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if len(kinds) >= _MAX_LISTED:
                    return None
                try:
                    kind = _FILE if entry.is_file() else _DIR if entry.is_dir() else 0
                except OSError:
                    kind = 0
                kinds[entry.name] = kind
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError:  # (a directory that can be searched but not read)
        return None
    return kinds


def _find_module(
    name: str,
    roots: Sequence[str],
    tops: dict[tuple[str, str], bool] | None = None,
    probed: set[str] | None = None,
    listings: Listings | None = None,
) -> Path | None:
    """The file ``import name`` loads from one of ``roots``. ``tops`` remembers whether a
    root holds the name's top-level package or module at all: most imports name libraries,
    and one check of their first part spares probing every dotted path. ``probed`` collects
    the directories whose listing the answer depends on (the whole-run cache checks them).
    ``listings``: what the directories hold (shared by the lookups of a pass)."""
    parts = name.split(".")
    plain = all(parts)
    listings = (listings or Listings()) if plain else _OnDisk()
    for root in roots:
        if tops is not None:
            top = (root, parts[0])
            present = tops.get(top)
            if present is None:
                if probed is not None:
                    probed.add(root)
                present = tops[top] = listings.is_dir(root, parts[0]) or listings.is_file(
                    root, parts[0] + ".py"
                )
            if not present:
                continue
        # (Paths joined as strings: what ``os.path.join`` gives where no part is empty and
        # the root does not end with a separator, and cheaper, for tens of thousands of names.)
        if plain and not root.endswith(os.sep):
            parent = os.sep.join((root, *parts[:-1]))
            base = f"{parent}{os.sep}{parts[-1]}"
        else:
            base = os.path.join(root, *parts)
            parent = os.path.dirname(base)
        if probed is not None:
            probed.update((parent, base))
        if listings.is_file(parent, parts[-1] + ".py"):
            return Path(base + ".py")
        if listings.is_dir(parent, parts[-1]) and listings.is_file(base, "__init__.py"):
            return Path(base, "__init__.py")
    return None


def header_at(unit: Unit, row: int) -> tuple[layout.Header, layout.Cell | None]:
    """The header that code at ``row`` of ``unit`` follows: the module's, or in a notebook
    that of the code cell holding the row (with the cell)."""
    cells = unit.summary.get("cells")
    if cells:
        cell = layout.cell_at([layout.Cell.from_json(found) for found in cells], row)
        if cell is not None:
            return cell.header, cell
    return layout.Header.from_json(unit.summary.get("header")), None


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
    read: dict[str, Stamp] | None = None,
    asked: list[TextQuestion] | None = None,
    known: TextAnswers | None = None,
) -> tuple[dict[str, list[Diagnostic]], dict[str, list[Diagnostic]]]:
    """Project-level diagnostics of a run, by file name; and the per-file ``findings`` of the
    ``settling`` rules revised by ``SettledRule.settle`` now that the programs are known.
    ``probed`` receives the directories the module lookups listed, ``read`` the files read
    as text (with their stamps), ``asked`` what was asked of that text and the answers;
    ``known``: an earlier pass's answers to such questions, as the text is now."""
    if not rules and not settling:
        return {}, {}
    program = Program(units, options, load, known)
    settled: dict[str, list[Diagnostic]] = {}
    for filename, diagnostics in (findings or {}).items():
        for rule in settling:
            mine = [d for d in diagnostics if d.code == rule.CODE]
            if mine:
                settled.setdefault(filename, []).extend(rule.settle(program, filename, mine))
    found = program.diagnostics(rules)
    if probed is not None:
        probed.update(program.probed)
    if read is not None:
        read.update(program.read)
    if asked is not None:
        asked.extend(program.asked)
    return found, settled


__all__ = [
    "FIX_PARTNERS",
    "Chain",
    "Ctx",
    "EntryPoint",
    "Loader",
    "Placement",
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
    "compatible",
    "seed_value",
]
