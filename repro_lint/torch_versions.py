"""The torch version a project targets: flag/config, else its declared dependency, else 2.0."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from repro_lint.config import parse_toml

DEFAULT_TARGET = "2.0"
# A plain release (``2.1``, ``2.4.0``): read without packaging, whose import costs more than
# a one-file run's analysis (it is imported for anything else).
_PLAIN_RELEASE = re.compile(r"\d+(?:\.\d+)*")
# A requirement whose name is torch (PEP 508: the name first, then extras, a version, a marker
# or a URL, none of which continues a name). Only such a line is given to packaging: a project
# declares tens of dependencies, and importing packaging's requirement parser for them costs a
# run about 40 ms, in the check and again in its helper.
_NAMES_TORCH = re.compile(r"\s*torch(?![A-Za-z0-9._-])", re.I)
# Torch required in the plain forms that most projects write (``torch``, ``torch>=2.1``,
# ``torch >= 2.1, < 3``), whose bounds are read without packaging too.
_CLAUSE = r"(>=|<=|==|!=|>|<)[ \t]*(\d+(?:\.\d+)*)"
_PLAIN_TORCH = re.compile(
    rf"[ \t]*torch[ \t]*(?:{_CLAUSE}[ \t]*(?:,[ \t]*{_CLAUSE}[ \t]*)*)?", re.I
)
_PLAIN_CLAUSE = re.compile(_CLAUSE)


class TorchVersion(NamedTuple):
    """``major.minor`` of a torch release; compares as a tuple."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


@dataclass(frozen=True, slots=True)
class TargetTorch:
    """The resolved target and where it came from (for ``-v`` output and docs)."""

    version: TorchVersion
    origin: str


def parse_version(text: str) -> TorchVersion | None:
    """``"2.1"``, ``"2.1.0"``, ``"2.4.0+cu121"`` -> (2, 1); None when it is not a version."""
    text = text.strip()
    if _PLAIN_RELEASE.fullmatch(text):
        release = tuple(int(part) for part in text.split("."))
    else:
        from packaging.version import InvalidVersion, Version

        try:
            release = Version(text).release
        except InvalidVersion:
            return None
    if not release:
        return None
    return TorchVersion(release[0], release[1] if len(release) > 1 else 0)


def _lower_bound(requirement: str) -> TorchVersion | None:
    """The lowest torch version a requirement admits, if it names torch and has one."""
    if _NAMES_TORCH.match(requirement) is None:
        return None
    if _PLAIN_TORCH.fullmatch(requirement):
        found = [
            parse_version(version)
            for operator, version in _PLAIN_CLAUSE.findall(requirement)
            if operator in (">=", "==", ">")
        ]
        return max((bound for bound in found if bound is not None), default=None)
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    if req.name.lower() != "torch":
        return None
    bounds = []
    for spec in req.specifier:
        if spec.operator in (">=", "==", "~=", "===", ">"):
            version = parse_version(spec.version.replace(".*", ""))
            if version is not None:
                bounds.append(version)
    return max(bounds) if bounds else None


def _poetry_lower_bound(constraint: Any) -> TorchVersion | None:
    if isinstance(constraint, dict):
        constraint = constraint.get("version")
    if not isinstance(constraint, str):
        return None
    match = re.match(r"\s*(?:\^|~|>=|==|=)?\s*(\d+(?:\.\d+)*)", constraint)
    return parse_version(match.group(1)) if match else None


def _text(path: Path) -> str | None:
    """A small regular file's text (a special file is never opened for reading)."""
    from repro_lint.source import read_small

    data = read_small(path)
    try:
        return data.decode("utf-8") if data is not None else None
    except UnicodeDecodeError:
        return None


def _from_pyproject(path: Path) -> TorchVersion | None:
    text = _text(path)
    try:
        data = parse_toml(text) if text is not None else {}
    except ValueError:
        return None
    project = data.get("project", {})
    for line in project.get("dependencies", []) if isinstance(project, dict) else []:
        if isinstance(line, str) and (found := _lower_bound(line)) is not None:
            return found
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {})
    if isinstance(poetry, dict) and "torch" in poetry:
        return _poetry_lower_bound(poetry["torch"])
    return None


# A conda package pin, as ``conda list --export`` writes it into a requirements file
# (``pytorch=1.4.0=py3.7_cuda10.1.243_cudnn7.6.3_0``).
_CONDA_PIN = re.compile(r"(?:py)?torch=(\d+(?:\.\d+)*)(?:=\S*)?", re.I)


def _from_requirements(path: Path) -> TorchVersion | None:
    text = _text(path)
    if text is None:
        return None
    lines = text.splitlines()
    for raw in lines:
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        if found := _lower_bound(line):
            return found
        conda = _CONDA_PIN.fullmatch(line)
        if conda is not None and (found := parse_version(conda.group(1))):
            return found
    return None


def _from_setup_cfg(path: Path) -> TorchVersion | None:
    import configparser  # (only for a project with a setup.cfg)

    parser = configparser.ConfigParser()
    text = _text(path)
    if text is None:
        return None
    try:
        parser.read_string(text)
        requires = parser.get("options", "install_requires", fallback="")
    except configparser.Error:
        return None
    for line in requires.splitlines():
        if line.strip() and (found := _lower_bound(line.strip())):
            return found
    return None


def infer_from_project(root: Path) -> TargetTorch | None:
    """Look for a declared torch dependency in the project at ``root``."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and (found := _from_pyproject(pyproject)):
        return TargetTorch(found, f"{pyproject.name} dependencies")
    for requirements in sorted(root.glob("requirements*.txt")):
        if found := _from_requirements(requirements):
            return TargetTorch(found, requirements.name)
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file() and (found := _from_setup_cfg(setup_cfg)):
        return TargetTorch(found, "setup.cfg install_requires")
    return None


def resolve_target(configured: str | None, root: Path) -> TargetTorch:
    """``--target-torch``/``target-torch`` wins, then the project's declared dependency."""
    if configured is not None:
        version = parse_version(configured)
        if version is not None:
            return TargetTorch(version, "configured")
    inferred = infer_from_project(root)
    if inferred is not None:
        return inferred
    default = parse_version(DEFAULT_TARGET)
    assert default is not None
    return TargetTorch(default, "default")
