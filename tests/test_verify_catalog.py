"""The catalog's aten operators, checked against the installed torch."""

from __future__ import annotations

import pytest

from repro_lint.catalog import ENTRIES, Aten, Entry

pytestmark = pytest.mark.torch

ATEN = [
    pytest.param(entry, op, id=f"{entry.id}:{op.packet}") for entry in ENTRIES for op in entry.aten
]


def test_runnable_entries_name_their_operators() -> None:
    """Only an entry whose backward runs as another entry's operator has none; third-party
    entries run in their packages' own operators (or in PyTorch's, as other entries)."""
    missing = {e.id for e in ENTRIES if not e.aten and e.package is None}
    assert missing == {"repeat-interleave-backward-cuda"}
    assert all(not e.aten for e in ENTRIES if e.package is not None)


@pytest.mark.parametrize(("entry", "op"), ATEN)
def test_every_aten_operator_resolves(entry: Entry, op: Aten) -> None:
    import torch

    packet = getattr(torch.ops.aten, op.packet)
    assert packet.overloads(), f"{entry.id}: aten.{op.packet} has no overloads"


@pytest.mark.parametrize(("entry", "op"), ATEN)
def test_aten_conditions_read_schema_arguments(entry: Entry, op: Aten) -> None:
    """Conditions read aten's argument names (``self`` as ``input``) of some overload."""
    import torch

    packet = getattr(torch.ops.aten, op.packet)
    overloads = [getattr(packet, name)._schema for name in packet.overloads()]
    names = [
        {"input" if a.name == "self" else a.name for a in schema.arguments} for schema in overloads
    ]
    for param in op.when.params():
        assert any(param in found for found in names), (entry.id, op.packet, param)


def test_operators_are_forward_operators() -> None:
    """The tracer locates a backward hazard at its forward call (the line the user wrote),
    so entries list forward operators only."""
    backward = [(e.id, op.packet) for e in ENTRIES for op in e.aten if "backward" in op.packet]
    assert backward == []
