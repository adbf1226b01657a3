"""LoRA fine-tuning recipe for a language model on one device: frozen base weights, low-rank adapters trained."""
import math
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class LoRALinear(nn.Module):
    def __init__(self, in_dim, out_dim, rank=4, alpha=8.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim) / math.sqrt(in_dim), requires_grad=False)
        self.lora_a = nn.Linear(in_dim, rank, bias=False)
        self.lora_b = nn.Linear(rank, out_dim, bias=False)
        nn.init.zeros_(self.lora_b.weight)
        self.scaling = alpha / rank

    def forward(self, x):
        return x @ self.weight.T + self.lora_b(self.lora_a(x)) * self.scaling


class TinyLlama(nn.Module):
    def __init__(self, vocab_size=64, dim=32):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab_size, dim)
        self.tok_embeddings.weight.requires_grad_(False)
        self.q_proj = LoRALinear(dim, dim)
        self.v_proj = LoRALinear(dim, dim)
        self.output = nn.Linear(dim, vocab_size, bias=False)
        self.output.weight.requires_grad_(False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        mask = torch.full((tokens.shape[1], tokens.shape[1]), float("-inf")).triu(1)
        attn = torch.softmax(self.q_proj(h) @ h.transpose(1, 2) / math.sqrt(h.shape[-1]) + mask, dim=-1)
        return self.output(h + attn @ self.v_proj(h))


class Progress:
    """The recipe's progress bar (tqdm): shows its description on the terminal."""

    def __init__(self, iterable):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def set_description(self, text):
        sys.stderr.write("\r" + text)


class MetricLogger:
    def log_dict(self, payload, step):
        print(f"step {step}: " + " ".join(f"{k}={v:.4g}" for k, v in payload.items()))


class LoRAFinetuneRecipeSingleDevice:
    def __init__(self, cfg):
        self._device = torch.device(cfg["device"])
        self._log_every_n_steps = cfg["log_every_n_steps"]
        self.epochs_run = 0
        self.total_epochs = cfg["epochs"]
        self.max_steps_per_epoch = cfg["max_steps_per_epoch"]
        self.total_training_steps = 0

    def setup(self, cfg):
        torch.manual_seed(cfg["seed"])
        self._metric_logger = MetricLogger()
        self._model = TinyLlama().to(self._device)
        self._optimizer = torch.optim.AdamW(
            [p for p in self._model.parameters() if p.requires_grad], lr=cfg["lr"], weight_decay=0.01)
        self._lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
            self._optimizer, lambda step: min(1.0, (step + 1) / cfg["num_warmup_steps"]))
        self._loss_fn = nn.CrossEntropyLoss()
        tokens = torch.randint(0, 64, (48, 12))
        dataset = TensorDataset(tokens, tokens.clone())
        self._sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=0)
        self._dataloader = DataLoader(dataset, batch_size=cfg["batch_size"], sampler=self._sampler)

    def train(self):
        for curr_epoch in range(self.epochs_run, self.total_epochs):
            self._sampler.set_epoch(curr_epoch)
            for idx, batch in enumerate(pbar := Progress(self._dataloader)):
                if self.max_steps_per_epoch is not None and idx == self.max_steps_per_epoch:
                    break
                self.total_training_steps += 1
                self._optimizer.zero_grad()

                input_ids, labels = batch
                input_ids = input_ids.to(self._device)
                labels = labels.to(self._device)

                logits = self._model(input_ids)
                # Shift so that tokens < n predict n
                logits = logits[..., :-1, :].contiguous()
                labels = labels[..., 1:].contiguous()
                logits = logits.transpose(1, 2)
                loss = self._loss_fn(logits, labels)

                pbar.set_description(f"{curr_epoch+1}|{idx+1}|Loss: {loss.item()}")  # BUG TRN201

                if self.total_training_steps % self._log_every_n_steps == 0:
                    self._metric_logger.log_dict(
                        {"loss": loss.item(), "lr": self._optimizer.param_groups[0]["lr"],
                         "gpu_resources": torch.cuda.memory_allocated()},
                        step=self.total_training_steps)

                loss.backward()
                self._optimizer.step()
                self._lr_scheduler.step()
            self.epochs_run += 1


def recipe_main(cfg):
    recipe = LoRAFinetuneRecipeSingleDevice(cfg=cfg)
    recipe.setup(cfg=cfg)
    recipe.train()


if __name__ == "__main__":
    recipe_main({"device": "cpu", "seed": 0, "lr": 3e-4, "num_warmup_steps": 4, "batch_size": 8, "epochs": 2,
                 "max_steps_per_epoch": None, "log_every_n_steps": 5})
