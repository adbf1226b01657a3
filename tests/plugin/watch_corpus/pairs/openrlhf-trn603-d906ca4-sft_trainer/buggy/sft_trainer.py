"""Supervised fine-tuning of a causal language model, with periodic evaluation."""
import torch
import torch.nn.functional as F


class SFTTrainer:
    def __init__(self, model, optim, train_dataloader, eval_dataloader, max_epochs=2, eval_steps=2):
        self.model, self.optimizer = model, optim
        self.train_dataloader, self.eval_dataloader = train_dataloader, eval_dataloader
        self.epochs, self.eval_steps = max_epochs, eval_steps

    def loss_fn(self, logits, labels):
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))

    def fit(self):
        global_step = 0
        for epoch in range(self.epochs):
            self.model.train()
            for (inputs,) in self.train_dataloader:
                logits = self.model(inputs)  # BUG TRN603
                gpt_loss = self.loss_fn(logits, inputs)
                gpt_loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                global_step += 1
                self.save_logs_and_checkpoints(global_step)

    def save_logs_and_checkpoints(self, global_step):
        if global_step % self.eval_steps == 0:
            self.evaluate(self.eval_dataloader, global_step)

    def evaluate(self, eval_dataloader, steps=0):
        times, loss_sum = 0, torch.zeros(())
        self.model.eval()
        with torch.no_grad():
            for (inputs,) in eval_dataloader:
                loss_sum += self.loss_fn(self.model(inputs), inputs)
                times += 1
        print(f"step {steps}: eval gpt_loss {float(loss_sum / times):.4f}")
