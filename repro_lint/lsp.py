"""The language server (``repro-lint server``): findings as you type, fixes and ``# noqa`` as
code actions, rule docs on hover. Built on pygls (the ``lsp`` extra); the same stages as the
command line, with the settings of the ``pyproject.toml`` nearest to each document.

The server keeps each project's model in memory: the summaries of the modules documents
import (loaded once per file version, from the results cache where it has them), and per
document what its last project pass read, so an edit that leaves those inputs alone reuses
that pass and only the edited text goes through the per-file pass again.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from repro_lint import __version__
from repro_lint.cache import Cache
from repro_lint.config import Config, ConfigError, load_config
from repro_lint.diagnostics import Diagnostic, Edit, FileResult, FixSafety, Location
from repro_lint.engine import Document, fix_source, import_analysis, lint_document
from repro_lint.explain import render_markdown
from repro_lint.fixes import FixOutcome
from repro_lint.notebooks import NOTEBOOK_SUFFIX
from repro_lint.parsing import Pieces
from repro_lint.program import Loader
from repro_lint.project_pass import memoized_loader, summary_loader
from repro_lint.rules import rule_for
from repro_lint.settings import Settings
from repro_lint.suppressions import NOT_SUPPRESSIBLE, noqa_edits

SOURCE = "repro-lint"
# Changes closer together than this are typing: the document is linted again when it pauses
# this long. A change after a pause is linted at once (the edit an editor applies, a paste).
DEBOUNCE_SECONDS = 0.1
FIX_ALL_KIND = f"{lsp.CodeActionKind.SourceFixAll.value}.repro-lint"
FIX_ALL_TITLE = "repro-lint: Fix all safe fixes"
_NEWLINE = re.compile(r"\r\n?|\n")
_APPLIED = (FixSafety.SAFE, FixSafety.UNSAFE)


@dataclass
class _Linted:
    """One lint of one version of a document, with what code actions need of it."""

    version: int | None
    text: str
    result: FileResult
    document: Document | None
    lines: list[str]
    # The findings as LSP diagnostics (converted once; cursor moves ask again and again).
    diagnostics: list[lsp.Diagnostic] = field(default_factory=list)
    fix_all: FixOutcome | None = None
    # The parse of this version's pieces, for the next version's (see parsing.Pieces).
    pieces: Pieces = field(default_factory=Pieces)


@dataclass
class _Project:
    """What the server keeps for the documents that share settings: the results cache and
    the summaries of the modules they import, each loaded once per version of its file."""

    cache: Cache
    load: Loader


class ReproLintServer(LanguageServer):
    """pygls server that lints Python documents with repro-lint's engine."""

    def __init__(self) -> None:
        super().__init__(
            SOURCE, __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental
        )
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.last_change: dict[str, float] = {}
        self.linted: dict[str, _Linted] = {}
        self._settings: dict[Config, Settings] = {}
        self._projects: dict[int, _Project] = {}
        self._reported: set[str] = set()
        # One lint at a time, off the event loop: messages keep flowing while a file is linted.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="repro-lint")

    # -- settings and linting -------------------------------------------------------------------

    def settings_for(self, path: Path | None) -> Settings:
        """Settings from the pyproject.toml nearest to ``path`` (re-read on every lint, so an
        edit to it applies at the next one); defaults, with a message, when it is invalid."""
        start = path.parent if path is not None else Path(self.workspace.root_path or ".")
        try:
            return self._settings_of(load_config(start))
        except ConfigError as exc:
            if str(exc) not in self._reported:
                self._reported.add(str(exc))
                self.window_show_message(
                    lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"repro-lint: {exc}")
                )
            return self._settings_of(Config(root=start))

    def _settings_of(self, config: Config) -> Settings:
        """The settings of ``config``, made once. A configuration read again after an edit
        replaces the one before for the same root, and the project model made under it goes
        with it (it holds the summaries of every module the documents import). Settings are
        kept while their model is: models are found by the identity of their settings."""
        settings = self._settings.get(config)
        if settings is None:
            settings = Settings.from_config(config)  # (ConfigError: nothing replaced)
            for old in [c for c in self._settings if c.root == config.root]:
                self._projects.pop(id(self._settings.pop(old)), None)
            self._settings[config] = settings
        return settings

    def project(self, settings: Settings) -> _Project:
        found = self._projects.get(id(settings))
        if found is None:
            cache = Cache(settings.config.root, settings.cache_key())
            found = _Project(cache, memoized_loader(summary_loader(settings, cache)))
            self._projects[id(settings)] = found
        return found

    def lint(self, uri: str) -> _Linted:
        document = self.workspace.get_text_document(uri)
        path = _path(uri)
        text = document.source
        name = path.name if path else uri
        linted: Document | None = None
        before = self.linted.get(uri)
        pieces = before.pieces if before is not None else Pieces()
        if name.endswith(NOTEBOOK_SUFFIX):
            # A notebook's JSON, opened as text: its cells are linted by the command line.
            result = FileResult(name, ())
        else:
            settings = self.settings_for(path)
            project = self.project(settings)
            previous = before.document if before is not None else None
            if previous is not None and previous.settings is not settings:
                previous = None
            linted = lint_document(text, name, settings, path, project.load, previous, pieces)
            result = linted.result
            project.cache.save()
        lines = _NEWLINE.split(text)
        entry = _Linted(document.version, text, result, linted, lines, pieces=pieces)
        entry.diagnostics = [self.to_lsp(lines, d) for d in result.diagnostics]
        self.linted[uri] = entry
        return entry

    def current(self, uri: str) -> _Linted:
        """The lint of the document as it is now (linting it again if it changed)."""
        document = self.workspace.get_text_document(uri)
        linted = self.linted.get(uri)
        if linted is None or linted.text != document.source:
            linted = self.lint(uri)
        return linted

    def changed(self, uri: str) -> None:
        """Lint a changed document: at once after a pause, else once typing pauses."""
        now = time.monotonic()
        last = self.last_change.get(uri)
        self.last_change[uri] = now
        typing = last is not None and now - last < DEBOUNCE_SECONDS
        self.schedule(uri, DEBOUNCE_SECONDS if typing or uri in self.pending else 0)

    def schedule(self, uri: str, delay: float) -> None:
        """Lint ``uri`` after ``delay`` seconds, replacing a lint already waiting for it."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._publish(uri, delay))

    async def _publish(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        document = self.workspace.get_text_document(uri)
        version = document.version
        loop = asyncio.get_running_loop()
        try:
            linted = await loop.run_in_executor(self.executor, self.lint, uri)
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                del self.pending[uri]
        if self.workspace.get_text_document(uri).version != version:
            return  # typed over while linting: the newer version has its own lint coming
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=linted.diagnostics)
        )

    # -- conversions ----------------------------------------------------------------------------

    def position(self, lines: Sequence[str], location: Location) -> lsp.Position:
        """A 1-based (row, character column) as an LSP position in the negotiated encoding."""
        row = min(max(location.row, 1), len(lines))
        line = lines[row - 1]
        column = min(max(location.column, 1), len(line) + 1)
        units = self.workspace.position_codec.client_num_units(line[: column - 1])
        return lsp.Position(line=row - 1, character=units)

    def range(self, lines: Sequence[str], start: Location, end: Location) -> lsp.Range:
        return lsp.Range(start=self.position(lines, start), end=self.position(lines, end))

    def to_lsp(self, lines: Sequence[str], d: Diagnostic) -> lsp.Diagnostic:
        return lsp.Diagnostic(
            range=self.range(lines, d.location, d.end_location),
            message=d.message,
            severity=lsp.DiagnosticSeverity.Error
            if d.code == "RPL000"
            else lsp.DiagnosticSeverity.Warning,
            code=d.code,
            code_description=lsp.CodeDescription(href=d.url) if d.url else None,
            source=SOURCE,
            tags=[lsp.DiagnosticTag.Unnecessary] if d.code == "RPL901" else None,
        )

    def text_edits(self, lines: Sequence[str], edits: Sequence[Edit]) -> list[lsp.TextEdit]:
        return [
            lsp.TextEdit(range=self.range(lines, e.location, e.end_location), new_text=e.content)
            for e in edits
        ]

    # -- code actions ---------------------------------------------------------------------------

    def resolves_edits(self) -> bool:
        """Whether the client fills in an action's edit later (``codeAction/resolve``)."""
        capabilities = self.client_capabilities.text_document
        action = capabilities.code_action if capabilities is not None else None
        support = action.resolve_support if action is not None else None
        return support is not None and "edit" in support.properties

    def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        linted = self.current(uri)
        only = params.context.only
        actions: list[lsp.CodeAction] = []
        for d, diagnostic in zip(linted.result.diagnostics, linted.diagnostics, strict=True):
            if _overlaps(diagnostic.range, params.range):
                actions.extend(self._quick_fixes(uri, linted, d, diagnostic))
        if not only or any(_kind_in(FIX_ALL_KIND, kind) for kind in only):
            fix_all = self._fix_all(uri, linted)
            if fix_all is not None:
                actions.append(fix_all)
        if only:
            actions = [a for a in actions if any(_kind_in(a.kind, kind) for kind in only)]
        return actions

    def _quick_fixes(
        self, uri: str, linted: _Linted, d: Diagnostic, diagnostic: lsp.Diagnostic
    ) -> list[lsp.CodeAction]:
        actions: list[lsp.CodeAction] = []
        fix = d.fix
        # A fix that edits another file (RPL402 at an entry point) is left to the CLI.
        if (
            fix is not None
            and fix.applicability in _APPLIED
            and all(e.filename is None for e in fix.edits)
        ):
            unsafe = " (unsafe fix)" if fix.applicability is FixSafety.UNSAFE else ""
            actions.append(
                lsp.CodeAction(
                    title=f"{d.code}: {fix.message}{unsafe}",
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    is_preferred=fix.applicability is FixSafety.SAFE,
                    edit=lsp.WorkspaceEdit(changes={uri: self.text_edits(linted.lines, fix.edits)}),
                )
            )
        if d.code not in NOT_SUPPRESSIBLE and d.noqa_row is not None:
            edits, _ = noqa_edits(linted.text, {d.noqa_row: [d.code]})
            if edits:
                actions.append(
                    lsp.CodeAction(
                        title=f"{d.code}: Suppress with `# noqa: {d.code}`",
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=lsp.WorkspaceEdit(changes={uri: self.text_edits(linted.lines, edits)}),
                    )
                )
        return actions

    def _fix_all(self, uri: str, linted: _Linted) -> lsp.CodeAction | None:
        """Every safe fix of the document, to a fixed point, as one edit; computed when the
        client resolves the action, if it can (editors ask for actions on every cursor
        move), else now (once per version of the document)."""
        if not any(
            d.fix is not None and d.fix.applicability is FixSafety.SAFE
            for d in linted.result.diagnostics
        ):
            return None
        if self.resolves_edits():
            return lsp.CodeAction(
                title=FIX_ALL_TITLE, kind=FIX_ALL_KIND, data={"uri": uri, "fix_all": True}
            )
        return self._fix_all_action(uri, linted)

    def _fix_all_action(self, uri: str, linted: _Linted) -> lsp.CodeAction | None:
        if linted.fix_all is None:
            path = _path(uri)
            settings = self.settings_for(path)
            name = path.name if path else uri
            linted.fix_all = fix_source(
                linted.text, settings, frozenset({FixSafety.SAFE}), name, path
            )
        outcome = linted.fix_all
        if not outcome.changed:
            return None
        lines = linted.lines
        end = Location(len(lines), len(lines[-1]) + 1)
        whole = lsp.Range(start=lsp.Position(line=0, character=0), end=self.position(lines, end))
        return lsp.CodeAction(
            title=FIX_ALL_TITLE,
            kind=FIX_ALL_KIND,
            edit=lsp.WorkspaceEdit(
                changes={uri: [lsp.TextEdit(range=whole, new_text=outcome.text)]}
            ),
        )

    def resolve(self, action: lsp.CodeAction) -> lsp.CodeAction:
        """Fill in the edit of a fix-all action offered without one."""
        data: Any = action.data
        if not isinstance(data, dict) or not data.get("fix_all") or "uri" not in data:
            return action
        resolved = self._fix_all_action(str(data["uri"]), self.current(str(data["uri"])))
        if resolved is None:
            action.edit = lsp.WorkspaceEdit(changes={})
            return action
        return resolved

    def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        """The documentation of the rules whose findings cover the position."""
        linted = self.current(params.text_document.uri)
        point = lsp.Range(start=params.position, end=params.position)
        pages = []
        for d, diagnostic in zip(linted.result.diagnostics, linted.diagnostics, strict=True):
            rule = rule_for(d.code)
            if rule is not None and _overlaps(diagnostic.range, point):
                page = render_markdown(rule)
                if page not in pages:
                    pages.append(page)
        if not pages:
            return None
        value = "\n---\n\n".join(pages)
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=value))


