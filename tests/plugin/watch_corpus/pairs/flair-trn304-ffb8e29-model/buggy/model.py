"""The library's model base class: a model knows how to save itself with its state and metadata."""
import torch
from torch import nn


class Model(nn.Module):
    def _get_state_dict(self):
        return {"state_dict": self.state_dict(), "model_card": getattr(self, "model_card", {})}

    def save(self, model_file):
        model_state = self._get_state_dict()
        model_state["model_card"] = {"training_log": "trainer.log"}
        torch.save(model_state, str(model_file), pickle_protocol=4)  # BUG TRN304


class TextClassifier(Model):
    def __init__(self, vocab=50, dim=16, n_labels=3):
        super().__init__()
        self.embeddings = nn.EmbeddingBag(vocab, dim)
        self.decoder = nn.Linear(dim, n_labels)

    def forward(self, tokens):
        return self.decoder(self.embeddings(tokens))
