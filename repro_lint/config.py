"""Settings: ``[tool.repro-lint]`` in the closest pyproject.toml (or ``--config FILE``)."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUTPUT_FORMATS = ("full", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit")
# Files above this size are reported (RPL000) and never parsed. libcst's parse of a module
# takes about 400 bytes of memory per byte of ordinary source, and up to 1,400 for generated
# code dense with calls (measured: a 1 MB module of calls needs 1.4 GB, a 0.5 MB one 0.7 GB).
# A file of many top-level statements is parsed in pieces (``parsing``) at a fraction of that,
# but a file that is one statement (a vendored table) cannot be cut: at this size no run
# exceeds 1 GB. The largest file of the benchmark corpus is 279 KB.
DEFAULT_MAX_FILE_SIZE = 512 * 1024
ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


class ConfigError(Exception):
    """A setting that cannot be used; the CLI prints it and exits 2."""

    def __init__(self, key: str, reason: str, source: Path | str | None = None) -> None:
        self.key = key
        self.reason = reason
        self.source = source
        where = f" in {source}" if source else ""
        super().__init__(f"invalid setting `{key}`{where}: {reason}")


@dataclass(frozen=True)
class Config:
    """Everything that decides what is linted and how; immutable once loaded."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    # File patterns that directory walks pick up (``extend-include = ["*.ipynb"]`` adds
    # notebooks); files named explicitly are always linted.
    include: tuple[str, ...] | None = None
    extend_include: tuple[str, ...] = ()
    respect_gitignore: bool = True
    target_torch: str | None = None
    seed: int = 0
    # Project functions (qualified names) that seed torch, numpy and random.
    seed_functions: tuple[str, ...] = ()
    # Glob patterns of files that are entry points whatever their shape.
    entry_points: tuple[str, ...] = ()
    # RPL301: "always" reports every multi-worker loader that may need a worker_init_fn;
    # "when-proven" only those whose worker random streams provably collide.
    dataloader_worker_rng: str = "always"
    # Bytes; a bigger file is an RPL000 finding ("too large"), never parsed.
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    output_format: str = "full"
    # Directory that relative patterns (exclude, per-file-ignores) are anchored to, and where
    # the cache lives: the config file's directory, else the project root.
    root: Path = field(default_factory=Path.cwd)
    source: Path | None = None

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    def fingerprint(self) -> str:
        """Stable text of every setting that can change a file's diagnostics (cache key)."""
        parts = [
            f"select={self.select}",
            f"extend_select={self.extend_select}",
            f"ignore={self.ignore}",
            f"per_file_ignores={self.per_file_ignores}",
            f"target_torch={self.target_torch}",
            f"seed={self.seed}",
            f"seed_functions={self.seed_functions}",
            f"entry_points={self.entry_points}",
            f"dataloader_worker_rng={self.dataloader_worker_rng}",
            f"max_file_size={self.max_file_size}",
        ]
        return "|".join(parts)


def _string_list(key: str, value: Any, source: Path | None) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(key, f"expected a list of strings, got {value!r}", source)
    return tuple(value)


def _bool(key: str, value: Any, source: Path | None) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(key, f"expected true or false, got {value!r}", source)
    return value


def _seed(key: str, value: Any, source: Path | None) -> int:
    # numpy.random.seed accepts 0 <= seed < 2**32; every other RNG accepts that range too.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise ConfigError(key, f"expected an integer in [0, 2**32), got {value!r}", source)
    return value


def _qualified_names(key: str, value: Any, source: Path | None) -> tuple[str, ...]:
    names = _string_list(key, value, source)
    for name in names:
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", name):
            raise ConfigError(
                key, f"expected qualified names such as mypkg.utils.seed_all, got {name!r}", source
            )
    return names


def _torch_version(key: str, value: Any, source: Path | None) -> str:
    if isinstance(value, float):
        raise ConfigError(
            key, f'write the version as a string ("{value}"); 2.10 as a number is 2.1', source
        )
    from repro_lint.torch_versions import parse_version

    if not isinstance(value, str) or parse_version(value) is None:
        raise ConfigError(key, f'expected a version such as "2.1", got {value!r}', source)
    return value


_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3}
_UNITS.update({"kib": 1024, "mib": 1024**2, "gib": 1024**3})


