"""The NER trainer: parameter groups with their own learning rates, a linear warm-up schedule, the loop."""
from torch import optim


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(step):
        if step < num_warmup_steps:
            return float(step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - step) / float(max(1, num_training_steps - num_warmup_steps)))
    return optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


class NERTrainer:
    def __init__(self, train_data, model, label_map, args):
        self.train_data, self.model, self.label_map, self.args = train_data, model, label_map, args
        self.train_num_steps = len(self.train_data) * args["num_epochs"]
        self.optimizer = None
        self.step = 0

    def train(self):
        self.multiModal_before_train()
        self.step = 0
        self.model.train()
        avg_loss = 0
        for epoch in range(1, self.args["num_epochs"] + 1):
            for batch in self.train_data:
                self.step += 1
                labels, logits, loss = self._step(batch)
                avg_loss += loss.detach().cpu().item()
                loss.backward()
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad()
            print("epoch", epoch, "avg loss", round(avg_loss / self.step, 4))

    def _step(self, batch):
        input_ids, labels, images = batch
        logits, loss = self.model(input_ids=input_ids, labels=labels, images=images)
        return labels, logits, loss

    def multiModal_before_train(self):
        # bert lr
        parameters = []
        params = {"lr": self.args["lr"], "weight_decay": 1e-2}
        params["params"] = []
        for name, param in self.model.named_parameters():
            if "bert" in name:
                params["params"].append(param)
        parameters.append(params)

        # prompt lr
        params = {"lr": self.args["lr"], "weight_decay": 1e-2}
        params["params"] = []
        for name, param in self.model.named_parameters():
            if "encoder_conv" in name or "gates" in name:
                params["params"].append(param)
        parameters.append(params)

        # crf lr
        params = {"lr": 5e-2, "weight_decay": 1e-2}
        params["params"] = []
        for name, param in self.model.named_parameters():
            if "crf" in name or name.startswith("fc"):
                params["params"].append(param)
        parameters.append(params)

        self.optimizer = optim.AdamW(parameters)

        for name, par in self.model.named_parameters():  # freeze resnet
            if "image_model" in name:
                par.requires_grad = False

        self.scheduler = get_linear_schedule_with_warmup(
            optimizer=self.optimizer, num_warmup_steps=self.args["warmup_ratio"] * self.train_num_steps,
            num_training_steps=self.train_num_steps)
