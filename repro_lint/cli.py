"""The ``repro-lint`` command: the only module that prints, writes files or exits."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TextIO

import click

from repro_lint import __version__, launch
from repro_lint.collector import one_shot
from repro_lint.config import OUTPUT_FORMATS, Config, ConfigError, load_config
from repro_lint.diagnostics import FileResult, FixSafety

if TYPE_CHECKING:
    from repro_lint.report import Report

CHECK_FORMATS = OUTPUT_FORMATS


class _DefaultGroup(click.Group):
    """``repro-lint src/`` means ``repro-lint check src/`` (ruff's convention)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (
            args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")
        ):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repro-lint")
def main() -> None:
    """Find reproducibility hazards in PyTorch training code, and fix them.

    `repro-lint PATHS` is short for `repro-lint check PATHS`.
    """


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _codes(values: Sequence[str]) -> tuple[str, ...] | None:
    if not values:
        return None
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _config_start(paths: Sequence[str], stdin_filename: str | None) -> Path:
    if stdin_filename is not None:
        return Path(os.path.abspath(stdin_filename)).parent
    real = [os.path.abspath(p) for p in paths if p != "-"]
    if not real:
        return Path.cwd()
    common = Path(os.path.commonpath(real))
    return common if common.is_dir() else common.parent


def _load(
    paths: Sequence[str],
    stdin_filename: str | None,
    config_file: str | None,
    overrides: Mapping[str, Any],
) -> Config:
    config = load_config(
        _config_start(paths, stdin_filename), Path(config_file) if config_file else None
    )
    changes = {key: value for key, value in overrides.items() if value is not None}
    if "target_torch" in changes:
        from repro_lint.config import OPTIONS

        changes["target_torch"] = OPTIONS["target-torch"][1](
            "--target-torch", changes["target_torch"], None
        )
    return config.replace(**changes)


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[TextIO]:
    if path is None:
        yield sys.stdout
        return
    try:
        handle: IO[str] = Path(path).open("w", encoding="utf-8", newline="")
    except OSError as exc:
        _fail(f"cannot write {path}: {exc.strerror or exc}")
    with handle:
        yield handle  # type: ignore[misc]


