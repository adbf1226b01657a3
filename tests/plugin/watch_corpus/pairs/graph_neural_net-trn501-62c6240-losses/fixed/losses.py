"""Losses for graph matching: each node of the first graph must pick its own copy in the second graph."""
import torch
import torch.nn as nn


def get_device(t):
    return t.device


class triplet_loss(nn.Module):
    def __init__(self, loss_reduction="mean", loss=nn.CrossEntropyLoss(reduction="sum")):
        super().__init__()
        self.loss = loss
        if loss_reduction == "mean":
            self.increments = lambda new_loss, n_vertices: (new_loss, n_vertices)
        elif loss_reduction == "mean_of_mean":
            self.increments = lambda new_loss, n_vertices: (new_loss / n_vertices, 1)
        else:
            raise ValueError("Unknown loss_reduction parameters {}".format(loss_reduction))

    def forward(self, raw_scores, target_dummy):
        """raw_scores: the siamese network's node similarities (bs, n_vertices, n_vertices)."""
        device = get_device(raw_scores)
        loss = 0
        total = 0
        for out in raw_scores:
            n_vertices = out.shape[0]
            ide = torch.arange(n_vertices)
            target = ide.to(device)
            incrs = self.increments(self.loss(out, target), n_vertices)
            loss += incrs[0]
            total += incrs[1]
        return loss / total
