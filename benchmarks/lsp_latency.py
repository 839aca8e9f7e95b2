"""Language-server latencies, measured the way an editor sees them: a real LSP client (pygls's)
drives `repro-lint server` over stdio, with the capabilities VS Code announces.

Usage: python benchmarks/lsp_latency.py [--lines 1000] [--edits 30] [--actions 60]
(bench.py runs it too.) Prints the medians of:
- `didChange` -> `publishDiagnostics` for that version, debounce included: one line of a
  1,000-line training script edited at a time, as typing does, with pauses between edits;
- `codeAction` at a cursor on random lines (a finding there or not), as sent on every
  cursor move.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

BIN = Path(sys.executable).parent
TIMEOUT = 60.0

HEADER = '''"""Train a small image classifier: data, model, loop, evaluation and checkpoints."""

import argparse
import math
import os
import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


@dataclass
class Config:
    epochs: int = 10
    batch_size: int = 64
    lr: float = 0.001
    weight_decay: float = 0.0001
    workers: int = 4
    seed: int = 0
    out: str = "checkpoints"


class Images(Dataset):
    def __init__(self, root: str, train: bool = True) -> None:
        self.files = sorted(os.listdir(root))
        self.train = train

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int):
        image = torch.rand(3, 32, 32)
        if self.train and random.random() < 0.5:
            image = image.flip(-1)
        return image, index % 10


class Net(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.head = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.interpolate(x, scale_factor=2, mode="bilinear")
        return self.head(x.mean(dim=(2, 3)))

'''

HELPER = '''
def metric_{n}(logits: torch.Tensor, labels: torch.Tensor, classes: int = 10) -> torch.Tensor:
    """Per-class error counts for batch statistics ({n})."""
    wrong = (logits.argmax(dim=1) != labels).float()
    totals = torch.zeros(classes)
    totals.index_add_(0, labels, wrong)
    scale = math.sqrt({n} + 1)
    return totals / scale


def augment_{n}(batch: torch.Tensor, strength: float = 0.{n}) -> torch.Tensor:
    """Random brightness and a random crop ({n})."""
    noise = torch.randn_like(batch) * strength
    shift = np.random.randint(0, 4)
    batch = torch.roll(batch + noise, shifts=shift, dims=-1)
    return batch.clamp(0.0, 1.0)

'''

FOOTER = """
def train(config: Config) -> None:
    torch.backends.cudnn.benchmark = True
    data = Images("data", train=True)
    loader = DataLoader(
        data, batch_size=config.batch_size, shuffle=True, num_workers=config.workers
    )
    model = Net()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    for epoch in range(config.epochs):
        for images, labels in loader:
            logits = model(augment_0(images))
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        os.makedirs(config.out, exist_ok=True)
        torch.save(model.state_dict(), os.path.join(config.out, f"epoch-{epoch}.pt"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    train(Config(epochs=args.epochs))
"""


def training_script(lines: int) -> str:
    """A training script of about ``lines`` lines, with the usual hazards in it."""
    parts = [HEADER]
    count = HEADER.count("\n") + FOOTER.count("\n")
    n = 0
    while count < lines:
        helper = HELPER.format(n=n)
        parts.append(helper)
        count += helper.count("\n")
        n += 1
    parts.append(FOOTER)
    return "".join(parts)


class Session:
    """An LSP client that timestamps what the server publishes."""

    def __init__(self) -> None:
        self.client = LanguageClient("repro-lint-bench", "1")
        self.published: dict[int, tuple[float, list[lsp.Diagnostic]]] = {}
        self.arrived = asyncio.Event()

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # type: ignore[untyped-decorator]
        def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            if params.version is not None:
                self.published[params.version] = (time.perf_counter(), list(params.diagnostics))
                self.arrived.set()

    async def wait_for(self, version: int) -> tuple[float, list[lsp.Diagnostic]]:
        async def wait() -> tuple[float, list[lsp.Diagnostic]]:
            while version not in self.published:
                self.arrived.clear()
                await self.arrived.wait()
            return self.published[version]

        return await asyncio.wait_for(wait(), TIMEOUT)


def capabilities() -> lsp.ClientCapabilities:
    """What VS Code announces for the features measured here."""
    return lsp.ClientCapabilities(
        text_document=lsp.TextDocumentClientCapabilities(
            synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True),
            code_action=lsp.CodeActionClientCapabilities(
                code_action_literal_support=lsp.ClientCodeActionLiteralOptions(
                    code_action_kind=lsp.ClientCodeActionKindOptions(
                        value_set=[
                            lsp.CodeActionKind.QuickFix,
                            lsp.CodeActionKind.SourceFixAll,
                        ]
                    )
                ),
                is_preferred_support=True,
                data_support=True,
                resolve_support=lsp.ClientCodeActionResolveOptions(properties=["edit"]),
            ),
        )
    )


async def measure(lines: int, edits: int, actions: int) -> dict[str, list[float]]:
    """Seconds per didChange -> diagnostics and per codeAction (``edits``, ``actions`` of
    each), on a training script of ``lines`` lines."""
    chooser = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="repro-lint-lsp-") as temp:
        root = Path(temp)
        (root / "pyproject.toml").write_text('[project]\nname = "bench"\n', encoding="utf-8")
        path = root / "train.py"
        text = training_script(lines)
        path.write_text(text, encoding="utf-8")
        session = Session()
        client = session.client
        await client.start_io(str(BIN / "repro-lint"), "server", cwd=str(root))
        await asyncio.wait_for(
            client.initialize_async(
                lsp.InitializeParams(
                    capabilities=capabilities(),
                    root_uri=root.as_uri(),
                    workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name="bench")],
                )
            ),
            TIMEOUT,
        )
        client.initialized(lsp.InitializedParams())
        uri = path.as_uri()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        _, diagnostics = await session.wait_for(1)
        assert diagnostics, "the training script has findings"
        lines_of = text.splitlines()
        target = next(i for i, line in enumerate(lines_of) if "lr: float = " in line)
        change_times: list[float] = []
        version = 1
        for index in range(edits + 3):
            version += 1
            old = lines_of[target]
            new = f"    lr: float = 0.00{index % 9 + 1}"
            lines_of[target] = new
            change = lsp.TextDocumentContentChangePartial(
                range=lsp.Range(
                    start=lsp.Position(line=target, character=0),
                    end=lsp.Position(line=target, character=len(old)),
                ),
                text=new,
            )
            sent = time.perf_counter()
            client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[change],
                )
            )
            arrived, diagnostics = await session.wait_for(version)
            if index >= 3:  # the first edits warm the server up
                change_times.append(arrived - sent)
            await asyncio.sleep(0.2)
        action_times: list[float] = []
        for _ in range(actions + 3):
            line = chooser.randrange(len(lines_of))
            here = [d for d in diagnostics if d.range.start.line <= line <= d.range.end.line]
            cursor = lsp.Position(line=line, character=0)
            sent = time.perf_counter()
            await asyncio.wait_for(
                client.text_document_code_action_async(
                    lsp.CodeActionParams(
                        text_document=lsp.TextDocumentIdentifier(uri=uri),
                        range=lsp.Range(start=cursor, end=cursor),
                        context=lsp.CodeActionContext(diagnostics=here),
                    )
                ),
                TIMEOUT,
            )
            action_times.append(time.perf_counter() - sent)
            await asyncio.sleep(0.05)
        await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
        client.exit(None)
        await client.stop()  # type: ignore[no-untyped-call]
    return {"change": change_times, "action": action_times[3:], "lines": [float(lines)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--actions", type=int, default=60)
    args = parser.parse_args()
    times = asyncio.run(measure(args.lines, args.edits, args.actions))
    change = statistics.median(times["change"]) * 1000
    action = statistics.median(times["action"]) * 1000
    print(f"didChange -> diagnostics, {args.lines}-line script: median {change:.0f} ms")
    print(f"codeAction at a cursor: median {action:.1f} ms")


if __name__ == "__main__":
    main()
