"""The CI recipes in docs/ci.md and the README: the YAML parses, and every repro-lint command
in it, run as written against a copy of examples/, produces what the next step consumes."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from projects import relative_json

from repro_lint.cli import main

ROOT = Path(__file__).resolve().parent.parent
CI_DOC = ROOT / "docs" / "ci.md"
README = ROOT / "README.md"
GITHUB = "# .github/workflows/repro-lint.yml"
GITLAB = "# .gitlab-ci.yml"
VERIFY = "# .github/workflows/repro-lint-verify.yml"
PRE_COMMIT = "# .pre-commit-config.yaml"
PRE_COMMIT_CI = "# .pre-commit-config.yaml (pre-commit.ci)"
# GitLab's code-quality report, as its documentation lists the fields: an array of issues,
# each with these required keys; location.lines.begin (or location.positions.begin.line).
GITLAB_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {
                            "begin": {"type": "integer", "minimum": 1},
                            "end": {"type": "integer", "minimum": 1},
                        },
                    },
                },
            },
        },
    },
}
_ANNOTATION = re.compile(r"::error (?P<props>[^:]*)::(?P<message>.+)")

Blocks = Callable[[Path], dict[str, str]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(ROOT / "examples", target)
    return target


def repro_lint(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a documented command line, as written, with this checkout's repro-lint."""
    argv = shlex.split(command)
    assert argv[0] == "repro-lint", command
    return subprocess.run(
        [sys.executable, "-m", "repro_lint", *argv[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def json_findings(cwd: Path) -> list[dict[str, Any]]:
    result = repro_lint("repro-lint . --output-format json --no-cache", cwd)
    # Relative to the project, as the annotations and the Code Quality report name them.
    findings: list[dict[str, Any]] = relative_json(result.stdout, cwd)
    assert findings, "the example project has hazards"
    return findings


def option(command: str, name: str) -> str:
    argv = shlex.split(command)
    return argv[argv.index(name) + 1]


def test_github_actions_workflow(
    project: Path, code_blocks: Blocks, sarif_schema: dict[str, Any]
) -> None:
    text = code_blocks(CI_DOC)[GITHUB]
    assert code_blocks(README)[GITHUB] == text, "README and docs/ci.md show different workflows"
    workflow = yaml.safe_load(text)
    job = workflow["jobs"]["repro-lint"]
    assert job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    commands = [s for s in steps if str(s.get("run", "")).startswith("repro-lint")]
    annotate, write_sarif = commands
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action"))
    # The annotation step fails on hazards: the SARIF steps must run anyway.
    assert steps.index(annotate) < steps.index(write_sarif) < steps.index(upload)
    assert write_sarif["if"] == upload["if"] == "always()"
    expected = json_findings(project)

    annotations = repro_lint(annotate["run"], project)
    assert annotations.returncode == 1
    lines = annotations.stdout.splitlines()
    assert len(lines) == len(expected)
    for line, finding in zip(lines, expected, strict=True):
        match = _ANNOTATION.fullmatch(line)
        assert match is not None, line
        props = dict(item.split("=", 1) for item in match.group("props").split(","))
        assert (project / props["file"]).is_file()
        assert (props["file"], int(props["line"]), int(props["col"])) == (
            finding["filename"],
            finding["location"]["row"],
            finding["location"]["column"],
        )
        assert finding["code"] in props["title"]

    sarif = repro_lint(write_sarif["run"], project)
    assert sarif.returncode == 0, sarif.stderr
    path = option(write_sarif["run"], "--output-file")
    assert upload["with"]["sarif_file"] == path
    document = json.loads((project / path).read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(sarif_schema).validate(document)
    assert len(document["runs"][0]["results"]) == len(expected)


def test_gitlab_code_quality_job(project: Path, code_blocks: Blocks) -> None:
    text = code_blocks(CI_DOC)[GITLAB]
    assert code_blocks(README)[GITLAB] == text, "README and docs/ci.md show different jobs"
    job = yaml.safe_load(text)["repro-lint"]
    report_step, log_step = [c for c in job["script"] if c.startswith("repro-lint")]
    assert job["artifacts"]["when"] == "always"
    path = job["artifacts"]["reports"]["codequality"]
    assert option(report_step, "--output-file") == path
    expected = json_findings(project)

    result = repro_lint(report_step, project)
    assert result.returncode == 0, result.stderr
    report = json.loads((project / path).read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(GITLAB_SCHEMA).validate(report)
    assert [
        (i["check_name"], i["location"]["path"], i["location"]["lines"]["begin"]) for i in report
    ] == [(f["code"], f["filename"], f["location"]["row"]) for f in expected]
    assert len({i["fingerprint"] for i in report}) == len(report), "fingerprints are unique"
    assert all((project / i["location"]["path"]).is_file() for i in report)
    assert repro_lint(log_step, project).returncode == 1


def test_gitlab_fingerprints_survive_moved_lines(project: Path) -> None:
    command = "repro-lint . --output-format gitlab --no-cache --exit-zero"
    before = json.loads(repro_lint(command, project).stdout)
    for path in project.glob("*.py"):
        path.write_text("\n\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    after = json.loads(repro_lint(command, project).stdout)
    assert {i["fingerprint"] for i in after} == {i["fingerprint"] for i in before}
    assert [i["location"]["lines"]["begin"] for i in after] == [
        i["location"]["lines"]["begin"] + 2 for i in before
    ]


def test_gpu_verify_job(code_blocks: Blocks) -> None:
    workflow = yaml.safe_load(code_blocks(CI_DOC)[VERIFY])
    job = workflow["jobs"]["verify"]
    assert "gpu" in job["runs-on"] and "self-hosted" in job["runs-on"]
    installs = [s["run"] for s in job["steps"] if "pip install" in str(s.get("run", ""))]
    assert installs == ['python -m pip install "repro-lint[verify]"']
    [command] = [s["run"] for s in job["steps"] if str(s.get("run", "")).startswith("repro-lint")]
    argv = shlex.split(command)
    assert argv[:2] == ["repro-lint", "verify"]
    upload = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload"))
    assert upload["with"]["path"] == option(command, "--output-file")
    # The verifier is its own piece of work: check the options once the command exists.
    if "verify" not in main.commands:
        pytest.skip("this repro-lint has no `verify` command yet")
    help_ = CliRunner().invoke(main, ["verify", "--help"])
    assert help_.exit_code == 0
    for word in argv[2:]:
        if word.startswith("--"):
            assert word in help_.stdout, f"`repro-lint verify` has no {word}"


@pytest.mark.parametrize("name", [PRE_COMMIT, PRE_COMMIT_CI])
def test_pre_commit_configs_are_valid(name: str, code_blocks: Blocks, tmp_path: Path) -> None:
    pre_commit = Path(sys.executable).parent / "pre-commit"
    if not pre_commit.exists():
        pytest.skip("pre-commit is not installed")
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text(code_blocks(CI_DOC)[name], encoding="utf-8")
    checked = subprocess.run(
        [str(pre_commit), "validate-config", str(config)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    known = {hook["id"] for hook in hooks}
    used = {
        hook["id"] for repo in yaml.safe_load(config.read_text())["repos"] for hook in repo["hooks"]
    }
    assert used <= known
    manifest = subprocess.run(
        [str(pre_commit), "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
        capture_output=True,
        text=True,
    )
    assert manifest.returncode == 0, manifest.stdout + manifest.stderr
