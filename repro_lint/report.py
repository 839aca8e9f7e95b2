"""Renderers (full, concise, json, json-lines, sarif, github, gitlab, junit) and the exit-code
policy."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from repro_lint import __version__
from repro_lint.diagnostics import Diagnostic, FileResult, FixSafety

if TYPE_CHECKING:
    from repro_lint.rule import Rule

_NEWLINE = re.compile(r"\r\n?|\n")
INFORMATION_URI = "https://github.com/repro-lint/repro-lint"


@dataclass
class Report:
    """What a run found and did; the input of every renderer."""

    results: Sequence[FileResult]
    # The rules that ran (SARIF describes them; the other formats do not need them).
    rules: Sequence[type[Rule]]
    applicable: frozenset[FixSafety] = frozenset({FixSafety.SAFE})
    fixed: Counter[str] = field(default_factory=Counter)
    show_fixes: bool = False
    fixed_by_file: dict[str, Counter[str]] = field(default_factory=dict)
    # Reads a file's text when a result does not carry it (code frames need it).
    read: Callable[[str], str | None] | None = None
    # With --fix: how many findings the original files had (``fixed`` counts only those of
    # them that fixes removed, so findings a fix created are never counted as found or fixed).
    found: int | None = None
    # Made once, when first asked (the results do not change while a report is rendered):
    # each file's result by name, and the lines of each file (or notebook cell) a code frame
    # was shown from. A run over a large project shows thousands of frames, many per file.
    _by_name: dict[str, FileResult] | None = field(default=None, init=False, repr=False)
    _lines: dict[tuple[str, int | None], list[str] | None] = field(
        default_factory=dict, init=False, repr=False
    )

    @property
    def diagnostics(self) -> list[Diagnostic]:
        found = [d for result in self.results for d in result.diagnostics]
        return sorted(found, key=lambda d: d.sort_key)

    def _result(self, filename: str) -> FileResult | None:
        if self._by_name is None:
            by_name: dict[str, FileResult] = {}
            for result in self.results:
                by_name.setdefault(result.filename, result)
            self._by_name = by_name
        return self._by_name.get(filename)

    def source(self, filename: str) -> str | None:
        result = self._result(filename)
        if result is None:
            return None
        if result.source is None and result.diagnostics and self.read is not None:
            return self.read(filename)
        return result.source

    def frame_source(self, d: Diagnostic) -> str | None:
        """The text ``d``'s rows count in: the file, or for a notebook its cell."""
        if d.cell is None:
            return self.source(d.filename)
        result = self._result(d.filename)
        if result is not None and 0 < d.cell <= len(result.cells):
            return result.cells[d.cell - 1]
        return None

    def frame_lines(self, d: Diagnostic) -> list[str] | None:
        """``frame_source``'s lines (read and split once per file or cell)."""
        key = (d.filename, d.cell)
        if key not in self._lines:
            source = self.frame_source(d)
            self._lines[key] = None if source is None else _split_lines(source)
        return self._lines[key]

    def fixable(self, diagnostic: Diagnostic) -> bool:
        return diagnostic.fix is not None and diagnostic.fix.applicability in self.applicable


# -- text formats -----------------------------------------------------------------------------


def _summary(report: Report, out: TextIO) -> None:
    diagnostics = report.diagnostics
    fixed = sum(report.fixed.values())
    if report.show_fixes and report.fixed_by_file:
        out.write(f"\nFixed {fixed} error{'s' if fixed != 1 else ''}:\n")
        for filename, counts in sorted(report.fixed_by_file.items()):
            out.write(f"- {filename}:\n")
            for code, count in sorted(counts.items()):
                out.write(f"    {count} x {code}\n")
    count = len(diagnostics)
    if not diagnostics and not fixed:
        out.write("All checks passed!\n")
        return
    if fixed:
        found = report.found if report.found is not None else count + fixed
        # Findings that fixes created and left: part of what remains, never of what was found.
        introduced = max(0, count + fixed - found)
        extra = f", {introduced} of them from fixes" if introduced else ""
        out.write(
            f"Found {found} error{'s' if found != 1 else ''} "
            f"({fixed} fixed, {count} remaining{extra}).\n"
        )
    else:
        out.write(f"Found {count} error{'s' if count != 1 else ''}.\n")
    if not diagnostics:
        return
    fixable = sum(1 for d in diagnostics if report.fixable(d))
    hidden = sum(
        1
        for d in diagnostics
        if d.fix is not None and d.fix.applicability == FixSafety.UNSAFE and not report.fixable(d)
    )
    if fixable:
        line = f"[*] {fixable} fixable with the `--fix` option"
        if hidden:
            line += (
                f" ({hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with "
                "the `--unsafe-fixes` option)"
            )
        out.write(line + ".\n")
    elif hidden:
        out.write(
            f"No fixes available ({hidden} hidden fix{'es' if hidden != 1 else ''} can be "
            "enabled with the `--unsafe-fixes` option).\n"
        )


