"""Rule base class: identity, message, docs, examples and the visitor in one class."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import libcst as cst

from repro_lint.diagnostics import FixSafety
from repro_lint.positions import Positions

if TYPE_CHECKING:
    from collections.abc import Iterator

    from repro_lint.config import Config
    from repro_lint.diagnostics import Diagnostic
    from repro_lint.names import Names
    from repro_lint.program import Program, ProjectReport
    from repro_lint.torch_versions import TorchVersion


DOCS_URL = "https://github.com/repro-lint/repro-lint/blob/main/rules"


@dataclass(frozen=True, slots=True)
class Valid:
    """Code on which the rule must stay quiet."""

    code: str
    config: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True, slots=True)
class Invalid:
    """Code on which the rule must fire; ``fixed`` is the exact result of applying its fixes."""

    code: str
    fixed: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""


# -- fixes as CST-level intents; the engine turns them into text edits with positions --------


@dataclass(frozen=True, slots=True)
class Replace:
    """Replace ``node`` (with the whitespace it owns) by ``new``'s code."""

    node: cst.CSTNode
    new: cst.CSTNode


@dataclass(frozen=True, slots=True)
class InsertBefore:
    """Insert statement lines (no indentation) before ``statement``, at its indentation.
    Nested lines are indented four spaces per level: the engine writes each level in the
    file's own indentation unit."""

    statement: cst.CSTNode
    code: str


@dataclass(frozen=True, slots=True)
class InsertAfter:
    """Insert statement lines (no indentation) after ``statement``, at its indentation
    (nested lines as for ``InsertBefore``)."""

    statement: cst.CSTNode
    code: str


@dataclass(frozen=True, slots=True)
class AddImport:
    """Make ``import module`` (or ``import module as asname``) available before ``before``.

    Nothing is inserted when a module-level import already binds the name earlier in the file;
    otherwise the import goes at the top of the module, after the docstring and
    ``from __future__`` imports.
    """

    module: str
    asname: str | None = None
    before: cst.CSTNode | None = None


@dataclass(frozen=True, slots=True)
class DropComments:
    """Delete the comment lines right above ``statement`` (no blank line between): they
    argued for what a fix changes."""

    statement: cst.CSTNode


NodeEdit = Replace | InsertBefore | InsertAfter | AddImport | DropComments


