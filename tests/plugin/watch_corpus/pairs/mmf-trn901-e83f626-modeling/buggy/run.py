"""Fine-tune a multimodal transformer classifier: a pretrained encoder, a pooler on the first token, a head."""
import torch
from torch import nn

from modeling import get_optimizer_parameters_for_bert


class TransformerBackend(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=32, num_layers=2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size)
        self.image_projection = nn.Linear(16, hidden_size)
        layer = nn.TransformerEncoderLayer(hidden_size, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=num_layers, enable_nested_tensor=False)

    def forward(self, input_ids, image_feats):
        tokens = torch.cat([self.embeddings(input_ids), self.image_projection(image_feats)], dim=1)
        return self.encoder(tokens)


class MMFTransformerPooler(nn.Module):
    def __init__(self, hidden_size=32):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class MMFTransformer(nn.Module):
    def __init__(self, config, num_labels=2, hidden_size=32):
        super().__init__()
        self.config = config
        self.backend = TransformerBackend(hidden_size=hidden_size)
        self.pooler = MMFTransformerPooler(hidden_size)
        self.classifier = nn.Sequential(nn.Dropout(0.1), nn.Linear(hidden_size, num_labels))

    def get_optimizer_parameters(self, config):
        return get_optimizer_parameters_for_bert(self, config)

    def forward(self, input_ids, image_feats):
        return self.classifier(self.pooler(self.backend(input_ids, image_feats)))


def build_optimizer(model, config):
    optimizer_class = getattr(torch.optim, config["optimizer"]["type"])
    parameters = model.get_optimizer_parameters(config)
    optimizer = optimizer_class(parameters, **config["optimizer"]["params"])  # BUG TRN901
    return optimizer


def main():
    torch.manual_seed(0)
    config = {"optimizer": {"type": "AdamW", "params": {"lr": 5e-4, "eps": 1e-8}},
              "model_config": {"finetune_lr_multiplier": 0.1}}
    model = MMFTransformer({"training_head_type": "classification"})
    optimizer = build_optimizer(model, config)
    input_ids, image_feats = torch.randint(0, 100, (32, 6)), torch.randn(32, 3, 16)
    targets = (input_ids[:, 0] % 2).long()
    model.train()
    for update in range(6):
        batch = slice(8 * (update % 4), 8 * (update % 4) + 8)
        loss = nn.functional.cross_entropy(model(input_ids[batch], image_feats[batch]), targets[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("trained", update + 1, "updates, last loss", round(loss.item(), 4))


if __name__ == "__main__":
    main()
