"""Data-parallel training on every GPU of this machine (needs CUDA and NCCL)."""

import os
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from data import SyntheticShapes, write_samples
from model import TinySegNet


def worker(rank: int, world_size: int, data_dir: str) -> None:
    torch.cuda.manual_seed(rank)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    torch.use_deterministic_algorithms(True)

    dataset = SyntheticShapes(data_dir)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler, num_workers=4)
    model = DistributedDataParallel(TinySegNet().cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        for images, masks in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images.cuda(rank)), masks.cuda(rank))
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.6f}")
    dist.destroy_process_group()


def main() -> None:
    torch.manual_seed(1234)
    data_dir = tempfile.mkdtemp(prefix="tinyseg-")
    write_samples(data_dir, 256)
    world_size = torch.cuda.device_count()
    mp.spawn(worker, args=(world_size, data_dir), nprocs=world_size)


if __name__ == "__main__":
    main()
