"""When the cyclic garbage collector runs: paused during a file's pass (whose cycles are freed
at its end), while the cache is decoded and while the project pass runs (both frozen after, in
a one-shot process); never turned back on in a process that turned it off. And literal values
read without ``literal_eval``'s cycles, equal to libcst's."""

from __future__ import annotations

import ast
import contextlib
import gc
import marshal
import weakref
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest

from repro_lint import arguments, cache, collector
from repro_lint.config import Config
from repro_lint.diagnostics import FileResult
from repro_lint.file_pass import lint_one
from repro_lint.settings import Settings
from repro_lint.source import Stamp

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train.py"
EXAMPLES = EXAMPLE.parent


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    return weakref.ref(first)


@pytest.fixture
def collecting() -> Iterator[None]:
    """The collector on, nothing frozen, not one-shot; as it was after the test."""
    was_enabled, was_one_shot = gc.isenabled(), collector._ONE_SHOT
    gc.enable()
    gc.unfreeze()
    collector._ONE_SHOT = False
    yield
    gc.unfreeze()
    collector._ONE_SHOT = was_one_shot
    if not was_enabled:
        gc.disable()


def test_one_pass_pauses_collection_and_frees_the_pass_cycles(collecting: None) -> None:
    with collector.one_pass():
        assert not gc.isenabled()
        left = _cycle()
        assert left() is not None
    assert gc.isenabled()
    assert left() is None


def test_decoding_pauses_and_freezes_only_in_a_one_shot_process(collecting: None) -> None:
    with collector.decoding():
        assert not gc.isenabled()
        data = [[i, {"k": [i]}] for i in range(100)]
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    collector.one_shot()
    with collector.decoding():
        data.append([1])
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_importing_pauses_collection_and_freezes_in_a_one_shot_process(
    collecting: None,
) -> None:
    with collector.importing():
        assert not gc.isenabled()
        with collector.importing():  # (an import within an import)
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    collector.one_shot()
    with collector.importing():
        pass
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_a_process_that_turned_the_collector_off_keeps_it_off(collecting: None) -> None:
    collector.one_shot()
    gc.disable()
    with collector.one_pass():
        left = _cycle()
    assert not gc.isenabled()
    assert left() is not None  # no collection ran
    with collector.decoding():
        pass
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_analysing_pauses_and_a_pass_within_still_frees_its_cycles(collecting: None) -> None:
    with collector.analysing():
        assert not gc.isenabled()
        with collector.one_pass():
            left = _cycle()
        # The file's pass collected its cycles (the youngest objects) and the pause goes on.
        assert left() is None
        assert not gc.isenabled()
        model = _cycle()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert model() is not None  # left to the collector of a long-lived process
    gc.collect()
    assert model() is None
    collector.one_shot()
    with collector.analysing():
        frozen = _cycle()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    gc.collect()
    assert frozen() is not None  # frozen until the process exits


def test_a_process_that_turned_the_collector_off_keeps_it_off_in_the_analysis(
    collecting: None,
) -> None:
    collector.one_shot()
    gc.disable()
    with collector.analysing(), collector.one_pass():
        left = _cycle()
    assert not gc.isenabled()
    assert left() is not None  # no collection ran
    assert gc.get_freeze_count() == 0


def test_a_file_pass_leaves_no_cyclic_garbage(collecting: None) -> None:
    settings = Settings.from_config(Config())
    text = EXAMPLE.read_text()
    lint_one(text, "train.py", settings, summarise=True)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = lint_one(text, "train.py", settings, summarise=True)
        found = gc.collect()
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert result.summary and result.diagnostics
    # Without the pass's own collection, its libcst tree and records (which point at each
    # other) wait here: thousands of objects.
    assert found < 50


