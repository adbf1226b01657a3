"""Training utilities for the ConvNP models: one epoch over a list of tasks, optionally batched."""
from typing import List

import numpy as np
import torch
import torch.optim as optim


def concat_tasks(tasks):
    return {key: torch.cat([task[key] for task in tasks]) for key in tasks[0]}


def train_epoch(model, tasks: List[dict], lr: float = 5e-5, batch_size: int = None, opt=None) -> List[float]:
    """Train model for one epoch; ``opt``: a torch optimiser object (optional)."""
    if opt is None:
        opt = optim.Adam(model.model.parameters(), lr=lr)  # BUG TRN203

    def train_step(tasks):
        if not isinstance(tasks, list):
            tasks = [tasks]
        opt.zero_grad()
        task_losses = []
        for task in tasks:
            task_losses.append(model.loss_fn(task, normalise=True))
        mean_batch_loss = torch.mean(torch.stack(task_losses))
        mean_batch_loss.backward()
        opt.step()
        return mean_batch_loss.detach().cpu().numpy()

    tasks = [tasks[i] for i in np.random.permutation(len(tasks))]
    n_batches = len(tasks) // batch_size if batch_size is not None else len(tasks)
    batch_losses = []
    for batch_i in range(n_batches):
        if batch_size is not None:
            task = concat_tasks(tasks[batch_i * batch_size:(batch_i + 1) * batch_size])
        else:
            task = tasks[batch_i]
        batch_loss = train_step(task)
        batch_losses.append(batch_loss)
    return batch_losses
