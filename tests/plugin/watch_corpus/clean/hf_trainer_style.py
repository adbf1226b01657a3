"""A Hugging-Face-style program: a Trainer with an overridable compute_loss, a linear warm-up schedule stepped
after each optimizer step, gradient clipping, callbacks at step and evaluation events, and evaluate() in
eval mode under no_grad."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class TrainerCallback:
    def on_step_end(self, args, state, control):
        pass

    def on_evaluate(self, args, state, control, metrics):
        pass


class EarlyStoppingCallback(TrainerCallback):
    def __init__(self, patience=2):
        self.patience, self.best, self.bad = patience, math.inf, 0

    def on_evaluate(self, args, state, control, metrics):
        if metrics["eval_loss"] < self.best:
            self.best, self.bad = metrics["eval_loss"], 0
        else:
            self.bad += 1
            control["should_training_stop"] = self.bad >= self.patience


class StepCounter(TrainerCallback):
    def on_step_end(self, args, state, control):
        state["steps_seen"] = state.get("steps_seen", 0) + 1


class Trainer:
    def __init__(self, model, args, train_dataset, eval_dataset, callbacks=()):
        self.model, self.args = model, args
        self.train_dataset, self.eval_dataset = train_dataset, eval_dataset
        self.callbacks = list(callbacks)
        self.state, self.control = {"global_step": 0}, {"should_training_stop": False}

    def compute_loss(self, model, inputs):
        logits = model(inputs["input_ids"])
        return F.cross_entropy(logits, inputs["labels"])

    def create_optimizer_and_scheduler(self, num_training_steps):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.args["learning_rate"], weight_decay=0.01)
        warmup = self.args["warmup_steps"]
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(
            (step + 1) / warmup, max(0.0, (num_training_steps - step) / max(1, num_training_steps - warmup))))
        return optimizer, scheduler

    def get_dataloader(self, dataset, shuffle):
        return torch.utils.data.DataLoader(dataset, batch_size=self.args["batch_size"], shuffle=shuffle,
                                           collate_fn=lambda rows: {"input_ids": torch.stack([r[0] for r in rows]),
                                                                    "labels": torch.stack([r[1] for r in rows])})

    def train(self):
        loader = self.get_dataloader(self.train_dataset, shuffle=True)
        optimizer, scheduler = self.create_optimizer_and_scheduler(len(loader) * self.args["num_train_epochs"])
        for epoch in range(self.args["num_train_epochs"]):
            self.model.train()
            for inputs in loader:
                loss = self.compute_loss(self.model, inputs)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args["max_grad_norm"])
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                self.state["global_step"] += 1
                for callback in self.callbacks:
                    callback.on_step_end(self.args, self.state, self.control)
            metrics = self.evaluate()
            for callback in self.callbacks:
                callback.on_evaluate(self.args, self.state, self.control, metrics)
            if self.control["should_training_stop"]:
                break
        return self.state

    def evaluate(self):
        self.model.eval()
        losses = []
        with torch.no_grad():
            for inputs in self.get_dataloader(self.eval_dataset, shuffle=False):
                losses.append(self.compute_loss(self.model, inputs))
        self.model.train()
        return {"eval_loss": float(torch.stack(losses).mean())}


class TinyClassifier(nn.Module):
    def __init__(self, vocab=40, dim=16, n_labels=3):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, dim)
        self.encoder = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=32, dropout=0.1, batch_first=True)
        self.classifier = nn.Linear(dim, n_labels)

    def forward(self, input_ids):
        return self.classifier(self.encoder(self.embeddings(input_ids)).mean(1))


def main():
    torch.manual_seed(0)
    ids, labels = torch.randint(0, 40, (40, 6)), torch.randint(0, 3, (40,))
    train_set = torch.utils.data.TensorDataset(ids[:32], labels[:32])
    eval_set = torch.utils.data.TensorDataset(ids[32:], labels[32:])
    args = {"learning_rate": 1e-3, "warmup_steps": 2, "batch_size": 8, "num_train_epochs": 2, "max_grad_norm": 1.0}
    state = Trainer(TinyClassifier(), args, train_set, eval_set, [EarlyStoppingCallback(), StepCounter()]).train()
    print("global steps", state["global_step"])


if __name__ == "__main__":
    main()
