"""The language server, started as a subprocess and driven over stdio by pygls's LSP client."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from repro_lint.explain import render_markdown
from repro_lint.rules import rule_for

HAZARD = "import torch\ntorch.backends.cudnn.benchmark = True\n"
TIMEOUT = 30.0


class Client:
    """An LSP client session that records what the server publishes."""

    def __init__(self, client: LanguageClient) -> None:
        self.lsp = client
        self.published: list[lsp.PublishDiagnosticsParams] = []
        self.messages: list[lsp.ShowMessageParams] = []
        self.changed = asyncio.Event()
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}

    async def diagnostics(
        self, uri: str, version: int | None = None, after: int = 0
    ) -> list[lsp.Diagnostic]:
        """The diagnostics published for ``uri`` (at ``version``, when given; among the
        notifications after the first ``after``), waiting for them."""

        def found() -> lsp.PublishDiagnosticsParams | None:
            for params in reversed(self.published[after:]):
                if params.uri == uri and (version is None or params.version == version):
                    return params
            return None

        async def wait() -> lsp.PublishDiagnosticsParams:
            while (params := found()) is None:
                self.changed.clear()
                await self.changed.wait()
            return params

        return list((await asyncio.wait_for(wait(), TIMEOUT)).diagnostics)

    def open(self, path: Path, text: str) -> str:
        uri = path.as_uri()
        self.versions[uri], self.texts[uri] = 1, text
        self.lsp.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> int:
        self.versions[uri] += 1
        self.texts[uri] = text
        self.lsp.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return self.versions[uri]

    def apply(self, uri: str, edit: lsp.WorkspaceEdit | None) -> int:
        """Apply a workspace edit to our copy of the document, as an editor does, and send it."""
        assert edit is not None and edit.changes is not None
        return self.change(uri, apply_text_edits(self.texts[uri], edit.changes[uri]))

    async def actions(
        self, uri: str, diagnostic: lsp.Diagnostic, only: list[str] | None = None
    ) -> list[lsp.CodeAction]:
        result = await asyncio.wait_for(
            self.lsp.text_document_code_action_async(
                lsp.CodeActionParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    range=diagnostic.range,
                    context=lsp.CodeActionContext(diagnostics=[diagnostic], only=only),
                )
            ),
            TIMEOUT,
        )
        return [a for a in result or [] if isinstance(a, lsp.CodeAction)]


def utf16_offset(text: str, position: lsp.Position) -> int:
    """An LSP position (UTF-16 code units, the default encoding) as an index into ``text``."""
    lines = text.splitlines(keepends=True)
    offset = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for index, char in enumerate(line):
        if units >= position.character:
            return offset + index
        units += 2 if ord(char) > 0xFFFF else 1
    return offset + len(line)


def apply_text_edits(text: str, edits: Sequence[lsp.TextEdit]) -> str:
    spans = sorted(
        ((utf16_offset(text, e.range.start), utf16_offset(text, e.range.end), e.new_text))
        for e in edits
    )
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text


@asynccontextmanager
async def session(root: Path) -> AsyncIterator[Client]:
    client = LanguageClient("repro-lint-tests", "1")
    recorder = Client(client)

    # pygls's client decorators and stop() carry no annotations.
    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # type: ignore[untyped-decorator]
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        recorder.published.append(params)
        recorder.changed.set()

    @client.feature(lsp.WINDOW_SHOW_MESSAGE)  # type: ignore[untyped-decorator]
    def on_message(params: lsp.ShowMessageParams) -> None:
        recorder.messages.append(params)
        recorder.changed.set()

    await client.start_io(sys.executable, "-m", "repro_lint", "server", cwd=str(root))
    try:
        await asyncio.wait_for(
            client.initialize_async(
                lsp.InitializeParams(
                    capabilities=lsp.ClientCapabilities(),
                    root_uri=root.as_uri(),
                    workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                )
            ),
            TIMEOUT,
        )
        client.initialized(lsp.InitializedParams())
        yield recorder
        await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
        client.exit(None)
    except BaseException:
        # The client waits for the server to exit; after a failure nobody told it to.
        process = client._server  # pygls keeps the process here and offers no public handle
        if process is not None and process.returncode is None:
            process.kill()
        raise
    finally:
        await client.stop()  # type: ignore[no-untyped-call]


def run(test: Callable[[Client], object], root: Path) -> None:
    async def main() -> None:
        async with session(root) as client:
            await test(client)  # type: ignore[misc]

    asyncio.run(main())


def codes(diagnostics: list[lsp.Diagnostic]) -> list[str]:
    return [str(d.code) for d in diagnostics]


def test_open_fix_and_see_the_diagnostic_disappear(tmp_path: Path) -> None:
    async def test(client: Client) -> None:
        uri = client.open(tmp_path / "train.py", HAZARD)
        [diagnostic] = await client.diagnostics(uri, 1)
        assert diagnostic.code == "RPL201" and diagnostic.source == "repro-lint"
        assert diagnostic.range == lsp.Range(
            start=lsp.Position(line=1, character=0), end=lsp.Position(line=1, character=37)
        )
        assert diagnostic.code_description is not None
        assert diagnostic.code_description.href.endswith("rules/RPL201-cudnn-benchmark-enabled.md")

        actions = await client.actions(uri, diagnostic)
        kinds = sorted(str(a.kind) for a in actions)
        assert kinds == ["quickfix", "quickfix", "source.fixAll.repro-lint"]
        [fix] = [a for a in actions if a.is_preferred]
        version = client.apply(uri, fix.edit)
        assert client.texts[uri] == HAZARD.replace("True", "False")
        assert await client.diagnostics(uri, version) == []

    run(test, tmp_path)


def test_suppress_with_noqa_action(tmp_path: Path) -> None:
    async def test(client: Client) -> None:
        uri = client.open(tmp_path / "train.py", HAZARD.replace("True\n", "True  # speed\n"))
        [diagnostic] = await client.diagnostics(uri, 1)
        [noqa] = [a for a in await client.actions(uri, diagnostic) if "noqa" in a.title]
        version = client.apply(uri, noqa.edit)
        assert client.texts[uri].splitlines()[1].endswith("True  # speed  # noqa: RPL201")
        assert await client.diagnostics(uri, version) == []

    run(test, tmp_path)


def test_fix_all_applies_every_safe_fix(tmp_path: Path) -> None:
    source = (
        "import torch\n"
        "torch.backends.cudnn.benchmark = True\n"
        "torch.use_deterministic_algorithms(True)\n"
        "torch.backends.cudnn.benchmark = True\n"
    )

    async def test(client: Client) -> None:
        uri = client.open(tmp_path / "train.py", source)
        diagnostics = await client.diagnostics(uri, 1)
        assert codes(diagnostics) == ["RPL201", "RPL204", "RPL201"]
        [fix_all] = await client.actions(uri, diagnostics[0], only=["source.fixAll"])
        version = client.apply(uri, fix_all.edit)
        assert "CUBLAS_WORKSPACE_CONFIG" in client.texts[uri]
        assert "benchmark = True" not in client.texts[uri]
        assert await client.diagnostics(uri, version) == []

    run(test, tmp_path)


def test_positions_are_utf16_code_units(tmp_path: Path) -> None:
    async def test(client: Client) -> None:
        uri = client.open(
            tmp_path / "train.py", 'import torch\nx = "😀"; torch.backends.cudnn.benchmark = True\n'
        )
        [diagnostic] = await client.diagnostics(uri, 1)
        # Nine characters before the statement, the emoji among them: ten UTF-16 code units.
        assert diagnostic.range.start == lsp.Position(line=1, character=10)
        [fix] = [a for a in await client.actions(uri, diagnostic) if a.is_preferred]
        client.apply(uri, fix.edit)
        assert client.texts[uri].endswith("benchmark = False\n")

    run(test, tmp_path)


def test_changes_are_debounced_and_the_last_version_wins(tmp_path: Path) -> None:
    async def test(client: Client) -> None:
        uri = client.open(tmp_path / "train.py", "import torch\n")
        assert await client.diagnostics(uri, 1) == []
        for _ in range(4):
            last = client.change(uri, HAZARD)
        client.change(uri, HAZARD + "torch.use_deterministic_algorithms(False)\n")
        last = client.versions[uri]
        assert codes(await client.diagnostics(uri, last)) == ["RPL201", "RPL203"]
        published = [p.version for p in client.published if p.uri == uri]
        # The first change after a pause is linted at once; on a busy machine that lint can
        # start before the next change arrives. The burst that follows is linted once.
        assert published[0] == 1 and published[-1] == last
        assert len(published) <= 3, f"intermediate versions were linted: {published}"

    run(test, tmp_path)


def test_settings_come_from_the_nearest_pyproject(tmp_path: Path) -> None:
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    (quiet / "pyproject.toml").write_text(
        '[tool.repro-lint]\nignore = ["RPL201"]\n', encoding="utf-8"
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "pyproject.toml").write_text(
        '[tool.repro-lint]\nselect = ["NOPE"]\n', encoding="utf-8"
    )

    async def test(client: Client) -> None:
        loud = client.open(tmp_path / "a.py", HAZARD)
        hushed = client.open(quiet / "b.py", HAZARD)
        assert codes(await client.diagnostics(loud, 1)) == ["RPL201"]
        assert await client.diagnostics(hushed, 1) == []
        # An invalid configuration is shown to the user; the file is linted with defaults.
        bad = client.open(broken / "c.py", HAZARD)
        assert codes(await client.diagnostics(bad, 1)) == ["RPL201"]
        assert [m.type for m in client.messages] == [lsp.MessageType.Error]

    run(test, tmp_path)


def test_hover_shows_the_rule_documentation(tmp_path: Path) -> None:
    async def test(client: Client) -> None:
        uri = client.open(tmp_path / "train.py", HAZARD)
        await client.diagnostics(uri, 1)
        hover = await asyncio.wait_for(
            client.lsp.text_document_hover_async(
                lsp.HoverParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    position=lsp.Position(line=1, character=10),
                )
            ),
            TIMEOUT,
        )
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        rule = rule_for("RPL201")
        assert rule is not None and hover.contents.value == render_markdown(rule)
        nothing = await client.lsp.text_document_hover_async(
            lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                position=lsp.Position(line=0, character=3),
            )
        )
        assert nothing is None

    run(test, tmp_path)


def test_closing_a_document_clears_its_diagnostics(tmp_path: Path) -> None:
    async def test(client: Client) -> None:
        uri = client.open(tmp_path / "train.py", HAZARD)
        assert codes(await client.diagnostics(uri, 1)) == ["RPL201"]
        seen = len(client.published)
        client.lsp.text_document_did_close(
            lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        )
        assert await client.diagnostics(uri, after=seen) == []

    run(test, tmp_path)


def test_an_edited_configuration_replaces_the_settings_and_model_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server holds one set of settings, and one project model, per project root: an
    edited configuration drops the model made under the one before (a model holds the
    summaries of every module the documents import), and a broken one's defaults are made
    once, not at every lint."""
    from repro_lint.lsp import ReproLintServer

    server = ReproLintServer()
    shown: list[object] = []
    monkeypatch.setattr(server, "window_show_message", shown.append)
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.repro-lint]\nignore = ["RPL201"]\n', encoding="utf-8")
    script = tmp_path / "train.py"
    first = server.settings_for(script)
    assert server.settings_for(script) is first
    model = server.project(first)
    assert server.project(first) is model
    config.write_text('[tool.repro-lint]\nignore = ["RPL202"]\n', encoding="utf-8")
    second = server.settings_for(script)
    assert second is not first and server.project(second) is not model
    assert list(server._settings.values()) == [second] and len(server._projects) == 1
    config.write_text('[tool.repro-lint]\nselect = ["NOPE"]\n', encoding="utf-8")
    broken = server.settings_for(script)
    assert server.settings_for(script) is broken and len(shown) == 1
    server.project(broken)
    assert list(server._settings.values()) == [broken] and len(server._projects) == 1