def where(d: Diagnostic) -> str:
    """``file:row:column``, or ``file:cell N:row:column`` in a notebook (ruff's spelling)."""
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{d.filename}:{cell}{d.location.row}:{d.location.column}"


def _head(report: Report, d: Diagnostic) -> str:
    marker = " [*]" if report.fixable(d) else ""
    return f"{where(d)}: {d.code}{marker} {d.message}"


def render_concise(report: Report, out: TextIO) -> None:
    for d in report.diagnostics:
        out.write(_head(report, d) + "\n")
    _summary(report, out)


def _split_lines(source: str) -> list[str]:
    """``source`` cut at each line ending ("\r\n", "\r" or "\n", as rows are counted)."""
    # (Most files end their lines with "\n" only: str.split is many times faster than the
    # pattern on them.)
    return _NEWLINE.split(source) if "\r" in source else source.split("\n")


def _frame(lines: Sequence[str], d: Diagnostic) -> list[str]:
    first = max(d.location.row - 2, 1)
    last = min(max(d.end_location.row, d.location.row) + 1, len(lines))
    if last >= first and lines[last - 1] == "" and last > d.end_location.row:
        last -= 1
    width = len(str(last))
    gutter = " " * width
    out = [f"{gutter} |"]
    for row in range(first, last + 1):
        text = lines[row - 1].expandtabs(4) if row - 1 < len(lines) else ""
        out.append(f"{row:>{width}} | {text}".rstrip())
        if row == d.location.row:
            raw = lines[row - 1] if row - 1 < len(lines) else ""
            start = len(raw[: d.location.column - 1].expandtabs(4))
            if d.end_location.row == row:
                end = len(raw[: d.end_location.column - 1].expandtabs(4))
            else:
                end = len(raw.expandtabs(4))
            carets = "^" * max(end - start, 1)
            out.append(f"{gutter} | {' ' * start}{carets} {d.code}")
    out.append(f"{gutter} |")
    return out


def render_full(report: Report, out: TextIO) -> None:
    for d in report.diagnostics:
        out.write(_head(report, d) + "\n")
        lines = report.frame_lines(d)
        if lines is not None:
            for line in _frame(lines, d):
                out.write(line + "\n")
        if d.fix is not None and d.fix.message:
            prefix = (
                "help"
                if report.fixable(d) or d.fix.applicability != FixSafety.UNSAFE
                else "help (unsafe fix)"
            )
            out.write(f"  = {prefix}: {d.fix.message}\n")
        out.write("\n")
    _summary(report, out)


# -- machine formats --------------------------------------------------------------------------


def absolute_filename(filename: str) -> str:
    """A file's name as the JSON formats give it: absolute, as ruff's are (stdin as named)."""
    if filename == "-" or filename.startswith("<"):
        return filename
    return os.path.abspath(filename)


def diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    """A finding in ruff's JSON shape: absolute file names, and ``cell`` (null outside
    notebooks) after the file name."""
    data: dict[str, Any] = {}
    for key, value in d.to_json().items():
        if key == "cell":
            continue
        data[key] = absolute_filename(value) if key == "filename" else value
        if key == "filename":
            data["cell"] = d.cell
    fix = data.get("fix")
    if fix is not None:
        for edit in fix["edits"]:
            if "filename" in edit:
                edit["filename"] = absolute_filename(edit["filename"])
    return data


