"""The language server (``repro-lint server``): findings as you type, fixes and ``# noqa`` as
code actions, rule docs on hover. Built on pygls (the ``lsp`` extra); the same engine as the
command line, with the settings of the ``pyproject.toml`` nearest to each document."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from repro_lint import __version__
from repro_lint.config import Config, ConfigError, load_config
from repro_lint.diagnostics import Diagnostic, Edit, FileResult, FixSafety, Location
from repro_lint.engine import fix_source, lint_text
from repro_lint.explain import render_markdown
from repro_lint.notebooks import NOTEBOOK_SUFFIX
from repro_lint.rules import rule_for
from repro_lint.settings import Settings
from repro_lint.suppressions import NOT_SUPPRESSIBLE, noqa_edits

SOURCE = "repro-lint"
# How long typing must pause before a changed document is linted again.
DEBOUNCE_SECONDS = 0.3
FIX_ALL_KIND = f"{lsp.CodeActionKind.SourceFixAll.value}.repro-lint"
_NEWLINE = re.compile(r"\r\n?|\n")
_APPLIED = (FixSafety.SAFE, FixSafety.UNSAFE)


@dataclass(frozen=True)
class _Linted:
    """One lint of one version of a document."""

    version: int | None
    text: str
    result: FileResult


class ReproLintServer(LanguageServer):
    """pygls server that lints Python documents with repro-lint's engine."""

    def __init__(self) -> None:
        super().__init__(
            SOURCE, __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental
        )
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.linted: dict[str, _Linted] = {}
        self._settings: dict[Config, Settings] = {}
        self._reported: set[str] = set()
        # One lint at a time, off the event loop: messages keep flowing while a file is linted.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="repro-lint")

    # -- settings and linting -------------------------------------------------------------------

    def settings_for(self, path: Path | None) -> Settings:
        """Settings from the pyproject.toml nearest to ``path`` (re-read on every lint, so an
        edit to it applies at the next one); defaults, with a message, when it is invalid."""
        start = path.parent if path is not None else Path(self.workspace.root_path or ".")
        try:
            config = load_config(start)
            settings = self._settings.get(config)
            if settings is None:
                settings = self._settings[config] = Settings.from_config(config)
            return settings
        except ConfigError as exc:
            if str(exc) not in self._reported:
                self._reported.add(str(exc))
                self.window_show_message(
                    lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"repro-lint: {exc}")
                )
            return Settings.from_config(Config(root=start))

    def lint(self, uri: str) -> _Linted:
        document = self.workspace.get_text_document(uri)
        path = _path(uri)
        text = document.source
        name = path.name if path else uri
        if name.endswith(NOTEBOOK_SUFFIX):
            # A notebook's JSON, opened as text: its cells are linted by the command line.
            result = FileResult(name, ())
        else:
            result = lint_text(text, name, self.settings_for(path), path)
        linted = _Linted(document.version, text, result)
        self.linted[uri] = linted
        return linted

    def current(self, uri: str) -> _Linted:
        """The lint of the document as it is now (linting it again if it changed)."""
        document = self.workspace.get_text_document(uri)
        linted = self.linted.get(uri)
        if linted is None or linted.text != document.source:
            linted = self.lint(uri)
        return linted

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
        linted = await loop.run_in_executor(self.executor, self.lint, uri)
        if self.workspace.get_text_document(uri).version != version:
            return  # typed over while linting: the newer version has its own lint coming
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=uri,
                version=version,
                diagnostics=[self.to_lsp(linted.text, d) for d in linted.result.diagnostics],
            )
        )

    # -- conversions ----------------------------------------------------------------------------

    def position(self, lines: Sequence[str], location: Location) -> lsp.Position:
        """A 1-based (row, character column) as an LSP position in the negotiated encoding."""
        row = min(max(location.row, 1), len(lines))
        line = lines[row - 1]
        column = min(max(location.column, 1), len(line) + 1)
        units = self.workspace.position_codec.client_num_units(line[: column - 1])
        return lsp.Position(line=row - 1, character=units)

    def range(self, text: str, start: Location, end: Location) -> lsp.Range:
        lines = _NEWLINE.split(text)
        return lsp.Range(start=self.position(lines, start), end=self.position(lines, end))

    def to_lsp(self, text: str, d: Diagnostic) -> lsp.Diagnostic:
        return lsp.Diagnostic(
            range=self.range(text, d.location, d.end_location),
            message=d.message,
            severity=lsp.DiagnosticSeverity.Error
            if d.code == "RPL000"
            else lsp.DiagnosticSeverity.Warning,
            code=d.code,
            code_description=lsp.CodeDescription(href=d.url) if d.url else None,
            source=SOURCE,
            tags=[lsp.DiagnosticTag.Unnecessary] if d.code == "RPL901" else None,
        )

    def text_edits(self, text: str, edits: Sequence[Edit]) -> list[lsp.TextEdit]:
        return [
            lsp.TextEdit(range=self.range(text, e.location, e.end_location), new_text=e.content)
            for e in edits
        ]

    # -- code actions ---------------------------------------------------------------------------

    def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        linted = self.current(uri)
        only = params.context.only
        actions: list[lsp.CodeAction] = []
        for d in linted.result.diagnostics:
            diagnostic = self.to_lsp(linted.text, d)
            if not _overlaps(diagnostic.range, params.range):
                continue
            actions.extend(self._quick_fixes(uri, linted.text, d, diagnostic))
        fix_all = self._fix_all(uri, linted)
        if fix_all is not None:
            actions.append(fix_all)
        if only:
            actions = [a for a in actions if any(_kind_in(a.kind, kind) for kind in only)]
        return actions

    def _quick_fixes(
        self, uri: str, text: str, d: Diagnostic, diagnostic: lsp.Diagnostic
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
                    edit=lsp.WorkspaceEdit(changes={uri: self.text_edits(text, fix.edits)}),
                )
            )
        if d.code not in NOT_SUPPRESSIBLE and d.noqa_row is not None:
            edits, _ = noqa_edits(text, {d.noqa_row: [d.code]})
            if edits:
                actions.append(
                    lsp.CodeAction(
                        title=f"{d.code}: Suppress with `# noqa: {d.code}`",
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=lsp.WorkspaceEdit(changes={uri: self.text_edits(text, edits)}),
                    )
                )
        return actions

    def _fix_all(self, uri: str, linted: _Linted) -> lsp.CodeAction | None:
        """Every safe fix of the document, to a fixed point, as one edit."""
        safe = [
            d
            for d in linted.result.diagnostics
            if d.fix is not None and d.fix.applicability is FixSafety.SAFE
        ]
        if not safe:
            return None
        path = _path(uri)
        settings = self.settings_for(path)
        name = path.name if path else uri
        outcome = fix_source(linted.text, settings, frozenset({FixSafety.SAFE}), name, path)
        if not outcome.changed:
            return None
        lines = _NEWLINE.split(linted.text)
        end = Location(len(lines), len(lines[-1]) + 1)
        whole = lsp.Range(start=lsp.Position(line=0, character=0), end=self.position(lines, end))
        return lsp.CodeAction(
            title="repro-lint: Fix all safe fixes",
            kind=FIX_ALL_KIND,
            edit=lsp.WorkspaceEdit(
                changes={uri: [lsp.TextEdit(range=whole, new_text=outcome.text)]}
            ),
        )

    def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        """The documentation of the rules whose findings cover the position."""
        linted = self.current(params.text_document.uri)
        point = lsp.Range(start=params.position, end=params.position)
        pages = []
        for d in linted.result.diagnostics:
            rule = rule_for(d.code)
            if rule is not None and _overlaps(self.to_lsp(linted.text, d).range, point):
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
        ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

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
            resolve_provider=False,
        ),
    )
    def code_action(ls: ReproLintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return ls.code_actions(params)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: ReproLintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        return ls.hover(params)

    return server


def serve() -> None:
    """Speak LSP on stdin/stdout until the client says exit."""
    create_server().start_io()