def _path(uri: str) -> Path | None:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(path) if path else None


def _before(a: lsp.Position, b: lsp.Position) -> bool:
    return (a.line, a.character) < (b.line, b.character)


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    """Whether two ranges share a point (a cursor, an empty range, touches its ends)."""
    return not (_before(a.end, b.start) or _before(b.end, a.start))


def _kind_in(kind: str | None, wanted: str) -> bool:
    """LSP code action kinds are hierarchical: ``source.fixAll.repro-lint`` is a
    ``source.fixAll`` and a ``source``."""
    return kind is not None and (kind == wanted or kind.startswith(f"{wanted}."))


def create_server() -> ReproLintServer:
    server = ReproLintServer()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: ReproLintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: ReproLintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.changed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: ReproLintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: ReproLintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        waiting = ls.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
        ls.linted.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL_KIND],
            resolve_provider=True,
        ),
    )
    def code_action(ls: ReproLintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return ls.code_actions(params)

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    def code_action_resolve(ls: ReproLintServer, params: lsp.CodeAction) -> lsp.CodeAction:
        return ls.resolve(params)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: ReproLintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        return ls.hover(params)

    return server


def serve() -> None:
    """Speak LSP on stdin/stdout until the client says exit."""
    import_analysis()
    create_server().start_io()
