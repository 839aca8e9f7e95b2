"""The quicker constructors of libcst's node classes (``cst_nodes``): the same trees, the same
signatures, and validation where it was."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from repro_lint import cst_nodes, cst_parse

ROOT = Path(__file__).resolve().parents[1]

# Run in a process of its own: the constructors are installed once per process, and this
# suite's other tests parse enough files to have installed them already.
_SAME_TREES = textwrap.dedent(
    """
    import dataclasses, inspect, sys
    from pathlib import Path
    import libcst as cst
    from repro_lint import cst_nodes

    texts = [p.read_text(encoding="utf-8") for p in sorted(Path(sys.argv[1]).rglob("*.py"))]
    texts.append("async def f[T](*a, b=1, **k) -> T:\\n    x: int = (yield)\\n"
                 "    match a:\\n        case [1, *r] if r: pass\\n"
                 "    try: pass\\n    except* E: pass\\n    print(f'{x!r:>{w}}', lambda: 0)\\n")
    before_trees = [cst.parse_module(t) for t in texts]
    classes = [getattr(cst, n) for n in dir(cst) if isinstance(getattr(cst, n), type)]
    classes = [c for c in classes if issubclass(c, cst.CSTNode)]
    before = {c: (c.__init__, str(inspect.signature(c))) for c in classes}
    assert not cst_nodes.installed()
    cst_nodes.install()
    changed = [c for c in classes if c.__init__ is not before[c][0]]
    assert len(changed) > 100, len(changed)
    for c in classes:
        assert str(inspect.signature(c)) == before[c][1], c
    for text, tree in zip(texts, before_trees):
        again = cst.parse_module(text)
        assert again.deep_equals(tree) and again.code == text
    print(len(texts), len(changed))
    """
)


def test_the_same_trees_and_signatures_with_the_quicker_constructors() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SAME_TREES, str(ROOT / "repro_lint")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    files, changed = map(int, done.stdout.split())
    assert files > 50 and changed > 100


def test_defaults_and_factories_as_dataclasses_make_them() -> None:
    cst_nodes.install()
    name = cst.Name("x")
    assert name.value == "x" and name.lpar == () and name.rpar == ()
    first, second = cst.Call(func=name), cst.Call(func=name)
    # A default factory makes a fresh value for every node.
    assert first.whitespace_after_func.deep_equals(cst.SimpleWhitespace(""))
    assert first.whitespace_after_func is not second.whitespace_after_func
    assert cst.Name("y", lpar=[cst.LeftParen()], rpar=[cst.RightParen()]).lpar[0] is not None
    with pytest.raises(TypeError, match=r"Name\.__init__\(\) missing 1 required positional"):
        cst.Name()  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        name.value = "y"  # type: ignore[misc]


def test_nodes_built_outside_a_parse_are_validated() -> None:
    cst_nodes.install()
    cst_parse.parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("two words")
    with pytest.raises(cst.CSTValidationError):
        cst.UnaryOperation(
            operator=cst.Not(whitespace_after=cst.SimpleWhitespace("")),
            expression=cst.Name("x"),
        )


def test_a_parse_does_not_validate_and_then_does_again() -> None:
    cst_nodes.install()
    seen: list[str] = []
    real = cst_parse._unvalidated

    def hooked_validate(node: cst.CSTNode) -> None:
        seen.append(type(node).__name__)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cst.Name, "_validate", hooked_validate)
        with real():
            cst.parse_module("y = f(1)\n")  # (two names)
        assert seen == []
        cst.Name("z")
        assert seen == ["Name"]


def test_installed_after_a_few_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(cst_parse, "_parses", 0)
    monkeypatch.setattr(cst_nodes, "install", lambda: calls.append(True))
    for _ in range(cst_parse.QUICK_AFTER + 2):
        cst_parse.parse_module("a = 1\n")
    assert calls == [True]


def test_a_libcst_it_cannot_read_keeps_its_own_constructors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unreadable(cls: type, number: int) -> str:
        raise TypeError("a field of a kind this does not know")

    monkeypatch.setattr(cst_nodes, "_installed", False)
    monkeypatch.setattr(cst_nodes, "_constructor", unreadable)
    before = cst.Name.__init__
    cst_nodes.install()
    assert cst.Name.__init__ is before and cst_nodes.installed()
