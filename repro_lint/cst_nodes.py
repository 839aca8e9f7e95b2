"""Quicker constructors for libcst's node classes, for a process that parses many files.

libcst's nodes are frozen dataclasses with ``__slots__``: the ``__init__`` that ``dataclasses``
writes for each sets every field through ``object.__setattr__`` (a frozen class refuses its
own ``__setattr__``), looking that function up on every call, then calls ``__post_init__``,
libcst's validation, which a parse skips (``cst_parse._unvalidated``) but still calls. The
parser calls those constructors for every node it builds, and they were about a sixth of a
parse.

``install`` gives each slotted node class an ``__init__`` with the same parameters, defaults
and default factories, in the same order, that stores each field through its slot's own
descriptor and calls ``__post_init__`` unless a parse has said it need not (``checking``).
What it builds is the same node: the same fields hold the same values. A class whose fields
are not all plain slots of its own or its bases keeps the constructor ``dataclasses`` wrote.

It is installed only after a few parses in one process (``cst_parse``): writing the
constructors costs a few milliseconds, which a run that parses one file would not win back.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import libcst as cst

from repro_lint import dataclass_code

# The generated constructors' globals: their defaults, factories and slot setters, and
# ``_checking``, whether they call ``__post_init__`` (see ``checking``).
# (``_FACTORY`` is the default that ``dataclasses`` gives a field with a factory: the
# signature reads the same, ``<factory>``.)
_NAMESPACE: dict[str, Any] = {
    "_checking": True,
    "_FACTORY": getattr(dataclasses, "_HAS_DEFAULT_FACTORY", object()),
}
_installed = False


def checking(on: bool) -> None:
    """Whether the installed constructors call ``__post_init__`` (libcst's validation)."""
    _NAMESPACE["_checking"] = on


def installed() -> bool:
    return _installed


def _node_classes() -> list[type]:
    """Every subclass of ``CSTNode``, in a fixed order (the source written from them is the
    key of its compiled code)."""
    seen: dict[type, None] = {}
    todo = [cst.CSTNode]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen[sub] = None
                todo.append(sub)
    return sorted(seen, key=lambda c: (c.__module__, c.__qualname__, "__slots__" in vars(c)))


def _slot(cls: type, name: str) -> Any:
    for base in cls.__mro__:
        found = vars(base).get(name)
        if found is not None:
            return found if isinstance(found, types.MemberDescriptorType) else None
    return None


def _constructor(cls: type, number: int) -> str | None:
    """The source of ``cls``'s constructor, its globals put in ``_NAMESPACE``; None where it
    keeps its own."""
    if not dataclasses.is_dataclass(cls) or "__init__" not in vars(cls):
        return None
    fields = dataclasses.fields(cls)
    if any(not f.init or f.kw_only is True for f in fields):
        return None
    params, body = ["self"], []
    for field in fields:
        slot = _slot(cls, field.name)
        if slot is None:
            return None
        key = f"{field.name}_{number}"
        value = field.name
        if field.default_factory is not dataclasses.MISSING:
            _NAMESPACE[f"_f_{key}"] = field.default_factory
            params.append(f"{field.name}=_FACTORY")
            value = f"_f_{key}() if {field.name} is _FACTORY else {field.name}"
        elif field.default is not dataclasses.MISSING:
            _NAMESPACE[f"_d_{key}"] = field.default
            params.append(f"{field.name}=_d_{key}")
        else:
            params.append(field.name)
        _NAMESPACE[f"_s_{key}"] = slot.__set__
        body.append(f"    _s_{key}(self, {value})")
    body.append("    if _checking:")
    body.append("        self.__post_init__()")
    return "\n".join([f"def __init__({', '.join(params)}):", *body, f"_made[{number}] = __init__"])


def install() -> None:
    """Give libcst's slotted node classes the quicker constructors (once per process)."""
    global _installed
    if _installed:
        return
    _installed = True
    classes: list[type] = []
    sources: list[str] = []
    made: dict[int, Any] = {}
    _NAMESPACE["_made"] = made
    try:
        for cls in _node_classes():
            if getattr(cls, "__post_init__", None) is not cst.CSTNode.__post_init__:
                continue  # (none does: its validation would be skipped with the others')
            source = _constructor(cls, len(classes))
            if source is not None:
                classes.append(cls)
                sources.append(source)
        exec(dataclass_code.compiled("\n".join(sources), __name__), _NAMESPACE)
    except Exception:  # (a libcst this does not know: its own constructors stay, all of them)
        return
    for number, cls in enumerate(classes):
        init = made[number]
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        init.__annotations__ = dict(vars(cls)["__init__"].__annotations__)
        cls.__init__ = init  # type: ignore[misc]


__all__ = ["checking", "install", "installed"]
