"""Score repro-lint on the labelled real-world corpus: precision and recall per code and overall.

Usage: python benchmarks/realworld.py MIRRORS_DIR [--repo OWNER/NAME ...] [--code RPLxxx ...]
       [--work DIR] [--json OUT] [--jobs N] [--check] [-q]

MIRRORS_DIR holds bare git mirrors as the fetch tool leaves them: ``owner+name/repo`` (or
``owner+name/repo/.git``). For each labelled repository this script

1. extracts the labelled commit's text files (Python sources, the reviewed notebooks and the
   files that configure a project: pyproject.toml, setup.py/setup.cfg, requirements*.txt,
   .gitignore) into a work
   folder outside this repository (a temporary one unless --work names one; blobs missing from
   a partial mirror are skipped);
2. runs repro-lint the way pre-commit does: the reviewed files as arguments, the repository root
   as the working directory, `--force-exclude`, no cache, JSON output, with the rules that are
   off by default but labelled here added by `--extend-select`;
3. matches findings to labels (``benchmarks/realworld/README.md``): program-level codes (RPL000,
   RPL101 per family, RPL202) per file, the others per (file, line, code), and in a notebook
   per (file, cell, line in the cell, code).

It prints precision and recall per code and overall, then every miss and every false positive
with the label's note, and, with --check, exits 1 when a target of the real-world issue is not
met (overall precision >= 0.95 and recall >= 0.90; every code with at least 5 positives: recall
>= 0.85 and precision >= 0.90).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LABELS = HERE / "realworld" / "labels"
CONSOLE = Path(sys.executable).parent / "repro-lint"
KINDS = ("file", "positive", "negative", "dont_care")
ROLES = ("entry", "helper", "library", "clean")
FAMILIES = ("torch", "numpy", "random")
# Matched per file, not per line (labelling protocol, "Where a finding sits").
PER_FILE = frozenset({"RPL000", "RPL101", "RPL202"})
CODE = re.compile(r"^(RPL\d{3}|OTHER)$")
# Targets of the real-world issue.
OVERALL_PRECISION, OVERALL_RECALL = 0.95, 0.90
CODE_PRECISION, CODE_RECALL, CODE_MIN_POSITIVES = 0.90, 0.85, 5
# What a project needs besides its Python files: its settings, and what tells its torch target.
_CONFIG_FILES = re.compile(
    r"(^|/)(pyproject\.toml|setup\.py|setup\.cfg|\.gitignore|requirements[^/]*\.txt)$"
)


class LabelError(ValueError):
    """A label file that breaks the record format."""


# Where a finding or a label sits: None for a program-level code (matched per file), else the
# notebook cell (None in a Python file) and the line (in that cell).
Place = tuple[int | None, int] | None
Key = tuple[str, str, Place, str | None]


@dataclass(frozen=True)
class Label:
    repo: str
    commit: str
    path: str
    line: int | None
    code: str | None
    kind: str
    note: str
    role: str | None = None
    family: str | None = None
    verdict: str | None = None
    source: str = ""  # labels file and line number, for messages
    cell: int | None = None  # a notebook's cell (1-based among all its cells); line is in it

    @property
    def key(self) -> Key:
        """What a finding must match: per file for program-level codes, else per line."""
        assert self.code is not None and self.line is not None
        if self.code in PER_FILE:
            return (self.path, self.code, None, self.family)
        return (self.path, self.code, (self.cell, self.line), None)

    @property
    def where(self) -> str:
        return where(self.path, self.cell, self.line)


@dataclass(frozen=True)
class Finding:
    path: str
    code: str
    line: int
    family: str | None
    message: str
    cell: int | None = None

    @property
    def key(self) -> Key:
        if self.code in PER_FILE:
            return (self.path, self.code, None, self.family)
        return (self.path, self.code, (self.cell, self.line), None)

    @property
    def where(self) -> str:
        return where(self.path, self.cell, self.line)


def where(path: str, cell: int | None, line: int | None) -> str:
    return f"{path}:{line}" if cell is None else f"{path}:cell {cell}:{line}"


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


@dataclass
class RepoRun:
    repo: str
    commit: str
    files: list[str]
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    missing: list[str] = field(default_factory=list)


# -- labels -----------------------------------------------------------------------------------


def _label(record: Any, source: str) -> Label:
    if not isinstance(record, dict):
        raise LabelError(f"{source}: not a JSON object")
    for key in ("repo", "commit", "path", "kind", "note"):
        if not isinstance(record.get(key), str) or not record[key]:
            raise LabelError(f"{source}: `{key}` must be a non-empty string")
    kind = record["kind"]
    if kind not in KINDS:
        raise LabelError(f"{source}: unknown kind {kind!r}")
    if not re.fullmatch(r"[0-9a-f]{40}", record["commit"]):
        raise LabelError(f"{source}: `commit` must be 40 hex digits")
    line, code, cell = record.get("line"), record.get("code"), record.get("cell")
    if kind == "file":
        if record.get("role") not in ROLES:
            raise LabelError(f"{source}: a file record needs a role in {ROLES}")
        if line is not None or code is not None or cell is not None:
            raise LabelError(f"{source}: a file record has no line, no cell and no code")
    else:
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            raise LabelError(f"{source}: `line` must be a positive integer")
        if not isinstance(code, str) or not CODE.match(code):
            raise LabelError(f"{source}: `code` must be RPLxxx or OTHER")
        if not is_notebook(record["path"]):
            if cell is not None:
                raise LabelError(f"{source}: only a notebook's labels carry `cell`")
        elif not isinstance(cell, int) or isinstance(cell, bool) or cell < 1:
            raise LabelError(f"{source}: a notebook's label needs `cell`, a positive integer")
    family = record.get("family")
    if code == "RPL101" and family not in FAMILIES:
        raise LabelError(f"{source}: RPL101 needs `family` in {FAMILIES}")
    if code != "RPL101" and family is not None:
        raise LabelError(f"{source}: only RPL101 carries `family`")
    verdict = record.get("verdict")
    if verdict is not None and verdict not in ("tool", "label", "debatable"):
        raise LabelError(f"{source}: `verdict` must be tool, label or debatable")
    return Label(
        repo=record["repo"],
        commit=record["commit"],
        path=record["path"],
        line=line,
        code=code,
        kind=kind,
        note=record["note"],
        role=record.get("role"),
        family=family,
        verdict=verdict,
        source=source,
        cell=cell,
    )


def load_labels(directory: Path = LABELS) -> list[Label]:
    labels: list[Label] = []
    for path in sorted(directory.glob("*.jsonl")):
        for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not raw.strip():
                continue
            source = f"{path.name}:{number}"
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise LabelError(f"{source}: not JSON ({exc})") from exc
            labels.append(_label(record, source))
    reviewed = {(lab.repo, lab.path) for lab in labels if lab.kind == "file"}
    commits: dict[str, str] = {}
    for lab in labels:
        if commits.setdefault(lab.repo, lab.commit) != lab.commit:
            raise LabelError(f"{lab.source}: {lab.repo} is labelled at two commits")
        if lab.kind != "file" and (lab.repo, lab.path) not in reviewed:
            raise LabelError(f"{lab.source}: {lab.path} has labels but no `file` record")
    return labels


# -- the code ---------------------------------------------------------------------------------


def git_dir(mirrors: Path, repo: str) -> Path:
    base = mirrors / repo.replace("/", "+") / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "objects").is_dir():
            return candidate
    raise FileNotFoundError(f"no mirror of {repo} under {mirrors} (fetch github:{repo})")


def _git(directory: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(directory), *args],
        input=data,
        capture_output=True,
        check=True,
    ).stdout


def extract(
    mirrors: Path, repo: str, commit: str, target: Path, also: Collection[str] = ()
) -> list[str]:
    """Write the commit's Python and project files, and the files named in ``also`` (the
    reviewed notebooks), under ``target``; return the paths whose blobs the mirror lacks."""
    directory = git_dir(mirrors, repo)
    listing = _git(directory, "ls-tree", "-r", "-z", "--full-tree", commit)
    also = frozenset(also)
    wanted: list[tuple[str, str]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        path = name.decode("utf-8", "surrogateescape")
        if kind != "blob" or mode == "120000":
            continue
        if path.endswith((".py", ".pyi")) or _CONFIG_FILES.search(path) or path in also:
            wanted.append((path, sha))
    missing = _write_blobs(directory, wanted, target)
    # A checkout has a .git at its root: the linter finds the project root there.
    (target / ".git").mkdir(exist_ok=True)
    return missing


def complete(mirrors: Path, repo: str, commit: str, target: Path, files: Iterable[str]) -> None:
    """Write the reviewed files that a work folder extracted before lacks (notebooks labelled
    since); those the commit does not hold stay absent."""
    absent = [f for f in files if not (target / f).is_file()]
    if not absent:
        return
    directory = git_dir(mirrors, repo)
    wanted = []
    for path in absent:
        listed = _git(directory, "ls-tree", "-z", "--full-tree", commit, "--", path)
        meta, _, _ = listed.partition(b"\t")
        if meta and meta.decode().split()[1] == "blob":
            wanted.append((path, meta.decode().split()[2]))
    _write_blobs(directory, wanted, target)


def _write_blobs(directory: Path, wanted: Sequence[tuple[str, str]], target: Path) -> list[str]:
    if not wanted:
        return []
    missing: list[str] = []
    batch = _git(
        directory, "cat-file", "--batch", data="".join(f"{s}\n" for _, s in wanted).encode()
    )
    offset = 0
    for path, _sha in wanted:
        end = batch.index(b"\n", offset)
        header = batch[offset:end].decode()
        offset = end + 1
        if header.endswith("missing"):
            missing.append(path)
            continue
        size = int(header.split()[2])
        content = batch[offset : offset + size]
        offset += size + 1
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(content)
    return missing


def known_rules() -> dict[str, bool]:
    """Code -> enabled by default, from the linter under test."""
    output = subprocess.run(
        [str(CONSOLE), "rules", "--output-format", "json"], capture_output=True, check=True
    ).stdout
    return {rule["code"]: bool(rule["default_enabled"]) for rule in json.loads(output)}


_FAMILY = re.compile(r"`(torch|numpy|random)`")


def findings_of(diagnostics: Iterable[dict[str, Any]], root: Path) -> Iterator[Finding]:
    for d in diagnostics:
        filename = Path(d["filename"])
        path = (filename if filename.is_absolute() else root / filename).resolve()
        try:
            relative = path.relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        row = int(d["location"]["row"])
        if d["code"] == "RPL101":
            # One finding names every unseeded family; each family is its own unit.
            # "never seeds `numpy` (data.py:17), `random` (train.py:3)": drop the places.
            named = re.sub(r"\([^)]*\)", "", d["message"])
            families = sorted(set(_FAMILY.findall(named))) or ["?"]
            for family in families:
                yield Finding(relative, d["code"], row, family, d["message"], d.get("cell"))
        else:
            yield Finding(relative, d["code"], row, None, d["message"], d.get("cell"))


def run_repo(
    mirrors: Path, repo: str, commit: str, files: list[str], work: Path, extra: Sequence[str]
) -> RepoRun:
    result = RepoRun(repo, commit, files)
    target = work / repo.replace("/", "+") / commit[:12]
    try:
        if not target.is_dir():
            partial = target.with_name(target.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            result.missing = extract(mirrors, repo, commit, partial, also=files)
            partial.rename(target)
        complete(mirrors, repo, commit, target, files)
    except (OSError, subprocess.CalledProcessError, FileNotFoundError) as exc:
        result.error = f"cannot extract: {exc}"
        return result
    present = [f for f in files if (target / f).is_file()]
    result.missing.extend(f for f in files if f not in present)
    command = [
        str(CONSOLE),
        "check",
        "--force-exclude",
        "--no-cache",
        "--output-format",
        "json",
        *(["--extend-select", ",".join(extra)] if extra else []),
        *present,
    ]
    completed = subprocess.run(command, cwd=target, capture_output=True, text=True, timeout=1800)
    if completed.returncode not in (0, 1):
        result.error = f"repro-lint exited {completed.returncode}: {completed.stderr[-2000:]}"
        return result
    try:
        diagnostics = json.loads(completed.stdout or "[]")
    except json.JSONDecodeError:
        result.error = f"repro-lint printed no JSON: {completed.stdout[:500]}"
        return result
    result.findings = list(findings_of(diagnostics, target))
    return result


# -- scoring ----------------------------------------------------------------------------------


@dataclass
class Score:
    tp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    positives: Counter[str] = field(default_factory=Counter)
    negatives: Counter[str] = field(default_factory=Counter)
    misses: list[Label] = field(default_factory=list)
    false_positives: list[tuple[str, str, Finding, Label | None]] = field(default_factory=list)
    uncovered: list[Label] = field(default_factory=list)  # OTHER, or a code without a rule


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def score(labels: Sequence[Label], runs: Sequence[RepoRun], rules: dict[str, bool]) -> Score:
    out = Score()
    for run in runs:
        mine = [lab for lab in labels if lab.repo == run.repo and lab.kind != "file"]
        reviewed = {lab.path for lab in labels if lab.repo == run.repo and lab.kind == "file"}
        by_key: dict[Key, list[Label]] = defaultdict(list)
        for lab in mine:
            if lab.code in rules:
                by_key[lab.key].append(lab)
            elif lab.kind == "positive":
                out.uncovered.append(lab)
        for lab in mine:
            if lab.code not in rules:
                continue
            if lab.kind == "positive":
                out.positives[lab.code or ""] += 1
            elif lab.kind == "negative":
                out.negatives[lab.code or ""] += 1
        hits = {f.key for f in run.findings if f.path in reviewed}
        for lab in mine:
            if lab.kind != "positive" or lab.code not in rules:
                continue
            if lab.key in hits:
                out.tp[lab.code] += 1
            else:
                out.fn[lab.code] += 1
                out.misses.append(lab)
        seen: set[Key] = set()
        for finding in run.findings:
            if finding.path not in reviewed or finding.key in seen:
                continue
            seen.add(finding.key)
            matched = by_key.get(finding.key, [])
            if any(lab.kind in ("positive", "dont_care") for lab in matched):
                continue
            negative = next((lab for lab in matched if lab.kind == "negative"), None)
            out.fp[finding.code] += 1
            out.false_positives.append((run.repo, run.commit, finding, negative))
    return out


def report(result: Score, runs: Sequence[RepoRun], labels: Sequence[Label], quiet: bool) -> bool:
    """Print the tables and lists; return whether every target is met."""
    codes = sorted(set(result.positives) | set(result.fp) | set(result.negatives))
    reviewed = sum(1 for lab in labels if lab.kind == "file")
    repos = len({lab.repo for lab in labels})
    print(
        f"real-world corpus: {repos} repositories, {reviewed} reviewed files, "
        f"{sum(1 for lab in labels if lab.kind != 'file')} labels"
    )
    print()
    print(
        f"{'code':8} {'pos':>4} {'neg':>4} {'TP':>4} {'FN':>4} {'FP':>4} "
        f"{'precision':>9} {'recall':>7}  target"
    )
    ok = True
    for code in codes:
        tp, fn, fp = result.tp[code], result.fn[code], result.fp[code]
        precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
        judged = result.positives[code] >= CODE_MIN_POSITIVES
        met = not judged or ((precision or 0) >= CODE_PRECISION and (recall or 0) >= CODE_RECALL)
        ok &= met
        print(
            f"{code:8} {result.positives[code]:4} {result.negatives[code]:4} {tp:4} {fn:4} "
            f"{fp:4} {_fmt(precision):>9} {_fmt(recall):>7}  "
            f"{('met' if met else 'MISSED') if judged else '(< 5 positives)'}"
        )
    tp, fn, fp = sum(result.tp.values()), sum(result.fn.values()), sum(result.fp.values())
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    overall = (precision or 0) >= OVERALL_PRECISION and (recall or 0) >= OVERALL_RECALL
    ok &= overall
    print(
        f"{'overall':8} {sum(result.positives.values()):4} {sum(result.negatives.values()):4} "
        f"{tp:4} {fn:4} {fp:4} {_fmt(precision):>9} {_fmt(recall):>7}  "
        f"{'met' if overall else 'MISSED'} (precision >= {OVERALL_PRECISION}, "
        f"recall >= {OVERALL_RECALL})"
    )
    for run in runs:
        if run.error:
            print(f"\nERROR {run.repo}@{run.commit[:12]}: {run.error}")
            ok = False
        if run.missing:
            print(
                f"\nnote: {run.repo}: {len(run.missing)} files absent from the mirror "
                f"(first: {run.missing[0]})"
            )
    if result.uncovered:
        kinds = Counter(lab.code for lab in result.uncovered)
        print(
            "\nhazards no rule covers (not scored): "
            + ", ".join(f"{code} {count}" for code, count in sorted(kinds.items()))
        )
    if quiet:
        return ok
    if result.misses:
        print(f"\nmisses ({len(result.misses)}):")
        for lab in sorted(result.misses, key=lambda lab: (lab.code or "", lab.repo, lab.path)):
            family = f" [{lab.family}]" if lab.family else ""
            print(f"  {lab.code}{family} {lab.repo}@{lab.commit[:7]}:{lab.where}  -- {lab.note}")
    if result.false_positives:
        print(f"\nfalse positives ({len(result.false_positives)}):")
        for repo, commit, finding, negative in sorted(
            result.false_positives, key=lambda item: (item[2].code, item[0], item[2].path)
        ):
            family = f" [{finding.family}]" if finding.family else ""
            why = f"  -- negative: {negative.note}" if negative else "  -- (unlabelled)"
            print(
                f"  {finding.code}{family} {repo}@{commit[:7]}:{finding.where}"
                f"  {finding.message}{why}"
            )
    return ok


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirrors", type=Path, help="folder of bare git mirrors (owner+name/repo)")
    parser.add_argument("--repo", action="append", default=[], help="only this repository")
    parser.add_argument("--code", action="append", default=[], help="only labels of this code")
    parser.add_argument("--work", type=Path, help="keep extracted commits here (reused)")
    parser.add_argument("--json", type=Path, help="write the scores and lists as JSON here")
    parser.add_argument("--jobs", type=int, default=2, help="repositories linted at once")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("-q", "--quiet", action="store_true", help="tables only")
    args = parser.parse_args(argv)
    try:
        labels = load_labels()
    except LabelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.repo:
        labels = [lab for lab in labels if lab.repo in args.repo]
    if args.code:
        labels = [lab for lab in labels if lab.kind == "file" or lab.code in args.code]
    rules = known_rules()
    if args.code:
        rules = {code: on for code, on in rules.items() if code in args.code}
    labelled = {lab.code for lab in labels if lab.code}
    extra = sorted(code for code, on in rules.items() if not on and code in labelled)
    repos: dict[str, tuple[str, list[str]]] = {}
    for lab in labels:
        if lab.kind == "file":
            repos.setdefault(lab.repo, (lab.commit, []))[1].append(lab.path)
    temporary = None
    work = args.work
    if work is None:
        temporary = tempfile.TemporaryDirectory(prefix="repro-lint-realworld-")
        work = Path(temporary.name)
    work.mkdir(parents=True, exist_ok=True)
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            runs = list(
                pool.map(
                    lambda item: run_repo(
                        args.mirrors, item[0], item[1][0], item[1][1], work, extra
                    ),
                    sorted(repos.items()),
                )
            )
    finally:
        if temporary is not None:
            temporary.cleanup()
    result = score(labels, runs, rules)
    ok = report(result, runs, labels, args.quiet)
    if args.json:
        args.json.write_text(json.dumps(_as_json(result, runs), indent=1) + "\n", encoding="utf-8")
    return 1 if args.check and not ok else 0


def _as_json(result: Score, runs: Sequence[RepoRun]) -> dict[str, Any]:
    return {
        "codes": {
            code: {
                "positives": result.positives[code],
                "negatives": result.negatives[code],
                "tp": result.tp[code],
                "fn": result.fn[code],
                "fp": result.fp[code],
            }
            for code in sorted(set(result.positives) | set(result.fp))
        },
        "misses": [lab.source for lab in result.misses],
        "false_positives": [
            {
                "repo": repo,
                "path": f.path,
                **({} if f.cell is None else {"cell": f.cell}),
                "line": f.line,
                "code": f.code,
                "message": f.message,
            }
            for repo, _, f, _ in result.false_positives
        ],
        "errors": {run.repo: run.error for run in runs if run.error},
    }


if __name__ == "__main__":
    sys.exit(main())