def _write_atomic(path: Path, original: bytes, data: bytes) -> str | None:
    """Replace ``path``'s content by ``data``; an error message instead of losing anything.

    The new content goes to a temporary file next to it, named after it and us
    (``files.temp_prefix``), which is renamed into place; one an interrupted run leaves is
    removed by a later run (``_remove_leftovers``)."""
    from repro_lint.files import TEMP_SUFFIX, make_temp, temp_prefix
    from repro_lint.source import SourceError, read_bytes

    target = Path(os.path.realpath(path))
    try:
        info = target.stat()
        if not info.st_mode & stat.S_IWUSR:
            return "file is read-only; fixes not written"
        if read_bytes(target)[0] != original:
            return "file changed while it was being fixed; not written (run again)"
        fd, temp = make_temp(target.parent, temp_prefix(target.name), TEMP_SUFFIX)
    except SourceError as exc:
        return f"cannot write: {exc}"
    except OSError as exc:
        return f"cannot write: {exc.strerror or exc}"
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, stat.S_IMODE(info.st_mode))
        os.replace(temp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        return f"cannot write: {exc.strerror or exc}"
    return None


@main.command()
@click.argument("paths", nargs=-1, type=str)
@click.option("--fix", is_flag=True, help="Apply safe fixes (and unsafe ones with --unsafe-fixes).")
@click.option("--unsafe-fixes", is_flag=True, help="Also offer and apply unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option("--show-fixes", is_flag=True, help="List what --fix changed.")
@click.option("--select", multiple=True, help="Rules to check (codes, prefixes, names, ALL).")
@click.option("--extend-select", multiple=True, help="Rules to check in addition.")
@click.option("--ignore", multiple=True, help="Rules not to check.")
@click.option("--exclude", multiple=True, help="Glob patterns to skip (replaces the defaults).")
@click.option("--extend-exclude", multiple=True, help="Glob patterns to skip in addition.")
@click.option(
    "--include",
    multiple=True,
    help="Glob patterns of the files directory walks pick up (replaces *.py, *.pyi, *.ipynb).",
)
@click.option(
    "--extend-include", multiple=True, help="Glob patterns directory walks pick up in addition."
)
@click.option(
    "--force-exclude",
    is_flag=True,
    help="Apply excludes to paths given explicitly too (for pre-commit).",
)
@click.option(
    "--output-format",
    type=click.Choice(CHECK_FORMATS),
    default=None,
    help="How to print the findings.",
)
@click.option("--output-file", "-o", type=str, default=None, help="Write the report here.")
@click.option(
    "--stdin-filename",
    type=str,
    default=None,
    help="The name of the file read from stdin (with `-`).",
)
@click.option(
    "--target-torch",
    type=str,
    default=None,
    help="Judge version-dependent rules for this torch release (X.Y).",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even if hazards remain.")
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="Exit 1 when a fix was applied, even if nothing remains.",
)
@click.option("--statistics", is_flag=True, help="Count findings per rule.")
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Add `# noqa: CODE` to every line with a finding (keeping codes already there).",
)
@click.option("--ignore-noqa", is_flag=True, help="Report findings that `# noqa` hides.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: the number of cores).",
)
@click.option(
    "--config",
    "config_file",
    type=str,
    default=None,
    help="Settings file (pyproject.toml with [tool.repro-lint], or a TOML table).",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Print findings only: in the full and concise formats one line each (no code frames,"
    " counts or hints).",
)
@click.option("--verbose", "-v", is_flag=True, help="Say which settings were used, and timings.")
def check(
    paths: tuple[str, ...],
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    show_fixes: bool,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    include: tuple[str, ...],
    extend_include: tuple[str, ...],
    force_exclude: bool,
    output_format: str | None,
    output_file: str | None,
    stdin_filename: str | None,
    target_torch: str | None,
    exit_zero: bool,
    exit_non_zero_on_fix: bool,
    statistics: bool,
    add_noqa: bool,
    ignore_noqa: bool,
    no_cache: bool,
    jobs: int | None,
    config_file: str | None,
    quiet: bool,
    verbose: bool,
) -> None:
    """Lint PATHS (files or directories; `-` reads stdin)."""
    started = time.perf_counter()
    if _STANDALONE:
        one_shot()
    overrides: dict[str, Any] = {
        "select": _codes(select),
        "extend_select": _codes(extend_select),
        "ignore": _codes(ignore),
        "exclude": _codes(exclude),
        "extend_exclude": _codes(extend_exclude),
        "include": _codes(include),
        "extend_include": _codes(extend_include),
        "target_torch": target_torch,
        "output_format": output_format,
    }
    try:
        config = _load(paths, stdin_filename, config_file, overrides)
    except ConfigError as exc:
        _fail(str(exc))
    stdin = paths == ("-",) or (not paths and stdin_filename is not None)
    if add_noqa and (fix or diff or stdin or ignore_noqa):
        _fail("--add-noqa cannot be combined with --fix, --diff, --ignore-noqa or stdin")
    applicable = frozenset({FixSafety.SAFE, FixSafety.UNSAFE} if unsafe_fixes else {FixSafety.SAFE})
    shown = _Shown(
        applicable,
        output_file,
        statistics,
        quiet,
        verbose,
        exit_zero,
        exit_non_zero_on_fix,
        show_fixes,
        started,
        time.time(),
        progress=not quiet and config.output_format in ("full", "concise") and sys.stderr.isatty(),
    )
    from repro_lint.source import one_look

    record = None
    answerable = not (stdin or fix or diff or add_noqa or no_cache)
    # A helper process that imports the per-file pass while the record is read (a run in a
    # process of its own, after an edit: see ``helper``); stopped however the check ends.
    helpers: list[Any] | None = [] if _STANDALONE and answerable else None
    # A run that may be answered from its record stats each file once (``one_look``): the
    # record's checks and the project pass's ask about the same thousands of files.
    with _stopping(helpers), one_look() if answerable else contextlib.nullcontext():
        if answerable:
            # A run whose inputs are all unchanged is answered from its record, before the
            # settings are resolved (which imports the rules).
            record = _answer_from_record(
                config, paths or (".",), force_exclude, ignore_noqa, shown, helpers
            )
        # A helper forked as the process started that the run has no work for ends here,
        # before any worker process is forked.
        launch.drop_early()
        settings = _settings(config, ignore_noqa)
        if add_noqa:
            _add_noqa(settings, paths or (".",), force_exclude, no_cache, jobs, quiet)
        if verbose:
            click.echo(f"settings: {config.source or 'defaults'}; root {config.root}", err=True)
            click.echo(
                f"target torch: {settings.target.version} ({settings.target.origin})", err=True
            )
        if stdin:
            _check_stdin(
                settings,
                stdin_filename,
                force_exclude,
                fix,
                diff,
                applicable,
                output_file,
                statistics,
                exit_zero,
                exit_non_zero_on_fix,
                quiet,
                no_cache,
            )
            return
        _check_paths(
            settings,
            paths or (".",),
            force_exclude,
            fix,
            diff,
            no_cache,
            jobs,
            shown,
            record,
            helpers[0] if helpers else None,
        )


@contextlib.contextmanager
def _stopping(helpers: list[Any] | None) -> Iterator[None]:
    try:
        yield
    finally:
        launch.drop_early()
        for helper in helpers or ():
            helper.stop()


def _start_helper(config: Config, ignore_noqa: bool) -> Any:
    """A helper process for this run (``engine.check_helper``): the one the console script
    forked as it started (``launch.fork_early``), given its work now, or else one forked now;
    None where none can be forked. This process imports nothing for it: the helper imports
    what it needs."""
    from repro_lint import helper

    early = launch.take_early()
    if early is not None:
        early.prepare("repro_lint.engine", "check_helper", config, ignore_noqa)
        return early

    def prepare() -> Callable[[Any], Any]:
        from repro_lint.engine import check_helper

        return check_helper(config, ignore_noqa)

    return helper.Helper.start(prepare)


@dataclass(frozen=True)
class _Shown:
    """How a check run reports what it found."""

    applicable: frozenset[FixSafety]
    output_file: str | None
    statistics: bool
    quiet: bool
    verbose: bool
    exit_zero: bool
    exit_non_zero_on_fix: bool
    show_fixes: bool
    started: float
    # The wall clock when the run started (what a leftover must be older than).
    started_at: float
    # Whether to show how many files are done, on stderr, while a long run goes on.
    progress: bool


def _settings(config: Config, ignore_noqa: bool) -> Any:
    """The resolved settings (exit 2 for selectors that match no rule)."""
    from repro_lint.settings import Settings

    try:
        return Settings.from_config(config, ignore_noqa=ignore_noqa)
    except ConfigError as exc:
        _fail(str(exc))


def _answer_from_record(
    config: Config,
    paths: Sequence[str],
    force_exclude: bool,
    ignore_noqa: bool,
    shown: _Shown,
    helpers: list[Any] | None = None,
) -> Any:
    """Print the answer of an earlier identical run and exit, if nothing it depended on
    changed; otherwise return its record (None without one): it still says what changed.
    ``helpers``: where a helper started for the run is put, when a record is there to read
    (the run may then lint a few files that changed)."""
    from repro_lint import run_cache
    from repro_lint.cache import settled

    if not any(os.path.isdir(p) for p in paths):
        # Records are kept for runs over directories: the files a hook or an editor names
        # change from one run to the next.
        return None
    key = run_cache.run_key(config, paths, force_exclude, ignore_noqa)
    # (A record that the check before this one is still writing is waited for.)
    settled(config.root)
    if helpers is not None and os.path.exists(run_cache.record_path(config.root, key)):
        helper = _start_helper(config, ignore_noqa)
        if helper is not None:
            helpers.append(helper)
    notes: list[str] = []
    record = run_cache.load(config.root, key, notes)
    if shown.verbose:
        for note in notes:
            click.echo(note, err=True)
    if record is None:
        return None
    results = record.answer()
    if results is None:
        if helpers and record.discovery_holds():
            # The files changed are linted by the helper from now on, while this process
            # gets the run ready.
            from repro_lint.engine import lint_ahead
            from repro_lint.files import SourceFile

            changed = record.changed()
            lint_ahead(
                helpers[0],
                [SourceFile(f.display, Path(f.path)) for f in record.files if f.display in changed],
                record,
            )
        return record
    if record.stale:
        run_cache.save(config.root, record.refreshed(), notes)
    if shown.verbose:
        from repro_lint.torch_versions import resolve_target

        target = resolve_target(config.target_torch, config.root)
        click.echo(f"settings: {config.source or 'defaults'}; root {config.root}", err=True)
        click.echo(f"target torch: {target.version} ({target.origin})", err=True)
        click.echo("answered from the run record: nothing changed", err=True)
    _discovered(record, shown.verbose)
    if not record.files:
        click.echo("warning: no Python files found under the given paths", err=True)
        sys.exit(0)
    files = {f.display: f.path for f in record.files}
    _report(results, lambda: _settings(config, ignore_noqa).rules, config, files, shown)


# A run shorter than this shows no progress at all.
PROGRESS_AFTER_SECONDS = 1.0


@contextlib.contextmanager
def _progress_line(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A callback showing "done/total files" on one line of stderr, updated in place, once
    the run has taken a second; the line is cleared at the end."""
    if not enabled:
        yield None
        return
    started = time.monotonic()
    width = 0
    last = 0.0

    def update(done: int, total: int) -> None:
        nonlocal width, last
        now = time.monotonic()
        if now - started < PROGRESS_AFTER_SECONDS or (now - last < 0.1 and done < total):
            return
        text = f"repro-lint: {done}/{total} files"
        sys.stderr.write("\r" + text.ljust(width))
        sys.stderr.flush()
        width, last = len(text), now

    try:
        yield update
    finally:
        if width:
            sys.stderr.write("\r" + " " * width + "\r")
            sys.stderr.flush()


def _discovered(found: Any, verbose: bool) -> None:
    """Say what discovery warns about, and with -v what it passed over."""
    for warning in found.warnings:
        click.echo(f"warning: {warning}", err=True)
    if verbose:
        for note in found.notes:
            click.echo(note, err=True)


def _remove_leftovers(paths: Sequence[Path], started_at: float, verbose: bool) -> None:
    """Remove the temporary files an interrupted --fix left next to files linted now: ours
    by name, plain files, older than this run (and, when the process that wrote one may
    still be running, more than a minute old: a concurrent --fix is about to rename it)."""
    from repro_lint.files import display_name, leftover_of

    for path in paths:
        owner = leftover_of(path.name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if owner is None or not stat.S_ISREG(info.st_mode) or info.st_mtime >= started_at:
            continue
        if owner[1] is not None and info.st_mtime > started_at - 60 and _running(owner[1]):
            continue
        try:
            os.unlink(path)
        except OSError as exc:
            if verbose:
                click.echo(f"cannot remove {display_name(path)}: {exc.strerror or exc}", err=True)
            continue
        if verbose:
            click.echo(f"removed {display_name(path)}: left by an interrupted --fix", err=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


# A check that linted at most this many files leaves writing the cache and the run record
# to a process of its own (``_writes_behind``): a few milliseconds of work. One that linted
# more (a cold run: seconds) writes them itself, so that the next run need not wait long.
DEFER_LINTED = 64


def _writes_behind(shown: _Shown, fixes: bool, linted: int) -> bool:
    """Whether a check may leave writing its cache and run record to a process of its own:
    not when its notes are to be shown (they say what was written), nor when it fixes files
    (the cache then takes the fixed files' results too), nor after linting more than
    ``DEFER_LINTED`` files, nor in CI (``CI`` set, as CI services set it): no later run on
    that machine waits for it there, and a job's end stops what it left running."""
    ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    return not (shown.verbose or fixes or linted > DEFER_LINTED or ci)


def _persist(
    cache: Any,
    config: Config,
    keyed: tuple[Sequence[str], bool, bool] | None,
    found: Any,
    results: Sequence[Any],
    outcome: Any,
    previous: Any,
    notes: list[str],
) -> None:
    """Write the results cache, and with ``keyed`` (the run key's paths and flags) the run
    record of this run (``previous``: the record whose discovery it reused)."""
    from repro_lint import run_cache

    cache.save()
    notes += cache.notes
    if keyed is not None:
        key = run_cache.run_key(config, *keyed)
        built = run_cache.build(
            key, config, found, results, outcome.stamps, outcome.project, previous
        )
        run_cache.save(config.root, built, notes)


def _check_paths(
    settings: Any,
    paths: Sequence[str],
    force_exclude: bool,
    fix: bool,
    diff: bool,
    no_cache: bool,
    jobs: int | None,
    shown: _Shown,
    record: Any,
    helper: Any = None,
) -> None:
    from repro_lint import report as reports
    from repro_lint.cache import Cache, writing
    from repro_lint.engine import lint_run
    from repro_lint.files import discover
    from repro_lint.source import is_internal_error

    config = settings.config
    holds = record is not None and record.discovery_holds()
    if helper is not None and not holds:
        helper.stop()  # (a run over other files: not a few to lint again)
        helper = None
    if holds:
        found = record.discovery()
    else:
        found = discover([Path(p) for p in paths], config, force_exclude=force_exclude)
    _discovered(found, shown.verbose)
    if fix and not holds:
        # Files named on the command line: their directories were not listed.
        from repro_lint.files import leftovers_next_to

        found.leftovers.extend(
            p for p in leftovers_next_to(found.files) if p not in found.leftovers
        )
    _remove_leftovers(found.leftovers, shown.started_at, shown.verbose)
    if not found.files:
        click.echo("warning: no Python files found under the given paths", err=True)
        sys.exit(0)
    cache = None if no_cache else Cache(config.root, settings.cache_key())
    with _progress_line(shown.progress) as progress:
        outcome = lint_run(
            found.files,
            settings,
            jobs=jobs,
            cache=cache,
            previous=record if holds else None,
            changed=record.changed() if holds else None,
            sources=fix or diff,
            progress=progress,
            helper=helper,
            # (Only a run with a cache keeps a record of what its project pass read.)
            recorded=cache is not None,
        )
    results = outcome.results
    notes: list[str] = []
    if cache is not None:
        recorded = (
            not (fix or diff)
            and any(os.path.isdir(p) for p in paths)
            and not any(w.startswith("cannot read") for w in found.warnings)
            # (Nor when the analysis failed on a file: the next run tries that file again.)
            and not any(is_internal_error(d) for r in results for d in r.diagnostics)
        )
        persist = functools.partial(
            _persist,
            cache,
            config,
            (paths, force_exclude, settings.ignore_noqa) if recorded else None,
            found,
            results,
            outcome,
            record if holds else None,
            notes,
        )
        # Only a later run reads what is written here: the console script's check leaves it to
        # a process of its own and ends (``launch.defer``), when that writing is short
        # (``_writes_behind``).
        if not (
            _writes_behind(shown, fix or diff, outcome.linted)
            and launch.defer(persist, functools.partial(writing, config.root))
        ):
            persist()
    if shown.verbose:
        for note in notes:
            click.echo(note, err=True)
        project = "reused" if outcome.project_reused else "run"
        helped = " (by a helper process)" if helper is not None and helper.answered else ""
        click.echo(
            f"linted {outcome.linted} of {len(found.files)} files{helped} (the others "
            f"unchanged, from the cache); project pass {project}",
            err=True,
        )
    fixed_by_file: dict[str, Counter[str]] = {}
    # The findings of the original files: what a --fix run reports as found.
    originally = sum(len(result.diagnostics) for result in results)
    if fix or diff:
        paths_by_name = {f.display: f.path for f in found.files}
        results, fixed_by_file, diffs = _fix_files(
            results, paths_by_name, settings, shown.applicable, write=not diff, cache=cache
        )
        if diff:
            for text in diffs:
                click.echo(text, nl=False)
            total = sum(sum(c.values()) for c in fixed_by_file.values())
            if not shown.quiet:
                click.echo(f"Would fix {total} error{'s' if total != 1 else ''}.", err=True)
            sys.exit(reports.exit_code(0, diff_changes=bool(diffs)))
    files = {f.display: f.path for f in found.files}
    _report(
        results,
        lambda: settings.rules,
        config,
        files,
        shown,
        fixed_by_file,
        found=originally if fix else None,
    )


def _report(
    results: Sequence[FileResult],
    rules: Callable[[], Sequence[Any]],
    config: Config,
    files: Mapping[str, str | Path],
    shown: _Shown,
    fixed_by_file: Mapping[str, Counter[str]] | None = None,
    found: int | None = None,
) -> NoReturn:
    """Print the findings in the chosen format and exit with the status they call for."""
    from repro_lint import report as reports

    fixed: Counter[str] = Counter()
    for counts in (fixed_by_file or {}).values():
        fixed.update(counts)
    fmt = config.output_format
    report = reports.Report(
        results,
        rules() if fmt == "sarif" else (),
        shown.applicable,
        fixed,
        shown.show_fixes,
        dict(fixed_by_file or {}),
        read=_source_reader(files),
        found=found,
    )
    with _output(shown.output_file) as out:
        _render(report, fmt, out, statistics=shown.statistics, quiet=shown.quiet)
    if shown.verbose:
        elapsed = time.perf_counter() - shown.started
        click.echo(f"checked {len(files)} files in {elapsed:.2f} s", err=True)
    _exit_for(report, shown.exit_zero, shown.exit_non_zero_on_fix)


def _render(report: Report, fmt: str, out: TextIO, *, statistics: bool, quiet: bool) -> None:
    """Write ``report`` to ``out``: its statistics, only the findings'
    heads (``--quiet``, in the full and concise formats), or the format's whole rendering."""
    from repro_lint import report as reports

    if statistics:
        reports.render_statistics(report, out)
    elif quiet and fmt in ("full", "concise"):
        for d in report.diagnostics:
            out.write(reports._head(report, d) + "\n")
    else:
        reports.RENDERERS[fmt](report, out)


def _exit_for(report: Report, exit_zero: bool, exit_non_zero_on_fix: bool) -> NoReturn:
    """Exit with the status ``report`` calls for (``report.exit_code`` decides it)."""
    from repro_lint import report as reports
    from repro_lint.source import is_internal_error

    sys.exit(
        reports.exit_code(
            len(report.diagnostics),
            fixed=sum(report.fixed.values()),
            failed=any(map(is_internal_error, report.diagnostics)),
            exit_zero=exit_zero,
            exit_non_zero_on_fix=exit_non_zero_on_fix,
        )
    )


def _source_reader(files: Mapping[str, str | Path]) -> Callable[[str], str | None]:
    """Reads a linted file's text when a report shows its code (files are read only then)."""

    def read(filename: str) -> str | None:
        from repro_lint.source import SourceError, read_source

        path = files.get(filename)
        if path is None:
            return None
        try:
            return read_source(Path(path)).text
        except SourceError:
            return None

    return read


def _add_noqa(
    settings: Any,
    paths: Sequence[str],
    force_exclude: bool,
    no_cache: bool,
    jobs: int | None,
    quiet: bool,
) -> NoReturn:
    from repro_lint import notebooks
    from repro_lint.cache import Cache
    from repro_lint.engine import lint_files, text_linter
    from repro_lint.files import discover
    from repro_lint.fixes import apply_edits
    from repro_lint.source import SourceError, decode
    from repro_lint.suppressions import noqa_edits, noqa_wanted

    found = discover([Path(p) for p in paths], settings.config, force_exclude=force_exclude)
    _discovered(found, verbose=False)
    cache = None if no_cache else Cache(settings.config.root, settings.cache_key())
    results = lint_files(found.files, settings, jobs=jobs, cache=cache)
    if cache is not None:
        cache.save()
    by_name = {f.display: f.path for f in found.files}
    added = 0
    for result in results:
        wanted = noqa_wanted(result.diagnostics)
        if not wanted:
            continue
        path = by_name[result.filename]
        try:
            data = path.read_bytes()
            if notebooks.is_notebook(path):
                new, count, places = notebooks.add_noqa(
                    data, result.filename, text_linter(settings, path)
                )
                skipped = [f"cell {cell}:{row}" for cell, row in places]
            else:
                decoded = decode(data)
                edits, rows = noqa_edits(decoded.text, wanted)
                new = decoded.encode(apply_edits(decoded.text, edits)) if edits else None
                count, skipped = len(edits), [str(row) for row in rows]
        except (OSError, SourceError) as exc:
            click.echo(f"error: {result.filename}: {exc}", err=True)
            continue
        for where in skipped:
            click.echo(
                f"warning: {result.filename}:{where}: no place for a `# noqa` comment "
                "(the line ends inside a string or continues with a backslash)",
                err=True,
            )
        if new is None:
            continue
        problem = _write_atomic(path, data, new)
        if problem is not None:
            click.echo(f"error: {result.filename}: {problem}", err=True)
            continue
        added += count
    if not quiet:
        click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    sys.exit(0)


def _fix_files(
    results: list[FileResult],
    paths: Mapping[str, Path],
    settings: Any,
    applicable: frozenset[FixSafety],
    *,
    write: bool,
    cache: Any = None,
) -> tuple[list[FileResult], dict[str, Counter[str]], list[str]]:
    from repro_lint import notebooks
    from repro_lint.engine import Relinter, text_linter
    from repro_lint.fixes import fix_texts, unified_diff
    from repro_lint.source import DecodedSource, SourceError, decode

    # With project rules every parsable file takes part: a fix in one file can settle (or
    # raise) a finding in another.
    def takes_part(result: FileResult) -> bool:
        if settings.needs_project:
            return not any(d.code == "RPL000" for d in result.diagnostics)
        return any(
            d.fix is not None and d.fix.applicability in applicable for d in result.diagnostics
        )

    wanted = [r for r in results if takes_part(r)]
    originals: dict[str, tuple[bytes, DecodedSource]] = {}
    notebook_names = [r.filename for r in wanted if notebooks.is_notebook(paths[r.filename])]
    for result in wanted:
        if result.filename in notebook_names:
            continue
        try:
            data = paths[result.filename].read_bytes()
            originals[result.filename] = (data, decode(data))
        except (OSError, SourceError) as exc:
            click.echo(f"error: {result.filename}: cannot read for fixing: {exc}", err=True)

    texts = {name: decoded.text for name, (_, decoded) in originals.items()}
    relint = Relinter(settings, paths, texts, results, cache)
    # A file may have changed since it was linted (another process fixing it, an editor):
    # findings computed from other text must not be applied to this one.
    current = [r for r in results if r.filename in texts]
    if any(r.diagnostics and r.source != texts[r.filename] for r in current):
        initial = dict(relint(texts))
    else:
        initial = {r.filename: r for r in current}
    outcomes = fix_texts(texts, initial, relint, applicable) if texts else {}
    by_name = {r.filename: r for r in results}
    fixed_by_file: dict[str, Counter[str]] = {}
    diffs: list[str] = []
    for name, outcome in sorted(outcomes.items()):
        if not outcome.changed:
            by_name[name] = outcome.result
            if +outcome.fixed:
                # Its findings went with an edit of another file of the run.
                fixed_by_file[name] = outcome.fixed
            continue
        data, decoded = originals[name]
        if not write:
            diffs.append(unified_diff(name, outcome.original, outcome.text))
            fixed_by_file[name] = outcome.fixed
            continue
        try:
            encoded = decoded.encode(outcome.text)
        except UnicodeEncodeError as exc:
            click.echo(
                f"error: {name}: fixed text cannot be written as {decoded.encoding}: "
                f"{exc.reason}; not written",
                err=True,
            )
            continue
        problem = _write_atomic(paths[name], data, encoded)
        if problem is not None:
            click.echo(f"error: {name}: {problem}", err=True)
            continue
        by_name[name] = outcome.result
        fixed_by_file[name] = outcome.fixed
    for name in notebook_names:
        try:
            data = paths[name].read_bytes()
            fixed = notebooks.fix(data, name, text_linter(settings, paths[name]), applicable)
        except (OSError, SourceError) as exc:
            click.echo(f"error: {name}: cannot fix: {exc}", err=True)
            continue
        if fixed.data is None:
            by_name[name] = fixed.result
            continue
        if not write:
            diffs.append(fixed.diff)
            fixed_by_file[name] = fixed.fixed
            continue
        problem = _write_atomic(paths[name], data, fixed.data)
        if problem is not None:
            click.echo(f"error: {name}: {problem}", err=True)
            continue
        by_name[name] = fixed.result
        fixed_by_file[name] = fixed.fixed
    # Each diff starts with its file's name: sorting them orders the output by file.
    diffs.sort()
    return [by_name[r.filename] for r in results], fixed_by_file, diffs


def _check_stdin(
    settings: Any,
    stdin_filename: str | None,
    force_exclude: bool,
    fix: bool,
    diff: bool,
    applicable: frozenset[FixSafety],
    output_file: str | None,
    statistics: bool,
    exit_zero: bool,
    exit_non_zero_on_fix: bool,
    quiet: bool,
    no_cache: bool,
) -> None:
    from repro_lint import notebooks
    from repro_lint import report as reports
    from repro_lint.cache import Cache
    from repro_lint.files import discover, display_name
    from repro_lint.project_pass import memoized_loader, summary_loader

    data = sys.stdin.buffer.read()
    path = Path(os.path.abspath(stdin_filename)) if stdin_filename else None
    name = display_name(path) if path is not None else "-"
    if path is not None and force_exclude:
        if not discover([path], settings.config, force_exclude=True).files:
            if fix:
                sys.stdout.buffer.write(data)
            sys.exit(0)
    # The modules the text imports are summarised from the cache, as for files on disk.
    cache = None if no_cache else Cache(settings.config.root, settings.cache_key())
    load = memoized_loader(summary_loader(settings, cache))
    read = _notebook_stdin if notebooks.is_notebook(stdin_filename) else _python_stdin
    try:
        result, fixed, found = read(data, name, path, settings, fix, diff, applicable, load)
    finally:
        if cache is not None:
            cache.save()
    fmt = settings.config.output_format
    # Only SARIF describes the rules (the others need not import them).
    rules = settings.rules if fmt == "sarif" else ()
    report = reports.Report([result], rules, applicable, fixed, found=found)
    # With --fix, stdout carries the fixed source: the findings go to stderr.
    stream_name = output_file
    if fix and output_file is None:
        _render(report, fmt, sys.stderr, statistics=statistics, quiet=quiet)
    else:
        with _output(stream_name) as out:
            _render(report, fmt, out, statistics=statistics, quiet=quiet)
    _exit_for(report, exit_zero, exit_non_zero_on_fix)


def _python_stdin(
    data: bytes,
    name: str,
    path: Path | None,
    settings: Any,
    fix: bool,
    diff: bool,
    applicable: frozenset[FixSafety],
    load: Any,
) -> tuple[FileResult, Counter[str], int | None]:
    """Lint (and with --fix print the fixed) Python source read from stdin."""
    from repro_lint import report as reports
    from repro_lint.engine import lint_text
    from repro_lint.fixes import fix_texts, unified_diff
    from repro_lint.source import SourceError, decode, error_result

    try:
        decoded = decode(data)
    except SourceError as error:
        if fix:
            sys.stdout.buffer.write(data)
        return error_result(name, error), Counter(), None
    result = lint_text(decoded.text, name, settings, path, load)
    if not (fix or diff):
        return result, Counter(), None

    def relint(texts: Mapping[str, str]) -> dict[str, FileResult]:
        return {n: lint_text(t, n, settings, path, load) for n, t in texts.items()}

    outcome = fix_texts({name: decoded.text}, {name: result}, relint, applicable)[name]
    if diff:
        if outcome.changed:
            click.echo(unified_diff(name, outcome.original, outcome.text), nl=False)
        sys.exit(reports.exit_code(0, diff_changes=outcome.changed))
    sys.stdout.buffer.write(decoded.encode(outcome.text))
    sys.stdout.flush()
    return outcome.result, outcome.fixed, outcome.found


def _notebook_stdin(
    data: bytes,
    name: str,
    path: Path | None,
    settings: Any,
    fix: bool,
    diff: bool,
    applicable: frozenset[FixSafety],
    load: Any,
) -> tuple[FileResult, Counter[str], int | None]:
    """Lint (and with --fix print the fixed) notebook read from stdin."""
    from repro_lint import notebooks
    from repro_lint import report as reports
    from repro_lint.engine import text_linter
    from repro_lint.source import SourceError, error_result

    if not (fix or diff):
        return notebooks.lint(data, name, text_linter(settings, path, load)), Counter(), None
    try:
        outcome = notebooks.fix(data, name, text_linter(settings, path, load), applicable)
    except SourceError as error:
        if fix:
            sys.stdout.buffer.write(data)
        return error_result(name, error), Counter(), None
    if diff:
        click.echo(outcome.diff, nl=False)
        sys.exit(reports.exit_code(0, diff_changes=outcome.data is not None))
    sys.stdout.buffer.write(outcome.data if outcome.data is not None else data)
    sys.stdout.flush()
    return outcome.result, outcome.fixed, None


@main.command()
@click.argument("rule")
@click.option(
    "--target-torch",
    type=str,
    default=None,
    help="Judge version-dependent content for this torch release (X.Y); "
    "default: the project's target, as for `check`.",
)
def explain(rule: str, target_torch: str | None) -> None:
    """Show the documentation of RULE (a code such as RPL201, or a name)."""
    from repro_lint.explain import render_markdown
    from repro_lint.rules import rule_for
    from repro_lint.torch_versions import resolve_target

    found = rule_for(rule)
    if found is None:
        _fail(f"unknown rule `{rule}` (see `repro-lint rules`)")
    try:
        config = _load((), None, None, {"target_torch": target_torch})
    except ConfigError as exc:
        _fail(str(exc))
    target = resolve_target(config.target_torch, config.root)
    click.echo(render_markdown(found, target.version), nl=False)


@main.command("rules")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def list_rules(output_format: str) -> None:
    """List every rule."""
    from repro_lint.explain import render_markdown
    from repro_lint.rules.table import ALL_RULES

    if output_format == "json":
        data = [
            {
                "code": r.CODE,
                "name": r.name,
                "message": r.MESSAGE,
                "fix_title": r.FIX_TITLE,
                "fix_safety": r.FIX_SAFETY.value if r.FIX_SAFETY else None,
                "default_enabled": r.DEFAULT_ENABLED,
                "url": r.url(),
                "explanation": render_markdown(r),
            }
            for r in ALL_RULES
        ]
        click.echo(json.dumps(data, indent=2))
        return
    width = max(len(r.name) for r in ALL_RULES)
    for r in ALL_RULES:
        fix = r.FIX_SAFETY.value if r.FIX_SAFETY else "-"
        default = "" if r.DEFAULT_ENABLED else " (off by default)"
        click.echo(f"{r.CODE}  {r.name:<{width}}  fix: {fix:<12} {r.MESSAGE}{default}")


VERIFY_FORMATS = ("text", "json", "sarif")


@main.command()
@click.argument("paths", nargs=-1, type=str)
@click.option(
    "--device",
    type=str,
    default=None,
    help="Where to run probes: cuda, cuda:N or cpu (default: cuda when available).",
)
@click.option(
    "--runs",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="Runs of each probe per mode (default and deterministic).",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="CPU threads for probes on the CPU (default: at least 2).",
)
@click.option(
    "--catalog", is_flag=True, help="Probe every catalog entry: a report for this device."
)
@click.option(
    "--only",
    metavar="ENTRY",
    multiple=True,
    help="With --catalog: probe only this entry (repeatable).",
)
@click.option(
    "--run",
    "script",
    metavar="SCRIPT",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help=(
        "Run SCRIPT under the tracer; arguments after `--` are passed to it. This RUNS the "
        "script's code: the only repro-lint command that does; use it on code you trust."
    ),
)
@click.option(
    "--twice",
    is_flag=True,
    help="With --run: run it twice afresh, compare, and locate the first divergence.",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="With --run: stop the script after this long (--twice: at the next step).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=None,
    help="With --run: stop the script after this many optimizer steps.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="With --twice: kill a run that takes longer than this (seconds).",
)
@click.option("--output-format", type=click.Choice(VERIFY_FORMATS), default="text")
@click.option("--output-file", "-o", type=str, default=None, help="Write the report here.")
@click.option("--target-torch", type=str, default=None, help="Judge findings for this torch (X.Y).")
@click.option("--config", "config_file", type=str, default=None, help="Settings file.")
@click.option("--quiet", "-q", is_flag=True, help="No progress display.")
def verify(
    paths: tuple[str, ...],
    device: str | None,
    runs: int,
    threads: int | None,
    catalog: bool,
    only: tuple[str, ...],
    script: str | None,
    twice: bool,
    max_seconds: float | None,
    max_steps: int | None,
    timeout: float | None,
    output_format: str,
    output_file: str | None,
    target_torch: str | None,
    config_file: str | None,
    quiet: bool,
) -> None:
    """Confirm or refute RPL401/RPL402 findings by running the ops on a real device.

    \b
    repro-lint verify PATHS             probe the ops the findings in PATHS name
    repro-lint verify --catalog         probe every catalog entry on this device
                                        (--only ENTRY: those named; Ctrl-C or SIGTERM
                                        stops it with a report of the entries probed)
    repro-lint verify --run SCRIPT [-- ARGS]
                                        trace a run of SCRIPT; --twice: compare two runs

    --run executes SCRIPT (and whatever it imports): it is the only command that runs the
    linted code, so use it on code you trust. PATHS and --catalog only run repro-lint's own
    probes.
    """
    if script is None and (twice or max_seconds is not None or max_steps is not None):
        _fail("--twice, --max-seconds and --max-steps need --run SCRIPT")
    if timeout is not None and not twice:
        _fail("--timeout needs --run SCRIPT --twice")
    if catalog and (script is not None or paths):
        _fail("--catalog takes no paths and no --run")
    if only and not catalog:
        _fail("--only needs --catalog")
    if output_format == "sarif" and (catalog or script is not None):
        _fail("SARIF reports findings: use --output-format json with --catalog or --run")
    from repro_lint.verify import VerifierUnavailable, require_torch, torch_installed

    if twice:
        # The runs import torch in processes of their own; this one needs it only to measure
        # differing tensors.
        try:
            torch_installed()
        except VerifierUnavailable as exc:
            _fail(str(exc))
        assert script is not None
        sys.exit(
            _verify_twice(
                Path(script),
                paths,
                max_steps,
                max_seconds,
                timeout,
                {"target_torch": target_torch},
                config_file,
                output_format,
                output_file,
                show_progress=not quiet and sys.stderr.isatty() and not os.environ.get("CI"),
            )
        )

    try:
        require_torch()
    except VerifierUnavailable as exc:
        _fail(str(exc))
    from repro_lint.verify.runner import DeviceUnavailable, default_threads, resolve_device

    try:
        where = resolve_device(device)
    except DeviceUnavailable as exc:
        _fail(str(exc))
    from repro_lint.verify.runner import Options

    options = Options(where, runs, threads or default_threads())
    show_progress = (
        not quiet and output_format == "text" and sys.stderr.isatty() and not os.environ.get("CI")
    )
    if catalog:
        sys.exit(_verify_catalog(options, output_format, output_file, show_progress, only))
    overrides = {"target_torch": target_torch}
    if script is not None:
        code = _verify_run(
            Path(script),
            paths,
            options,
            overrides,
            config_file,
            output_format,
            output_file,
            max_steps,
            max_seconds,
            show_progress,
        )
        sys.exit(code)
    code = _verify_paths(
        paths or (".",), options, overrides, config_file, output_format, output_file, show_progress
    )
    sys.exit(code)


@contextlib.contextmanager
def _progress(total: int, label: str, enabled: bool) -> Iterator[Any]:
    """A callback that advances a progress bar on stderr (a no-op when disabled)."""
    if not enabled or total == 0:
        yield lambda result: None
        return
    with click.progressbar(
        length=total,
        label=label,
        file=sys.stderr,
        item_show_func=lambda item: item,
    ) as bar:
        yield lambda result: bar.update(1, result.entry.id)


def _lint_for_verify(
    paths: Sequence[str], overrides: Mapping[str, Any], config_file: str | None
) -> tuple[Any, list[Any], list[Any]]:
    """Lint ``paths``; the settings, the mapped RPL401/RPL402 findings and the unmapped ones."""
    from repro_lint.engine import lint_files
    from repro_lint.files import discover
    from repro_lint.settings import Settings
    from repro_lint.verify.findings import op_findings

    try:
        config = _load(paths, None, config_file, overrides)
        settings = Settings.from_config(config)
    except ConfigError as exc:
        _fail(str(exc))
    found = discover([Path(p) for p in paths], settings.config)
    for warning in found.warnings:
        click.echo(f"warning: {warning}", err=True)
    results = lint_files(found.files, settings)
    by_name = {f.display: f.path for f in found.files}
    mapped, unmapped = op_findings(results, by_name, settings.target.version)
    for diagnostic in unmapped:
        click.echo(
            f"warning: {diagnostic.filename}:{diagnostic.location.row}: {diagnostic.code} "
            "could not be matched to a catalog entry; not verified",
            err=True,
        )
    return settings, mapped, results


def _verify_paths(
    paths: Sequence[str],
    options: Any,
    overrides: Mapping[str, Any],
    config_file: str | None,
    output_format: str,
    output_file: str | None,
    show_progress: bool,
) -> int:
    import dataclasses

    from repro_lint import report as reports
    from repro_lint.diagnostics import FileResult
    from repro_lint.verify.runner import applicable_entry, environment, run_probes
    from repro_lint.verify.tables import write_findings

    settings, mapped, results = _lint_for_verify(paths, overrides, config_file)
    # Each finding is probed as the entry that applies on this device; each entry once.
    chosen = [applicable_entry(f.candidates, options.device) for f in mapped]
    entries = list({entry.id: entry for entry in chosen}.values())
    with _progress(len(entries), "probing", show_progress) as advance:
        verdicts = {r.entry.id: r for r in run_probes(entries, options, advance)}
    verified = [(f, verdicts[entry.id]) for f, entry in zip(mapped, chosen, strict=True)]
    env = environment(options.device, options.threads)
    with _output(output_file) as out:
        if output_format == "text":
            if not mapped:
                out.write("No RPL401/RPL402 findings to verify.\n")
            else:
                write_findings(out, verified, env, options.runs)
        else:
            build = {"torch": env["torch"], "cuda": env["cuda"], "gpu": env["gpu"]}
            by_key = {f.diagnostic.sort_key: {**r.to_json(), **build} for f, r in verified}
            annotated = []
            for result in results:
                kept = tuple(
                    dataclasses.replace(
                        d, properties=(*d.properties, ("verification", by_key[d.sort_key]))
                    )
                    for d in result.diagnostics
                    if d.sort_key in by_key
                )
                annotated.append(FileResult(result.filename, kept, result.source))
            report = reports.Report(annotated, settings.rules)
            reports.RENDERERS[output_format](report, out)
    return 1 if any(result.confirmed for _, result in verified) else 0


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[list[str]]:
    """SIGTERM (``timeout``, a job scheduler) handled as Ctrl-C is, while this holds: the
    list it gives names the signal that stopped the block, if one did."""
    import signal

    stopped: list[str] = []

    def terminated(number: int, frame: Any) -> None:
        stopped.append("SIGTERM")
        raise KeyboardInterrupt

    try:
        before = signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # (not the main thread: left as it is)
        before = None
    try:
        yield stopped
    finally:
        if before is not None:
            signal.signal(signal.SIGTERM, before)


def _catalog_entries(only: Sequence[str]) -> list[Any]:
    """The catalog's entries, in order; only those named, if any (an unknown name exits 2)."""
    from repro_lint.catalog import ENTRIES

    if not only:
        return list(ENTRIES)
    wanted = set(only)
    unknown = wanted - {entry.id for entry in ENTRIES}
    if unknown:
        first = sorted(unknown)[0]
        _fail(f"--only: no catalog entry {first!r} (`repro-lint verify --catalog` lists them)")
    return [entry for entry in ENTRIES if entry.id in wanted]


def _verify_catalog(
    options: Any,
    output_format: str,
    output_file: str | None,
    show_progress: bool,
    only: Sequence[str] = (),
) -> int:
    """Probe the catalog's entries (``only``: those named) and report. Stopped by Ctrl-C or
    SIGTERM, it reports the entries probed so far and names the others, and exits 130 or
    143: a stalled probe costs that probe, not the hours before it."""
    from repro_lint.verify.runner import environment, run_probes
    from repro_lint.verify.tables import write_catalog

    entries = _catalog_entries(only)
    results: list[Any] = []
    stopped: list[str] = []
    with _terminate_as_interrupt() as signalled:
        try:
            with _progress(len(entries), "probing the catalog", show_progress) as advance:

                def done(result: Any) -> None:
                    results.append(result)
                    advance(result)

                run_probes(entries, options, done)
        except KeyboardInterrupt:
            stopped = signalled or ["SIGINT"]
    env = environment(options.device, options.threads)
    left = [entry.id for entry in entries[len(results) :]]
    with _output(output_file) as out:
        if output_format == "text":
            write_catalog(out, results, env, options.runs)
            if stopped:
                out.write(
                    f"Stopped by {stopped[0]} after {len(results)} of {len(entries)} entries; "
                    f"not probed: {', '.join(left)}.\n"
                )
        else:
            counts = Counter(result.verdict.value for result in results)
            document: dict[str, Any] = {
                "environment": env,
                "runs": options.runs,
                "summary": dict(sorted(counts.items())),
                "disagreements": [r.entry.id for r in results if r.agreement == "disagrees"],
                "results": [result.to_json() for result in results],
            }
            if stopped:
                document["stopped"] = {"by": stopped[0], "not_probed": left}
            out.write(json.dumps(document, indent=2) + "\n")
    if stopped:
        click.echo(
            f"repro-lint: stopped by {stopped[0]}; the report holds the {len(results)} entries "
            f"probed (`--only` probes the {len(left)} others)",
            err=True,
        )
        return 143 if stopped[0] == "SIGTERM" else 130
    return 0


def _user_files(script: Path) -> Path:
    """The folder of the user's files for a traced script (resolved): the script's project,
    or its directory when it is in none."""
    from repro_lint.config import find_project_root

    root = find_project_root(script.parent)
    return root if root in script.parents else script.parent


def _verify_run(
    script: Path,
    args: Sequence[str],
    options: Any,
    overrides: Mapping[str, Any],
    config_file: str | None,
    output_format: str,
    output_file: str | None,
    max_steps: int | None,
    max_seconds: float | None,
    show_progress: bool,
) -> int:
    from repro_lint.verify.crossref import cross_reference
    from repro_lint.verify.runner import environment
    from repro_lint.verify.tables import environment_line, write_run
    from repro_lint.verify.trace import run_script

    script = script.resolve()
    root = _user_files(script)
    _, mapped, _ = _lint_for_verify([str(root)], overrides, config_file)
    if show_progress:
        click.echo(f"tracing {script.name} ...", err=True)
    # The script's own output must not mix with a machine-readable report.
    redirect = (
        contextlib.redirect_stdout(sys.stderr)
        if output_format != "text" and output_file is None
        else contextlib.nullcontext()
    )
    with redirect:
        trace = run_script(script, args, [root], max_steps=max_steps, max_seconds=max_seconds)
    crossref = cross_reference(trace, mapped)
    env = environment(options.device, options.threads)
    with _output(output_file) as out:
        if output_format == "text":
            out.write(f"\nEnvironment: {environment_line(env)}.\n")
            write_run(out, crossref, Path.cwd())
        else:
            out.write(json.dumps({"environment": env, **crossref.to_json()}, indent=2) + "\n")
    failed = trace.error is not None or trace.exit_status not in (None, 0)
    if failed:
        status = trace.error or f"exit status {trace.exit_status}"
        click.echo(f"error: the script did not complete: {status}", err=True)
        return 2
    return 1 if crossref.hazard_here else 0


def _verify_twice(
    script: Path,
    args: Sequence[str],
    max_steps: int | None,
    max_seconds: float | None,
    timeout: float | None,
    overrides: Mapping[str, Any],
    config_file: str | None,
    output_format: str,
    output_file: str | None,
    show_progress: bool,
) -> int:
    from repro_lint.verify.linking import link
    from repro_lint.verify.rerun import Outcome, Settings, run_twice
    from repro_lint.verify.twice import write_twice

    script = script.resolve()
    root = _user_files(script)
    settings = Settings(max_steps, max_seconds, timeout, (root,))

    def progress(message: str) -> None:
        if show_progress:
            click.echo(f"{message} ...", err=True)

    # The files the run imported from the project, not the whole project: findings elsewhere
    # cannot explain a divergence, and a large project would take long to lint.
    linted: list[tuple[list[FileResult], dict[str, Path], list[str]]] = []

    def lint(outcome: Outcome) -> None:
        if outcome.comparison.first is not None:
            used = outcome.runs[0].trace.files or [str(script)]
            linted.append((*_lint_files([Path(f) for f in used], overrides, config_file), used))

    try:
        outcome = run_twice(script, args, settings, progress, meanwhile=lint)
        if outcome.divergence is not None and linted:
            outcome.linked = link(outcome.divergence, *linted[0])
    except Exception as exc:  # whatever the script or the machine does: a message, no traceback
        _fail(f"verify --twice could not run `{script.name}`: {type(exc).__name__}: {exc}")
    with _output(output_file) as out:
        if output_format == "json":
            out.write(json.dumps(outcome.to_json(Path.cwd()), indent=2) + "\n")
        else:
            write_twice(out, outcome, Path.cwd())
    return outcome.exit_status


def _lint_files(
    files: Sequence[Path], overrides: Mapping[str, Any], config_file: str | None
) -> tuple[list[FileResult], dict[str, Path]]:
    """The findings in ``files`` (with the project's settings), and each result's file."""
    from repro_lint.engine import lint_files
    from repro_lint.files import discover
    from repro_lint.settings import Settings

    try:
        config = _load([str(f) for f in files], None, config_file, overrides)
        settings = Settings.from_config(config)
    except ConfigError as exc:
        _fail(str(exc))
    found = discover(list(files), settings.config)
    results = lint_files(found.files, settings)
    return results, {f.display: f.path for f in found.files}


@main.command()
def server() -> None:
    """Run the language server on stdin/stdout (needs the `lsp` extra)."""
    try:
        from repro_lint.lsp import serve
    except ImportError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("pygls", "lsprotocol", "cattrs"):
            raise
        _fail("the language server needs the `lsp` extra: pip install 'repro-lint[lsp]'")
    serve()


@main.command()
def clean() -> None:
    """Remove repro-lint's cache directories below the current directory."""
    from repro_lint.cache import clean as remove_caches
    from repro_lint.config import find_project_root

    cwd = Path.cwd()
    roots = {cwd, find_project_root(cwd)}
    removed: list[Path] = []
    for root in sorted(roots):
        removed.extend(p for p in remove_caches(root) if p not in removed)
    for path in removed:
        click.echo(f"removed {path}")
    if not removed:
        click.echo("no cache to remove")


@main.group()
def daemon() -> None:
    """Keep a process ready to run checks, for answers after an edit in a fraction of the
    time (see README: the daemon)."""


@daemon.command("start")
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=1),
    default=launch.DEFAULT_IDLE_TIMEOUT,
    show_default=True,
    help="Stop after this many seconds without a check.",
)
def daemon_start(idle_timeout: float) -> None:
    """Start this installation's daemon in the background (if it is not running)."""
    import subprocess

    from repro_lint.daemon import ALREADY_RUNNING, running

    if os.name != "posix":
        _fail("the daemon needs a POSIX system (Linux, macOS): it listens on a Unix socket")
    status = running()
    if status is not None:
        click.echo(f"repro-lint daemon already running (pid {status['pid']})")
        return
    path = launch.socket_path()
    directory = os.path.dirname(path)
    problem = launch.make_private_directory(directory)
    if problem is not None:
        _fail(f"the daemon's directory is refused: {problem}")
    # The daemon imports this very copy of repro-lint, and starts in its own private
    # directory, which is all that ``-m`` puts first on its import path.
    package_parent = str(Path(launch.__file__).resolve().parent.parent)
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_parent, environment.get("PYTHONPATH")) if p
    )
    log = f"{path}.log"
    with open(log, "wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "repro_lint.daemon", str(idle_timeout)],
            cwd=directory,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = running()
        if status is not None:
            pid = status["pid"]
            if pid == process.pid:
                click.echo(f"repro-lint daemon started (pid {pid})")
                return
            if process.poll() == ALREADY_RUNNING:  # (started meanwhile, by another start)
                click.echo(f"repro-lint daemon already running (pid {pid})")
                return
        if process.poll() not in (None, ALREADY_RUNNING):
            break
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        process.kill()
    tail = Path(log).read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
    _fail("the daemon did not start" + "".join(f"\n  {line}" for line in tail))


@daemon.command("stop")
def daemon_stop() -> None:
    """Stop this installation's daemon."""
    from repro_lint.daemon import request

    answer = request(launch.STOP)
    if answer is None:
        click.echo("no repro-lint daemon is running")
        return
    path = launch.socket_path()
    deadline = time.monotonic() + 10
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    click.echo("repro-lint daemon stopped")


@daemon.command("status")
def daemon_status() -> None:
    """Say whether this installation's daemon is running (exit 1 when not)."""
    from repro_lint.daemon import running

    status = running()
    if status is None:
        click.echo("no repro-lint daemon is running")
        sys.exit(1)
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status["started"]))
    click.echo(
        f"repro-lint daemon running: pid {status['pid']}, since {started}, "
        f"{status['commands']} checks run, socket {status['socket']}"
    )


# Set by ``run``, the console script: this process runs one command and exits (a command
# invoked in-process, as tests do, is not one-shot; neither is the language server).
_STANDALONE = False


def run() -> None:
    """Entry point that turns unexpected failures into exit status 2 with a message."""
    global _STANDALONE
    _STANDALONE = True
    try:
        main(prog_name="repro-lint")
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        _unexpected(exc)
        sys.exit(2)
    finally:
        # (A process that goes on, a test's, is not one run: it forks no helper for later ones.)
        _STANDALONE = False


def execute(args: list[str]) -> int:
    """Run one command line in a process that goes on after it (the daemon): its exit
    status, with what ``run`` prints on the way out."""
    try:
        main(args=args, prog_name="repro-lint")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        click.echo(str(exc.code), err=True)  # (as Python prints it, for a process)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        _unexpected(exc)
        return 2
    return 0


def _unexpected(exc: Exception) -> None:
    import traceback

    click.echo(f"error: repro-lint failed unexpectedly: {exc!r}", err=True)
    traceback.print_exc()
