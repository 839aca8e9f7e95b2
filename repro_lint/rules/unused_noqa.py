"""RPL901: a ``# noqa`` code of repro-lint's that suppresses nothing."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from repro_lint.diagnostics import Diagnostic, Fix, FixSafety, Location
from repro_lint.rule import Invalid, Rule, Valid
from repro_lint.suppressions import Directive, Suppressions, removal_edit, unused_items

_NEWLINE = re.compile(r"\r\n?|\n")


class UnusedNoqa(Rule):
    """
    ## What it does
    Flags entries of `# noqa: ...` and `# repro-lint: noqa: ...` comments that suppress
    nothing: a repro-lint code (or rule name) whose rule ran on the file and reported nothing
    there, or an `RPL` code that names no rule at all.

    ## Why is this bad?
    A suppression outlives the hazard it was written for. Once the code is fixed, the stale
    `# noqa: RPL201` stays behind and silently hides the hazard if it comes back on that line.
    Removing dead suppressions keeps every remaining one meaningful, which is what makes
    `--add-noqa` safe to use when adopting repro-lint on an existing code base.

    ## Fix safety
    Safe: the fix removes only the dead entries from the comment (the whole directive, with
    its explanation, when none is left; the whole line when the comment was alone on it).
    Other tools' codes and other comments on the line are kept.

    ## Options
    Off by default; turn it on with `extend-select = ["RPL901"]`. `# noqa: RPL901` on a line
    keeps its other entries from being reported.

    ## Known limitations
    Only repro-lint's own entries are judged. A blanket `# noqa` is never reported (it may be
    there for another tool), and neither is the code of a rule that is not enabled for the
    file: it may matter under another configuration, so `--select RPL901 --fix` alone never
    strips suppressions of rules it did not run. Codes of the whole-program rules (RPL101,
    RPL104, RPL107, RPL202, ...) are not judged either: their findings are settled across
    files, after each file is checked. `--ignore-noqa` turns this rule off.
    """

    CODE = "RPL901"
    MESSAGE = "Unused `noqa` directive: it suppresses nothing"
    FIX_TITLE = "Remove the unused codes from the `noqa` directive"
    FIX_SAFETY = FixSafety.SAFE
    DEFAULT_ENABLED = False
    TRIGGERS = ("noqa", "NOQA", "Noqa")
    INVALID = (
        Invalid(
            "import torch\ntorch.backends.cudnn.benchmark = False  # noqa: RPL201\n",
            fixed="import torch\ntorch.backends.cudnn.benchmark = False\n",
            config={"extend-select": ["RPL201"]},
        ),
        Invalid(
            "import torch\ntorch.backends.cudnn.benchmark = False  # noqa: E501, RPL201\n",
            fixed="import torch\ntorch.backends.cudnn.benchmark = False  # noqa: E501\n",
            config={"extend-select": ["RPL201"]},
        ),
        Invalid(
            "import torch\ntorch.use_deterministic_algorithms(False)  # noqa: RPL201, RPL203\n",
            fixed="import torch\ntorch.use_deterministic_algorithms(False)  # noqa: RPL203\n",
            config={"extend-select": ["RPL2"]},
        ),
        Invalid(
            "import torch\nx = 1  # noqa: RPL999 -- kept from an old version\n",
            fixed="import torch\nx = 1\n",
            note="an RPL code that names no rule suppresses nothing anywhere",
        ),
        Invalid(
            "import torch\nx = 1  # type: ignore  # noqa: cudnn-benchmark-enabled\n",
            fixed="import torch\nx = 1  # type: ignore\n",
            config={"extend-select": ["RPL201"]},
        ),
        Invalid(
            "# repro-lint: noqa: RPL203\nimport torch\ntorch.backends.cudnn.deterministic = True\n",
            fixed="import torch\ntorch.backends.cudnn.deterministic = True\n",
            config={"extend-select": ["RPL203"]},
        ),
    )
    VALID = (
        Valid(
            "import torch\ntorch.backends.cudnn.benchmark = True  # noqa: RPL201\n",
            config={"extend-select": ["RPL201"]},
        ),
        Valid("import torch\nx = 1  # noqa: E501\n", note="another tool's code"),
        Valid("import torch\nx = 1  # noqa\n", note="a blanket noqa may be for another tool"),
        Valid(
            "import torch\ntorch.backends.cudnn.benchmark = False  # noqa: RPL201\n",
            note="RPL201 is not enabled in this run: its suppressions are left alone",
        ),
        Valid(
            "import torch\nx = 1  # noqa: RPL999, RPL901\n",
            note="`# noqa: RPL901` keeps the line's other entries from being reported",
        ),
    )

    @classmethod
    def diagnostics(
        cls,
        text: str,
        filename: str,
        suppressions: Suppressions,
        used: Mapping[Directive, Collection[str]],
        active: Collection[str],
        known: Collection[str],
    ) -> list[Diagnostic]:
        """One finding per directive with dead entries, each with the fix that drops them."""
        exempt = (cls.CODE, cls.name)
        lines: Sequence[str] | None = None
        out: list[Diagnostic] = []
        directives = [*suppressions.file_level, *suppressions.by_row.values()]
        for directive in sorted(directives, key=lambda d: (d.row, d.column)):
            dead = unused_items(directive, used.get(directive, ()), active, known, exempt)
            if not dead:
                continue
            if suppressions.suppressing(cls.CODE, cls.name, [directive.row]) is not None:
                continue
            if lines is None:
                lines = _NEWLINE.split(text)
            line = lines[directive.row - 1] if directive.row - 1 < len(lines) else ""
            edit = removal_edit(directive, dead, line)
            listed = ", ".join(f"`{item}`" for item in dead)
            out.append(
                Diagnostic(
                    code=cls.CODE,
                    name=cls.name,
                    message=f"Unused `noqa` directive (unused: {listed})",
                    filename=filename,
                    location=Location(directive.row, directive.column),
                    end_location=Location(directive.row, directive.end_column),
                    fix=Fix(FixSafety.SAFE, cls.FIX_TITLE, (edit,)) if edit else None,
                    noqa_row=directive.row,
                    url=cls.url(),
                )
            )
        return out
