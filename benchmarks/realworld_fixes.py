"""Review repro-lint's fixes on the real-world corpus: apply them to the labelled commits and
compare every applied fix with the reviewers' stored verdicts.

Usage: python benchmarks/realworld_fixes.py MIRRORS_DIR [--repo OWNER/NAME ...] [--work DIR]
       [--jobs N] [--pending FILE] [--diffs DIR] [--json OUT] [--replay JSON] [--cli-check]
       [--check] [-q]

For each repository of the real-world corpus (``benchmarks/realworld/labels``) this script

1. extracts the labelled commit from its bare mirror, as ``benchmarks/realworld.py`` does (the
   same work folder layout, so one extraction serves both scripts);
2. applies the fixes twice, to fresh copies: ``--fix`` and ``--fix --unsafe-fixes``, with the
   reviewed files as arguments and the repository root as the working directory, the way
   pre-commit runs the ``repro-lint-fix`` hook. The fix loop runs in this process (the same
   functions the command line uses, for the reviewed notebooks too, cell by cell) so that
   every applied fix is known with its finding; ``--cli-check`` also runs the console
   script and fails when its result differs;
3. keys each applied fix by repo@commit, path, rule and the text it inserted, and looks up the
   reviewer's verdict in ``benchmarks/realworld/fixes/verdicts.jsonl``: ``merge`` (merge as
   is), ``edit`` (needs an edit) or ``wrong``. A fix whose inserted text changed has no verdict
   yet: it is listed as unreviewed. So is a fix that writes the same text elsewhere: a verdict
   records a digest of the hunk its reviewer saw (``shown``; the hunk without its line numbers),
   and a fix whose hunk differs from it is unreviewed again (verdicts older than that record
   have no digest and are matched by their text alone). The new verdict of such a fix replaces
   the stored one (a fix has one verdict; the old one stays in the history).

Only verdicts are stored here, never the third-party diffs: they are regenerated from the
mirrors (``--diffs DIR`` writes them outside this repository for a reviewer; ``--pending FILE``
writes the unreviewed fixes as verdict records to fill in, each with the hunk that shows it).
``--replay JSON`` scores the fixes an earlier ``--json`` run recorded, without fixing again
(while editing verdicts). With ``--check`` it exits 1 unless the targets of the fix issue are
met: at least 80 fixed files across at least 15 repositories, at least 95% of the reviewed
fixes merged as is, none wrong, none unreviewed.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import realworld  # the corpus and its extraction, beside this script

HERE = Path(__file__).resolve().parent
VERDICTS = HERE / "realworld" / "fixes" / "verdicts.jsonl"
MODES = {"safe": ("--fix",), "unsafe": ("--fix", "--unsafe-fixes")}
VERDICT_NAMES = {"merge": "merge as is", "edit": "needs edit", "wrong": "wrong"}
KEYS = ("repo", "commit", "path", "code", "inserted")
# The family that owns a rule's fixes, by the hundreds of its code (a verdict's own `family`
# names who has to improve that fix: `fixes` for the mechanics of imports and layout).
FAMILIES = {"1": "seeding", "2": "determinism", "3": "data", "4": "ops"}
# Targets of the fix issue.
MIN_FILES, MIN_REPOS, MIN_MERGED = 80, 15, 0.95


class VerdictError(ValueError):
    """A verdict file that breaks the record format."""


@dataclass(frozen=True)
class Verdict:
    repo: str
    commit: str
    path: str
    code: str
    inserted: str
    verdict: str
    reason: str
    family: str = ""
    shown: str = ""  # the digest of the hunk the reviewer saw (``hunk_digest``); "" unknown

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.repo, self.commit, self.path, self.code, self.inserted)


def hunk_digest(hunk: str) -> str:
    """What a reviewer saw of a fix, as a short digest: its hunk without the line numbers of
    its ``@@`` headers (which move when a fix above it in the file changes size)."""
    text = re.sub(r"(?m)^@@ [^@]*@@", "@@", hunk)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


@dataclass(frozen=True)
class AppliedFix:
    """One fix the loop applied, in one mode."""

    repo: str
    commit: str
    path: str
    code: str
    inserted: str
    mode: str
    row: int
    message: str
    original: bool
    hunk: str = ""
    cell: int | None = None  # the finding's cell, in a notebook
    shown: str = ""  # ``hunk_digest(hunk)``, kept when the hunk itself is not (``--json``)

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.repo, self.commit, self.path, self.code, self.inserted)

    @property
    def where(self) -> str:
        return realworld.where(self.path, self.cell, self.row)


@dataclass
class RepoFixes:
    repo: str
    commit: str
    fixes: list[AppliedFix] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)  # mode -> changed files
    diffs: dict[str, str] = field(default_factory=dict)  # mode -> unified diff
    error: str | None = None


# -- verdicts -----------------------------------------------------------------------------------


def load_verdicts(path: Path = VERDICTS) -> dict[tuple[str, str, str, str, str], Verdict]:
    found: dict[tuple[str, str, str, str, str], Verdict] = {}
    if not path.is_file():
        return found
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise VerdictError(f"{where}: not JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise VerdictError(f"{where}: not a JSON object")
        for key in (*KEYS, "verdict", "reason"):
            if not isinstance(record.get(key), str):
                raise VerdictError(f"{where}: `{key}` must be a string")
        if record["verdict"] not in VERDICT_NAMES:
            raise VerdictError(f"{where}: `verdict` must be one of {', '.join(VERDICT_NAMES)}")
        if not record["reason"].strip() or "\n" in record["reason"]:
            raise VerdictError(f"{where}: `reason` must be one line")
        shown = record.get("shown", "")
        if not isinstance(shown, str):
            raise VerdictError(f"{where}: `shown` must be a string")
        verdict = Verdict(**{k: record[k] for k in (*KEYS, "verdict", "reason")},
                          family=str(record.get("family", "")), shown=shown)  # fmt: skip
        if verdict.key in found:
            raise VerdictError(f"{where}: a second verdict for the same fix")
        found[verdict.key] = verdict
    return found


# -- applying the fixes -------------------------------------------------------------------------


@dataclass
class FileFix:
    """What fixing did to one file: its unified diff (empty when unchanged), the fixes
    applied, and per fix the hunk of the diff that shows it (for a reviewer)."""

    name: str
    diff: str
    applied: list[Any]
    hunks: list[str]


def fix_in_place(root: Path, files: Sequence[str], unsafe: bool) -> tuple[list[FileFix], list[str]]:
    """Fix ``files`` of the project at ``root`` as ``repro-lint check --fix`` run there does
    (notebooks cell by cell); return what fixing did to each file and the files written."""
    from repro_lint import notebooks
    from repro_lint.config import load_config
    from repro_lint.diagnostics import FixSafety
    from repro_lint.engine import Relinter, lint_files, text_linter
    from repro_lint.files import discover
    from repro_lint.fixes import fix_texts
    from repro_lint.settings import Settings
    from repro_lint.source import SourceError, read_source

    os.chdir(root)
    config = load_config(root)
    settings = Settings.from_config(config)
    found = discover([Path(f) for f in files], config, force_exclude=True)
    results = lint_files(found.files, settings, jobs=1)
    applicable = frozenset({FixSafety.SAFE, FixSafety.UNSAFE} if unsafe else {FixSafety.SAFE})
    paths = {f.display: f.path for f in found.files}
    texts: dict[str, str] = {}
    encodings = {}
    notebook_names = []
    for result in results:
        if any(d.code == "RPL000" for d in result.diagnostics):
            continue
        if notebooks.is_notebook(result.filename):
            notebook_names.append(result.filename)
            continue
        try:
            decoded = read_source(paths[result.filename])
        except SourceError:
            continue
        texts[result.filename] = decoded.text
        encodings[result.filename] = decoded
    relint = Relinter(settings, paths, texts, results)
    current = [r for r in results if r.filename in texts]
    if any(r.diagnostics and r.source != texts[r.filename] for r in current):
        initial = dict(relint(texts))
    else:
        initial = {r.filename: r for r in current}
    outcomes = fix_texts(texts, initial, relint, applicable) if texts else {}
    out: list[FileFix] = []
    written = []
    for name, outcome in sorted(outcomes.items()):
        diff = ""
        if outcome.changed:
            paths[name].write_bytes(encodings[name].encode(outcome.text))
            written.append(name)
            diff = "".join(
                difflib.unified_diff(
                    outcome.original.splitlines(keepends=True),
                    outcome.text.splitlines(keepends=True),
                    fromfile=f"a/{name}",
                    tofile=f"b/{name}",
                )
            )
        hunks = []
        for applied in outcome.applied:
            d = applied.diagnostic
            # The hunk that shows the fix: where its first edit in this file is.
            edits = [e for e in (d.fix.edits if d.fix else ()) if e.filename in (None, name)]
            at = edits[0].location.row if edits else d.location.row
            hunks.append(_hunk(outcome.original, outcome.text, name, at))
        out.append(FileFix(name, diff, list(outcome.applied), hunks))
    for name in sorted(notebook_names):
        path = paths[name]
        # A notebook whose fixed cells cannot be written back (SourceError) fails the review
        # of its repository, as a defect to look at: the command line would leave it as is.
        fixed = notebooks.fix(path.read_bytes(), name, text_linter(settings, path), applicable)
        if fixed.data is not None:
            path.write_bytes(fixed.data)
            written.append(name)
        hunks = [
            _cell_diff(fixed.diff, dict(a.diagnostic.properties).get("cell")) for a in fixed.applied
        ]
        out.append(FileFix(name, fixed.diff, fixed.applied, hunks))
    return out, sorted(written)


def _cell_diff(diff: str, cell: object) -> str:
    """The parts of a notebook's diff (one part per changed or added cell) for ``cell``: its
    own and that of a new cell made above it; all of it when neither is there (a fix that
    edited another cell)."""
    parts = re.split(r"(?m)^(?=--- a/)", diff)
    found = [
        part
        for part in parts
        if part.startswith("--- a/")
        and part.split("\n", 1)[0].endswith((f":cell {cell}", f":new cell above cell {cell}"))
    ]
    return "".join(found) or diff


def _hunk(before: str, after: str, path: str, row: int) -> str:
    """The hunk of the file's diff nearest to ``row`` (for a reviewer; never stored here)."""
    diff = list(
        difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), n=3)
    )
    hunks: list[list[str]] = []
    for line in diff[2:]:
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
    if not hunks:
        return ""

    def distance(hunk: list[str]) -> int:
        start = int(hunk[0].split()[1].split(",")[0].lstrip("-"))
        return abs(start - row)

    nearest = min(hunks, key=distance)
    return f"{path}\n" + "".join(nearest)


