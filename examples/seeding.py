"""Seeding helpers shared by the training and evaluation scripts."""

import os
import random

import torch


def seed_everything(seed: int) -> None:
    """Seed the random number generators this project uses."""
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    # Meant to make hashing reproducible; it is set too late for this interpreter.
    os.environ["PYTHONHASHSEED"] = str(seed)