@dataclass
class Cursor:
    """Where the traversal is in the text: the row of the node being visited (counted from
    the newlines passed, no positions needed), and the statements' starting rows."""

    row: int = 1
    # Each statement visited -> (the row its leading lines start on, its indentation).
    starts: dict[cst.CSTNode, tuple[int, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Note:
    """A fact a rule leaves for the project phase about one node of the file: the summary
    keeps it, positioned, under ``notes`` (``[row, column, data]`` per ``kind``)."""

    kind: str
    node: cst.CSTNode
    # The top-level statement that holds the node (to position it).
    top: cst.CSTNode | None
    data: Any
    # The innermost statement that holds it: only that one is generated to position it.
    statement: cst.CSTNode | None = None


@dataclass(frozen=True)
class FileContext:
    """What a rule may know about the file it checks."""

    module: cst.Module
    names: Names
    config: Config
    target_torch: TorchVersion
    path: Path | None
    module_name: str | None
    reports: list[PendingReport] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    # Innermost statement being visited (maintained by the engine's traversal).
    statement_stack: list[cst.CSTNode] = field(default_factory=list)
    cursor: Cursor = field(default_factory=Cursor)
    # Positions of this file's nodes, shared by everything that positions one (findings,
    # their fixes, the summary's data-loading records): one generation pass per file.
    positions: Positions = field(init=False)
    # What rules of this file share, by a key of their choosing (RPL401 and RPL402 follow
    # the same traversal of the op catalog: the first one made runs it for both).
    shared: dict[object, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "positions", Positions(self.module, self.cursor.starts))


@dataclass(frozen=True, slots=True)
class PendingReport:
    """A finding before positions are known (the engine resolves them in one pass)."""

    rule: type[Rule]
    node: cst.CSTNode
    # The innermost statement (for noqa on a statement's first line) and the top-level one
    # (positions are computed per top-level statement).
    statement: cst.CSTNode | None
    top: cst.CSTNode | None
    message: str
    edits: tuple[NodeEdit, ...]
    fix_title: str | None
    fix_safety: FixSafety | None


def _kebab(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", name).lower()


class Rule:
    """Base of every rule. Subclasses define the ClassVars below and ``visit_<Node>`` methods.

    All selected rules run in one traversal: the engine dispatches each node to the
    ``visit_``/``leave_`` methods of every rule that has one. Returning False from a visit
    method does not prune the traversal (other rules still need the children).
    """

    CODE: ClassVar[str]
    MESSAGE: ClassVar[str]
    FIX_TITLE: ClassVar[str | None] = None
    FIX_SAFETY: ClassVar[FixSafety | None] = None
    VALID: ClassVar[Sequence[Valid | str]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()
    DEFAULT_ENABLED: ClassVar[bool] = True
    # Substrings of the source's code without which the rule cannot fire; an empty tuple means
    # the rule always runs. The engine skips rules (and parsing) when none appears outside
    # docstrings and comments (noqa comments count: RPL901 judges them).
    TRIGGERS: ClassVar[tuple[str, ...]] = ()
    # Match TRIGGERS as whole words rather than substrings (``put`` but not ``input``).
    TRIGGER_WORDS: ClassVar[bool] = False
    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.name = _kebab(cls.__name__)

    def __init__(self, context: FileContext) -> None:
        self.context = context

    def idle_hooks(self) -> frozenset[str]:
        """The ``visit_``/``leave_`` methods that do nothing for this instance: the traversal
        does not call them (it runs once per node of every file)."""
        return frozenset()

    @classmethod
    def doc_sections(cls, target: TorchVersion | None = None) -> dict[str, str]:
        """Documentation sections generated from data (heading -> markdown), appended to the
        docstring's; ``target`` is the torch version to judge version-dependent content for
        (None: show every release)."""
        return {}

    @classmethod
    def url(cls) -> str:
        """Where the rule's documentation page lives (the generated ``rules/`` catalog)."""
        return f"{DOCS_URL}/{cls.CODE}-{cls.name}.md"

    @property
    def names(self) -> Names:
        return self.context.names

    def qualified_name(self, node: cst.CSTNode) -> str | None:
        return self.context.names.qualified_name(node)

    def report(
        self,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: Sequence[NodeEdit] = (),
        fix_title: str | None = None,
        fix_safety: FixSafety | None = None,
        anchor: tuple[cst.CSTNode, ...] | None = None,
    ) -> None:
        """Record a finding at ``node``; ``fix`` edits are applied together or not at all.

        A rule that reports later than it visits (from ``leave_Module``) passes the ``anchor()``
        it took while visiting the node.
        """
        stack = self.context.statement_stack if anchor is None else anchor
        safety = fix_safety if fix_safety is not None else self.FIX_SAFETY
        self.context.reports.append(
            PendingReport(
                rule=type(self),
                node=node,
                statement=stack[-1] if stack else None,
                top=stack[0] if stack else None,
                message=message or self.MESSAGE,
                edits=tuple(fix),
                fix_title=fix_title or self.FIX_TITLE,
                fix_safety=safety if fix else None,
            )
        )

    def anchor(self) -> tuple[cst.CSTNode, ...]:
        """Where the traversal is now (the enclosing statements), for a later ``report``."""
        return tuple(self.context.statement_stack)

    def reference(
        self, qualified: str, module: str, before: cst.CSTNode | None = None
    ) -> tuple[str, list[NodeEdit]]:
        """Text naming ``qualified`` in this file, plus the import edit it needs, if any.

        ``module`` is what to import when nothing suitable is imported yet (``torch`` for
        ``torch.backends.cudnn.benchmark``); ``before`` is where the name will be used.
        """
        text, binding = self.context.names.expression_for(qualified)
        if binding is not None:
            return text, [AddImport(binding.qualified, _asname(binding), before)]
        top = module.split(".", 1)[0]
        return qualified, [AddImport(module if module == top else top, None, before)]


class ProjectRule(Rule):
    """A rule judged on whole programs (entry points and what they reach), not single files."""

    PROJECT: ClassVar[bool] = True

    @classmethod
    def check(cls, program: Program) -> Iterator[ProjectReport]:
        raise NotImplementedError


class SettledRule(Rule):
    """A per-file rule whose verdict depends on the whole program: its findings are revised
    by ``settle`` once the project pass knows which entry points reach the file.

    (Defined here, not with the program model: the per-file pass runs these rules without
    importing ``program``, which the project pass imports when it needs it.)"""

    @classmethod
    def settle(
        cls, program: Program, filename: str, diagnostics: list[Diagnostic]
    ) -> list[Diagnostic]:
        """Revise this file's findings of this rule. Runs on every run with the project
        pass, also on cached results."""
        return diagnostics


def _asname(binding: Any) -> str | None:
    top = binding.qualified.split(".", 1)[0]
    return None if binding.local == top and binding.qualified == top else binding.local
