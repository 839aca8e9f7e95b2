"""Train TinySegNet on synthetic shapes and print the final loss (CPU, a few seconds).

    python train.py [--epochs 2] [--workers 2] [--seed 42] [--checkpoint model.pt] [--compile]
"""

import argparse
import tempfile

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, random_split

from data import SyntheticShapes, write_samples
from model import TinySegNet, per_class_errors
from seeding import seed_everything

NUM_CLASSES = 3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--checkpoint", default=None, help="where to save the trained weights")
    parser.add_argument("--compile", action="store_true", help="compile the model first")
    return parser.parse_args()


def evaluate(model: torch.nn.Module, loader: DataLoader) -> tuple[float, torch.Tensor]:
    model.eval()
    total, batches = 0.0, 0
    errors = torch.zeros(NUM_CLASSES)
    with torch.no_grad():
        for images, masks in loader:
            logits = model(images)
            total += F.cross_entropy(logits, masks).item()
            errors += per_class_errors(logits, masks, NUM_CLASSES)
            batches += 1
    return total / max(batches, 1), errors


def main() -> None:
    args = parse_args()
    seed_everything(args.seed)
    torch.backends.cudnn.benchmark = True

    data_dir = tempfile.mkdtemp(prefix="tinyseg-")
    write_samples(data_dir, 96)
    dataset = SyntheticShapes(data_dir)
    train_set, val_set = random_split(dataset, [80, 16])
    train_loader = DataLoader(
        train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers
    )
    val_loader = DataLoader(val_set, batch_size=args.batch_size, num_workers=args.workers)

    model = TinySegNet(num_classes=NUM_CLASSES)
    if args.compile:
        model = torch.compile(model, mode="max-autotune")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    for epoch in range(args.epochs):
        model.train()
        for images, masks in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), masks)
            loss.backward()
            optimizer.step()
        val_loss, errors = evaluate(model, val_loader)
        print(f"epoch {epoch}: train loss {loss.item():.6f}  val loss {val_loss:.6f}  "
              f"errors per class {errors.tolist()}")

    print(f"final loss {val_loss:.8f}")
    if args.checkpoint:
        torch.save(model.state_dict(), args.checkpoint)


if __name__ == "__main__":
    main()
