"""Train the multimodal NER model (text with an image each) on synthetic tagged sentences."""
import torch

from models import HMNeTNERModel
from train import NERTrainer

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def make_batches(n_batches=3, batch_size=4, length=7):
    batches = []
    for _ in range(n_batches):
        input_ids = torch.randint(0, 100, (batch_size, length))
        labels = torch.where(input_ids < 20, 1, torch.where(input_ids < 40, 3, 0))
        images = torch.randn(batch_size, 16)
        batches.append((input_ids, labels, images))
    return batches


if __name__ == "__main__":
    torch.manual_seed(0)
    model = HMNeTNERModel(LABELS)
    args = {"num_epochs": 2, "lr": 3e-3, "warmup_ratio": 0.1}
    NERTrainer(make_batches(), model, {label: i for i, label in enumerate(LABELS)}, args).train()
