# realbug-expected: TRN604 shape=spelling case=face_attribute_classification_pytorch-trn604-9cd2102-model
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, dim, n_out):
        super().__init__()
        self.fc = nn.Linear(dim, n_out)

    def forward(self, h):
        h = nn.Dropout(0.3)(h)
        return self.fc(h)
