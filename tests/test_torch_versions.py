"""The target torch version: configured, else inferred from the project's dependencies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from repro_lint.torch_versions import TorchVersion, _lower_bound, parse_version, resolve_target


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


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (" Torch [cuda] >= 2.3", (2, 3)),
        ("torch(>=2.0)", (2, 0)),
        ("torch-geometric>=2.3", None),
        ("torch_scatter>=2.1", None),
        ("torch.utils>=2.1", None),
        ("torch2>=1.0", None),
        ("pytorch>=1.0", None),
    ],
)
def test_only_a_requirement_named_torch_counts(
    requirement: str, expected: tuple[int, int] | None
) -> None:
    assert _lower_bound(requirement) == (TorchVersion(*expected) if expected else None)


_RESOLVE = """
import json, sys
from pathlib import Path
from repro_lint.torch_versions import resolve_target
target = resolve_target(None, Path("."))
print(json.dumps([str(target.version), "packaging.requirements" in sys.modules]))
"""


@pytest.mark.parametrize(
    ("dependencies", "expected"),
    [
        (["numpy>=1.24", "click", "torchvision>=0.15"], ["2.0", False]),
        (["numpy>=1.24", "torch"], ["2.0", False]),
        (["numpy>=1.24", "torch >= 2.2, < 3"], ["2.2", False]),
        (["numpy>=1.24", "torch~=2.3.0"], ["2.3", True]),
        (["numpy>=1.24", "torch[cuda]>=2.4"], ["2.4", True]),
    ],
)
def test_the_requirement_parser_is_imported_only_where_needed(
    tmp_path: Path, dependencies: list[str], expected: list[object]
) -> None:
    # Importing packaging's requirement parser costs a run about 40 ms, in the check and in
    # its helper: it is needed only for a requirement of torch in a form other than a plain
    # name and plain releases.
    listed = ", ".join(f'"{line}"' for line in dependencies)
    (tmp_path / "pyproject.toml").write_text(f"[project]\ndependencies = [{listed}]\n")
    done = subprocess.run(
        [sys.executable, "-c", _RESOLVE], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == expected
