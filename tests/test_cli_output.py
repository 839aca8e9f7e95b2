"""Golden snapshots of what a user sees: every output format, --diff, --statistics, --fix."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result
from junitparser import JUnitXml

from repro_lint import __version__
from repro_lint.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "project"
SNAPSHOTS = Path(__file__).parent / "snapshots"
FORMATS = ("full", "concise", "json", "json-lines", "sarif", "github", "gitlab", "junit")


def run(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch, stdin: str = "") -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(main, [*args, "--no-cache"], input=stdin, catch_exceptions=False)


def normalise(text: str, cwd: Path) -> str:
    """Make output independent of the machine: the working directory and the version."""
    return (
        text.replace(cwd.as_uri(), "file:///PROJECT")
        .replace(str(cwd), "/PROJECT")
        .replace(f'"version": "{__version__}"', '"version": "VERSION"')
        .replace(f'"semanticVersion": "{__version__}"', '"semanticVersion": "VERSION"')
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_format_golden(
    fmt: str, monkeypatch: pytest.MonkeyPatch, golden: Callable[[Path, str], None]
) -> None:
    result = run(["check", ".", "--output-format", fmt], FIXTURES, monkeypatch)
    assert result.exit_code == 1
    golden(SNAPSHOTS / f"check.{fmt}.txt", normalise(result.stdout, FIXTURES))


def test_diff_golden(monkeypatch: pytest.MonkeyPatch, golden: Callable[[Path, str], None]) -> None:
    before = {p.name: p.read_bytes() for p in FIXTURES.glob("*.py")}
    result = run(["check", ".", "--diff"], FIXTURES, monkeypatch)
    assert result.exit_code == 1
    assert {p.name: p.read_bytes() for p in FIXTURES.glob("*.py")} == before, "--diff wrote"
    golden(SNAPSHOTS / "check.diff.txt", result.stdout)


def test_statistics_golden(
    monkeypatch: pytest.MonkeyPatch, golden: Callable[[Path, str], None]
) -> None:
    result = run(["check", ".", "--statistics"], FIXTURES, monkeypatch)
    assert result.exit_code == 1
    golden(SNAPSHOTS / "check.statistics.txt", result.stdout)


def test_fix_golden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, golden: Callable[[Path, str], None]
) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES, project)
    result = run(["check", ".", "--fix", "--unsafe-fixes", "--show-fixes"], project, monkeypatch)
    # broken.py (RPL000) and the autotune finding (no fix) remain.
    assert result.exit_code == 1
    fixed = "".join(
        f"==> {path.name} <==\n{path.read_text(encoding='utf-8')}"
        for path in sorted(project.glob("*.py"))
    )
    golden(SNAPSHOTS / "check.fixed-files.txt", fixed)
    golden(SNAPSHOTS / "check.fix-output.txt", result.stdout)
    before = {p.name: p.read_bytes() for p in project.glob("*.py")}
    again = run(
        ["check", ".", "--fix", "--unsafe-fixes", "--output-format", "concise"],
        project,
        monkeypatch,
    )
    assert {p.name: p.read_bytes() for p in project.glob("*.py")} == before, "not idempotent"
    assert [line.split()[1] for line in again.stdout.splitlines()[:-1]] == ["RPL205", "RPL000"]


def test_sarif_is_valid_sarif_2_1_0(
    monkeypatch: pytest.MonkeyPatch, sarif_schema: dict[str, object]
) -> None:
    result = run(["check", ".", "--output-format", "sarif"], FIXTURES, monkeypatch)
    document = json.loads(result.stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(document)
    run_ = document["runs"][0]
    codes = {r["ruleId"] for r in run_["results"]}
    assert {"RPL000", "RPL201", "RPL203", "RPL204", "RPL205"} <= codes
    rule_ids = [rule["id"] for rule in run_["tool"]["driver"]["rules"]]
    for item in run_["results"]:
        assert rule_ids[item["ruleIndex"]] == item["ruleId"]
        assert item["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    fixes = [r for r in run_["results"] if "fixes" in r]
    assert fixes, "fixable findings carry SARIF fixes"


def test_junit_is_parsed_by_a_junit_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(["check", ".", "--output-format", "junit"], FIXTURES, monkeypatch)
    xml = JUnitXml.fromstring(result.stdout)
    cases = [case for suite in xml for case in suite]
    concise = run(["check", ".", "--output-format", "concise", "-q"], FIXTURES, monkeypatch)
    assert len(cases) == len(concise.stdout.splitlines())
    assert all(not case.is_passed for case in cases)
    assert {case.name for case in cases} >= {"org.repro-lint.RPL201", "org.repro-lint.RPL000"}


def test_junit_without_findings_has_one_passing_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ok.py").write_text("import torch\n", encoding="utf-8")
    result = run(["check", ".", "--output-format", "junit"], tmp_path, monkeypatch)
    assert result.exit_code == 0
    cases = [case for suite in JUnitXml.fromstring(result.stdout) for case in suite]
    assert len(cases) == 1 and cases[0].is_passed


def test_json_keys_follow_ruff(monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(["check", ".", "--output-format", "json"], FIXTURES, monkeypatch)
    items = json.loads(result.stdout)
    for item in items:
        assert set(item) == {
            "code",
            "name",
            "message",
            "filename",
            "cell",
            "location",
            "end_location",
            "fix",
            "noqa_row",
            "severity",
            "url",
        }
    # As ruff: absolute file names, and `cell` null outside notebooks.
    assert all(Path(i["filename"]).is_absolute() and i["cell"] is None for i in items)
    bench = [
        i for i in items if i["filename"] == str(FIXTURES / "bench.py") and i["code"] == "RPL201"
    ]
    assert [(i["location"]["row"], i["location"]["column"]) for i in bench] == [(5, 1), (11, 51)]
    assert bench[0]["fix"]["applicability"] == "safe"
    assert bench[0]["fix"]["edits"] == [
        {
            "content": "False",
            "location": {"row": 5, "column": 34},
            "end_location": {"row": 5, "column": 38},
        }
    ]


def test_code_frames_read_and_split_each_file_once() -> None:
    """A report that frames several findings of one file reads the file once, and frames
    rows the same whichever line endings the file has ("\\n", "\\r\\n" or "\\r")."""
    import io

    from repro_lint.diagnostics import Diagnostic, FileResult, Location
    from repro_lint.report import Report, render_full

    texts = {
        "lf.py": "a = 1\nb = 2\nc = 3\n",
        "crlf.py": "a = 1\r\nb = 2\r\nc = 3\r\n",
        "cr.py": "a = 1\rb = 2\rc = 3\r",
        "mixed.py": "a = 1\r\nb = 2\nc = 3\r",
    }
    reads: list[str] = []

    def read(name: str) -> str:
        reads.append(name)
        return texts[name]

    def frames(name: str) -> str:
        findings = tuple(
            Diagnostic("RPL101", "seed", f"row {row}", name, Location(row, 1), Location(row, 2))
            for row in (3, 1, 2)
        )
        out = io.StringIO()
        render_full(Report([FileResult(name, findings)], [], read=read), out)
        return out.getvalue().replace(name, "<file>")

    shown = {name: frames(name) for name in texts}
    assert reads == list(texts)
    assert "2 | b = 2" in shown["lf.py"]
    assert all(text == shown["lf.py"] for text in shown.values())
