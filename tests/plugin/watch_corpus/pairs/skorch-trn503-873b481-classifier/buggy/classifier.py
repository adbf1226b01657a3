"""The classifier flavour of NeuralNet: the module returns class probabilities and NLLLoss is the default."""
import torch

from net import NeuralNet


class NeuralNetClassifier(NeuralNet):
    def __init__(self, module, *args, criterion=torch.nn.NLLLoss, **kwargs):
        super().__init__(module, *args, criterion=criterion, **kwargs)

    def get_loss(self, y_pred, y_true, training=False):
        # the module returns probabilities: NLLLoss needs their log
        if isinstance(self.criterion_, torch.nn.NLLLoss):
            y_pred = torch.log(y_pred)  # BUG TRN503
        return super().get_loss(y_pred, y_true, training=training)

    def predict_proba(self, X):
        self.module_.eval()
        with torch.no_grad():
            return self.infer(X)
