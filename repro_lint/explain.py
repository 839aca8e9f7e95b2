"""Rule documentation: one renderer for ``repro-lint explain`` and the generated ``rules/``."""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence

from repro_lint.diagnostics import FixSafety
from repro_lint.rule import Invalid, Rule, Valid
from repro_lint.torch_versions import TorchVersion

HEADINGS = (
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
    "Options",
    "Known limitations",
    "References",
)
REQUIRED = ("What it does", "Why is this bad?", "Example", "Use instead")
_FIX_LINE = {
    FixSafety.SAFE: "safe: applied by `--fix`",
    FixSafety.UNSAFE: "unsafe: applied by `--fix --unsafe-fixes`",
    FixSafety.DISPLAY_ONLY: "display-only: shown, never applied",
}


def sections(rule: type[Rule]) -> dict[str, str]:
    """The docstring's ``## Heading`` sections, in order."""
    doc = inspect.cleandoc(rule.__doc__ or "")
    found: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in doc.splitlines():
        match = re.match(r"##\s+(.*\S)\s*$", line)
        if match:
            if current is not None:
                found[current] = "\n".join(lines).strip()
            current, lines = match.group(1), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        found[current] = "\n".join(lines).strip()
    return found


def _code_block(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def _example_sections(rule: type[Rule]) -> dict[str, str]:
    """``Example``/``Use instead`` from the rule's own examples (its tests), so they cannot
    drift from what the rule does."""
    generated: dict[str, str] = {}
    invalid: Invalid | None = next(iter(rule.INVALID), None)
    if invalid is not None:
        settings = "".join(
            f"\n\nWith `{key} = {value!r}` in the settings.".replace("'", '"')
            for key, value in invalid.config.items()
        )
        generated["Example"] = _code_block(invalid.code) + settings
        if invalid.fixed is not None:
            generated["Use instead"] = _code_block(invalid.fixed)
    if "Use instead" not in generated and rule.VALID:
        first: Valid | str = rule.VALID[0]
        generated["Use instead"] = _code_block(first.code if isinstance(first, Valid) else first)
    return generated


def render_markdown(rule: type[Rule], target: TorchVersion | None = None) -> str:
    """The rule's page; ``target`` judges version-dependent sections for one torch release."""
    found = sections(rule)
    for heading, text in _example_sections(rule).items():
        found.setdefault(heading, text)
    for heading, text in rule.doc_sections(target).items():
        found.setdefault(heading, text)
    fix = _FIX_LINE.get(rule.FIX_SAFETY, "none") if rule.FIX_SAFETY else "none"
    lines = [
        f"# {rule.name} ({rule.CODE})",
        "",
        f"Message: {rule.MESSAGE}",
        "",
        f"Fix: {fix}" + (f" ({rule.FIX_TITLE})" if rule.FIX_TITLE else ""),
        "",
        f"Enabled by default: {'yes' if rule.DEFAULT_ENABLED else 'no'}",
        "",
    ]
    ordered = [h for h in HEADINGS if h in found] + [h for h in found if h not in HEADINGS]
    for heading in ordered:
        lines += [f"## {heading}", "", found[heading], ""]
    return "\n".join(lines).rstrip() + "\n"


def page_name(rule: type[Rule]) -> str:
    return f"{rule.CODE}-{rule.name}.md"


def render_index(rules: Sequence[type[Rule]]) -> str:
    lines = [
        "# repro-lint rules",
        "",
        "Generated from the rule classes by `pytest --update-goldens`; do not edit by hand.",
        "",
        "Fix: `safe` fixes are applied by `--fix`, `unsafe` ones by `--fix --unsafe-fixes`.",
        "",
        "| Code | Name | Message | Fix | Default |",
        "|---|---|---|---|---|",
    ]
    for rule in rules:
        fix = rule.FIX_SAFETY.value if rule.FIX_SAFETY else ""
        message = rule.MESSAGE.replace("|", "\\|")
        default = "on" if rule.DEFAULT_ENABLED else "off"
        lines.append(
            f"| {rule.CODE} | [{rule.name}]({page_name(rule)}) | {message} | {fix} | {default} |"
        )
    return "\n".join(lines) + "\n"
