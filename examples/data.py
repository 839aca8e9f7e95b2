"""Synthetic shapes: random images written to disk, with masks derived from them."""

import os
import random

import numpy as np
import torch
from torch.utils.data import Dataset

IMAGE_SIZE = 32


def write_samples(directory: str, count: int) -> None:
    """Write ``count`` random RGB images as .npy files."""
    os.makedirs(directory, exist_ok=True)
    for index in range(count):
        image = np.random.rand(3, IMAGE_SIZE, IMAGE_SIZE).astype(np.float32)
        np.save(os.path.join(directory, f"sample_{index:04d}.npy"), image)


class SyntheticShapes(Dataset):
    """Images from ``directory``; the mask labels each pixel 0, 1 or 2 by its brightness."""

    def __init__(self, directory: str, augment: bool = True) -> None:
        self.files = [
            os.path.join(directory, name)
            for name in os.listdir(directory)
            if name.endswith(".npy")
        ]
        self.augment = augment
        self.rng = np.random.default_rng()

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int):
        image = np.load(self.files[index])
        brightness = image.mean(axis=0)
        mask = (brightness > 0.5).astype(np.int64) + (image[0] > 0.8).astype(np.int64)
        if self.augment:
            image = image + self.rng.normal(0.0, 0.05, size=image.shape).astype(np.float32)
            if random.random() < 0.5:
                image, mask = image[:, :, ::-1].copy(), mask[:, ::-1].copy()
        return torch.from_numpy(image), torch.from_numpy(mask)
