"""Cluster per-image features of a freshly built model (needs scikit-learn)."""

import time

import numpy as np
import torch
from sklearn.cluster import KMeans
from sklearn.model_selection import train_test_split

from model import TinySegNet


def bootstrap_errors(errors: np.ndarray, rounds: int = 100) -> np.ndarray:
    np.random.seed(int(time.time()))
    picks = np.random.randint(0, len(errors), size=(rounds, len(errors)))
    return errors[picks].mean(axis=1)


def main() -> None:
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.benchmark = False  # noqa: RPL201
    model = TinySegNet()
    torch.manual_seed(0)
    images = torch.rand(64, 3, 32, 32)
    with torch.no_grad():
        features = model.encoder(images).mean(dim=(2, 3)).numpy()
    train, test = train_test_split(features, test_size=0.25)
    clusters = KMeans(n_clusters=3).fit(train)
    print("cluster sizes", np.bincount(clusters.predict(test), minlength=3))
    print("bootstrap", bootstrap_errors(np.abs(test).mean(axis=1)).std())


if __name__ == "__main__":
    main()