def test_pythons_parse_in_a_file_pass_runs_under_the_pause(
    collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's tree is built for every file, parsed by libcst or not: a collection started by
    its allocations would walk all that the process holds (a run's results so far)."""
    seen: list[bool] = []
    real = ast.parse

    def parse(source: str) -> ast.Module:
        seen.append(gc.isenabled())
        return real(source)

    monkeypatch.setattr(ast, "parse", parse)
    settings = Settings.from_config(Config())
    # A file that needs no libcst parse, and one that does.
    lint_one('"""Nothing to do."""\nx = 1\n', "plain.py", settings)
    lint_one(EXAMPLE.read_text(), "train.py", settings)
    assert seen == [False, False]
    assert gc.isenabled()


def test_read_sealed_decodes_under_the_pause(
    tmp_path: Path, collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    real = marshal.loads

    def loads(payload: bytes) -> object:
        seen.append(gc.isenabled())
        return real(payload)

    monkeypatch.setattr(marshal, "loads", loads)
    key = b"k" * 32
    cache.write_sealed(tmp_path, "shard", {"entries": [1, 2]}, key)
    assert cache.read_sealed(tmp_path / "shard", key) == {"entries": [1, 2]}
    assert seen == [False]
    assert gc.isenabled()


def test_summaries_sent_packed_are_unpacked_under_the_pause(
    collecting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold run's summaries arrive from the workers marshalled; the thousands of lists and
    dicts they unpack to live until the run ends, like the cache's decoded data."""
    from repro_lint import engine
    from repro_lint.files import SourceFile

    settings = Settings.from_config(Config())
    alone = engine._lint_file_alone(SourceFile("train.py", EXAMPLE), settings, summarise=True)
    sent = engine._packed(alone)
    assert sent.packed is not None and not sent.result.summary
    seen: list[bool] = []
    real = marshal.loads

    def loads(data: bytes) -> object:
        if data == sent.packed:  # (not the imports' bytecode)
            seen.append(gc.isenabled())
        return real(data)

    monkeypatch.setattr(marshal, "loads", loads)
    unpacked = engine._unpacked(sent)
    per_file: dict[str, tuple[FileResult, tuple[Stamp, str] | None]] = {
        "train.py": (sent.result, None)
    }
    engine._with_summaries(per_file, {"train.py": sent.packed})
    assert seen == [False, False]
    assert gc.isenabled()
    assert unpacked.result.summary == per_file["train.py"][0].summary == alone.result.summary


LITERALS = [
    '"plain"',
    "'single'",
    'r"raw\\d"',
    'b"bytes"',
    '"""triple\nline"""',
    '"\\u00e9scape"',
    '"cuda:0"',
    '"a" "b"',
    'b"a" b"b"',
    '"a" f"{x}"',
    '("a"\n "b" "c")',
    "0",
    "42",
    "0x1F",
    "1_000",
]


@pytest.mark.parametrize("source", LITERALS)
def test_literal_values_equal_libcsts(source: str) -> None:
    node = cst.parse_expression(source)
    if isinstance(node, cst.Integer):
        assert arguments.evaluated(node) == node.evaluated_value
        assert arguments.literal_int(node) == node.evaluated_value
        return
    assert isinstance(node, cst.SimpleString | cst.ConcatenatedString)
    assert arguments.string_value(node) == node.evaluated_value
    expected = node.evaluated_value
    assert arguments.literal_str(node) == (expected if isinstance(expected, str) else None)


def test_a_literal_is_evaluated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = ast.literal_eval

    def counted(text: str) -> object:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(ast, "literal_eval", counted)
    monkeypatch.setattr(arguments, "_EVALUATED", {})
    node = cst.parse_expression('"not seen before"')
    assert isinstance(node, cst.SimpleString)
    assert arguments.evaluated(node) == arguments.evaluated(node) == "not seen before"
    assert calls == ['"not seen before"']
    long = cst.parse_expression('"' + "x" * 300 + '"')
    assert isinstance(long, cst.SimpleString)
    arguments.evaluated(long)
    arguments.evaluated(long)
    assert len(calls) == 3  # long texts are not kept
    # The memory is bounded: full, it starts again.
    monkeypatch.setattr(arguments, "_REMEMBERED_COUNT", 2)
    for number in range(5):
        integer = cst.parse_expression(str(1000 + number))
        assert isinstance(integer, cst.Integer)
        assert arguments.evaluated(integer) == 1000 + number
        assert len(arguments._EVALUATED) <= 2


def test_only_the_console_script_is_one_shot(collecting: None, tmp_path: Path) -> None:
    """A command invoked in-process (a test, a host program) leaves the process as it was:
    only ``run``, the console script's entry, makes it one-shot."""
    from click.testing import CliRunner

    from repro_lint.cli import main

    (tmp_path / "train.py").write_text(EXAMPLE.read_text())
    result = CliRunner().invoke(main, ["check", "--no-cache", str(tmp_path / "train.py")])
    assert result.exit_code == 1, result.output
    assert not collector._ONE_SHOT


VALUE_NAME_SNIPPETS = [
    "import torch\nmodel = Net()\nmodel = torch.nn.DataParallel(model).to(device)\n",
    "class T:\n    def f(self):\n        model = self.model\n        x: int = x + 1\n",
    "model = build(cfg)\nmodel = other(cfg, model=1)\nmodel = [m for model in models]\n",
    "a = b = f(a)\na, b = b, a\nx = (y := x)\nx = lambda x: 0\nx = f(g(h(y)))[x]\n",
    "d[k] = v\nobj.attr = obj\nm = m\n",
]


def test_names_met_in_an_assigned_value_are_those_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary tells ``model = Wrap(model)`` (still the model) from ``model = f()`` by
    the names met in the value while the traversal passes it, not by searching the value
    again: the same answer as a search, for every assignment of the snippets and examples."""
    from repro_lint import summary

    checked: list[bool] = []
    original = summary.SummaryCollector._leave_assign

    def leave(self, targets, value, value_names=None):  # type: ignore[no-untyped-def]
        if value_names is not None and len(targets) == 1 and isinstance(targets[0], cst.Name):
            name = targets[0].value
            mentioned = summary._mentions(value, name)
            assert (name in value_names) == mentioned, name
            checked.append(mentioned)
        original(self, targets, value, value_names)

    monkeypatch.setattr(summary.SummaryCollector, "_leave_assign", leave)
    sources = [
        *("import torch\n" + snippet for snippet in VALUE_NAME_SNIPPETS),
        *(p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.rglob("*.py"))),
    ]
    for source in sources:
        lint_one(source, "example.py", Settings.from_config(Config()), None, summarise=True)
    assert len(checked) > 40 and any(checked) and not all(checked)


@pytest.mark.parametrize(
    "path",
    [
        *sorted(EXAMPLES.glob("*.py")),
        # Larger files with everything the rules and the summary follow (scopes, bindings,
        # loaders, catalogued calls, fixes).
        Path(collector.__file__).parent / "program.py",
        Path(collector.__file__).parent / "rules" / "nondeterministic_op.py",
    ],
    ids=lambda path: path.name,
)
def test_a_files_pass_leaves_nothing_for_the_collector(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a pass builds is freed by reference counting when it ends: a cycle left between
    its objects would keep the whole tree until a collection walked all of it. (Only
    ``ast.literal_eval``'s own cycle of helpers may be left, for a literal too long to be
    remembered: see ``arguments.evaluated``.)"""
    settings = Settings.from_config(Config(root=EXAMPLES))
    text = path.read_text(encoding="utf-8")
    lint_one(text, path.name, settings, path, summarise=True)  # (caches filled first)
    monkeypatch.setattr("repro_lint.file_pass.one_pass", contextlib.nullcontext)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = lint_one(text, path.name, settings, path, summarise=True)
        gc.collect()
        left = [
            type(o).__qualname__
            for o in gc.garbage
            if type(o).__module__.startswith(("libcst", "repro_lint"))
            or isinstance(o, type)
            or (callable(o) and "literal_eval" not in getattr(o, "__qualname__", ""))
        ]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert result.summary
    assert left == []
