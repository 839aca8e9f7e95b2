"""The target torch version: configured, else inferred from the project's dependencies."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro_lint.torch_versions import TorchVersion, parse_version, resolve_target


@pytest.mark.parametrize(
    ("files", "expected", "origin"),
    [
        (
            {"pyproject.toml": '[project]\ndependencies = ["torch>=2.1,<3"]\n'},
            (2, 1),
            "pyproject.toml dependencies",
        ),
        ({"pyproject.toml": '[project]\ndependencies = ["torch==2.4.1+cu121"]\n'}, (2, 4), None),
        ({"pyproject.toml": '[project]\ndependencies = ["torch~=1.13.0"]\n'}, (1, 13), None),
        (
            {"pyproject.toml": '[project]\ndependencies = ["torchvision>=0.20"]\n'},
            (2, 0),
            "default",
        ),
        ({"pyproject.toml": '[project]\ndependencies = ["torch<2.5"]\n'}, (2, 0), "default"),
        ({"pyproject.toml": '[tool.poetry.dependencies]\ntorch = "^2.3"\n'}, (2, 3), None),
        (
            {"requirements.txt": "# pinned\nnumpy\ntorch >= 2.2  # cpu\n"},
            (2, 2),
            "requirements.txt",
        ),
        ({"requirements-dev.txt": "-r base.txt\ntorch==1.12\n"}, (1, 12), None),
        (
            {
                "requirements.txt": "# $ conda create --name <env> --file <this file>\n"
                "numpy=1.18.1=py37h4f9e942_0\npytorch=1.4.0=py3.7_cuda10.1.243_cudnn7.6.3_0\n"
                "torchvision=0.5.0=py37_cu101\n"
            },
            (1, 4),
            "requirements.txt",
        ),
        (
            {"setup.cfg": "[options]\ninstall_requires =\n    numpy\n    torch>=1.9\n"},
            (1, 9),
            "setup.cfg install_requires",
        ),
        ({}, (2, 0), "default"),
    ],
)
def test_inferred_from_declared_dependencies(
    tmp_path: Path, files: dict[str, str], expected: tuple[int, int], origin: str | None
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    target = resolve_target(None, tmp_path)
    assert target.version == TorchVersion(*expected)
    if origin is not None:
        assert target.origin == origin


def test_configured_version_wins(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("torch>=1.9\n", encoding="utf-8")
    assert resolve_target("2.10", tmp_path).version == TorchVersion(2, 10)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2.1", (2, 1)), ("2.13.0", (2, 13)), ("2.4.0+cu121", (2, 4)), ("2", (2, 0)), ("x", None)],
)
def test_parse_version(text: str, expected: tuple[int, int] | None) -> None:
    assert parse_version(text) == (TorchVersion(*expected) if expected else None)
