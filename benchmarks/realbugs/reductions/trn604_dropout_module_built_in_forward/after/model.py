# realbug-expected: TRN604 shape=spelling case=face_attribute_classification_pytorch-trn604-9cd2102-model
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, dim, n_out):
        super().__init__()
        self.fc = nn.Linear(dim, n_out)
        self.drop = nn.Dropout(0.3)

    def forward(self, h):
        h = self.drop(h)
        return self.fc(h)