def render_json(report: Report, out: TextIO) -> None:
    json.dump([diagnostic_json(d) for d in report.diagnostics], out, indent=2, ensure_ascii=False)
    out.write("\n")


def render_json_lines(report: Report, out: TextIO) -> None:
    for d in report.diagnostics:
        out.write(json.dumps(diagnostic_json(d), ensure_ascii=False) + "\n")


def _github_escape(text: str, property_value: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def render_github(report: Report, out: TextIO) -> None:
    for d in report.diagnostics:
        fields: list[tuple[str, object]] = [
            ("title", f"repro-lint ({d.code})"),
            ("file", d.filename),
        ]
        # A notebook's rows count in a cell, not in the file: the annotation goes on the file.
        if d.cell is None:
            fields += [
                ("line", d.location.row),
                ("col", d.location.column),
                ("endLine", d.end_location.row),
                ("endColumn", d.end_location.column),
            ]
        props = ",".join(f"{key}={_github_escape(str(value), True)}" for key, value in fields)
        message = f"{where(d)}: {d.code} {d.message}"
        out.write(f"::error {props}::{_github_escape(message)}\n")


_GITLAB_SEVERITY = {"RPL000": "critical"}


def render_gitlab(report: Report, out: TextIO) -> None:
    """GitLab's code-quality report: description, check_name, fingerprint, severity and
    location (path, lines.begin/end). The fingerprint hashes the rule, the file, the message
    (numbers masked) and the text of the line, not its number, so a finding keeps its
    identity when code above it moves (GitLab compares fingerprints between the branch and
    its target)."""
    issues = []
    seen: Counter[str] = Counter()
    for d in report.diagnostics:
        lines = report.frame_lines(d) or [""]
        text = lines[d.location.row - 1].strip() if 0 < d.location.row <= len(lines) else ""
        # Messages may point at other places (``data.py:17``): numbers move with the code.
        message = re.sub(r"\d+", "#", d.message)
        key = "\0".join((d.code, d.filename, str(d.cell or ""), message, text))
        seen[key] += 1
        digest = hashlib.sha256(f"{key}\0{seen[key]}".encode()).hexdigest()[:32]
        description = f"{d.code} {d.message}"
        begin, end = d.location.row, max(d.end_location.row, d.location.row)
        if d.cell is not None:
            description = f"cell {d.cell}, line {d.location.row}: {description}"
            begin = end = 1
        issues.append(
            {
                "description": description,
                "check_name": d.code,
                "fingerprint": digest,
                "severity": _GITLAB_SEVERITY.get(d.code, "major"),
                "location": {
                    "path": Path(d.filename).as_posix(),
                    "lines": {"begin": begin, "end": end},
                },
            }
        )
    json.dump(issues, out, indent=2, ensure_ascii=False)
    out.write("\n")


def _artifact_uri(filename: str) -> dict[str, str]:
    path = Path(filename)
    if path.is_absolute():
        return {"uri": path.as_uri()}
    return {"uri": quote(path.as_posix()), "uriBaseId": "%SRCROOT%"}


def _region(start: Any, end: Any) -> dict[str, int]:
    return {
        "startLine": start.row,
        "startColumn": start.column,
        "endLine": end.row,
        "endColumn": end.column,
    }


def _rule_doc(rule: type[Rule]) -> str:
    from repro_lint.explain import render_markdown

    return render_markdown(rule)


def render_sarif(report: Report, out: TextIO) -> None:
    rules = list(report.rules)
    index = {rule.CODE: i for i, rule in enumerate(rules)}
    driver_rules = [
        {
            "id": rule.CODE,
            "name": rule.name,
            "shortDescription": {"text": rule.MESSAGE},
            "fullDescription": {"text": (rule.__doc__ or "").strip()},
            "helpUri": rule.url(),
            "help": {"text": rule.MESSAGE, "markdown": _rule_doc(rule)},
            "defaultConfiguration": {"level": "error" if rule.DEFAULT_ENABLED else "none"},
            "properties": {
                "tags": ["reproducibility"],
                "fixSafety": rule.FIX_SAFETY.value if rule.FIX_SAFETY else "none",
            },
        }
        for rule in rules
    ]
    results = []
    for d in report.diagnostics:
        physical: dict[str, Any] = {"artifactLocation": _artifact_uri(d.filename)}
        message = d.message
        if d.cell is None:
            physical["region"] = _region(d.location, d.end_location)
        else:
            # SARIF has no notebook cells: the finding is on the file; the text says where.
            message = f"cell {d.cell}, line {d.location.row}: {d.message}"
        result: dict[str, Any] = {
            "ruleId": d.code,
            "level": "error",
            "message": {"text": message},
            "locations": [{"physicalLocation": physical}],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.fix is not None and d.fix.edits and d.cell is None:
            # One artifact change per file the fix edits (a fix may edit another file).
            by_file: dict[str, list[Any]] = {}
            for e in d.fix.edits:
                by_file.setdefault(e.filename or d.filename, []).append(
                    {
                        "deletedRegion": _region(e.location, e.end_location),
                        "insertedContent": {"text": e.content},
                    }
                )
            result["fixes"] = [
                {
                    "description": {"text": d.fix.message},
                    "artifactChanges": [
                        {"artifactLocation": _artifact_uri(name), "replacements": replacements}
                        for name, replacements in by_file.items()
                    ],
                }
            ]
        properties = {key: value for key, value in d.properties}
        if d.fix is not None:
            properties["fixApplicability"] = d.fix.applicability.value
        if properties:
            result["properties"] = properties
        results.append(result)
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "repro-lint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": driver_rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "results": results,
            }
        ],
    }
    json.dump(document, out, indent=2, ensure_ascii=False)
    out.write("\n")


