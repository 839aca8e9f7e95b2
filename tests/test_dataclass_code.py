"""The compiled code of dataclasses' methods, kept between runs (``dataclass_code``)."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from repro_lint import dataclass_code
from repro_lint.dataclass_code import Store

# Classes of every kind dataclasses writes methods for, described by what they do. Written
# with ``from __future__ import annotations``: the code kept must not inherit it.
CLASSES = textwrap.dedent(
    """
    from __future__ import annotations

    import dataclasses
    import json
    import sys

    from repro_lint import dataclass_code

    def define():
        @dataclasses.dataclass(frozen=True, order=True)
        class Point:
            x: int
            y: int = 0

        @dataclasses.dataclass(slots=True)
        class Bag:
            items: list = dataclasses.field(default_factory=list)
            name: str = "bag"

        @dataclasses.dataclass(eq=False)
        class Plain:
            value: float

        return Point, Bag, Plain

    def behaviour(Point, Bag, Plain):
        p, q = Point(1, 2), Point(1)
        try:
            p.x = 3
            frozen = False
        except dataclasses.FrozenInstanceError:
            frozen = True
        bag = Bag()
        bag.items.append(1)
        return {
            "repr": [repr(p), repr(Bag()), repr(Plain(1.5))],
            "eq": [p == Point(1, 2), p == q, Plain(1.0) == Plain(1.0)],
            "order": [q < p, sorted([p, q]) == [q, p]],
            "hash": hash(p) == hash(Point(1, 2)),
            "frozen": frozen,
            "factory": [bag.items, Bag().items],
            "init": str(Point.__init__.__annotations__),
            "code": [Point.__init__.__code__.co_code.hex(), Point.__eq__.__code__.co_code.hex()],
        }

    plain = behaviour(*define())
    store = dataclass_code.install(sys.argv[1])
    stored_before = len(store.stored)
    hooked = behaviour(*define())
    print(json.dumps({
        "same": plain == hooked,
        "hooked": hooked,
        "stored": stored_before,
        "compiled": len(store.compiled),
        "used": len(store.used),
    }))
    """
)


@pytest.fixture(autouse=True)
def _bytecode_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores save as where Python writes bytecode, whatever this environment says."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def _run(tmp_path: Path, store: Path, *, bytecode: bool = True) -> dict[str, Any]:
    script = tmp_path / "classes.py"
    script.write_text(CLASSES, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, str(script), str(store)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_a_second_process_execs_the_code_the_first_compiled(tmp_path: Path) -> None:
    store = tmp_path / "cache" / "code.bin"
    first = _run(tmp_path, store)
    assert first["same"] is True
    assert first["stored"] == 0 and first["compiled"] > 0
    assert store.is_file()
    second = _run(tmp_path, store)
    # Every method came from the file, and the classes behave as dataclasses' own.
    assert second["same"] is True
    assert second["compiled"] == 0 and second["used"] == first["compiled"]
    assert second["hooked"] == first["hooked"]


def test_nothing_is_written_where_python_writes_no_bytecode(tmp_path: Path) -> None:
    store = tmp_path / "code.bin"
    result = _run(tmp_path, store, bytecode=False)
    assert result["same"] is True
    assert not store.exists()


@pytest.mark.parametrize(
    "content",
    [b"", b"not ours\n", b"repro-lint dataclass code 0 O0\n" + b"\x00" * 8, None],
    ids=["empty", "foreign", "other-interpreter", "truncated"],
)
def test_a_file_that_is_not_ours_is_ignored_and_replaced(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "code.bin"
    if content is None:
        good = Store(str(path))
        good.code("x = 1\n")
        assert good.save()
        content = path.read_bytes()[:-3]
    path.write_bytes(content)
    store = Store(str(path))
    assert store.entries() == set()
    store.code("y = 2\n")
    assert store.save()
    assert Store(str(path)).entries() == {"y = 2\n"}


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_a_file_others_may_write_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "code.bin"
    store = Store(str(path))
    store.code("x = 1\n")
    assert store.save()
    assert Store(str(path)).entries() == {"x = 1\n"}
    path.chmod(0o666)
    assert Store(str(path)).entries() == set()


def test_the_code_is_compiled_without_this_modules_future_flags(tmp_path: Path) -> None:
    source = "def f() -> int:\n    return 1\n"
    namespace: dict[str, Any] = {}
    exec(Store(str(tmp_path / "code.bin")).code(source), namespace)
    # Under ``from __future__ import annotations`` (this module's) it would be the string.
    assert namespace["f"].__annotations__ == {"return": int}


def test_a_full_file_keeps_what_the_process_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "code.bin"
    old = Store(str(path))
    for index in range(4):
        old.code(f"a = {index}\n")
    assert old.save()
    monkeypatch.setattr(dataclass_code, "LIMIT", 4)
    store = Store(str(path))
    store.code("a = 0\n")  # used
    store.code("b = 0\n")  # new: the file would hold five
    assert store.save()
    assert Store(str(path)).entries() == {"a = 0\n", "b = 0\n"}


def test_a_group_that_is_not_code_is_compiled_again_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "code.bin"
    path.write_bytes(dataclass_code._header() + marshal.dumps({"pkg": b"\x00 not code"}))
    store = Store(str(path))
    namespace: dict[str, Any] = {}
    exec(store.code("x = 1\n", "pkg"), namespace)
    assert namespace["x"] == 1
    assert "x = 1\n" in store.compiled and "x = 1\n" not in store.used
    assert store.save()
    assert Store(str(path)).entries() == {"x = 1\n"}


def test_a_group_is_read_only_when_something_is_looked_up_in_it(tmp_path: Path) -> None:
    path = tmp_path / "code.bin"
    first = Store(str(path))
    first.code("a = 1\n", "one")
    first.code("b = 2\n", "two")
    assert first.save()
    store = Store(str(path))
    assert store.groups == ["one", "two"]
    store.code("b = 2\n", "two")
    assert set(store.stored) == {"b = 2\n"} and store.used == {"b = 2\n"}
    store.code("a = 1\n", "one")
    assert store.used == {"a = 1\n", "b = 2\n"} and not store.compiled
    # A new entry rewrites its own group; the other keeps its bytes, unread.
    store.code("c = 3\n", "two")
    assert store.save()
    again = Store(str(path))
    assert again._groups["one"] == store._groups["one"]
    assert again.entries() == {"a = 1\n", "b = 2\n", "c = 3\n"}


def test_dataclasses_code_is_grouped_by_the_classs_package(tmp_path: Path) -> None:
    """In a process of its own: a dataclass made in a module of package ``pkg`` has its
    methods stored in the group ``pkg``."""
    path = tmp_path / "code.bin"
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(
        "import dataclasses\n\n\n@dataclasses.dataclass\nclass Point:\n    x: int\n    y: int\n"
    )
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from repro_lint import dataclass_code
        store = dataclass_code.install({str(path)!r})
        import pkg.mod
        assert pkg.mod.Point(1, 2).y == 2
        store.save()
        """
    )
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, env=environment)
    store = Store(str(path))
    assert store.groups == ["pkg"]
    assert any("self.x=x" in source for source in store.entries())  # (its __init__)