def _size(key: str, value: Any, source: Path | None) -> int:
    """A number of bytes: an integer, or a string such as "4MB", "512 KiB"."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+)\s*([KMG]i?B|B)?\s*", value, re.IGNORECASE)
        if match is not None:
            number = int(match.group(1)) * _UNITS[(match.group(2) or "").lower()]
    if number is None or number <= 0:
        raise ConfigError(
            key, f'expected a size in bytes, such as 4000000 or "4MB", got {value!r}', source
        )
    return number


def _choice(choices: tuple[str, ...]) -> Callable[[str, Any, Path | None], str]:
    def parse(key: str, value: Any, source: Path | None) -> str:
        if value not in choices:
            raise ConfigError(key, f"expected one of {', '.join(choices)}; got {value!r}", source)
        return str(value)

    return parse


def _per_file_ignores(
    key: str, value: Any, source: Path | None
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(key, f"expected a table of glob = [codes], got {value!r}", source)
    return tuple(
        (pattern, _string_list(f"{key}.{pattern}", codes, source))
        for pattern, codes in value.items()
    )


# kebab-case key -> (Config field, parser). The single place that lists the settings.
OPTIONS: dict[str, tuple[str, Callable[[str, Any, Path | None], Any]]] = {
    "select": ("select", _string_list),
    "extend-select": ("extend_select", _string_list),
    "ignore": ("ignore", _string_list),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _string_list),
    "extend-exclude": ("extend_exclude", _string_list),
    "include": ("include", _string_list),
    "extend-include": ("extend_include", _string_list),
    "respect-gitignore": ("respect_gitignore", _bool),
    "target-torch": ("target_torch", _torch_version),
    "seed": ("seed", _seed),
    "seed-functions": ("seed_functions", _qualified_names),
    "entry-points": ("entry_points", _string_list),
    "dataloader-worker-rng": ("dataloader_worker_rng", _choice(("always", "when-proven"))),
    "max-file-size": ("max_file_size", _size),
    "output-format": ("output_format", _choice(OUTPUT_FORMATS)),
}


def parse_table(table: Mapping[str, Any], source: Path | None) -> dict[str, Any]:
    """Validate a ``[tool.repro-lint]`` table; return Config field values."""
    values: dict[str, Any] = {}
    for key, value in table.items():
        option = OPTIONS.get(key)
        if option is None:
            allowed = ", ".join(sorted(OPTIONS))
            raise ConfigError(key, f"unknown key; allowed keys are: {allowed}", source)
        field_name, parser = option
        values[field_name] = parser(key, value, source)
    return values


def parse_toml(data: str | bytes) -> dict[str, Any]:
    """The TOML document ``data`` (bytes: UTF-8), parsed; ValueError if it is not one
    (``TOMLDecodeError``, or bytes that are not UTF-8). ``tomllib`` (``tomli`` before Python
    3.11) is imported on first use: a check's helper process never reads TOML, nor does a run
    in a project without it (the import is about 5 ms of a run's start)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised only on 3.10
        import tomli as tomllib
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    parsed: dict[str, Any] = tomllib.loads(text)
    return parsed


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return parse_toml(handle.read())
    except ValueError as exc:
        raise ConfigError("(file)", f"not valid TOML: {exc}", path) from exc
    except OSError as exc:
        raise ConfigError("(file)", f"cannot read: {exc.strerror or exc}", path) from exc


def _tool_table(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    tool = data.get("tool")
    if isinstance(tool, dict):
        table = tool.get("repro-lint")
        if isinstance(table, dict):
            return table
    return None


def find_config_file(start: Path) -> Path | None:
    """The closest pyproject.toml at or above ``start`` that has a ``[tool.repro-lint]`` table."""
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = _read_toml(pyproject)
            except ConfigError:
                # A broken pyproject.toml that is not ours is not our business; ours is
                # reported when it is loaded explicitly below.
                if b"tool.repro-lint" in pyproject.read_bytes():
                    raise
                continue
            if _tool_table(data) is not None:
                return pyproject
    return None


def find_project_root(start: Path) -> Path:
    """Nearest ancestor with a project marker (pyproject/setup.py/setup.cfg/.git), else cwd."""
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return candidate
    return Path.cwd()


def load_config(start: Path, config_file: Path | None = None) -> Config:
    """Load settings for files under ``start`` (a directory or file), or from ``config_file``."""
    start = start.resolve()
    if config_file is not None:
        config_file = config_file.resolve()
        if not config_file.is_file():
            raise ConfigError("--config", "no such file", config_file)
        data = _read_toml(config_file)
        table = _tool_table(data) if config_file.name == "pyproject.toml" else data
        values = parse_table(table or {}, config_file)
        return Config(root=config_file.parent, source=config_file, **values)
    found = find_config_file(start)
    if found is None:
        return Config(root=find_project_root(start))
    table = _tool_table(_read_toml(found)) or {}
    return Config(root=found.parent, source=found, **parse_table(table, found))
