"""--fix never loses data: encodings, line endings, modes, read-only files, concurrent edits."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import repro_lint.fixes
from repro_lint.cli import main

HAZARD = "import torch\n# keep this comment\ntorch.backends.cudnn.benchmark = True  # and this\n"


def fix(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(
        main, ["check", ".", "--fix", "--no-cache", *args], catch_exceptions=False
    )


def test_fix_is_idempotent_and_keeps_comments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    assert fix(tmp_path, monkeypatch).exit_code == 0
    once = (tmp_path / "t.py").read_bytes()
    assert once == HAZARD.replace("True", "False").encode()
    assert fix(tmp_path, monkeypatch).exit_code == 0
    assert (tmp_path / "t.py").read_bytes() == once


def test_crlf_stays_crlf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (
        "import os\r\nimport torch\r\ntorch.use_deterministic_algorithms(True)\r\n"
        "torch.backends.cudnn.benchmark = True\r\n"
    )
    (tmp_path / "t.py").write_bytes(source.encode())
    assert fix(tmp_path, monkeypatch, "--target-torch", "2.1").exit_code == 0
    data = (tmp_path / "t.py").read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert data == (
        b'import os\r\nimport torch\r\n\r\nos.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")\r\n'
        b"torch.use_deterministic_algorithms(True)\r\n"
        b"torch.backends.cudnn.benchmark = False\r\n"
    )


def test_bom_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_bytes(b"\xef\xbb\xbf" + HAZARD.encode())
    assert fix(tmp_path, monkeypatch).exit_code == 0
    assert (tmp_path / "t.py").read_bytes() == b"\xef\xbb\xbf" + HAZARD.replace(
        "True", "False"
    ).encode()


def test_latin1_cookie_file_stays_latin1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (
        "# -*- coding: latin-1 -*-\nimport torch\nname = 'café'\n"
        "torch.backends.cudnn.benchmark = True\n"
    )
    (tmp_path / "t.py").write_bytes(source.encode("latin-1"))
    assert fix(tmp_path, monkeypatch).exit_code == 0
    assert (tmp_path / "t.py").read_bytes() == source.replace("True", "False").encode("latin-1")


def test_mode_and_symlink_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "real" / "train.py"
    target.parent.mkdir()
    target.write_text(HAZARD, encoding="utf-8")
    target.chmod(0o750)
    link = tmp_path / "src" / "train.py"
    link.parent.mkdir()
    link.symlink_to(target)
    assert fix(tmp_path / "src", monkeypatch).exit_code == 0
    assert link.is_symlink()
    assert "= False" in target.read_text(encoding="utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


def test_read_only_file_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.py"
    path.write_text(HAZARD, encoding="utf-8")
    path.chmod(0o444)
    result = fix(tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert "read-only" in result.stderr
    assert path.read_text(encoding="utf-8") == HAZARD
    assert "RPL201" in result.stdout  # still reported: nothing was fixed


def test_file_changed_while_fixing_is_not_clobbered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.py"
    path.write_text(HAZARD, encoding="utf-8")
    edited = HAZARD + "print('edited meanwhile')\n"
    real = repro_lint.fixes.fix_texts

    def edit_meanwhile(*args: object, **kwargs: object) -> object:
        # Another program (an editor) saves the file while repro-lint computes its fixes.
        path.write_text(edited, encoding="utf-8")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(repro_lint.fixes, "fix_texts", edit_meanwhile)
    result = fix(tmp_path, monkeypatch)
    assert "changed while it was being fixed" in result.stderr
    assert path.read_text(encoding="utf-8") == edited


def test_no_temporary_files_are_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.py").write_text(HAZARD, encoding="utf-8")
    fix(tmp_path, monkeypatch)
    assert sorted(os.listdir(tmp_path)) == ["t.py"]
