"""Settings: [tool.repro-lint], selection, per-file ignores, and errors that exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from repro_lint.cli import main
from repro_lint.config import Config, ConfigError, load_config
from repro_lint.rules import select
from repro_lint.settings import Settings

HAZARDS = (
    "import torch\n"
    "torch.backends.cudnn.benchmark = True\n"
    "torch.use_deterministic_algorithms(False)\n"
)


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.repro-lint]\n{table}\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(HAZARDS, encoding="utf-8")
    return tmp_path


def check(cwd: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(
        main, ["check", ".", "--no-cache", "--output-format", "concise", *args]
    )


def codes(result: Result) -> list[str]:
    return [line.split()[1] for line in result.stdout.splitlines() if line.startswith("train")]


@pytest.mark.parametrize(
    ("table", "key", "reason"),
    [
        ("selekt = ['RPL2']", "selekt", "unknown key"),
        ("seed = 'zero'", "seed", "integer"),
        ("seed = -1", "seed", "integer"),
        ("target-torch = 2.10", "target-torch", "string"),
        ("target-torch = 'latest'", "target-torch", "version"),
        ("select = ['RPL999']", "select", "matches no rule"),
        ("ignore = 'RPL2'", None, None),
        ("respect-gitignore = 'yes'", "respect-gitignore", "true or false"),
        ("output-format = 'xml'", "output-format", "expected one of"),
        ("per-file-ignores = ['x']", "per-file-ignores", "table"),
    ],
)
def test_bad_settings_exit_2_naming_key_file_and_reason(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    key: str | None,
    reason: str | None,
) -> None:
    result = check(project(tmp_path, table), monkeypatch)
    if key is None:  # a comma-separated string is accepted like a list
        assert (result.exit_code, codes(result)) == (0, [])
        return
    assert result.exit_code == 2
    assert f"`{key}`" in result.stderr and "pyproject.toml" in result.stderr
    assert reason is not None and reason in result.stderr


def test_invalid_toml_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint\nselect = [", encoding="utf-8")
    (tmp_path / "train.py").write_text(HAZARDS, encoding="utf-8")
    result = check(tmp_path, monkeypatch)
    assert result.exit_code == 2 and "pyproject.toml" in result.stderr


def test_a_toml_file_that_is_not_utf8_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (It ended the run with a traceback.)
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.repro-lint]\nselect = ["\xff"]\n')
    (tmp_path / "train.py").write_text(HAZARDS, encoding="utf-8")
    result = check(tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert "pyproject.toml" in result.stderr and "not valid TOML" in result.stderr
    assert "utf-8" in result.stderr


@pytest.mark.parametrize(
    ("table", "args", "expected"),
    [
        ("", (), ["RPL201", "RPL203"]),
        ("select = ['RPL201']", (), ["RPL201"]),
        ("select = ['cudnn-benchmark-enabled']", (), ["RPL201"]),
        ("ignore = ['RPL2']", (), []),
        ("ignore = ['RPL2']\nextend-select = ['RPL203']", (), ["RPL203"]),
        ("select = ['RPL2']\nignore = ['RPL203']", (), ["RPL201"]),
        ("", ("--select", "RPL203"), ["RPL203"]),
        ("select = ['RPL203']", ("--select", "RPL201"), ["RPL201"]),
        ("", ("--ignore", "deterministic-mode-disabled"), ["RPL201"]),
        ("per-file-ignores = {'train.py' = ['RPL201']}", (), ["RPL203"]),
        ("per-file-ignores = {'other.py' = ['RPL201']}", (), ["RPL201", "RPL203"]),
    ],
)
def test_selection(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    args: tuple[str, ...],
    expected: list[str],
) -> None:
    result = check(project(tmp_path, table), monkeypatch, *args)
    assert codes(result) == expected
    assert result.exit_code == (1 if expected else 0)


def test_syntax_errors_are_reported_whatever_is_selected() -> None:
    chosen = {rule.CODE for rule in select(("RPL201",), (), ())}
    assert chosen == {"RPL000", "RPL201"}
    assert "RPL000" not in {rule.CODE for rule in select(None, (), ("RPL000",))}
    assert "RPL000" in {rule.CODE for rule in select(None, (), ("RPL",))}


def test_closest_pyproject_with_a_table_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.repro-lint]\nseed = 3\n", encoding="utf-8")
    inner = tmp_path / "pkg"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    config = load_config(inner)
    assert config.seed == 3 and config.source == tmp_path / "pyproject.toml"


def test_config_file_option(tmp_path: Path) -> None:
    settings_file = tmp_path / "lint.toml"
    settings_file.write_text("seed = 5\nselect = ['RPL201']\n", encoding="utf-8")
    config = load_config(tmp_path, settings_file)
    assert config.seed == 5 and config.select == ("RPL201",)
    with pytest.raises(ConfigError):
        load_config(tmp_path, tmp_path / "missing.toml")


def test_unknown_selector_on_the_command_line_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = check(project(tmp_path, ""), monkeypatch, "--select", "XYZ1")
    assert result.exit_code == 2 and "XYZ1" in result.stderr


def test_settings_reject_unknown_per_file_selector() -> None:
    with pytest.raises(ConfigError):
        Settings.from_config(Config(per_file_ignores=(("*.py", ("NOPE",)),)))
