"""Checkpoints as the resume rule (RPL109) sees them: what a module saves, what it loads
back to resume, and whether it keeps the RNG states.

``CheckpointFacts`` rides along the project summary's traversal (``summary.py`` feeds it) and
writes the ``ckpt`` part of the summary:

- ``saves``: every ``torch.save`` of something a checkpoint holds, with its kind:
  ``resume`` (optimizer or scheduler state, an epoch or step counter), ``weights`` (model
  state only), ``full`` (both: a whole training state), or, inside a function that saves
  what its caller passes, ``param`` (a named parameter: the function is a checkpoint saver,
  judged by its callers' arguments) or ``args`` (``*args``/``**kwargs``: a generic helper,
  judged at its call sites);
- ``calls``: calls into project code whose arguments hold checkpoint content, with its kind;
- ``wrappers``: the functions that save what their caller passes (``param`` or ``args``);
- ``resume``: the module loads a checkpoint back to continue: an optimizer's
  ``load_state_dict``, or an epoch or step counter read from a checkpoint it loads;
- ``restorers``: the functions that load a checkpoint into whatever their caller hands them
  by keyword (``def restart(path, **kwargs)`` calling ``value.load_state_dict(checkpoint[
  key])`` for its keyword arguments), and ``restores``: the calls into project code that
  hand an optimizer or scheduler by keyword (``restart(path, optimizer=optimizer)``): such
  a call to a restorer resumes;
- ``rng``: the module reads an RNG state (``torch.get_rng_state()``, ``random.getstate()``...).

Loads of saved weights (``model.load_state_dict(torch.load(...))``) are events of their
function (``l``), so that the program model can tell a resume (training follows) from a
final evaluation of the best weights.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import libcst as cst

from repro_lint.arguments import literal_str
from repro_lint.names import Names
from repro_lint.summary_format import strongest
from repro_lint.walker import code_children

Json = Any

SAVE = frozenset({"torch.save", "torch.serialization.save"})
LOAD = frozenset({"torch.load", "torch.serialization.load"})
RNG_STATE_GETTERS = frozenset(
    {
        "torch.get_rng_state", "torch.random.get_rng_state", "torch.cuda.get_rng_state",
        "torch.cuda.get_rng_state_all", "torch.cuda.random.get_rng_state_all",
        "numpy.random.get_state", "random.getstate",
    }
)  # fmt: skip
# Shared by the many functions without a ``*args`` or ``**kwargs``.
_NO_NAMES: frozenset[str] = frozenset()
# Methods that read a generator's state (``generator.get_state()``, a sampler's or
# DataLoader's ``state_dict()`` is not one).
_RNG_STATE_METHODS = frozenset({"get_rng_state", "get_rng_state_all", "getstate"})
# Keys, keywords and names that make a checkpoint resumable, beyond the model's weights.
_RESUME_WORDS = frozenset(
    {"optimizer", "optimizers", "optim", "opt", "scheduler", "schedulers", "epoch", "iter",
     "iteration", "step", "steps", "scaler"}
)  # fmt: skip
_OPTIMIZERS = frozenset({"optimizer", "optimizers", "optim", "opt"})
# Keywords that hand a restorer what only a resume restores.
_RESTORED = _OPTIMIZERS | {"scheduler", "schedulers"}
# Counters read back from a loaded checkpoint to continue where it stopped.
_COUNTERS = frozenset({"epoch", "iter", "iteration", "step", "steps"})
_WORDS = re.compile(r"_+|(?<=[a-z0-9])(?=[A-Z])")


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORDS.split(text) if word}


def _resumable(text: str) -> bool:
    return bool(_words(text) & _RESUME_WORDS)


def _counter(text: str) -> bool:
    words = _words(text)
    return bool(words & _COUNTERS) or any(w.endswith(("epoch", "iter")) for w in words)


def content(node: cst.CSTNode) -> str | None:
    """What checkpoint content an expression holds: ``resume`` (optimizer or scheduler
    state, epoch or step counters: keys, keywords, ``optimizer.state_dict()``),
    ``weights`` (a ``state_dict``), ``full`` (both), or None."""
    resume = weights = False
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.DictElement:
            key = literal_str(current.key)
            if key is not None and _resumable(key):
                resume = True
        elif type(current) is cst.Arg and current.keyword is not None:
            if _resumable(current.keyword.value):
                resume = True
        elif type(current) is cst.Call and type(current.func) is cst.Attribute:
            if current.func.attr.value == "state_dict":
                receiver = current.func.value
                if type(receiver) is cst.Attribute:
                    receiver = receiver.attr
                if type(receiver) is cst.Name and _resumable(receiver.value):
                    resume = True  # (the optimizer's state, not the model's weights)
                    continue
                weights = True
        elif type(current) is cst.Name:
            if "state_dict" in current.value.lower():
                weights = True
        elif type(current) is cst.Attribute:
            if "state_dict" in current.attr.value.lower():
                weights = True
        stack.extend(code_children(current))
    if resume:
        return "full" if weights else "resume"
    return "weights" if weights else None


def _mentions(node: cst.CSTNode, name: str) -> bool:
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name and current.value == name:
            return True
        stack.extend(code_children(current))
    return False


class CheckpointFacts:
    """Collects one module's checkpoint facts during the summary's traversal."""

    def __init__(self, names: Names) -> None:
        self._names = names
        self._saves: list[list[Json]] = []
        self._calls: list[list[Json]] = []
        self._wrappers: dict[str, str] = {}
        self.resume = False
        self.rng = False
        self._loads = False
        # Per function: the last value assigned to each name (one step back), and the
        # names holding something ``torch.load`` returned.
        self._values: dict[str, dict[str, cst.BaseExpression]] = {}
        self._loaded: dict[str, set[str]] = {}
        self._params: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {}
        self._stores: set[int] = set()
        # Per function with ``**kwargs``: that name and the function's body, and whether the
        # body reads it once that is asked (``_reads_keywords``: rarely, so not per function).
        self._keywords: dict[str, tuple[str, cst.BaseSuite]] = {}
        self._reads: dict[str, bool] = {}
        self._restorers: list[str] = []
        self._restores: list[list[Json]] = []

    # -- traversal hooks ----------------------------------------------------------------------

    def enter_function(self, key: str, node: cst.FunctionDef) -> None:
        params = node.params
        # A tuple: a function has few parameters, and it has a function per definition.
        named = tuple(
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        )
        stars = frozenset(
            star.name.value
            for star in (params.star_arg, params.star_kwarg)
            if type(star) is cst.Param
        )
        self._params[key] = (named, stars or _NO_NAMES)
        keywords = params.star_kwarg
        if type(keywords) is cst.Param:
            self._keywords[key] = (keywords.name.value, node.body)

    def targets(self, targets: Sequence[cst.BaseExpression]) -> None:
        """Assignment targets about to be visited: their subscripts are stores."""
        for target in targets:
            if type(target) is cst.Subscript:
                self._stores.add(id(target))

    def assign(self, key: str, targets: Sequence[cst.BaseExpression], value: Json) -> None:
        if len(targets) != 1 or type(targets[0]) is not cst.Name or value is None:
            return
        name = targets[0].value
        values = self._values.setdefault(key, {})
        if name not in values or not _mentions(value, name):
            # ``snapshot = asdict(snapshot)`` keeps what the name held.
            values[name] = value
        loaded = self._loaded.setdefault(key, set())
        if self._from_load(key, value):
            loaded.add(name)
        else:
            loaded.discard(name)

    def subscript(self, node: cst.Subscript) -> None:
        """``checkpoint["epoch"]`` read back (not stored): a resume's counter."""
        if id(node) in self._stores or len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if type(index) is cst.Index:
            key = literal_str(index.value)
            if key is not None and _counter(key):
                self.resume = self.resume or self._loads

    def call(
        self, node: cst.Call, qualified: str | None, key: str, site: tuple[int, int]
    ) -> str | None:
        """Record what a call does with checkpoints: ``load`` for a load of saved weights
        into a model, ``save`` for a checkpoint save (the caller records them as ``l`` and
        ``k`` events of the function), else None."""
        func = node.func
        attr = func.attr.value if type(func) is cst.Attribute else None
        if qualified in LOAD:
            self._loads = True
        if qualified in RNG_STATE_GETTERS or attr in _RNG_STATE_METHODS:
            self.rng = True
        if qualified in SAVE:
            return "save" if self._save(node, key, site) else None
        if attr == "get" and node.args:
            text = literal_str(node.args[0].value)
            if text is not None and _counter(text):
                self.resume = self.resume or self._loads
        if attr == "load_state_dict" and type(func) is cst.Attribute:
            receiver = func.value
            text = receiver.attr.value if type(receiver) is cst.Attribute else ""
            if type(receiver) is cst.Name:
                text = receiver.value
            if type(receiver) is cst.Subscript and type(receiver.value) is cst.Attribute:
                text = receiver.value.attr.value
            if _words(text) & _OPTIMIZERS:
                self.resume = True
            if any(self._from_load(key, arg.value) for arg in node.args):
                if (
                    type(receiver) is cst.Name
                    and self._reads_keywords(key)
                    and receiver.value not in self._params[key][0]
                    and key not in self._restorers
                ):
                    # A state loaded into what the caller handed by keyword.
                    self._restorers.append(key)
                return "load"
        return None

    def project_call(
        self, node: cst.Call, ref: list[Json], key: str, site: tuple[int, int]
    ) -> None:
        """A call into project code: its arguments may be a checkpoint for a saver."""
        if any(
            arg.keyword is not None and _words(arg.keyword.value) & _RESTORED for arg in node.args
        ):
            self._restores.append(ref)
        kinds = [self._kind(key, arg.value) for arg in node.args]
        found = strongest(kinds)
        if found is not None:
            self._calls.append([key, site[0], site[1], ref, found])

    # -- helpers ------------------------------------------------------------------------------

    def _reads_keywords(self, key: str) -> bool:
        """Whether function ``key`` has ``**kwargs`` and its body reads them."""
        found = self._reads.get(key)
        if found is None:
            keywords = self._keywords.get(key)
            found = self._reads[key] = keywords is not None and _mentions(keywords[1], keywords[0])
        return found

    def _from_load(self, key: str, value: cst.BaseExpression) -> bool:
        """Whether a value comes from ``torch.load`` (the call, a name bound to its
        result, or a key of one)."""
        if type(value) is cst.Call:
            return self._names.qualified_name(value.func) in LOAD
        if type(value) is cst.Subscript:
            value = value.value
        return type(value) is cst.Name and value.value in self._loaded.get(key, ())

    def _kind(self, key: str, value: cst.BaseExpression) -> str | None:
        if type(value) is cst.Name:
            value = self._values.get(key, {}).get(value.value, value)
        return content(value)

    def _save(self, node: cst.Call, key: str, site: tuple[int, int]) -> bool:
        if "load" in _words(key.rsplit(".", 1)[-1]):
            # A save inside a loading function (through a buffer): not a checkpoint.
            return False
        if not node.args:
            return False
        first = node.args[0]
        named, stars = self._params.get(key, ((), _NO_NAMES))
        value = first.value
        if first.star or (
            type(value) is cst.Dict
            and any(
                type(e) is cst.StarredDictElement
                and type(e.value) is cst.Name
                and e.value.value in stars
                for e in value.elements
            )
        ):
            self._wrappers[key] = "args"
            self._saves.append([key, site[0], site[1], "args"])
            return True
        if type(value) is cst.Name and value.value in named:
            self._wrappers.setdefault(key, "param")
            self._saves.append([key, site[0], site[1], "param"])
            return True
        kind = self._kind(key, value)
        if kind is None:
            return False
        self._saves.append([key, site[0], site[1], kind])
        return True

    def summary(self) -> dict[str, Json] | None:
        if not (
            self._saves or self._calls or self.resume or self.rng or self._loads or self._restores
        ):
            return None
        return {
            "saves": self._saves,
            "calls": self._calls,
            "wrappers": self._wrappers,
            "resume": self.resume,
            "rng": self.rng,
            **({"restorers": self._restorers} if self._restorers else {}),
            **({"restores": self._restores} if self._restores else {}),
        }


__all__ = ["CheckpointFacts", "content"]