def render_junit(report: Report, out: TextIO) -> None:
    # Imported here: the other formats do without it (and a warm run's start-up is short).
    import xml.etree.ElementTree as ET

    diagnostics = report.diagnostics
    suites = ET.Element(
        "testsuites",
        name="repro-lint",
        tests=str(max(len(diagnostics), 1)),
        failures=str(len(diagnostics)),
        errors="0",
    )
    by_file: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        by_file.setdefault(d.filename, []).append(d)
    if not by_file:
        suite = ET.SubElement(
            suites, "testsuite", name="repro-lint", tests="1", failures="0", errors="0"
        )
        ET.SubElement(suite, "testcase", name="No errors found", classname="repro-lint")
    for filename, items in by_file.items():
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=filename,
            tests=str(len(items)),
            failures=str(len(items)),
            errors="0",
        )
        for d in items:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"org.repro-lint.{d.code}",
                classname=filename,
                file=filename,
                line=str(d.location.row),
            )
            failure = ET.SubElement(case, "failure", message=d.message, type=d.code)
            cell = f"cell {d.cell}, " if d.cell is not None else ""
            failure.text = f"{cell}line {d.location.row}, col {d.location.column}, {d.message}"
    ET.indent(suites)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(suites, encoding="unicode"))
    out.write("\n")


RENDERERS: dict[str, Callable[[Report, TextIO], None]] = {
    "full": render_full,
    "concise": render_concise,
    "json": render_json,
    "json-lines": render_json_lines,
    "sarif": render_sarif,
    "github": render_github,
    "gitlab": render_gitlab,
    "junit": render_junit,
}


def render_statistics(report: Report, out: TextIO) -> None:
    counts = Counter(d.code for d in report.diagnostics)
    names = {d.code: d.name for d in report.diagnostics}
    fixable = {d.code for d in report.diagnostics if report.fixable(d)}
    width = max((len(str(n)) for n in counts.values()), default=1)
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        marker = "[*]" if code in fixable else "[ ]"
        out.write(f"{count:>{width}}\t{code}\t{marker} {names[code]}\n")


def exit_code(
    remaining: int,
    *,
    fixed: int = 0,
    exit_zero: bool = False,
    exit_non_zero_on_fix: bool = False,
    diff_changes: bool = False,
    failed: bool = False,
) -> int:
    """The one place that decides the exit status of a check run (0 clean, 1 hazards, 2 the
    analysis failed on a file: ``failed``, whatever ``exit_zero`` says)."""
    if failed:
        return 2
    if diff_changes:
        return 1
    if exit_non_zero_on_fix and fixed:
        return 1
    if exit_zero:
        return 0
    return 1 if remaining else 0