def _key_text(path: str, inserted: Iterable[tuple[str, str]]) -> str:
    parts = []
    for target, text in inserted:
        stripped = text.strip("\r\n")
        parts.append(stripped if target == path else f"[{target}] {stripped}")
    return "\n".join(parts)


def review_repo(
    mirrors: Path, repo: str, commit: str, files: list[str], work: Path, cli_check: bool
) -> RepoFixes:
    out = RepoFixes(repo, commit)
    source = work / repo.replace("/", "+") / commit[:12]
    reviewed_notebooks = [f for f in files if realworld.is_notebook(f)]
    try:
        if not source.is_dir():
            partial = source.with_name(source.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            realworld.extract(mirrors, repo, commit, partial, also=reviewed_notebooks)
            partial.rename(source)
        else:
            realworld.complete(mirrors, repo, commit, source, reviewed_notebooks)
    except (OSError, subprocess.CalledProcessError, FileNotFoundError) as exc:
        out.error = f"cannot extract: {exc}"
        return out
    present = [f for f in files if (source / f).is_file()]
    for mode, flags in MODES.items():
        scratch = work / ".fixes" / mode / repo.replace("/", "+")
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(source, scratch, symlinks=True)
        try:
            outcomes, written = fix_in_place(scratch, present, unsafe=mode == "unsafe")
        except Exception as exc:  # one repository's failure is reported, not fatal
            out.error = f"{mode}: {type(exc).__name__}: {exc}"
            return out
        out.changed[mode] = written
        diffs = []
        for fixed in outcomes:
            diffs.append(fixed.diff)
            for applied, hunk in zip(fixed.applied, fixed.hunks, strict=True):
                d = applied.diagnostic
                out.fixes.append(
                    AppliedFix(
                        repo=repo,
                        commit=commit,
                        path=fixed.name,
                        code=d.code,
                        inserted=_key_text(fixed.name, applied.inserted),
                        mode=mode,
                        row=d.location.row,
                        message=d.message,
                        original=applied.original,
                        hunk=hunk,
                        cell=dict(d.properties).get("cell"),
                        shown=hunk_digest(hunk) if hunk else "",
                    )
                )
        out.diffs[mode] = "".join(diffs)
        if cli_check:
            problem = _cli_differs(source, present, flags, scratch)
            if problem:
                out.error = f"{mode}: {problem}"
    return out


def _cli_differs(source: Path, files: Sequence[str], flags: Sequence[str], fixed: Path) -> str:
    """Run the console script on another copy and compare its files with ``fixed``."""
    with tempfile.TemporaryDirectory(prefix="repro-lint-fixes-cli-") as folder:
        copy = Path(folder) / "repo"
        shutil.copytree(source, copy, symlinks=True)
        command = [str(realworld.CONSOLE), "check", "--force-exclude", "--no-cache", *flags]
        subprocess.run([*command, *files], cwd=copy, capture_output=True, timeout=1800)
        for name in files:
            a, b = copy / name, fixed / name
            if a.is_file() and b.is_file() and a.read_bytes() != b.read_bytes():
                return f"the console script fixed {name} differently"
    return ""


# -- the review ---------------------------------------------------------------------------------


@dataclass
class Review:
    fixes: list[AppliedFix]
    verdicts: dict[tuple[str, str, str, str, str], Verdict]
    files: set[tuple[str, str]]
    repos: set[str]

    def unique(self) -> list[AppliedFix]:
        """Each fix once (a safe fix is applied in both modes)."""
        seen: dict[tuple[str, str, str, str, str], AppliedFix] = {}
        for fix in self.fixes:
            seen.setdefault(fix.key, fix)
        return list(seen.values())

    def _judged(self, fix: AppliedFix) -> Verdict | None:
        """The stored verdict of ``fix``: same text, and the same hunk where the verdict
        recorded the one its reviewer saw."""
        found = self.verdicts.get(fix.key)
        if found is None or (found.shown and fix.shown and found.shown != fix.shown):
            return None
        return found

    def verdict(self, fix: AppliedFix) -> str | None:
        found = self._judged(fix)
        return None if found is None else found.verdict

    def family(self, fix: AppliedFix) -> str:
        """The family that owns the fix: its verdict's, else its rule's."""
        found = self._judged(fix)
        if found is not None and found.family:
            return found.family
        return FAMILIES.get(fix.code[3:4], "?")

    @functools.cached_property
    def previous(self) -> dict[tuple[str, str, str, str], list[Verdict]]:
        """The stored verdicts that match no fix of this run, by the finding they judged
        (repo, commit, path, code): what an unreviewed fix of the same finding replaced
        (other text, or the same text shown in another hunk)."""
        current = {fix.key for fix in self.fixes if self._judged(fix) is not None}
        out: dict[tuple[str, str, str, str], list[Verdict]] = defaultdict(list)
        for key, verdict in self.verdicts.items():
            if key not in current:
                out[key[:4]].append(verdict)
        return out

    def status(self, fix: AppliedFix) -> str:
        """`merge`, `edit` or `wrong` (reviewed); `changed` (unreviewed, but a stored verdict
        of the same finding no longer matches: the fix writes something else now) or `new`."""
        found = self.verdict(fix)
        if found is not None:
            return found
        return "changed" if fix.key[:4] in self.previous else "new"


def summarise(runs: Sequence[RepoFixes], verdicts: dict[Any, Verdict]) -> Review:
    fixes = [fix for run in runs for fix in run.fixes]
    files = {(run.repo, name) for run in runs for names in run.changed.values() for name in names}
    repos = {repo for repo, _ in files}
    return Review(fixes, verdicts, files, repos)


def report(review: Review, runs: Sequence[RepoFixes], quiet: bool) -> bool:
    unique = review.unique()
    counts = Counter(review.verdict(fix) or "unreviewed" for fix in unique)
    reviewed = sum(counts[name] for name in VERDICT_NAMES)
    merged = counts["merge"] / reviewed if reviewed else 0.0
    by_mode = {
        mode: len({(run.repo, n) for run in runs for n in run.changed.get(mode, ())})
        for mode in MODES
    }
    print(
        f"fix review corpus: {len(review.repos)} repositories, {len(review.files)} fixed files "
        f"(--fix: {by_mode['safe']}, --unsafe-fixes: {by_mode['unsafe']}), "
        f"{len(unique)} fixes"
    )
    print()
    print(f"{'verdict':12} {'fixes':>5} {'share':>6}")
    for name, label in (*VERDICT_NAMES.items(), ("unreviewed", "unreviewed")):
        share = f"{counts[name] / len(unique):.0%}" if unique else "-"
        print(f"{label:12} {counts[name]:5} {share:>6}")
    for kind, of_kind in (
        ("Python files", [f for f in unique if not realworld.is_notebook(f.path)]),
        ("notebooks", [f for f in unique if realworld.is_notebook(f.path)]),
    ):
        verdicts = Counter(review.verdict(f) for f in of_kind)
        judged = sum(verdicts[name] for name in VERDICT_NAMES)
        if judged:
            print(
                f"  {kind}: {verdicts['merge']} of {judged} reviewed merged as is "
                f"({verdicts['merge'] / judged:.1%}), {verdicts['wrong']} wrong"
            )
    statuses = Counter(review.status(fix) for fix in unique)
    if counts["unreviewed"]:
        print(
            f"  (unreviewed: {statuses['changed']} changed since their verdict, "
            f"{statuses['new']} new)"
        )
    print()
    columns = (*VERDICT_NAMES, "changed", "new")
    print(
        f"{'family':12} "
        + " ".join(f"{VERDICT_NAMES.get(n, n)[:11]:>11}" for n in columns)
        + f" {'merged':>7}"
    )
    for family in sorted({review.family(fix) for fix in unique}):
        mine = Counter(review.status(f) for f in unique if review.family(f) == family)
        judged = sum(mine[n] for n in VERDICT_NAMES)
        share = f"{mine['merge'] / judged:.0%}" if judged else "-"
        print(f"{family:12} " + " ".join(f"{mine[n]:>11}" for n in columns) + f" {share:>7}")
    print()
    codes = sorted({fix.code for fix in unique})
    print(
        f"{'code':8} "
        + " ".join(f"{VERDICT_NAMES.get(n, n)[:10]:>10}" for n in (*VERDICT_NAMES, "unreviewed"))
    )
    for code in codes:
        mine = Counter(review.verdict(f) or "unreviewed" for f in unique if f.code == code)
        print(f"{code:8} " + " ".join(f"{mine[n]:>10}" for n in (*VERDICT_NAMES, "unreviewed")))
    ok = (
        len(review.files) >= MIN_FILES
        and len(review.repos) >= MIN_REPOS
        and merged >= MIN_MERGED
        and counts["wrong"] == 0
        and counts["unreviewed"] == 0
    )
    print(
        f"\ntargets: >= {MIN_FILES} fixed files ({len(review.files)}), >= {MIN_REPOS} "
        f"repositories ({len(review.repos)}), >= {MIN_MERGED:.0%} merged as is "
        f"({merged:.1%} of {reviewed} reviewed), none wrong ({counts['wrong']}), none "
        f"unreviewed ({counts['unreviewed']}): {'met' if ok else 'MISSED'}"
    )
    for run in runs:
        if run.error:
            print(f"\nERROR {run.repo}@{run.commit[:12]}: {run.error}")
            ok = False
    stale = set(review.verdicts) - {fix.key for fix in unique}
    if stale:
        print(
            f"\n{len(stale)} stored verdicts match no fix of this run (the fix changed, or is "
            "no longer made)"
        )
    if not quiet:
        previous = review.previous
        for name in ("wrong", "edit", "changed", "new"):
            listed = [f for f in unique if review.status(f) == name]
            if not listed:
                continue
            title = {"changed": "changed since their verdict", "new": "new, never reviewed"}
            print(f"\n{title.get(name, VERDICT_NAMES.get(name, name))} ({len(listed)}):")
            for fix in sorted(listed, key=lambda f: (f.code, f.repo, f.path, f.row)):
                found = review.verdicts.get(fix.key)
                why = f"  -- {found.reason}" if found else ""
                created = "" if fix.original else " (a finding an earlier fix created)"
                print(
                    f"  {fix.code} {fix.repo}@{fix.commit[:7]}:{fix.where}{created}"
                    f"  {_first(fix.inserted)}{why}"
                )
                for old in previous.get(fix.key[:4], []) if name == "changed" else ():
                    print(f"      was: {_first(old.inserted)}  [{old.verdict}: {old.reason}]")
    return ok


def _first(text: str) -> str:
    """The first line of an inserted text, shortened for a listing."""
    return text.strip().splitlines()[0][:70] if text.strip() else ""


def _pending(review: Review, path: Path) -> int:
    """Write the unreviewed fixes as verdict records to fill in (with their hunks)."""
    records = []
    previous = review.previous
    for fix in review.unique():
        if review.verdict(fix) is None:
            record: dict[str, Any] = {k: getattr(fix, k) for k in KEYS}
            record.update(verdict=None, family="", reason="", mode=fix.mode, row=fix.row,
                          **({} if fix.cell is None else {"cell": fix.cell}),
                          message=fix.message, hunk=fix.hunk, shown=fix.shown)  # fmt: skip
            # What the same finding's fix wrote when it was last reviewed, and the verdict.
            record["previous"] = [asdict(old) for old in previous.get(fix.key[:4], [])]
            records.append(record)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return len(records)


def _fixed(args: argparse.Namespace, repos: dict[str, tuple[str, list[str]]]) -> list[RepoFixes]:
    temporary = None
    work = args.work
    if work is None:
        temporary = tempfile.TemporaryDirectory(prefix="repro-lint-realworld-fixes-")
        work = Path(temporary.name)
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    mirrors = args.mirrors.resolve()
    try:
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [
                pool.submit(review_repo, mirrors, repo, commit, files, work, args.cli_check)
                for repo, (commit, files) in sorted(repos.items())
            ]
            return [future.result() for future in futures]
    finally:
        if temporary is not None:
            temporary.cleanup()


def _replayed(path: Path, repos: set[str]) -> list[RepoFixes]:
    """The runs an earlier ``--json`` recorded (to score edited verdicts without fixing)."""
    document = json.loads(path.read_text(encoding="utf-8"))
    runs: dict[str, RepoFixes] = {}
    for repo, (commit, changed) in document["changed"].items():
        if repo in repos:
            runs[repo] = RepoFixes(repo, commit, changed=changed)
    for record in document["fixes"]:
        run = runs.get(record["repo"])
        if run is not None:
            fields = {k: v for k, v in record.items() if k not in ("verdict", "hunk")}
            run.fixes.append(AppliedFix(**fields, hunk=""))
    for repo, error in document.get("errors", {}).items():
        if repo in runs:
            runs[repo].error = error
    return [runs[repo] for repo in sorted(runs)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("mirrors", type=Path, help="folder of bare git mirrors (owner+name/repo)")
    parser.add_argument("--repo", action="append", default=[], help="only this repository")
    parser.add_argument("--work", type=Path, help="keep extracted commits and fixed copies here")
    parser.add_argument("--jobs", type=int, default=4, help="repositories fixed at once")
    parser.add_argument("--pending", type=Path, help="write the unreviewed fixes here (JSONL)")
    parser.add_argument("--diffs", type=Path, help="write each repository's diffs here")
    parser.add_argument("--json", type=Path, help="write every applied fix and verdict here")
    parser.add_argument(
        "--replay", type=Path, help="score the fixes of an earlier --json run (fixes nothing)"
    )
    parser.add_argument("--cli-check", action="store_true", help="compare with the console script")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("-q", "--quiet", action="store_true", help="tables only")
    args = parser.parse_args(argv)
    try:
        labels = realworld.load_labels()
        verdicts = load_verdicts()
    except (realworld.LabelError, VerdictError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    repos: dict[str, tuple[str, list[str]]] = {}
    for lab in labels:
        if lab.kind == "file" and (not args.repo or lab.repo in args.repo):
            repos.setdefault(lab.repo, (lab.commit, []))[1].append(lab.path)
    runs = _replayed(args.replay, set(repos)) if args.replay else _fixed(args, repos)
    review = summarise(runs, verdicts)
    ok = report(review, runs, args.quiet)
    if args.diffs:
        args.diffs.mkdir(parents=True, exist_ok=True)
        for run in runs:
            for mode, text in run.diffs.items():
                if text:
                    name = f"{run.repo.replace('/', '+')}.{mode}.diff"
                    (args.diffs / name).write_text(text, encoding="utf-8")
    if args.pending:
        count = _pending(review, args.pending)
        print(f"\n{count} unreviewed fixes written to {args.pending}")
    if args.json:
        document = {
            "fixes": [
                {**asdict(fix), "hunk": None, "verdict": review.verdict(fix)}
                for fix in review.fixes
            ],
            "changed": {run.repo: [run.commit, run.changed] for run in runs},
            "errors": {run.repo: run.error for run in runs if run.error},
        }
        args.json.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
