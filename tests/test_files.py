"""Which files are linted: directories, default excludes, .gitignore, --force-exclude."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repro_lint.config import Config
from repro_lint.files import TEMP_SUFFIX, discover, leftover_of, make_temp, module_name, temp_prefix


def tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import torch\n", encoding="utf-8")


def found(root: Path, monkeypatch: pytest.MonkeyPatch, *paths: str, **config: object) -> list[str]:
    monkeypatch.chdir(root)
    given = [Path(p) for p in paths] or [Path(".")]
    result = discover(given, Config(root=root, **config))  # type: ignore[arg-type]
    return [f.display for f in result.files]


def test_default_excludes_and_suffixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree(
        tmp_path,
        [
            "src/a.py",
            "src/b.pyi",
            "src/c.txt",
            ".venv/lib/x.py",
            "build/y.py",
            "node_modules/z.py",
            "src/__pycache__/q.py",
            ".git/hooks/h.py",
        ],
    )
    assert found(tmp_path, monkeypatch) == ["src/a.py", "src/b.pyi"]


def test_gitignore_is_honoured_unless_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(tmp_path, ["keep.py", "generated/gen.py", "pkg/tmp_x.py", "pkg/ok.py"])
    (tmp_path / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (tmp_path / "pkg" / ".gitignore").write_text("tmp_*.py\n", encoding="utf-8")
    assert found(tmp_path, monkeypatch) == ["keep.py", "pkg/ok.py"]
    assert len(found(tmp_path, monkeypatch, respect_gitignore=False)) == 4


def test_exclude_patterns_and_explicit_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(tmp_path, ["train.py", "legacy/old.py", "tests/test_x.py"])
    assert found(tmp_path, monkeypatch, extend_exclude=("legacy/",)) == [
        "tests/test_x.py",
        "train.py",
    ]
    # An explicitly named file is linted even when excluded...
    assert found(tmp_path, monkeypatch, "legacy/old.py", extend_exclude=("legacy/",)) == [
        "legacy/old.py"
    ]
    # ...unless --force-exclude (pre-commit passes every staged file by name).
    monkeypatch.chdir(tmp_path)
    config = Config(root=tmp_path, extend_exclude=("legacy/",))
    assert discover([Path("legacy/old.py")], config, force_exclude=True).files == []


def test_symlink_loop_is_reported_not_followed_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(tmp_path, ["pkg/a.py"])
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")
    monkeypatch.chdir(tmp_path)
    result = discover([Path(".")], Config(root=tmp_path))
    assert [f.display for f in result.files] == ["pkg/a.py"]
    assert any("symlink loop" in w for w in result.warnings)


def test_a_link_to_a_directory_walked_already_is_no_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Documentation that links one language's pages into another's: the files are linted
    # once, where they were found first, and nothing is wrong (a note for -v only).
    tree(tmp_path, ["docs/en/api/conf.py", "docs/en/index.py"])
    (tmp_path / "docs" / "zh").mkdir()
    os.symlink("../en/api", tmp_path / "docs" / "zh" / "api")
    monkeypatch.chdir(tmp_path)
    result = discover([Path(".")], Config(root=tmp_path))
    assert [f.display for f in result.files] == ["docs/en/api/conf.py", "docs/en/index.py"]
    assert result.warnings == []
    assert result.notes == ["skipped docs/zh/api: the same directory as docs/en/api"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_unreadable_directory_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree(tmp_path, ["ok.py", "secret/x.py"])
    (tmp_path / "secret").chmod(0)
    try:
        monkeypatch.chdir(tmp_path)
        result = discover([Path(".")], Config(root=tmp_path))
        assert [f.display for f in result.files] == ["ok.py"]
        assert any("secret" in w for w in result.warnings)
    finally:
        (tmp_path / "secret").chmod(0o755)


def test_paths_outside_cwd_are_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree(tmp_path, ["proj/a.py"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = discover([tmp_path / "proj"], Config(root=tmp_path / "proj"))
    assert [f.display for f in result.files] == [(tmp_path / "proj" / "a.py").as_posix()]


def test_module_names_follow_packages(tmp_path: Path) -> None:
    tree(
        tmp_path,
        ["src/pkg/__init__.py", "src/pkg/sub/__init__.py", "src/pkg/sub/m.py", "scripts/run.py"],
    )
    assert module_name(tmp_path / "src/pkg/sub/m.py") == ("pkg.sub.m", False)
    assert module_name(tmp_path / "src/pkg/__init__.py") == ("pkg", True)
    assert module_name(tmp_path / "scripts/run.py") == ("run", False)


def test_make_temp_makes_a_private_file_named_as_a_leftover_is_recognised(
    tmp_path: Path,
) -> None:
    fd, path = make_temp(tmp_path, temp_prefix("train.py"), TEMP_SUFFIX)
    os.close(fd)
    name = os.path.basename(path)
    assert os.path.dirname(path) == str(tmp_path)
    assert leftover_of(name) == ("train.py", os.getpid())
    if os.name == "posix":
        assert os.stat(path).st_mode & 0o777 == 0o600
    fd, other = make_temp(tmp_path, temp_prefix("train.py"), TEMP_SUFFIX)
    os.close(fd)
    assert other != path


def test_make_temp_never_opens_a_file_that_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every name it draws is taken: it tries others, then gives up rather than reuse one.
    monkeypatch.setattr(os, "urandom", lambda n: b"\0" * n)
    taken = tmp_path / ".tmp-00000000.marshal"
    taken.write_bytes(b"kept")
    with pytest.raises(FileExistsError):
        make_temp(tmp_path, ".tmp-", ".marshal")
    assert taken.read_bytes() == b"kept"
    if os.name == "posix":
        # Nor does it follow a symlink left where its file would go.
        taken.unlink()
        taken.symlink_to(tmp_path / "elsewhere")
        with pytest.raises(FileExistsError):
            make_temp(tmp_path, ".tmp-", ".marshal")
        assert not (tmp_path / "elsewhere").exists()
