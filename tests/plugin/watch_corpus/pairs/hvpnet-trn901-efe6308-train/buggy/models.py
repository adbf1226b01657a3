"""Multimodal NER model: a BERT-like text encoder steered by visual prompts, an emission layer and a CRF."""
import torch
import torch.nn.functional as F
from torch import nn


class CRF(nn.Module):
    """Linear-chain CRF: the negative log-likelihood of the gold tag sequence."""

    def __init__(self, num_tags):
        super().__init__()
        self.start_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))

    def forward(self, emissions, tags):
        batch = torch.arange(emissions.shape[0])
        score = self.start_transitions[tags[:, 0]] + emissions[batch, 0, tags[:, 0]]
        norm = self.start_transitions + emissions[:, 0]
        for t in range(1, emissions.shape[1]):
            score = score + self.transitions[tags[:, t - 1], tags[:, t]] + emissions[batch, t, tags[:, t]]
            norm = torch.logsumexp(norm.unsqueeze(2) + self.transitions + emissions[:, t].unsqueeze(1), dim=1)
        score = score + self.end_transitions[tags[:, -1]]
        norm = torch.logsumexp(norm + self.end_transitions, dim=1)
        return (score - norm).mean()


class TinyBert(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=32, prompt_len=4):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size)
        self.layers = nn.ModuleList([nn.Linear(hidden_size, hidden_size) for _ in range(2)])
        self.prompt_len = prompt_len

    def forward(self, input_ids, prompt_guids):
        h = self.embeddings(input_ids)
        for layer, prompt in zip(self.layers, prompt_guids):
            h = torch.tanh(layer(h) + prompt.mean(dim=1, keepdim=True))
        return h


class HMNeTNERModel(nn.Module):
    def __init__(self, label_list, hidden_size=32, image_dim=16):
        super().__init__()
        self.num_labels = len(label_list)
        self.bert = TinyBert(hidden_size=hidden_size)
        self.image_model = nn.Linear(image_dim, 4 * hidden_size)  # the pretrained visual backbone (frozen)
        self.encoder_conv = nn.Sequential(nn.Linear(4 * hidden_size, hidden_size), nn.Tanh(),
                                          nn.Linear(hidden_size, 2 * hidden_size))
        self.gates = nn.ModuleList([nn.Linear(2 * hidden_size, 2) for _ in range(2)])
        self.crf = CRF(self.num_labels)
        self.fc = nn.Linear(hidden_size, self.num_labels)

    def get_visual_prompt(self, images):
        prompt_guids = self.encoder_conv(self.image_model(images)).view(images.shape[0], 1, -1)
        prompt_guids = prompt_guids.expand(-1, self.bert.prompt_len, -1)
        result = []
        for idx in range(len(self.gates)):
            gate = F.softmax(F.leaky_relu(self.gates[idx](prompt_guids.mean(dim=1))), dim=-1)
            key, value = prompt_guids.chunk(2, dim=-1)
            result.append(gate[:, :1, None] * key + gate[:, 1:, None] * value)
        return result

    def forward(self, input_ids=None, labels=None, images=None):
        sequence_output = self.bert(input_ids, self.get_visual_prompt(images))
        emissions = self.fc(sequence_output)  # bsz, len, labels
        logits = emissions.argmax(-1)
        loss = -1 * self.crf(emissions, labels) if labels is not None else None
        return logits, loss
