"""The seeding rules' documentation, options and the summaries they rest on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from repro_lint.cli import main
from repro_lint.config import Config, ConfigError, parse_table
from repro_lint.engine import lint_files, lint_text
from repro_lint.explain import sections
from repro_lint.files import SourceFile, display_name
from repro_lint.program import ProjectRule, Unit, analyse
from repro_lint.project_pass import summary_loader
from repro_lint.randomness import _WORDS, is_seed_name
from repro_lint.rule import Rule
from repro_lint.rules.table import ALL_RULES
from repro_lint.settings import Settings

SEEDING_CODES = (
    "RPL101", "RPL102", "RPL103", "RPL104", "RPL105", "RPL106", "RPL107", "RPL108", "RPL109",
    "RPL202",
)  # fmt: skip
HEADINGS = (
    "What it does",
    "Why is this bad?",
    "Fix safety",
    "Options",
    "Known limitations",
    "References",
)
SEEDING_RULES = [rule for rule in ALL_RULES if rule.CODE in SEEDING_CODES]


def test_every_seeding_rule_is_registered() -> None:
    assert [rule.CODE for rule in SEEDING_RULES] == sorted(SEEDING_CODES)
    project = {rule.CODE for rule in SEEDING_RULES if issubclass(rule, ProjectRule)}
    assert project == {"RPL101", "RPL104", "RPL107", "RPL109", "RPL202"}


@pytest.mark.parametrize("rule", SEEDING_RULES, ids=lambda r: r.CODE)
def test_docs_have_every_heading(rule: type[Rule]) -> None:
    assert list(sections(rule)) == list(HEADINGS)


@pytest.mark.parametrize("code", SEEDING_CODES)
def test_explain(code: str) -> None:
    result = CliRunner().invoke(main, ["explain", code])
    assert result.exit_code == 0
    assert result.output.startswith("# ")


def test_options_are_validated() -> None:
    assert parse_table({"seed-functions": ["lab.utils.seed_all"]}, None) == {
        "seed_functions": ("lab.utils.seed_all",)
    }
    with pytest.raises(ConfigError):
        parse_table({"seed-functions": ["seed all"]}, None)
    with pytest.raises(ConfigError):
        parse_table({"seed-functions": ["unqualified"]}, None)
    with pytest.raises(ConfigError):
        parse_table({"entry-points": ["jobs/*.py", 3]}, None)
    assert parse_table({"entry-points": ["jobs/*.py"]}, None) == {"entry_points": ("jobs/*.py",)}


def test_options_change_the_cache_key() -> None:
    base = Settings.from_config(Config())
    seeded = Settings.from_config(Config(seed_functions=("a.b",)))
    entries = Settings.from_config(Config(entry_points=("x.py",)))
    assert len({base.cache_key(), seeded.cache_key(), entries.cache_key()}) == 3


def test_summaries_survive_json(tmp_path: Path) -> None:
    """Summaries are cached and may be stored as JSON: the analysis must not need more."""
    root = Path(__file__).resolve().parent.parent / "examples"
    settings = Settings.from_config(Config(root=root, seed=1234))
    files = [SourceFile(display_name(p), p) for p in sorted(root.glob("*.py"))]
    results = lint_files(files, settings, jobs=1, project=False)
    codes = frozenset(rule.CODE for rule in settings.project_rules)

    def run(summaries: list[dict[str, object]]) -> list[tuple[str, str, int]]:
        paths = {file.display: file.path for file in files}
        units = [
            Unit(r.filename, paths[r.filename], s, True, codes)
            for r, s in zip(results, summaries, strict=True)
        ]
        options = settings.project_options()
        found, _ = analyse(units, settings.project_rules, options, summary_loader(settings))
        return sorted((d.filename, d.code, d.location.row) for ds in found.values() for d in ds)

    direct = run([r.summary for r in results])
    again = run([json.loads(json.dumps(r.summary)) for r in results])
    assert direct == again
    assert {code for _, code, _ in direct} == {
        "RPL101",
        "RPL104",
        "RPL107",
        "RPL202",
        "RPL301",
        "RPL302",
        "RPL304",
    }


def test_files_that_import_nothing_are_not_parsed_for_a_summary() -> None:
    settings = Settings.from_config(Config(select=("RPL101",)))
    assert lint_text("x = 1\n", "a.py", settings).summary == {}
    assert lint_text("import os\n", "a.py", settings).summary


def test_torch_cuda_seed_alone_is_not_a_torch_seed() -> None:
    settings = Settings.from_config(Config(select=("RPL101",)))
    source = (
        "import torch\n\nif __name__ == '__main__':\n    torch.cuda.manual_seed_all(0)\n"
        "    torch.randn(3)\n"
    )
    assert [(d.code, d.location.row) for d in lint_text(source, "a.py", settings).diagnostics] == [
        ("RPL101", 3)
    ]
    fixed = source.replace("torch.cuda.manual_seed_all(0)", "torch.manual_seed(0)")
    assert lint_text(fixed, "a.py", settings).diagnostics == ()


@given(
    st.lists(
        st.sampled_from(["seed", "Seed", "SEED", "random", "_", "__", "manual", "s", "eeds", "x1"])
        | st.text(alphabet=st.characters(categories=("Lu", "Ll", "Nd")), max_size=4),
        max_size=6,
    )
)
def test_seed_names_are_judged_by_their_words(parts: list[str]) -> None:
    """``is_seed_name`` answers a name without "seed" in it at once; the answer is the one
    its words give."""
    name = "".join(parts)
    words = (part.lower() for part in _WORDS.split(name))
    expected = any(word == "seed" or (word.endswith("seed") and len(word) > 4) for word in words)
    assert is_seed_name(name) == expected
